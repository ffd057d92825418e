//! The pure part of the server: every served state of every kind, and the watch events between
//! them, built once from a recording and shared read-only by every request.
//!
//! Positions: position `p` is the state after the first `p` records. Positions before the
//! timeline's base (the end of the recording's initial lists) are not served.

use std::collections::BTreeMap;

/// Hashed with foldhash: keys are hashed once or twice per record, and SipHash cost more than
/// the lookups.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
use std::io::Read;
use std::sync::{Arc, Mutex};

use rf_format::{Header, Kind, Op, Reader, Record, Timestamp, Trailer};

use crate::body::{Encoder, Json, Place};
use crate::json::{self, Meta};
use crate::resource::Resource;
use crate::rows::{Row, Rows};
use crate::spill::{Holds, Scratch, Spill};
use crate::wire::{Take, put_str, put_u32};

/// An object's identity within its kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// One state of one object, as served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// The object's JSON as served: the recorded bytes, or with `metadata.resourceVersion`
    /// rewritten (see [`RvMode`]). Kept against the object's version before ([`Json`]).
    pub json: Json,
    /// Its metadata (with the served resourceVersion).
    pub meta: Meta,
    /// Index of the record this state comes from.
    pub index: usize,
}

/// The `type` of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

impl EventType {
    /// The name a watch stream uses.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change of one object after the base, as a watch serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Index of the record it comes from: it is part of every state at a position after it.
    pub index: usize,
    /// What happened.
    pub kind: EventType,
    /// The served resourceVersion a watch resumes after.
    pub rv: u64,
    /// The object: the new state, or for `DELETED` the last state.
    pub object: Arc<Version>,
    /// The object's state before the event, if it existed.
    pub previous: Option<Arc<Version>>,
}

/// Where the served resourceVersions of a kind come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RvMode {
    /// The recorded ones: decimal integers increasing in record order. Objects are served
    /// byte for byte as recorded (an inferred deletion's object carries its relist's version).
    Recorded,
    /// A served counter: the state at position `p` has resourceVersion `p + 1`, so the object a
    /// record produced (record index `i`, from 0) has `i + 2`. Every object's
    /// `metadata.resourceVersion` is rewritten to it.
    Counter,
}

/// A watch or list asked for a state older than the oldest one served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooOld {
    /// The resourceVersion asked for.
    pub requested: u64,
    /// The oldest resourceVersion served.
    pub oldest: u64,
}

/// A resourceVersion as kept: a decimal integer as itself when its decimal is the same string
/// (so equal strings are equal values), else an index into its kind's texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rv {
    value: u64,
    text: bool,
}

/// The resourceVersions of a kind that are not kept as integers, each once.
#[derive(Clone, Debug, Default)]
struct Texts {
    all: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, u64>,
}

impl Texts {
    fn rv(&mut self, s: &str) -> Rv {
        let canonical = !s.starts_with('+') && (s == "0" || !s.starts_with('0'));
        match s.parse::<u64>() {
            Ok(value) if canonical && value & !OWN_VALUE == 0 => Rv { value, text: false },
            _ => {
                let value = match self.ids.get(s) {
                    Some(&id) => id,
                    None => {
                        let text: Arc<str> = Arc::from(s);
                        let id = self.all.len() as u64;
                        self.all.push(Arc::clone(&text));
                        self.ids.insert(text, id);
                        id
                    }
                };
                Rv { value, text: true }
            }
        }
    }

    fn get(&self, rv: Rv) -> Option<&str> {
        rv.text
            .then(|| self.all.get(rv.value as usize).map_or("", |t| &**t))
    }

    fn string(&self, rv: Rv) -> String {
        match self.get(rv) {
            Some(t) => t.to_owned(),
            None => rv.value.to_string(),
        }
    }

    /// The decimal integer it is, as `str::parse` reads it.
    fn parse(&self, rv: Rv) -> Result<u64, String> {
        match self.get(rv) {
            None => Ok(rv.value),
            Some(t) => t
                .parse::<u64>()
                .map_err(|_| format!("{t:?} is not a decimal integer")),
        }
    }

    fn is_empty(&self, rv: Rv) -> bool {
        self.get(rv) == Some("")
    }

    /// Whether both are the same string.
    fn same(&self, a: Rv, b: Rv) -> bool {
        match (self.get(a), self.get(b)) {
            (None, None) => a.value == b.value,
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }
}

/// No version or event.
const NONE: u32 = u32::MAX;

/// [`Ev::own`]: the value of its [`Rv`].
const OWN_VALUE: u64 = (1 << 62) - 1;
/// [`Ev::own`]: its [`Rv`] is a text.
const OWN_TEXT: u64 = 1 << 63;

/// One event of the kind (before the base too), and the version of the object it made (event
/// `i` made version `i`): a row of the kind's [`Rows`], on disk.
#[derive(Clone, Copy, Debug)]
struct Ev {
    /// While building, the recorded resourceVersion ([`Rv`]); then the served one.
    rv: u64,
    index: u32,
    /// The object's version before, or [`NONE`].
    previous: u32,
    /// The relist it is part of ([`Building::groups`]), or [`NONE`].
    group: u32,
    kind: EventType,
    flags: u8,
    /// The version's bytes: where they are kept, how long they are, how many deltas from a
    /// whole version.
    place: Place,
    len: u32,
    depth: u8,
    /// Where its metadata but for the resourceVersion is kept ([`Meta::encode`]).
    meta: Place,
    /// Its recorded `metadata.resourceVersion` ([`Rv`]: [`OWN_VALUE`], [`OWN_TEXT`]).
    own: u64,
}

/// The [`Rv`] an [`Ev::own`] is.
fn own_rv(own: u64) -> Rv {
    Rv {
        value: own & OWN_VALUE,
        text: own & OWN_TEXT != 0,
    }
}

impl Ev {
    fn own(&self) -> Rv {
        own_rv(self.own)
    }

    fn json(&self, spill: &Arc<Spill>) -> Json {
        Json::kept(spill, self.place, self.len, self.depth)
    }
}

impl Row for Ev {
    const SIZE: usize = 60;

    fn put(&self, out: &mut Vec<u8>) {
        let (at, stored) = self.place.to_parts();
        let kind = match self.kind {
            EventType::Added => 0u8,
            EventType::Modified => 1,
            EventType::Deleted => 2,
        };
        out.extend_from_slice(&self.rv.to_le_bytes());
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(&self.previous.to_le_bytes());
        out.extend_from_slice(&self.group.to_le_bytes());
        out.extend_from_slice(&[kind, self.flags, self.depth, 0]);
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&stored.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        let (meta_at, meta_len) = self.meta.to_parts();
        out.extend_from_slice(&meta_at.to_le_bytes());
        out.extend_from_slice(&meta_len.to_le_bytes());
        out.extend_from_slice(&self.own.to_le_bytes());
    }

    fn take(b: &[u8]) -> Ev {
        let u64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(x)
        };
        let u32_at = |i: usize| {
            let mut x = [0u8; 4];
            x.copy_from_slice(&b[i..i + 4]);
            u32::from_le_bytes(x)
        };
        Ev {
            rv: u64_at(0),
            index: u32_at(8),
            previous: u32_at(12),
            group: u32_at(16),
            kind: match b[20] {
                0 => EventType::Added,
                1 => EventType::Modified,
                _ => EventType::Deleted,
            },
            flags: b[21],
            depth: b[22],
            place: Place::from_parts(u64_at(24), u32_at(32)),
            len: u32_at(36),
            meta: Place::from_parts(u64_at(40), u32_at(48)),
            own: u64_at(52),
        }
    }
}

/// [`Ev::flags`]: the record's resourceVersion is a text ([`Rv::text`]).
const RV_TEXT: u8 = 1;
/// [`Ev::flags`]: the object came from this record (not the last known state).
const FROM_RECORD: u8 = 2;
/// [`Ev::flags`]: an inferred deletion.
const INFERRED: u8 = 4;

/// Every served state of one kind.
///
/// Its events, versions and metadata are on disk: fixed-size rows and records in the server's
/// scratch file, with the live objects written there every so often (snapshots). Memory holds
/// where they are; the [`Version`]s, [`Event`]s and lists a request needs are made from them.
#[derive(Debug)]
pub struct KindTimeline {
    resource: Resource,
    rv_mode: RvMode,
    rv_note: Option<String>,
    base_position: usize,
    base_rv: u64,
    /// Every event, from before the base.
    events: Rows<Ev>,
    snapshots: Vec<Snapshot>,
    texts: Texts,
    /// How many events are before the base.
    before_base: usize,
    /// Metadata read last, by where it is kept: an object's versions share theirs.
    metas: Mutex<HashMap<u64, Arc<Meta>>>,
    /// The live objects at the states listed last: by how many events took effect.
    lists: Mutex<Vec<(usize, Arc<Live>)>>,
}

