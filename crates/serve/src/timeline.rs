//! The pure part of the server: every served state of every kind, and the watch events between
//! them, built once from a recording and shared read-only by every request.
//!
//! Positions: position `p` is the state after the first `p` records. Positions before the
//! timeline's base (the end of the recording's initial lists) are not served.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::sync::Arc;

use rf_format::{Header, Kind, Op, Reader, Record, Timestamp, Trailer};

use crate::body::{Encoder, Json};
use crate::json::{self, Meta};
use crate::resource::Resource;
use crate::spill::Spill;

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

/// A resourceVersion as recorded: most are decimal integers, kept as one (`Num` only when its
/// decimal is the same string, so that equal strings are equal values).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Rv {
    Num(u64),
    Text(Box<str>),
}

impl Rv {
    fn new(s: &str) -> Rv {
        let canonical = !s.starts_with('+') && (s == "0" || !s.starts_with('0'));
        match s.parse::<u64>() {
            Ok(n) if canonical => Rv::Num(n),
            _ => Rv::Text(s.into()),
        }
    }

    /// The decimal integer it is, as `str::parse` reads it.
    fn parse(&self) -> Result<u64, String> {
        match self {
            Rv::Num(n) => Ok(*n),
            Rv::Text(t) => t
                .parse::<u64>()
                .map_err(|_| format!("{t:?} is not a decimal integer")),
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Rv::Text(t) if t.is_empty())
    }
}

impl std::fmt::Display for Rv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rv::Num(n) => write!(f, "{n}"),
            Rv::Text(t) => f.write_str(t),
        }
    }
}

/// No version (a step where the object is deleted; an event without a version before it).
const NONE: u32 = u32::MAX;

/// One served version, as kept: its [`Version`] is made when asked for.
#[derive(Clone, Debug)]
struct Slot {
    json: Json,
    /// Its metadata, but for the resourceVersion (so that versions share it).
    meta: Arc<Meta>,
    rv: Rv,
    index: u32,
}

/// One event, as kept: its [`Event`] is made when asked for.
#[derive(Clone, Copy, Debug)]
struct Ev {
    rv: u64,
    index: u32,
    object: u32,
    previous: u32,
    kind: EventType,
}

#[derive(Clone, Copy, Debug)]
struct Step {
    /// How many of the kind's events were applied when this state took effect (0: the base).
    applied: u32,
    /// The state (a slot); [`NONE`] once deleted.
    version: u32,
}