/// The live objects of a kind once some events took effect: each one's key, version and the
/// event that made it, in key order.
type Live = Vec<(ObjectKey, u32, Ev)>;

/// Where the live objects are written once the first `applied` events of a kind took effect: as
/// many entries of the version (`u32`), the event that made it (its row), namespace and name
/// (each a `u32` length and its bytes), in key order.
#[derive(Clone, Copy, Debug)]
struct Snapshot {
    applied: usize,
    place: Place,
}

/// A kind's live objects are written after at least this many events, and at least as many as
/// there are live objects (so that the snapshots take no more than the events, and listing
/// replays no more events than it lists objects, or this many).
const SNAPSHOT_EVERY: usize = if cfg!(test) { 64 } else { 16 << 10 };

/// How many decoded metadata a kind keeps at most.
const METAS_KEPT: usize = 32 << 10;

/// How many listed states a kind keeps.
const LISTS_KEPT: usize = 4;

impl KindTimeline {
    /// The API names of this kind.
    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    /// Where its resourceVersions come from.
    pub fn rv_mode(&self) -> RvMode {
        self.rv_mode
    }

    /// Why the recorded resourceVersions could not be served, in [`RvMode::Counter`].
    pub fn rv_note(&self) -> Option<&str> {
        self.rv_note.as_deref()
    }

    /// The resourceVersion of the oldest served state; anything older is gone.
    pub fn base_rv(&self) -> u64 {
        self.base_rv
    }

    /// Served event `i` (after the base).
    fn served(&self, i: usize) -> Option<Ev> {
        self.events.get(self.before_base.checked_add(i)?)
    }

    /// The resourceVersion version `slot` (made by event `e`) is served with, written into its
    /// bytes (0: as recorded).
    fn rewrite(&self, slot: usize, e: &Ev) -> u64 {
        match (slot < self.before_base, self.rv_mode) {
            (true, RvMode::Counter) => u64::from(e.index) + 2,
            (true, RvMode::Recorded) => 0,
            (false, RvMode::Counter) => e.rv,
            (false, RvMode::Recorded) if e.flags & (INFERRED | FROM_RECORD) != FROM_RECORD => e.rv,
            (false, RvMode::Recorded) => 0,
        }
    }

    fn version(&self, slot: u32) -> Option<Arc<Version>> {
        let e = self.events.get(slot as usize)?;
        self.version_of(slot, &e)
    }

    /// Version `slot`, which event `e` made.
    fn version_of(&self, slot: u32, e: &Ev) -> Option<Arc<Version>> {
        let rewrite = self.rewrite(slot as usize, e);
        let mut meta = Meta::clone(&*self.meta(e.meta)?);
        let json = e.json(self.events.spill());
        // Any object read ([`json::meta`]) can have its resourceVersion set.
        let json = if rewrite != 0 {
            meta.resource_version = rewrite.to_string();
            json.rewritten(rewrite)
        } else {
            meta.resource_version = self.texts.string(e.own());
            json
        };
        Some(Arc::new(Version {
            json,
            meta,
            index: e.index as usize,
        }))
    }

    /// How many events follow the base.
    pub fn event_count(&self) -> usize {
        self.events.len().saturating_sub(self.before_base)
    }

    /// The record index of event `i` (see [`Event::index`]).
    pub fn event_index(&self, i: usize) -> Option<usize> {
        self.served(i).map(|e| e.index as usize)
    }

    /// Event `i` after the base, in record order.
    pub fn event(&self, i: usize) -> Option<Event> {
        self.event_with(i, usize::MAX, true)
    }

    /// Event `i` after the base, if its record's index is below `released` (its row is read
    /// once); its [`Event::previous`] only if `previous` (making a version costs; a watch
    /// without selectors does not need the one before).
    pub fn event_with(&self, i: usize, released: usize, previous: bool) -> Option<Event> {
        let e = self.served(i).filter(|e| (e.index as usize) < released)?;
        let slot = u32::try_from(self.before_base + i).ok()?;
        Some(Event {
            index: e.index as usize,
            kind: e.kind,
            rv: e.rv,
            object: self.version_of(slot, &e)?,
            previous: if previous {
                self.version(e.previous)
            } else {
                None
            },
        })
    }

    /// Every event after the base, in record order, made at once ([`KindTimeline::event`]
    /// makes one).
    pub fn events(&self) -> Vec<Event> {
        (0..self.event_count())
            .filter_map(|i| self.event(i))
            .collect()
    }

    /// How many events are part of the state at `position`; also the index of the first event a
    /// watch starting at `position` sends.
    pub fn applied_at(&self, position: usize) -> usize {
        self.events
            .partition_point(self.before_base, |e| (e.index as usize) < position)
            - self.before_base.min(self.events.len())
    }

    /// The resourceVersion of the state at `position`.
    pub fn list_rv(&self, position: usize) -> u64 {
        let position = position.max(self.base_position);
        match self.rv_mode {
            RvMode::Counter => (position as u64).saturating_add(1),
            RvMode::Recorded => match self.applied_at(position) {
                0 => self.base_rv,
                j => self.served(j - 1).map_or(self.base_rv, |e| e.rv),
            },
        }
    }

    /// The first position whose state of this kind is the state at resourceVersion `rv`: a
    /// watch from `rv` sends the events at and after it. May lie beyond the recording's end for
    /// a counter resourceVersion from the future.
    pub fn position_for_rv(&self, rv: u64) -> Result<usize, TooOld> {
        if rv < self.base_rv {
            return Err(TooOld {
                requested: rv,
                oldest: self.base_rv,
            });
        }
        Ok(match self.rv_mode {
            RvMode::Counter => usize::try_from(rv - 1)
                .unwrap_or(usize::MAX)
                .max(self.base_position),
            RvMode::Recorded => {
                let j = self
                    .events
                    .partition_point(self.before_base, |e| e.rv <= rv);
                match j.checked_sub(self.before_base + 1) {
                    None => self.base_position,
                    Some(i) => self
                        .served(i)
                        .map_or(self.base_position, |e| e.index as usize + 1),
                }
            }
        })
    }

    /// The metadata kept at `place`.
    fn meta(&self, place: Place) -> Option<Arc<Meta>> {
        let (at, len) = place.to_parts();
        let mut metas = self.metas.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = metas.get(&at) {
            return Some(Arc::clone(m));
        }
        let mut bytes = Vec::new();
        self.events.spill().must_read(at, len as usize, &mut bytes);
        let meta = Arc::new(Meta::decode(&bytes)?);
        if metas.len() >= METAS_KEPT {
            metas.clear();
        }
        metas.insert(at, Arc::clone(&meta));
        Some(meta)
    }

    /// The live objects once the first `applied` events (of all) took effect: those of the
    /// snapshot before, with the events after it applied.
    fn live(&self, applied: usize) -> Arc<Live> {
        {
            let lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, live)) = lists.iter().find(|(a, _)| *a == applied) {
                return Arc::clone(live);
            }
        }
        let from = self.snapshots.partition_point(|s| s.applied <= applied);
        let (mut live, start) = match from.checked_sub(1).map(|i| self.snapshots[i]) {
            Some(s) => (read_snapshot(self.events.spill(), s.place), s.applied),
            None => (Vec::new(), 0),
        };
        // Where each live version is in `live`.
        let mut at: HashMap<u32, usize> = HashMap::default();
        at.reserve(live.len());
        for (i, (_, slot, _)) in live.iter().enumerate() {
            at.insert(*slot, i);
        }
        let mut added = false;
        let rows = self.events.read(start, applied);
        for (i, e) in (start..).zip(rows) {
            let slot = i as u32;
            let deleted = e.kind == EventType::Deleted;
            match at.remove(&e.previous) {
                Some(j) => {
                    live[j].1 = if deleted { NONE } else { slot };
                    live[j].2 = e;
                    if !deleted {
                        at.insert(slot, j);
                    }
                }
                None if !deleted => {
                    let Some(meta) = self.meta(e.meta) else {
                        continue;
                    };
                    let key = ObjectKey {
                        namespace: meta.namespace.to_string(),
                        name: meta.name.to_string(),
                    };
                    at.insert(slot, live.len());
                    live.push((key, slot, e));
                    added = true;
                }
                None => {}
            }
        }
        live.retain(|(_, slot, _)| *slot != NONE);
        if added {
            live.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
        let live = Arc::new(live);
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        if lists.len() >= LISTS_KEPT {
            lists.remove(0);
        }
        lists.push((applied, Arc::clone(&live)));
        live
    }

    /// The object `namespace/name` at `position`, if it exists then.
    pub fn get(&self, position: usize, namespace: &str, name: &str) -> Option<Arc<Version>> {
        let live = self.live(self.before_base + self.applied_at(position));
        let i = live
            .binary_search_by(|(k, _, _)| {
                (k.namespace.as_str(), k.name.as_str()).cmp(&(namespace, name))
            })
            .ok()?;
        let (_, slot, e) = &live[i];
        self.version_of(*slot, e)
    }

    /// Every object at `position` in key order (namespace, then name), starting after `after`.
    pub fn list(
        &self,
        position: usize,
        after: Option<&ObjectKey>,
    ) -> impl Iterator<Item = (ObjectKey, Arc<Version>)> + '_ {
        let live = self.live(self.before_base + self.applied_at(position));
        let from = after.map_or(0, |k| live.partition_point(|(key, _, _)| key <= k));
        (from..live.len()).filter_map(move |i| {
            let (key, slot, e) = &live[i];
            Some((key.clone(), self.version_of(*slot, e)?))
        })
    }
}

/// The live objects a snapshot holds.
fn read_snapshot(spill: &Spill, place: Place) -> Live {
    let (at, len) = place.to_parts();
    let mut bytes = Vec::new();
    spill.must_read(at, len as usize, &mut bytes);
    let mut b = Take(&bytes);
    let mut live = Vec::new();
    while !b.is_empty() {
        let entry = (|| {
            let slot = b.u32()?;
            let e = Ev::take(b.bytes(Ev::SIZE)?);
            let namespace = b.str()?.to_owned();
            let name = b.str()?.to_owned();
            Some((ObjectKey { namespace, name }, slot, e))
        })();
        match entry {
            Some(e) => live.push(e),
            None => panic!("internal error: a snapshot of the server's own does not read"),
        }
    }
    live
}

/// Appends a snapshot's record of `live` (in key order).
fn write_snapshot(live: &[(ObjectKey, u32, Ev)], out: &mut Vec<u8>) {
    for (key, slot, e) in live {
        put_u32(out, *slot);
        e.put(out);
        put_str(out, &key.namespace);
        put_str(out, &key.name);
    }
}

#[derive(Debug)]
pub struct Timeline {
    header: Header,
    end: Timestamp,
    /// The latest record time up to each record, in nanoseconds.
    times: Rows<i64>,
    base: usize,
    kinds: Vec<KindTimeline>,
    namespaces: Vec<String>,
    warnings: Vec<String>,
}

impl Timeline {
    /// Reads a whole recording; fails on any damage (see [`Timeline::new`] to serve what is
    /// readable of a damaged one). Each record is kept as it is read, its object against the
    /// same object's last one ([`Json`]): the recording is never held decoded.
    pub fn read<R: Read>(input: R) -> Result<Timeline, rf_format::Error> {
        let mut reader = Reader::new(input)?;
        let mut indexing = Indexing::new(reader.header());
        while let Some(r) = reader.next_record()? {
            indexing.push(r);
        }
        let trailer = reader.trailer().copied();
        Ok(indexing.finish(reader.header().clone(), trailer))
    }

    /// Indexes `records` (in recording order). Records whose object is not a Kubernetes object
    /// are skipped, with a warning.
    pub fn new(header: Header, records: Vec<Record>, trailer: Option<Trailer>) -> Timeline {
        let mut indexing = Indexing::new(&header);
        for r in records {
            indexing.push(r);
        }
        indexing.finish(header, trailer)
    }

    /// What its scratch file holds.
    pub fn scratch(&self) -> Scratch {
        let spill = self.times.spill();
        Scratch {
            in_file: spill.in_file(),
            held: spill.held(),
        }
    }

    /// Where its versions and rows are kept.
    #[cfg(test)]
    pub(crate) fn spill(&self) -> &Arc<Spill> {
        self.times.spill()
    }

    /// The recording's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// When recording began.
    pub fn start(&self) -> Timestamp {
        self.header.started_at
    }

    /// When recording stopped: the trailer's time, or the last record's.
    pub fn end(&self) -> Timestamp {
        self.end
    }

    /// How many records the recording holds: the last position.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// True for a recording without records.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The oldest served position: after the recording's initial lists.
    pub fn base_position(&self) -> usize {
        self.base
    }

    /// The time of the state at `position`: the latest record time up to it.
    pub fn time_at(&self, position: usize) -> Timestamp {
        match position.min(self.times.len()) {
            0 => self.header.started_at,
            p => self
                .times
                .get(p - 1)
                .map_or(self.header.started_at, Timestamp),
        }
    }

    /// The position of the state at time `t`: every record observed at or before `t`, and never
    /// before the base.
    pub fn position_at(&self, t: Timestamp) -> usize {
        let t = t.as_unix_nanos();
        self.times.partition_point(0, |x| *x <= t).max(self.base)
    }

    /// Every served kind, in [`Kind`] order.
    pub fn kinds(&self) -> &[KindTimeline] {
        &self.kinds
    }

    /// The served kind with this group and plural.
    pub fn kind(&self, group: &str, plural: &str) -> Option<&KindTimeline> {
        self.kinds
            .iter()
            .find(|k| k.resource.group == group && k.resource.plural == plural)
    }

    /// The recording's namespaces: the header's, then those of records, in first-seen order.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// What could not be served as recorded (skipped records, rewritten resourceVersions).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// The bytes of the last version of live objects, by [`rf_format::push_object_key`], and the
/// [`Json`] they are: what the next version is kept against. At most [`RECENT_BUDGET`] bytes
/// of them: past it, some are forgotten (their next version is kept as a new object's), so
/// that a kind's many objects that rarely change (a cluster's Events) do not stay in memory.
#[derive(Default)]
struct Recent {
    by_key: HashMap<Box<[u8]>, (Json, Vec<u8>)>,
    key: Vec<u8>,
    bytes: usize,
    /// The version of the kind kept whole last, and its bytes: a new object, and an object's
    /// version after a full chain of deltas, is kept against it (objects of a kind are much
    /// alike: a new Pod repeats its siblings, a new Event the Events before it), so that only
    /// the first version of a kind, and one unlike it, is kept whole.
    template: Option<(Json, Vec<u8>)>,
}

/// What [`Recent`] keeps of a kind's objects, at most.
const RECENT_BUDGET: usize = 4 << 20;

impl Recent {
    fn key_of(&mut self, namespace: &str, name: &str) {
        self.key.clear();
        rf_format::push_object_key(&mut self.key, namespace, name);
    }

    /// `bytes` kept against the last version of the object, if any (with `delta`, the pieces
    /// that may rebuild them from it: see [`Json::after`]); they become the last version's.
    /// `None` for bytes too long to keep (4 GiB).
    fn keep(
        &mut self,
        namespace: &str,
        name: &str,
        bytes: &[u8],
        delta: Option<&[u8]>,
        encoder: &mut Encoder,
    ) -> Option<Json> {
        self.key_of(namespace, name);
        let added = bytes.len();
        let json = match self.by_key.get_mut(self.key.as_slice()) {
            Some((base, base_bytes)) => {
                // At the end of a chain, the next version starts one from the kind's template:
                // one delta from a version kept whole, where a whole one would repeat it.
                let json = match &self.template {
                    Some((template, template_bytes)) if base.chain_is_full() => {
                        Json::after(template, template_bytes, bytes, None, encoder)?
                    }
                    _ => Json::after(base, base_bytes, bytes, delta, encoder)?,
                };
                self.bytes -= base_bytes.len();
                *base = json.clone();
                base_bytes.clear();
                base_bytes.extend_from_slice(bytes);
                json
            }
            None => {
                let json = match &self.template {
                    Some((template, template_bytes)) => {
                        Json::after(template, template_bytes, bytes, None, encoder)?
                    }
                    None => encoder.whole(bytes)?,
                };
                self.by_key
                    .insert(self.key.as_slice().into(), (json.clone(), bytes.to_vec()));
                json
            }
        };
        if json.depth() == 0 {
            let (template, template_bytes) = self
                .template
                .get_or_insert_with(|| (json.clone(), Vec::new()));
            *template = json.clone();
            template_bytes.clear();
            template_bytes.extend_from_slice(bytes);
        }
        self.bytes += added;
        if self.bytes > RECENT_BUDGET {
            // Down to half, the others first.
            let mut bytes = self.bytes;
            let key = &self.key;
            self.by_key.retain(|k, (_, b)| {
                if bytes <= RECENT_BUDGET / 2 || k.as_ref() == key.as_slice() {
                    return true;
                }
                bytes -= b.len();
                false
            });
            self.bytes = bytes;
        }
        Some(json)
    }