/// Every served state of one kind.
///
/// Kept compactly (about 140 bytes an event besides the bytes of its object, which are in the
/// server's scratch file): the [`Version`]s and [`Event`]s a request needs are made from it.
#[derive(Clone, Debug)]
pub struct KindTimeline {
    resource: Resource,
    rv_mode: RvMode,
    rv_note: Option<String>,
    base_position: usize,
    base_rv: u64,
    objects: BTreeMap<ObjectKey, Vec<Step>>,
    slots: Vec<Slot>,
    events: Vec<Ev>,
}

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

    fn version(&self, slot: u32) -> Option<Arc<Version>> {
        let s = self.slots.get(slot as usize)?;
        let mut meta = Meta::clone(&s.meta);
        meta.resource_version = s.rv.to_string();
        Some(Arc::new(Version {
            json: s.json.clone(),
            meta,
            index: s.index as usize,
        }))
    }

    /// How many events follow the base.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// The record index of event `i` (see [`Event::index`]).
    pub fn event_index(&self, i: usize) -> Option<usize> {
        self.events.get(i).map(|e| e.index as usize)
    }

    /// Event `i` after the base, in record order.
    pub fn event(&self, i: usize) -> Option<Event> {
        let e = self.events.get(i)?;
        Some(Event {
            index: e.index as usize,
            kind: e.kind,
            rv: e.rv,
            object: self.version(e.object)?,
            previous: self.version(e.previous),
        })
    }

    /// Every event after the base, in record order, made at once ([`KindTimeline::event`]
    /// makes one).
    pub fn events(&self) -> Vec<Event> {
        (0..self.events.len())
            .filter_map(|i| self.event(i))
            .collect()
    }

    /// How many events are part of the state at `position`; also the index of the first event a
    /// watch starting at `position` sends.
    pub fn applied_at(&self, position: usize) -> usize {
        self.events
            .partition_point(|e| (e.index as usize) < position)
    }

    /// The resourceVersion of the state at `position`.
    pub fn list_rv(&self, position: usize) -> u64 {
        let position = position.max(self.base_position);
        match self.rv_mode {
            RvMode::Counter => (position as u64).saturating_add(1),
            RvMode::Recorded => match self.applied_at(position) {
                0 => self.base_rv,
                j => self.events[j - 1].rv,
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
            RvMode::Recorded => match self.events.partition_point(|e| e.rv <= rv) {
                0 => self.base_position,
                j => self.events[j - 1].index as usize + 1,
            },
        })
    }

    fn version_at(steps: &[Step], applied: usize) -> Option<u32> {
        let i = steps.partition_point(|s| (s.applied as usize) <= applied);
        let version = steps.get(i.checked_sub(1)?)?.version;
        (version != NONE).then_some(version)
    }

    /// The object `namespace/name` at `position`, if it exists then.
    pub fn get(&self, position: usize, namespace: &str, name: &str) -> Option<Arc<Version>> {
        let key = ObjectKey {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        let steps = self.objects.get(&key)?;
        self.version(Self::version_at(steps, self.applied_at(position))?)
    }

    /// Every object at `position` in key order (namespace, then name), starting after `after`.
    pub fn list<'a>(
        &'a self,
        position: usize,
        after: Option<&ObjectKey>,
    ) -> impl Iterator<Item = (&'a ObjectKey, Arc<Version>)> + 'a {
        let applied = self.applied_at(position);
        let range = match after {
            Some(k) => self.objects.range((
                std::ops::Bound::Excluded(k.clone()),
                std::ops::Bound::Unbounded,
            )),
            None => self.objects.range(..),
        };
        range.filter_map(move |(k, steps)| {
            Some((k, self.version(Self::version_at(steps, applied)?)?))
        })
    }
}