    fn forget(&mut self, namespace: &str, name: &str) {
        self.key_of(namespace, name);
        if let Some((_, b)) = self.by_key.remove(self.key.as_slice()) {
            self.bytes -= b.len();
        }
    }
}

/// The most records served: record indexes, events and versions are kept as `u32`.
const MAX_RECORDS: usize = (u32::MAX - 1) as usize;

/// The resourceVersions of a kind's records so far (but list beginnings and gaps): the base's
/// is the highest of those before the base.
#[derive(Clone, Debug, Default)]
struct Before {
    highest: u64,
    /// The first that is not a decimal integer.
    error: Option<String>,
}

/// One kind's timeline as its records are read: every event, from the first record (where the
/// base is, the end decides).
struct Building {
    /// Each live object's last version, by [`rf_format::push_object_key`] of its metadata's
    /// namespace and name.
    live: HashMap<Box<[u8]>, Last>,
    key: Vec<u8>,
    events: Rows<Ev>,
    snapshots: Vec<Snapshot>,
    texts: Texts,
    /// Every ListEnd: its record and resourceVersion.
    list_ends: Vec<(u32, Rv)>,
    /// Every list: where it began, and its resourceVersion once it ended.
    groups: Vec<(u32, Option<Rv>)>,
    open_group: Option<u32>,
    before: Before,
    skipped: usize,
    has_records: bool,
}

/// A live object's last version: what its next record is compared with, and what a deletion
/// without an object deletes.
#[derive(Clone)]
struct Last {
    slot: u32,
    /// The event that made it (where its bytes are).
    ev: Ev,
    meta: Arc<Meta>,
}

/// A recording being indexed as it is read, one record at a time: what [`Timeline::read`] does,
/// for a caller that reads the recording itself (and decides what to do with damage). Each
/// record is taken into its kind's timeline as it comes; only what is served is kept, and the
/// objects' bytes go to the scratch file.
pub struct Indexing {
    times: Rows<i64>,
    latest: Timestamp,
    /// Each kind's first ListEnd.
    first_list_end: BTreeMap<Kind, usize>,
    /// At each kind's first ListEnd, which may be where the base is: that position, and every
    /// kind's [`Before`] then.
    cuts: Vec<(usize, Vec<(Kind, Before)>)>,
    namespaces: Vec<String>,
    seen_namespaces: HashSet<String>,
    kinds: BTreeMap<Kind, Building>,
    preparer: Preparer,
    /// Where the versions' bytes and the rows are kept (memory, if no spill file could be
    /// made).
    spill: Arc<Spill>,
    warnings: Vec<String>,
    /// Records past [`MAX_RECORDS`] were left out.
    overflow: bool,
}

impl std::fmt::Debug for Indexing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexing")
            .field("records", &self.times.len())
            .finish_non_exhaustive()
    }
}

impl Indexing {
    /// Starts indexing the recording that `header` begins.
    pub fn new(header: &Header) -> Indexing {
        let mut warnings = Vec::new();
        let spill = match Spill::create() {
            Ok(spill) => spill,
            Err(e) => {
                warnings.push(format!(
                    "no scratch file in {} ({e}): every version is kept in memory",
                    std::env::temp_dir().display()
                ));
                Spill::memory()
            }
        };
        Indexing {
            times: Rows::new(Arc::clone(&spill)),
            latest: header.started_at,
            first_list_end: BTreeMap::new(),
            cuts: Vec::new(),
            namespaces: header.source.namespaces.clone(),
            seen_namespaces: header.source.namespaces.iter().cloned().collect(),
            kinds: BTreeMap::new(),
            preparer: Preparer::new(Arc::clone(&spill)),
            spill,
            warnings,
            overflow: false,
        }
    }

    /// How many records were indexed.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// True before the first record.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Indexes the next record. Past 4,294,967,294 records the rest are not served, with a
    /// warning.
    pub fn push(&mut self, r: Record) {
        let prepared = self.preparer.prepare(r, None);
        self.push_prepared(prepared);
    }

    /// What [`Indexing::push`] does on this thread that another can do: a [`Preparer`] (of this
    /// indexing) prepares records in order there, and [`Indexing::push_prepared`] takes them in
    /// the same order here.
    pub fn preparer(&self) -> Preparer {
        Preparer::new(Arc::clone(&self.spill))
    }

    /// Indexes the next record, prepared by [`Indexing::preparer`]'s preparer.
    pub fn push_prepared(&mut self, p: Prepared) {
        let Prepared {
            record: mut r,
            json,
            meta,
        } = p;
        let index = self.times.len();
        if index >= MAX_RECORDS {
            if !self.overflow {
                self.overflow = true;
                self.warnings.push(format!(
                    "only the first {MAX_RECORDS} records are served; record {} and later are not",
                    r.seq
                ));
            }
            return;
        }
        self.latest = self.latest.max(r.observed_at);
        self.times.push(self.latest.as_unix_nanos());
        if !r.namespace.is_empty() && !self.seen_namespaces.contains(&r.namespace) {
            self.seen_namespaces.insert(r.namespace.clone());
            self.namespaces.push(r.namespace.clone());
        }
        let Record {
            seq,
            kind,
            op,
            namespace,
            name,
            resource_version,
            ..
        } = r;
        let list_end = op == Op::ListEnd;
        let b = match self.kinds.get_mut(&kind) {
            Some(b) => b,
            None => self
                .kinds
                .entry(kind.clone())
                .or_insert_with(|| Building::new(Arc::clone(&self.spill))),
        };
        // Read against the object's version before, whose strings and labels it mostly shares.
        let meta = match (&json, meta) {
            (Some(_), None) => Some(json::meta_like(
                &std::mem::take(&mut r.object),
                b.live_meta(&namespace, &name).as_deref(),
            )),
            (_, meta) => meta,
        };
        let head = Head {
            seq,
            kind: &kind,
            op,
            namespace,
            name,
            resource_version,
        };
        b.push(index as u32, head, json, meta, &mut self.warnings);
        if list_end && !self.first_list_end.contains_key(&kind) {
            self.first_list_end.insert(kind, index);
            let before = self
                .kinds
                .iter()
                .map(|(k, b)| (k.clone(), b.before.clone()))
                .collect();
            self.cuts.push((index + 1, before));
        }
    }

    /// The timeline of the records indexed, `header` and `trailer` those of their recording.
    pub fn finish(self, header: Header, trailer: Option<Trailer>) -> Timeline {
        let Indexing {
            times,
            latest,
            cuts,
            namespaces,
            mut kinds,
            spill,
            mut warnings,
            ..
        } = self;
        let end = trailer.map_or(latest, |t| t.closed_at.max(latest));
        // The base: after every kind's first list has ended.
        let (base, before) = cuts
            .into_iter()
            .max_by_key(|(at, _)| *at)
            .unwrap_or_default();
        let mut all: Vec<Kind> = header.source.kinds.clone();
        all.extend(kinds.keys().cloned());
        all.sort();
        all.dedup();
        let kinds = all
            .into_iter()
            .map(|kind| {
                let b = kinds
                    .remove(&kind)
                    .unwrap_or_else(|| Building::new(Arc::clone(&spill)));
                let pre = before
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map(|(_, b)| b.clone())
                    .unwrap_or_default();
                b.finish(&kind, base, pre, &mut warnings)
            })
            .collect();
        if let Err(e) = spill.flush() {
            warnings.push(format!(
                "the scratch file could not be written ({e}): what it did not take is kept in memory"
            ));
        }
        Timeline {
            header,
            end,
            times,
            base,
            kinds,
            namespaces,
            warnings,
        }
    }
}

/// What of a record [`Building::push`] reads besides its object.
struct Head<'a> {
    seq: u64,
    kind: &'a Kind,
    op: Op,
    namespace: String,
    name: String,
    resource_version: String,
}

/// A record prepared for [`Indexing::push_prepared`] by a [`Preparer`].
#[derive(Debug)]
pub struct Prepared {
    /// The record, with its object: its metadata is read on the indexing thread.
    record: Record,
    /// Its object, kept.
    json: Option<Json>,
    /// Why its object is not served, or for an empty object its metadata.
    meta: Option<Result<Meta, String>>,
}

/// Keeps records' objects (in the scratch file, each against its object's last version): the
/// part of indexing that can run on the thread that reads the recording
/// ([`Indexing::preparer`]), which also inflates it. It prepares the records of one recording in
/// order. Reading an object's metadata, which costs about as much as keeping it, is left to the
/// indexing thread so that both threads are about as busy.
pub struct Preparer {
    recent: BTreeMap<Kind, Recent>,
    encoder: Encoder,
}

impl std::fmt::Debug for Preparer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preparer").finish_non_exhaustive()
    }
}

impl Prepared {
    /// When its record was observed.
    pub fn observed_at(&self) -> Timestamp {
        self.record.observed_at
    }
}

impl Preparer {
    fn new(spill: Arc<Spill>) -> Preparer {
        Preparer {
            recent: BTreeMap::new(),
            encoder: Encoder::new(spill),
        }
    }

    /// Prepares the next record; `delta` is its delta body's pieces, if the recording has them
    /// ([`rf_format::Reader::delta`]), so that they need not be encoded again.
    pub fn prepare(&mut self, record: Record, delta: Option<&[u8]>) -> Prepared {
        let deleted = matches!(record.op, Op::Deleted { .. });
        let (json, meta) = if !record.op.has_object() {
            (None, None)
        } else if record.object.is_empty() {
            // A deletion without its object is of the last state; any other record of an
            // object without one is not served.
            (None, (!deleted).then(|| json::meta(&record.object)))
        } else {
            let recent = match self.recent.get_mut(&record.kind) {
                Some(r) => r,
                None => self.recent.entry(record.kind.clone()).or_default(),
            };
            // Kept whether or not it is an object: the base of the object's next version.
            match recent.keep(
                &record.namespace,
                &record.name,
                &record.object,
                delta,
                &mut self.encoder,
            ) {
                Some(json) => (Some(json), None),
                None => (None, Some(Err("an object of 4 GiB or more".to_owned()))),
            }
        };
        if deleted {
            if let Some(recent) = self.recent.get_mut(&record.kind) {
                recent.forget(&record.namespace, &record.name);
            }
        }
        Prepared { record, json, meta }
    }
}

impl Building {
    fn new(spill: Arc<Spill>) -> Building {
        Building {
            live: HashMap::default(),
            key: Vec::new(),
            events: Rows::new(spill),
            snapshots: Vec::new(),
            texts: Texts::default(),
            list_ends: Vec::new(),
            groups: Vec::new(),
            open_group: None,
            before: Before::default(),
            skipped: 0,
            has_records: false,
        }
    }

    fn key_of(&mut self, namespace: &str, name: &str) {
        self.key.clear();
        rf_format::push_object_key(&mut self.key, namespace, name);
    }

    /// The metadata of the live object `namespace`/`name`, if any.
    fn live_meta(&mut self, namespace: &str, name: &str) -> Option<Arc<Meta>> {
        self.key_of(namespace, name);
        self.live
            .get(self.key.as_slice())
            .map(|l| Arc::clone(&l.meta))
    }

    /// Writes the live objects, when enough events came since they were written last.
    fn snapshot(&mut self) {
        let applied = self.events.len();
        let last = self.snapshots.last().map_or(0, |s| s.applied);
        if applied - last < SNAPSHOT_EVERY.max(self.live.len()) {
            return;
        }
        let mut live: Live = self
            .live
            .values()
            .map(|l| {
                let key = ObjectKey {
                    namespace: l.meta.namespace.to_string(),
                    name: l.meta.name.to_string(),
                };
                (key, l.slot, l.ev)
            })
            .collect();
        live.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut bytes = Vec::new();
        write_snapshot(&live, &mut bytes);
        let Ok(len) = u32::try_from(bytes.len()) else {
            return;
        };
        let at = self.events.spill().append(&bytes, Holds::Snapshots);
        self.snapshots.push(Snapshot {
            applied,
            place: Place::from_parts(at, len),
        });
    }

    fn push(
        &mut self,
        index: u32,
        r: Head<'_>,
        json: Option<Json>,
        meta: Option<Result<Meta, String>>,
        warnings: &mut Vec<String>,
    ) {
        self.has_records = true;
        let rv = self.texts.rv(&r.resource_version);
        if !matches!(r.op, Op::ListBegin | Op::Gap { .. }) && !self.texts.is_empty(rv) {
            match self.texts.parse(rv) {
                Ok(v) => self.before.highest = self.before.highest.max(v),
                Err(e) => {
                    self.before.error.get_or_insert(e);
                }
            }
        }
        match &r.op {
            Op::ListBegin => {
                self.groups.push((index, None));
                self.open_group = u32::try_from(self.groups.len() - 1).ok();
            }
            Op::ListEnd => {
                if let Some(g) = self.open_group.take() {
                    self.groups[g as usize].1 = Some(rv);
                }
                self.list_ends.push((index, rv));
            }
            Op::Gap { .. } => {}
            Op::Added | Op::Modified | Op::Listed | Op::Deleted { .. } => {
                self.object(index, &r, rv, json, meta, warnings);
            }
        }
    }

    fn object(
        &mut self,
        index: u32,
        r: &Head<'_>,
        rv: Rv,
        json: Option<Json>,
        meta: Option<Result<Meta, String>>,
        warnings: &mut Vec<String>,
    ) {
        let deleted = matches!(r.op, Op::Deleted { .. });
        let inferred = matches!(r.op, Op::Deleted { inferred: true });
        let from_record = json.is_some();
        // The version: its bytes, metadata and recorded resourceVersion.
        let parsed = match (json, meta) {
            (None, None) => {
                self.key_of(&r.namespace, &r.name);
                match self.live.get(self.key.as_slice()) {
                    Some(l) => Ok((
                        l.ev.json(self.events.spill()),
                        Arc::clone(&l.meta),
                        l.ev.own,
                    )),
                    None => return,
                }
            }
            (_, Some(Err(e))) => Err(e),
            // Not made by a preparer: an empty object never reads as one.
            (None, Some(Ok(_))) | (Some(_), None) => Err("not a Kubernetes object".to_owned()),
            (Some(json), Some(Ok(mut meta))) => {
                if meta.name.is_empty() {
                    meta.name = Arc::from(r.name.as_str());
                }
                if meta.namespace.is_empty() {
                    meta.namespace = Arc::from(r.namespace.as_str());
                }
                let own = self.texts.rv(&std::mem::take(&mut meta.resource_version));
                let own = own.value | if own.text { OWN_TEXT } else { 0 };
                self.key_of(&meta.namespace, &meta.name);
                Ok((json, Arc::new(meta), own))
            }
        };
        let (json, meta, own) = match parsed {
            Ok(x) => x,
            Err(e) => {
                self.skipped += 1;
                if self.skipped <= 3 {
                    warnings.push(format!(
                        "{} record {} ({}/{}) skipped: {e}",
                        r.kind, r.seq, r.namespace, r.name
                    ));
                }
                return;
            }
        };
        let Some(place) = json.place() else {
            // Versions are kept where the preparer keeps them, never in memory.
            self.skipped += 1;
            return;
        };
        let existing = self.live.get(self.key.as_slice());
        let event = match (deleted, existing) {
            (true, Some(_)) => Some(EventType::Deleted),
            (true, None) => None,
            (false, None) => Some(EventType::Added),
            (false, Some(o))
                if r.op == Op::Listed
                    && self.texts.same(own_rv(o.ev.own), own_rv(own))
                    && *o.meta == *meta
                    && o.ev.json(self.events.spill()) == json =>
            {
                None
            }
            (false, Some(_)) => Some(EventType::Modified),
        };
        let Some(event) = event else { return };
        // Metadata is kept once per run of an object's versions that have the same.
        let (meta, meta_place) = match existing {
            Some(o) if *o.meta == *meta => (Arc::clone(&o.meta), o.ev.meta),
            _ => {
                let mut bytes = Vec::new();
                meta.encode(&mut bytes);
                let Ok(len) = u32::try_from(bytes.len()) else {
                    return;
                };
                let at = self.events.spill().append(&bytes, Holds::Metadata);
                (meta, Place::from_parts(at, len))
            }
        };
        let previous = existing.map_or(NONE, |o| o.slot);
        let Ok(at) = u32::try_from(self.events.len()) else {
            return;
        };
        let relisted = matches!(r.op, Op::Listed | Op::Deleted { inferred: true });
        let mut flags = 0;
        if rv.text {
            flags |= RV_TEXT;
        }
        if from_record {
            flags |= FROM_RECORD;
        }
        if inferred {
            flags |= INFERRED;
        }
        let ev = Ev {
            rv: rv.value,
            index,
            previous,
            group: match self.open_group {
                Some(g) if relisted => g,
                _ => NONE,
            },
            kind: event,
            flags,
            place,
            len: u32::try_from(json.len()).unwrap_or(u32::MAX),
            depth: json.depth(),
            meta: meta_place,
            own,
        };
        self.events.push(ev);
        if deleted {
            self.live.remove(self.key.as_slice());
        } else {
            let last = Last { slot: at, ev, meta };
            match self.live.get_mut(self.key.as_slice()) {
                Some(l) => *l = last,
                None => {
                    self.live.insert(self.key.as_slice().into(), last);
                }
            }
        }
        self.snapshot();
    }