/// A recording, indexed for serving: the state of every kind at every position, and the events
/// between them.
#[derive(Clone, Debug)]
pub struct Timeline {
    header: Header,
    end: Timestamp,
    times: Vec<Timestamp>,
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
            p => self.times[p - 1],
        }
    }

    /// The position of the state at time `t`: every record observed at or before `t`, and never
    /// before the base.
    pub fn position_at(&self, t: Timestamp) -> usize {
        self.times.partition_point(|x| *x <= t).max(self.base)
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

/// A record as kept until its kind is indexed: its object against the last one of the same
/// object ([`Json`]).
struct Kept {
    index: u32,
    /// The record's namespace and name ([`Keys`]).
    key: u32,
    seq: u64,
    op: Op,
    resource_version: Rv,
    object: Json,
}

/// The namespace and name of every object of a kind, each kept once.
#[derive(Default)]
struct Keys {
    ids: HashMap<Box<[u8]>, u32>,
    names: Vec<(Box<str>, Box<str>)>,
    key: Vec<u8>,
}

impl Keys {
    fn id(&mut self, namespace: &str, name: &str) -> u32 {
        self.key.clear();
        rf_format::push_object_key(&mut self.key, namespace, name);
        if let Some(&id) = self.ids.get(self.key.as_slice()) {
            return id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(NONE);
        self.ids.insert(self.key.as_slice().into(), id);
        self.names.push((namespace.into(), name.into()));
        id
    }

    fn get(&self, id: u32) -> (&str, &str) {
        self.names
            .get(id as usize)
            .map_or(("", ""), |(ns, n)| (&**ns, &**n))
    }
}

/// The most records served: record indexes, events and versions are kept as `u32`.
const MAX_RECORDS: usize = (u32::MAX - 1) as usize;

/// The bytes of the last version of each live object, by [`rf_format::push_object_key`], and the
/// [`Json`] they are: what the next version is kept or rebuilt against. Live objects only.
#[derive(Default)]
struct Recent {
    by_key: HashMap<Box<[u8]>, (Json, Vec<u8>)>,
    key: Vec<u8>,
}

impl Recent {
    fn key_of(&mut self, namespace: &str, name: &str) {
        self.key.clear();
        rf_format::push_object_key(&mut self.key, namespace, name);
    }

    /// `json`'s bytes, rebuilt against the last version of the object when it is kept against
    /// it; they become the last version's.
    fn rebuild(&mut self, namespace: &str, name: &str, json: &Json) -> &[u8] {
        self.key_of(namespace, name);
        let bytes = match self.by_key.get(self.key.as_slice()) {
            Some((base, base_bytes)) => json.bytes_after(base, base_bytes),
            None => json.bytes().into_owned(),
        };
        self.set(json.clone(), bytes)
    }

    /// `bytes` kept against the last version of the object, if any; they become the last
    /// version's.
    fn keep(&mut self, namespace: &str, name: &str, bytes: Vec<u8>, encoder: &mut Encoder) -> Json {
        self.key_of(namespace, name);
        let json = match self.by_key.get(self.key.as_slice()) {
            Some((base, base_bytes)) => Json::after(base, base_bytes, &bytes, encoder),
            None => encoder.whole(&bytes),
        };
        self.set(json.clone(), bytes);
        json
    }

    /// Sets the last version of the object whose key was made last.
    fn set(&mut self, json: Json, bytes: Vec<u8>) -> &[u8] {
        let key = self.key.as_slice();
        match self.by_key.get_mut(key) {
            Some(slot) => *slot = (json, bytes),
            None => {
                self.by_key.insert(key.into(), (json, bytes));
            }
        }
        self.by_key.get(key).map_or(&[], |(_, b)| b.as_slice())
    }

    fn forget(&mut self, namespace: &str, name: &str) {
        self.key_of(namespace, name);
        self.by_key.remove(self.key.as_slice());
    }
}

/// A recording being indexed as it is read, one record at a time: what [`Timeline::read`] does,
/// for a caller that reads the recording itself (and decides what to do with damage). Only the
/// records' objects as kept ([`Json`]) are held, never the recording decoded.
pub struct Indexing {
    times: Vec<Timestamp>,
    latest: Timestamp,
    /// Each kind's first ListEnd.
    first_list_end: BTreeMap<Kind, usize>,
    namespaces: Vec<String>,
    seen_namespaces: HashSet<String>,
    by_kind: BTreeMap<Kind, (Vec<Kept>, Recent, Keys)>,
    encoder: Encoder,
    /// Where the versions' bytes are kept (memory, if no spill file could be made).
    spill: Option<Arc<Spill>>,
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
            Ok(spill) => Some(spill),
            Err(e) => {
                warnings.push(format!(
                    "no scratch file in {} ({e}): every version is kept in memory",
                    std::env::temp_dir().display()
                ));
                None
            }
        };
        Indexing {
            times: Vec::new(),
            latest: header.started_at,
            first_list_end: BTreeMap::new(),
            namespaces: header.source.namespaces.clone(),
            seen_namespaces: header.source.namespaces.iter().cloned().collect(),
            by_kind: BTreeMap::new(),
            encoder: spill.clone().map(Encoder::spilling).unwrap_or_default(),
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
        self.times.push(self.latest);
        if r.op == Op::ListEnd && !self.first_list_end.contains_key(&r.kind) {
            self.first_list_end.insert(r.kind.clone(), index);
        }
        if !r.namespace.is_empty() && !self.seen_namespaces.contains(&r.namespace) {
            self.seen_namespaces.insert(r.namespace.clone());
            self.namespaces.push(r.namespace.clone());
        }
        let (records, recent, keys) = match self.by_kind.get_mut(&r.kind) {
            Some(kind) => kind,
            None => self.by_kind.entry(r.kind.clone()).or_default(),
        };
        let object = if r.object.is_empty() {
            Json::whole(&[])
        } else {
            recent.keep(&r.namespace, &r.name, r.object, &mut self.encoder)
        };
        if matches!(r.op, Op::Deleted { .. }) {
            recent.forget(&r.namespace, &r.name);
        }
        let op = match r.op {
            // Its reason is not served.
            Op::Gap { .. } => Op::Gap {
                reason: String::new(),
            },
            op => op,
        };
        records.push(Kept {
            index: index as u32,
            key: keys.id(&r.namespace, &r.name),
            seq: r.seq,
            op,
            resource_version: Rv::new(&r.resource_version),
            object,
        });
    }

    /// The timeline of the records indexed, `header` and `trailer` those of their recording.
    pub fn finish(self, header: Header, trailer: Option<Trailer>) -> Timeline {
        let Indexing {
            times,
            latest,
            first_list_end,
            namespaces,
            mut by_kind,
            spill,
            mut warnings,
            ..
        } = self;
        let end = trailer.map_or(latest, |t| t.closed_at.max(latest));
        // The base: after every kind's first list has ended.
        let base = first_list_end.values().map(|i| i + 1).max().unwrap_or(0);
        let mut kinds: Vec<Kind> = header.source.kinds.clone();
        kinds.extend(by_kind.keys().cloned());
        kinds.sort();
        kinds.dedup();
        // Kind by kind, each kind's records dropped as its builder takes what it serves.
        let kinds = kinds
            .into_iter()
            .map(|kind| {
                let (own, keys) = by_kind
                    .remove(&kind)
                    .map(|(r, _, keys)| (r, keys))
                    .unwrap_or_default();
                build_kind(&kind, own, &keys, base, spill.as_ref(), &mut warnings)
            })
            .collect();
        if let Some(spill) = &spill {
            if let Err(e) = spill.flush() {
                warnings.push(format!("the scratch file could not be written: {e}"));
            }
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

/// A record's object after validation.
#[derive(Clone)]
struct Obj {
    /// Its namespace and name, from its metadata ([`Keys`] of the kind's objects).
    key: u32,
    json: Json,
    /// Its metadata but for the resourceVersion, shared with its version before when the same.
    meta: Arc<Meta>,
    /// `metadata.resourceVersion`.
    rv: Rv,
    index: u32,
}

struct RawEvent {
    obj: Obj,
    kind: EventType,
    record_rv: Rv,
    /// Whether the object came from this record (not the last known state).
    from_record: bool,
    inferred: bool,
    /// The relist it is part of, or [`NONE`].
    group: u32,
}

enum Item {
    Event(RawEvent),
    ListEnd(Rv),
}

fn object_of(
    r: &Kept,
    (namespace, name): (&str, &str),
    bytes: &[u8],
    objects: &mut Keys,
) -> Result<Obj, String> {
    let mut meta = json::meta(bytes)?;
    if meta.name.is_empty() {
        meta.name = Arc::from(name);
    }
    if meta.namespace.is_empty() {
        meta.namespace = Arc::from(namespace);
    }
    let rv = Rv::new(&std::mem::take(&mut meta.resource_version));
    Ok(Obj {
        key: objects.id(&meta.namespace, &meta.name),
        json: r.object.clone(),
        meta: Arc::new(meta),
        rv,
        index: r.index,
    })
}

/// `meta`, or `earlier`'s when they are the same; else `meta` with what it has of `earlier`
/// shared.
fn share(meta: Arc<Meta>, earlier: &Arc<Meta>) -> Arc<Meta> {
    if *meta == **earlier {
        return Arc::clone(earlier);
    }
    let mut meta = Arc::unwrap_or_clone(meta);
    meta.share_with(earlier);
    Arc::new(meta)
}

fn build_kind(
    kind: &Kind,
    records: Vec<Kept>,
    keys: &Keys,
    base: usize,
    spill: Option<&Arc<Spill>>,
    warnings: &mut Vec<String>,
) -> KindTimeline {
    let resource = Resource::for_kind(kind);
    let has_records = !records.is_empty();
    // The objects' namespaces and names, from their metadata.
    let mut objects_keys = Keys::default();
    let mut world: HashMap<u32, Obj> = HashMap::new();
    let mut pre_rvs: Vec<Rv> = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    // Relists after the base: their ListEnd resourceVersion, once seen.
    let mut groups: Vec<Option<Rv>> = Vec::new();
    let mut open_group: Option<usize> = None;
    let mut skipped = 0usize;
    let mut base_world: Option<Vec<Obj>> = None;
    // The bytes of each live object's last recorded version, to rebuild the next from.
    let mut recent = Recent::default();

    // By value: each record (and its object) is freed once its `Obj` holds what is served.
    for r in records {
        let r = &r;
        let index = r.index as usize;
        let (namespace, name) = keys.get(r.key);
        if index >= base && base_world.is_none() {
            base_world = Some(world.values().cloned().collect());
        }
        let before_base = index < base;
        if before_base && !matches!(r.op, Op::ListBegin | Op::Gap { .. }) {
            pre_rvs.push(r.resource_version.clone());
        }
        match &r.op {
            Op::ListBegin => {
                if !before_base {
                    groups.push(None);
                    open_group = Some(groups.len() - 1);
                }
            }
            Op::ListEnd => {
                if let Some(g) = open_group.take() {
                    groups[g] = Some(r.resource_version.clone());
                }
                if !before_base {
                    items.push(Item::ListEnd(r.resource_version.clone()));
                }
            }
            Op::Gap { .. } => {}
            Op::Added | Op::Modified | Op::Listed | Op::Deleted { .. } => {
                let deleted = matches!(r.op, Op::Deleted { .. });
                let inferred = matches!(r.op, Op::Deleted { inferred: true });
                let parsed = if deleted && r.object.is_empty() {
                    let key = objects_keys.id(namespace, name);
                    match world.get(&key) {
                        Some(o) => Ok((
                            Obj {
                                index: r.index,
                                ..o.clone()
                            },
                            false,
                        )),
                        None => continue,
                    }
                } else {
                    let bytes = recent.rebuild(namespace, name, &r.object);
                    object_of(r, (namespace, name), bytes, &mut objects_keys).map(|o| (o, true))
                };
                if deleted {
                    recent.forget(namespace, name);
                }
                let (mut obj, from_record) = match parsed {
                    Ok(x) => x,
                    Err(e) => {
                        skipped += 1;
                        if skipped <= 3 {
                            warnings.push(format!(
                                "{kind} record {} ({namespace}/{name}) skipped: {e}",
                                r.seq
                            ));
                        }
                        continue;
                    }
                };
                let existing = world.get(&obj.key);
                // Every version is kept: what it has of its predecessor's metadata is theirs.
                if let Some(o) = existing {
                    obj.meta = share(obj.meta, &o.meta);
                }
                let event = if deleted {
                    existing.map(|_| EventType::Deleted)
                } else {
                    match existing {
                        None => Some(EventType::Added),
                        Some(o)
                            if r.op == Op::Listed
                                && o.rv == obj.rv
                                && o.meta == obj.meta
                                && o.json == obj.json =>
                        {
                            None
                        }
                        Some(_) => Some(EventType::Modified),
                    }
                };
                let Some(event) = event else { continue };
                if deleted {
                    world.remove(&obj.key);
                } else {
                    world.insert(obj.key, obj.clone());
                }
                if !before_base {
                    let relisted = matches!(r.op, Op::Listed | Op::Deleted { inferred: true });
                    let group = match open_group {
                        Some(g) if relisted => u32::try_from(g).unwrap_or(NONE),
                        _ => NONE,
                    };
                    items.push(Item::Event(RawEvent {
                        obj,
                        kind: event,
                        record_rv: r.resource_version.clone(),
                        from_record,
                        inferred,
                        group,
                    }));
                }
            }
        }
    }
    if skipped > 3 {
        warnings.push(format!("{kind}: {} more records skipped", skipped - 3));
    }
    let base_world = base_world.unwrap_or_else(|| world.values().cloned().collect());
    drop(world);
    // A relist that never ended is no relist: its events stand alone.
    for item in &mut items {
        if let Item::Event(e) = item {
            if e.group != NONE && groups[e.group as usize].is_none() {
                e.group = NONE;
            }
        }
    }

    let recorded = recorded_rvs(&pre_rvs, &items, &groups);
    drop(pre_rvs);
    let (rv_mode, rv_note, base_rv, rvs) = match recorded {
        Ok((base_rv, rvs)) => (RvMode::Recorded, None, base_rv, rvs),
        Err(why) => {
            if has_records {
                warnings.push(format!(
                    "{kind}: serving a counter as resourceVersion ({why})"
                ));
            }
            let rvs = items
                .iter()
                .filter_map(|i| match i {
                    Item::Event(e) => Some(u64::from(e.obj.index) + 2),
                    Item::ListEnd(_) => None,
                })
                .collect();
            (RvMode::Counter, Some(why), base as u64 + 1, rvs)
        }
    };

    let mut serving = Serving {
        encoder: spill.cloned().map(Encoder::spilling).unwrap_or_default(),
        ..Serving::default()
    };
    // Each object's steps, by its key.
    let mut steps_of: HashMap<u32, Vec<Step>> = HashMap::new();
    for obj in base_world {
        let rewrite = (rv_mode == RvMode::Counter).then_some(u64::from(obj.index) + 2);
        let key = obj.key;
        let version = serving.version(obj, &objects_keys, rewrite);
        steps_of.insert(
            key,
            vec![Step {
                applied: 0,
                version,
            }],
        );
    }
    let mut events = Vec::new();
    let raw_events = items.into_iter().filter_map(|i| match i {
        Item::Event(e) => Some(e),
        Item::ListEnd(_) => None,
    });
    for (e, rv) in raw_events.zip(rvs) {
        let rewrite = match rv_mode {
            RvMode::Counter => Some(rv),
            RvMode::Recorded if e.inferred || !e.from_record => Some(rv),
            RvMode::Recorded => None,
        };
        let key = e.obj.key;
        let index = e.obj.index;
        let version = serving.version(e.obj, &objects_keys, rewrite);
        if e.kind == EventType::Deleted {
            serving.forget(objects_keys.get(key));
        }
        let steps = steps_of.entry(key).or_default();
        let previous = steps.last().map_or(NONE, |s| s.version);
        events.push(Ev {
            rv,
            index,
            object: version,
            previous,
            kind: e.kind,
        });
        steps.push(Step {
            applied: u32::try_from(events.len()).unwrap_or(NONE),
            version: if e.kind == EventType::Deleted {
                NONE
            } else {
                version
            },
        });
    }
    let objects = steps_of
        .into_iter()
        .map(|(key, mut steps)| {
            steps.shrink_to_fit();
            let (namespace, name) = objects_keys.get(key);
            (
                ObjectKey {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                },
                steps,
            )
        })
        .collect();
    let mut slots = serving.slots;
    slots.shrink_to_fit();
    events.shrink_to_fit();
    KindTimeline {
        resource,
        rv_mode,
        rv_note,
        base_position: base,
        base_rv,
        objects,
        slots,
        events,
    }
}

/// Makes the served versions of a kind's objects, in order: as recorded (sharing the recorded
/// [`Json`]), or with their resourceVersion rewritten (each kept against the object's last
/// served version).
#[derive(Default)]
struct Serving {
    /// The last recorded bytes of each object, to rebuild the next recorded version from.
    recorded: Recent,
    /// The last served bytes of each object whose served versions are rewritten.
    served: Recent,
    encoder: Encoder,
    slots: Vec<Slot>,
}

impl Serving {
    /// Keeps the served version of `obj`; returns its slot.
    fn version(&mut self, obj: Obj, keys: &Keys, rewrite_to: Option<u64>) -> u32 {
        let Obj {
            key,
            json: recorded,
            meta,
            mut rv,
            index,
        } = obj;
        let (namespace, name) = keys.get(key);
        let json = match rewrite_to {
            Some(to) => {
                let text = to.to_string();
                let bytes = self.recorded.rebuild(namespace, name, &recorded);
                match json::with_resource_version(bytes, &text) {
                    Ok(bytes) => {
                        rv = Rv::Num(to);
                        self.served.keep(namespace, name, bytes, &mut self.encoder)
                    }
                    Err(_) => recorded,
                }
            }
            None => recorded,
        };
        let slot = u32::try_from(self.slots.len()).unwrap_or(NONE);
        self.slots.push(Slot {
            json,
            meta,
            rv,
            index,
        });
        slot
    }

    /// The object was deleted: its versions end.
    fn forget(&mut self, (namespace, name): (&str, &str)) {
        self.recorded.forget(namespace, name);
        self.served.forget(namespace, name);
    }
}

/// The base resourceVersion and each event's served resourceVersion, when the recorded ones can
/// be served: decimal integers, each event's above every earlier record's, a relist's events at
/// their list's version.
fn recorded_rvs(
    pre_rvs: &[Rv],
    items: &[Item],
    groups: &[Option<Rv>],
) -> Result<(u64, Vec<u64>), String> {
    let parse = Rv::parse;
    let mut base_rv = 0u64;
    for s in pre_rvs {
        if !s.is_empty() {
            base_rv = base_rv.max(parse(s)?);
        }
    }
    if base_rv == 0 {
        let first = items.iter().find_map(|i| match i {
            Item::Event(e) => Some(parse(&e.record_rv)),
            Item::ListEnd(_) => None,
        });
        base_rv = match first {
            Some(rv) => rv?.saturating_sub(1),
            None => 0,
        };
    }
    if base_rv == 0 {
        return Err("no recorded resourceVersion to start from".to_owned());
    }
    let group_rvs = groups
        .iter()
        .map(|g| g.as_ref().map(parse).transpose())
        .collect::<Result<Vec<_>, _>>()?;
    let mut max = base_rv;
    let mut rvs = Vec::new();
    for item in items {
        match item {
            Item::ListEnd(s) => {
                let rv = parse(s)?;
                if rv < max {
                    return Err(format!("a list at {rv} after version {max}"));
                }
                max = rv;
            }
            Item::Event(e) => {
                let own = if e.inferred && e.record_rv.is_empty() {
                    None
                } else {
                    Some(parse(&e.record_rv)?)
                };
                if e.from_record && !e.inferred && e.obj.rv != e.record_rv {
                    return Err(format!(
                        "record resourceVersion {:?} differs from the object's {:?}",
                        e.record_rv.to_string(),
                        e.obj.rv.to_string()
                    ));
                }
                match group_rvs.get(e.group as usize).copied().flatten() {
                    Some(list_rv) => {
                        if list_rv <= max {
                            return Err(format!("a relist at {list_rv} after version {max}"));
                        }
                        if own.is_some_and(|o| o > list_rv) && !e.inferred {
                            return Err(format!(
                                "a relisted object at {} above its list's {list_rv}",
                                own.unwrap_or_default()
                            ));
                        }
                        rvs.push(list_rv);
                    }
                    None => {
                        let own = own.ok_or("an inferred deletion without a version")?;
                        if own <= max {
                            return Err(format!("version {own} after version {max}"));
                        }
                        max = own;
                        rvs.push(own);
                    }
                }
            }
        }
    }
    Ok((base_rv, rvs))
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
    fn versions_with_their_predecessor_s_labels_share_them() {
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
        assert!(Arc::ptr_eq(base, labels[0]), "the same labels: shared");
        assert!(!Arc::ptr_eq(labels[0], labels[1]), "new labels: their own");
        assert_eq!(labels[1].get("tier").map(String::as_str), Some("1"));
        assert!(!Arc::ptr_eq(labels[1], labels[2]));
        assert_eq!(
            labels[2].as_ref(),
            base.as_ref(),
            "back to the first ones, by value"
        );
        // Other objects with equal labels keep their own: only versions of one object share.
        let b = k.get(t.base_position(), "ns", "b").unwrap();
        let b = &b.meta.labels;
        assert_eq!(b, base);
        assert!(!Arc::ptr_eq(b, base));
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