    fn finish(
        mut self,
        kind: &Kind,
        base: usize,
        before: Before,
        warnings: &mut Vec<String>,
    ) -> KindTimeline {
        if self.skipped > 3 {
            warnings.push(format!("{kind}: {} more records skipped", self.skipped - 3));
        }
        let before_base = self
            .events
            .partition_point(0, |e| (e.index as usize) < base);
        let (rv_mode, rv_note, base_rv) = match self.recorded_rvs(base, before_base, before) {
            Ok(base_rv) => (RvMode::Recorded, None, base_rv),
            Err(why) => {
                if self.has_records {
                    warnings.push(format!(
                        "{kind}: serving a counter as resourceVersion ({why})"
                    ));
                }
                let counter = self.events.update(before_base, |_, e| {
                    e.rv = u64::from(e.index) + 2;
                    Ok::<(), ()>(())
                });
                debug_assert!(counter.is_ok());
                (RvMode::Counter, Some(why), base as u64 + 1)
            }
        };
        KindTimeline {
            resource: Resource::for_kind(kind),
            rv_mode,
            rv_note,
            base_position: base,
            base_rv,
            events: self.events,
            snapshots: self.snapshots,
            texts: self.texts,
            before_base,
            metas: Mutex::new(HashMap::default()),
            lists: Mutex::new(Vec::new()),
        }
    }

    /// Serves the recorded resourceVersions when they can be: decimal integers, each event's
    /// above every earlier record's, a relist's events at their list's version. Sets each served
    /// event's and returns the base's; else says why (and the served events' are left half
    /// set).
    fn recorded_rvs(
        &mut self,
        base: usize,
        before_base: usize,
        before: Before,
    ) -> Result<u64, String> {
        let Building {
            events,
            texts,
            groups,
            list_ends,
            ..
        } = self;
        let texts = &*texts;
        let record_rv = |e: &Ev| Rv {
            value: e.rv,
            text: e.flags & RV_TEXT != 0,
        };
        if let Some(e) = before.error {
            return Err(e);
        }
        let mut base_rv = before.highest;
        if base_rv == 0 {
            base_rv = match events.get(before_base) {
                Some(e) => texts.parse(record_rv(&e))?.saturating_sub(1),
                None => 0,
            };
        }
        if base_rv == 0 {
            return Err("no recorded resourceVersion to start from".to_owned());
        }
        // The relists' versions (of lists begun after the base that ended).
        let mut group_rvs: Vec<Option<u64>> = Vec::with_capacity(groups.len());
        for (began, end) in groups.iter() {
            group_rvs.push(match end {
                Some(rv) if *began as usize >= base => Some(texts.parse(*rv)?),
                _ => None,
            });
        }
        let mut max = base_rv;
        let list_ends = list_ends.iter().filter(|(at, _)| *at as usize >= base);
        let mut list_ends = list_ends.peekable();
        events.update(before_base, |_, e| {
            // The lists that ended before this event, in record order.
            while let Some((_, rv)) = list_ends.next_if(|(at, _)| *at < e.index) {
                let rv = texts.parse(*rv)?;
                if rv < max {
                    return Err(format!("a list at {rv} after version {max}"));
                }
                max = rv;
            }
            let inferred = e.flags & INFERRED != 0;
            let from_record = e.flags & FROM_RECORD != 0;
            let own = if inferred && texts.is_empty(record_rv(e)) {
                None
            } else {
                Some(texts.parse(record_rv(e))?)
            };
            if from_record && !inferred && !texts.same(e.own(), record_rv(e)) {
                return Err(format!(
                    "record resourceVersion {:?} differs from the object's {:?}",
                    texts.string(record_rv(e)),
                    texts.string(e.own())
                ));
            }
            match group_rvs.get(e.group as usize).copied().flatten() {
                Some(list_rv) => {
                    if list_rv <= max {
                        return Err(format!("a relist at {list_rv} after version {max}"));
                    }
                    if own.is_some_and(|o| o > list_rv) && !inferred {
                        return Err(format!(
                            "a relisted object at {} above its list's {list_rv}",
                            own.unwrap_or_default()
                        ));
                    }
                    e.rv = list_rv;
                }
                None => {
                    let own = own.ok_or("an inferred deletion without a version")?;
                    if own <= max {
                        return Err(format!("version {own} after version {max}"));
                    }
                    max = own;
                    e.rv = own;
                }
            }
            Ok(())
        })?;
        for (_, rv) in list_ends {
            let rv = texts.parse(*rv)?;
            if rv < max {
                return Err(format!("a list at {rv} after version {max}"));
            }
            max = rv;
        }
        Ok(base_rv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rf_format::Source;

    fn header(kinds: Vec<Kind>) -> Header {
        Header::new(
            "test",
            Timestamp::from_unix_seconds(1000),
            Source {
                namespaces: vec!["ns".into()],
                kinds,
                ..Source::default()
            },
        )
    }

    fn obj(name: &str, rv: &str, extra: &str) -> Vec<u8> {
        format!(
            r#"{{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}","uid":"u-{name}","labels":{{"app":"web"}}}},"spec":{{"x":"{extra}"}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn a_new_object_is_kept_against_the_version_of_its_kind_kept_whole_last() {
        let spill = Spill::memory();
        let mut preparer = Preparer::new(Arc::clone(&spill));
        let mut prepare = |kind: Kind, name: &str, rv: &str, object: Vec<u8>| {
            let record = Record {
                seq: 1,
                observed_at: Timestamp::from_unix_seconds(1),
                kind,
                op: Op::Added,
                namespace: "ns".into(),
                name: name.into(),
                uid: String::new(),
                resource_version: rv.into(),
                actor: None,
                object: object.clone(),
            };
            let json = preparer.prepare(record, None).json.expect("kept");
            assert_eq!(&*json.bytes(), &object[..]);
            json.depth()
        };
        // The first of its kind is whole; the next ones, of other names, are deltas of it.
        assert_eq!(prepare(Kind::ReplicaSet, "a", "1", obj("a", "1", "x")), 0);
        assert_eq!(prepare(Kind::ReplicaSet, "b", "2", obj("b", "2", "x")), 1);
        assert_eq!(prepare(Kind::ReplicaSet, "c", "3", obj("c", "3", "y")), 1);
        // Another kind has its own.
        assert_eq!(prepare(Kind::Pod, "a", "4", obj("a", "4", "x")), 0);
        // A new object unlike the last whole one is whole, and the next new ones are kept
        // against it.
        let unlike = br#"["entirely","different","and","long","enough"]"#.to_vec();
        assert_eq!(prepare(Kind::ReplicaSet, "d", "5", unlike.clone()), 0);
        let mut alike = unlike.clone();
        alike.insert(1, b'0');
        alike.insert(2, b',');
        assert_eq!(prepare(Kind::ReplicaSet, "e", "6", alike), 1);
        // An object's versions chain until the chain is full; the next starts a new chain
        // from the kind's template, so none after its kind's first is whole.
        let mut depths = Vec::new();
        for v in 0..40 {
            let rv = (100 + v).to_string();
            depths.push(prepare(
                Kind::Pod,
                "web",
                &rv,
                obj("web", &rv, &"x".repeat(v)),
            ));
        }
        let full = depths.iter().position(|&d| d == 15).expect("a full chain");
        assert_eq!(depths[..=full], (1..=15).collect::<Vec<u8>>()[..]);
        assert_eq!(depths[full + 1], 1, "{depths:?}");
        assert!(depths.iter().all(|&d| (1..16).contains(&d)), "{depths:?}");
    }

    struct Rec {
        seq: u64,
        records: Vec<Record>,
    }

    impl Rec {
        fn new() -> Self {
            Rec {
                seq: 0,
                records: Vec::new(),
            }
        }
        fn push(&mut self, op: Op, name: &str, rv: &str, object: Vec<u8>) -> &mut Self {
            self.seq += 1;
            self.records.push(Record {
                seq: self.seq,
                observed_at: Timestamp::from_unix_seconds(1000 + self.seq as i64),
                kind: Kind::ReplicaSet,
                op,
                namespace: "ns".into(),
                name: name.into(),
                uid: String::new(),
                resource_version: rv.into(),
                actor: None,
                object,
            });
            self
        }
        fn timeline(&self) -> Timeline {
            Timeline::new(header(vec![Kind::ReplicaSet]), self.records.clone(), None)
        }
    }

    fn initial_list() -> Rec {
        let mut r = Rec::new();
        r.push(Op::ListBegin, "", "100", vec![])
            .push(Op::Listed, "b", "90", obj("b", "90", "1"))
            .push(Op::Listed, "a", "95", obj("a", "95", "1"))
            .push(Op::ListEnd, "", "100", vec![]);
        r
    }

    fn names(k: &KindTimeline, position: usize) -> Vec<String> {
        k.list(position, None)
            .map(|(key, _)| key.name.clone())
            .collect()
    }

    #[test]
    fn the_base_is_the_state_after_the_initial_lists() {
        let mut r = initial_list();
        r.push(Op::Added, "c", "101", obj("c", "101", "1"));
        let t = r.timeline();
        assert_eq!(t.base_position(), 4);
        let k = &t.kinds()[0];
        assert_eq!(k.rv_mode(), RvMode::Recorded);
        assert_eq!(k.base_rv(), 100);
        assert_eq!(names(k, 4), ["a", "b"]);
        assert_eq!(k.list_rv(4), 100);
        assert_eq!(names(k, 5), ["a", "b", "c"]);
        assert_eq!(k.list_rv(5), 101);
        // Positions before the base are the base.
        assert_eq!(t.position_at(Timestamp::from_unix_seconds(0)), 4);
        assert_eq!(k.list_rv(0), 100);
    }

    #[test]
    fn events_map_ops_to_watch_types_and_keep_recorded_bytes() {
        let mut r = initial_list();
        r.push(Op::Modified, "a", "101", obj("a", "101", "2"))
            .push(Op::Added, "c", "102", obj("c", "102", "1"))
            .push(
                Op::Deleted { inferred: false },
                "b",
                "103",
                obj("b", "103", "1"),
            );
        let t = r.timeline();
        let k = &t.kinds()[0];
        let events = k.events();
        let ev: Vec<_> = events
            .iter()
            .map(|e| (e.kind, &*e.object.meta.name, e.rv))
            .collect();
        assert_eq!(
            ev,
            [
                (EventType::Modified, "a", 101),
                (EventType::Added, "c", 102),
                (EventType::Deleted, "b", 103)
            ]
        );
        assert_eq!(
            &*k.events()[0].object.json.bytes(),
            obj("a", "101", "2").as_slice()
        );
        assert_eq!(
            k.events()[0]
                .previous
                .as_ref()
                .unwrap()
                .meta
                .resource_version,
            "95"
        );
        assert_eq!(names(k, t.len()), ["a", "c"]);
        assert!(k.get(t.len(), "ns", "b").is_none());
        assert!(k.get(4, "ns", "b").is_some());
    }

    #[test]
    fn an_object_s_versions_with_the_same_metadata_share_it_and_changed_labels_are_read() {
        let mut r = initial_list();
        let relabeled = String::from_utf8(obj("a", "102", "3"))
            .unwrap()
            .replace(r#""app":"web""#, r#""app":"web","tier":"1""#)
            .into_bytes();
        r.push(Op::Modified, "a", "101", obj("a", "101", "2"))
            .push(Op::Modified, "a", "102", relabeled)
            .push(Op::Modified, "a", "103", obj("a", "103", "4"));
        let t = r.timeline();
        let k = &t.kinds()[0];
        let events = k.events();
        let labels: Vec<&Arc<BTreeMap<String, String>>> =
            events.iter().map(|e| &e.object.meta.labels).collect();
        let a = k.get(t.base_position(), "ns", "a").unwrap();
        let base = &a.meta.labels;
        assert!(Arc::ptr_eq(base, labels[0]), "the same metadata: kept once");
        assert_eq!(labels[1].get("tier").map(String::as_str), Some("1"));
        assert_eq!(
            labels[2].as_ref(),
            base.as_ref(),
            "back to the first ones, by value"
        );
        assert_eq!(events[2].object.meta.resource_version, "103");
    }

    /// A small random history of 40 objects (added, changed, deleted, relisted) against a
    /// model: every list and get at every position, across many snapshots.
    #[test]
    fn every_list_and_get_at_every_position_is_the_model_s_across_snapshots() {
        let mut r = initial_list();
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut rv = 100;
        // The model: after each record, every live object's name, resourceVersion and bytes.
        let mut live: BTreeMap<String, (String, Vec<u8>)> = BTreeMap::new();
        live.insert("a".into(), ("95".into(), obj("a", "95", "1")));
        live.insert("b".into(), ("90".into(), obj("b", "90", "1")));
        let mut states = vec![live.clone(); r.records.len() + 1];
        for step in 0..3000 {
            rv += 1;
            let name = format!("o{}", next(40));
            let rvs = rv.to_string();
            let body = obj(&name, &rvs, &format!("{step}"));
            if step % 500 == 499 {
                // A relist: everything listed again, one left out (an inferred deletion).
                r.push(Op::ListBegin, "", "", vec![]);
                states.push(live.clone());
                let gone = live.keys().next().cloned();
                for (n, (own, bytes)) in live.clone() {
                    if Some(&n) == gone.as_ref() {
                        continue;
                    }
                    r.push(Op::Listed, &n, &own, bytes);
                    states.push(live.clone());
                }
                if let Some(g) = gone {
                    r.push(Op::Deleted { inferred: true }, &g, "", vec![]);
                    live.remove(&g);
                    states.push(live.clone());
                }
                r.push(Op::ListEnd, "", &rvs, vec![]);
                states.push(live.clone());
                continue;
            }
            let op = match (live.contains_key(&name), next(4)) {
                (false, _) => Op::Added,
                (true, 0) => Op::Deleted { inferred: false },
                (true, _) => Op::Modified,
            };
            if op == (Op::Deleted { inferred: false }) {
                live.remove(&name);
            } else {
                live.insert(name.clone(), (rvs.clone(), body.clone()));
            }
            r.push(op, &name, &rvs, body);
            states.push(live.clone());
        }
        let t = r.timeline();
        let k = &t.kinds()[0];
        assert!(k.snapshots.len() > 10, "{} snapshots", k.snapshots.len());
        assert_eq!(k.rv_mode(), RvMode::Recorded, "{:?}", k.rv_note());
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert_eq!(states.len(), t.len() + 1);
        for (p, want) in states.iter().enumerate().skip(t.base_position()) {
            let got: Vec<(String, String)> = k
                .list(p, None)
                .map(|(key, v)| (key.name, text(&v.json.bytes())))
                .collect();
            let want_list: Vec<(String, String)> = want
                .iter()
                .map(|(n, (_, b))| (n.clone(), text(b)))
                .collect();
            if got != want_list {
                let names = |l: &[(String, String)]| {
                    l.iter()
                        .map(|(n, _)| n.clone())
                        .collect::<Vec<_>>()
                        .join(",")
                };
                panic!(
                    "position {p}: {} against {}",
                    names(&got),
                    names(&want_list)
                );
            }
            for name in ["o3", "o17", "a", "zz"] {
                let got = k.get(p, "ns", name).map(|v| text(&v.json.bytes()));
                assert_eq!(got, want.get(name).map(|(_, b)| text(b)), "{name} at {p}");
            }
            let after = ObjectKey {
                namespace: "ns".into(),
                name: "o2".into(),
            };
            let rest: Vec<String> = k.list(p, Some(&after)).map(|(key, _)| key.name).collect();
            let want_rest: Vec<String> =
                want.keys().filter(|n| n.as_str() > "o2").cloned().collect();
            assert_eq!(rest, want_rest, "after o2 at {p}");
        }
    }

    #[test]
    fn a_watch_from_a_version_starts_after_it_and_too_old_is_gone() {
        let mut r = initial_list();
        r.push(Op::Modified, "a", "101", obj("a", "101", "2")).push(
            Op::Modified,
            "a",
            "105",
            obj("a", "105", "3"),
        );
        let t = r.timeline();
        let k = &t.kinds()[0];
        assert_eq!(k.applied_at(k.position_for_rv(100).unwrap()), 0);
        assert_eq!(k.applied_at(k.position_for_rv(101).unwrap()), 1);
        assert_eq!(k.applied_at(k.position_for_rv(103).unwrap()), 1);
        assert_eq!(k.applied_at(k.position_for_rv(105).unwrap()), 2);
        assert_eq!(
            k.position_for_rv(99),
            Err(TooOld {
                requested: 99,
                oldest: 100
            })
        );
    }

    #[test]
    fn unordered_versions_are_served_as_a_counter() {
        let mut r = initial_list();
        r.push(Op::Modified, "a", "101", obj("a", "101", "2")).push(
            Op::Modified,
            "b",
            "abc",
            obj("b", "abc", "2"),
        );
        let t = r.timeline();
        let k = &t.kinds()[0];
        assert_eq!(k.rv_mode(), RvMode::Counter);
        assert!(t.warnings()[0].contains("counter"), "{:?}", t.warnings());
        assert_eq!(k.base_rv(), 5);
        assert_eq!(k.list_rv(4), 5);
        let e: Vec<_> = k.events().iter().map(|e| e.rv).collect();
        assert_eq!(e, [6, 7]);
        // Objects carry the counter, other bytes untouched.
        let a = k.get(6, "ns", "a").unwrap();
        assert_eq!(a.meta.resource_version, "6");
        assert_eq!(&*a.json.bytes(), obj("a", "6", "2").as_slice());
        let b0 = k.get(4, "ns", "b").unwrap();
        assert_eq!(b0.meta.resource_version, "3");
        assert_eq!(k.applied_at(k.position_for_rv(6).unwrap()), 1);
        assert!(k.position_for_rv(4).is_err());
    }

    #[test]
    fn a_relist_after_a_gap_yields_changes_only_at_the_lists_version() {
        let mut r = initial_list();
        r.push(
            Op::Gap {
                reason: "410".into(),
            },
            "",
            "",
            vec![],
        )
        .push(Op::ListBegin, "", "", vec![])
        .push(Op::Listed, "a", "95", obj("a", "95", "1"))
        .push(Op::Listed, "c", "110", obj("c", "110", "1"))
        .push(
            Op::Deleted { inferred: true },
            "b",
            "90",
            obj("b", "90", "1"),
        )
        .push(Op::ListEnd, "", "120", vec![])
        .push(Op::Modified, "a", "121", obj("a", "121", "2"));
        let t = r.timeline();
        let k = &t.kinds()[0];
        assert_eq!(k.rv_mode(), RvMode::Recorded, "{:?}", k.rv_note());
        let events = k.events();
        let ev: Vec<_> = events
            .iter()
            .map(|e| (e.kind, &*e.object.meta.name, e.rv))
            .collect();
        assert_eq!(
            ev,
            [
                (EventType::Added, "c", 120),
                (EventType::Deleted, "b", 120),
                (EventType::Modified, "a", 121)
            ]
        );
        // The inferred deletion carries the relist's version; the relisted object its own.
        assert_eq!(k.events()[1].object.meta.resource_version, "120");
        assert_eq!(k.events()[0].object.meta.resource_version, "110");
        assert_eq!(k.applied_at(k.position_for_rv(110).unwrap()), 0);
        assert_eq!(k.applied_at(k.position_for_rv(120).unwrap()), 2);
    }

    #[test]
    fn without_lists_everything_is_an_event_and_first_seen_is_added() {
        let mut r = Rec::new();
        r.push(Op::Modified, "a", "7", obj("a", "7", "1")).push(
            Op::Modified,
            "a",
            "8",
            obj("a", "8", "2"),
        );
        let t = r.timeline();
        assert_eq!(t.base_position(), 0);
        let k = &t.kinds()[0];
        assert_eq!(k.base_rv(), 6);
        let kinds: Vec<_> = k.events().iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventType::Added, EventType::Modified]);
        assert_eq!(names(k, 0), Vec::<String>::new());
    }

    #[test]
    fn objects_that_are_not_kubernetes_objects_are_skipped_with_a_warning() {
        let mut r = initial_list();
        r.push(Op::Added, "x", "101", b"not json".to_vec()).push(
            Op::Added,
            "c",
            "102",
            obj("c", "102", "1"),
        );
        let t = r.timeline();
        assert!(t.warnings()[0].contains("skipped"), "{:?}", t.warnings());
        assert_eq!(t.kinds()[0].events().len(), 1);
    }

    #[test]
    fn the_committed_rerender_race_recording_serves_its_recorded_versions() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../recordings/rerender-race.rfr"
        );
        let t = Timeline::read(std::fs::File::open(path).unwrap()).unwrap();
        // Expected values come from the records themselves, read here.
        let mut reader = Reader::new(std::fs::File::open(path).unwrap()).unwrap();
        let records: Vec<Record> = (&mut reader).map(Result::unwrap).collect();
        let header = reader.header().clone();
        assert_eq!(t.len(), records.len());
        // The recording opens with every kind's initial list; the base is right after them.
        let initial = records
            .iter()
            .take_while(|r| matches!(r.op, Op::ListBegin | Op::Listed | Op::ListEnd))
            .count();
        assert!(0 < initial && initial < records.len());
        assert_eq!(records[initial - 1].op, Op::ListEnd);
        assert_eq!(t.base_position(), initial);
        assert!(t.warnings().is_empty(), "{:?}", t.warnings());
        // Its scratch file is a file, every byte of it told as what it holds; a kind's first
        // version is whole, the others deltas, which keep the versions in less than half the
        // bytes they have whole, and every kind has rows and metadata.
        let scratch = t.scratch();
        assert!(scratch.in_file);
        assert_eq!(scratch.total(), t.spill().len());
        let held = |what| scratch.held.iter().find(|(h, _)| *h == what).unwrap().1;
        let versions: usize = records.iter().map(|r| r.object.len()).sum();
        assert!(
            2 * (held(Holds::Deltas) + held(Holds::Whole)) < versions as u64,
            "{scratch}; {versions} bytes whole"
        );
        for what in [Holds::Deltas, Holds::Whole, Holds::Rows, Holds::Metadata] {
            assert!(held(what) > 0, "{scratch}");
        }
        // Every kind it holds is served, from its initial list's version to its highest.
        let mut held = header.source.kinds.clone();
        held.extend(records.iter().map(|r| r.kind.clone()));
        held.sort();
        held.dedup();
        let served: Vec<Kind> = t
            .kinds()
            .iter()
            .map(|k| k.resource().kind.clone())
            .collect();
        assert_eq!(served, held);
        let rv = |r: &Record| r.resource_version.parse::<u64>().unwrap();
        for k in t.kinds() {
            let kind = &k.resource().kind;
            assert_eq!(k.rv_mode(), RvMode::Recorded, "{kind}: {:?}", k.rv_note());
            let list_end = records[..initial]
                .iter()
                .find(|r| r.kind == *kind && r.op == Op::ListEnd)
                .unwrap();
            assert_eq!(k.base_rv(), rv(list_end), "{kind}");
            let highest = records.iter().filter(|r| r.kind == *kind).map(rv).max();
            assert_eq!(Some(k.list_rv(t.len())), highest, "{kind}");
        }
        // The ReplicaSets at the end: listed or added, and not deleted since.
        let mut rs: Vec<String> = Vec::new();
        for r in records.iter().filter(|r| r.kind == Kind::ReplicaSet) {
            match r.op {
                Op::Listed | Op::Added | Op::Modified if !rs.contains(&r.name) => {
                    rs.push(r.name.clone());
                }
                Op::Deleted { .. } => rs.retain(|n| *n != r.name),
                _ => {}
            }
        }
        rs.sort();
        assert!(rs.len() > 1);
        let k = t.kind("apps", "replicasets").unwrap();
        assert_eq!(names(k, t.len()), rs);
        // The header's namespaces, then any other a record names, in first-seen order.
        let mut namespaces = header.source.namespaces.clone();
        for r in &records {
            if !r.namespace.is_empty() && !namespaces.contains(&r.namespace) {
                namespaces.push(r.namespace.clone());
            }
        }
        assert_eq!(t.namespaces(), namespaces);
    }
}
