//! The replay engine: records in, findings out.

use std::collections::{BTreeMap, BTreeSet};

use crate::base::{HashMap, HashSet};

use rf_format::{Header, Kind, Op, Record, Timestamp};

use crate::base::At;
use crate::base::Str;
use crate::base::by_name::ByName;
use crate::base::time::rfc3339;
use crate::detectors::{self, Detector, Facts, Scene};
use crate::input::prepare::{Parsed, Prepared};
use crate::input::view::{ReplicaSetView, RolloutView};
use crate::model::rollout::{RolloutTrack, Transition};
use crate::model::routes::Routes;
use crate::model::world::{Touched, World};
use crate::report::end::{ApplicationEnd, Resolver, RolloutEnd};
use crate::report::finding::Finding;
use crate::report::pack::PackedFindings;
use crate::report::sink::FindingSink;
use crate::report::timeline::{ReplicaSetState, Role, Timeline};
use crate::report::{
    FileEnd, FileSummary, GapInfo, RecordingSummary, Report, SCHEMA_VERSION, Tool, Window,
};

/// Adds `n` to the count of `key` (copied only the first time).
fn bump(counts: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    match counts.get_mut(key) {
        Some(c) => *c += n,
        None => {
            counts.insert(key.to_owned(), n);
        }
    }
}

/// Records by kind and by op, as the report's `by_kind` and `by_op` count them: by index for
/// the known kinds and every op (`bump`ing the report's maps by name compared strings in two
/// ordered maps for every record), by name for other kinds.
#[derive(Debug, Default)]
struct Counts {
    known: [u64; Kind::KNOWN.len()],
    other: BTreeMap<String, u64>,
    /// By [`Op::index`].
    ops: [u64; Op::NAMES.len()],
}

impl Counts {
    /// Counts `rec`: by its op, and by its kind when it carries an object (a list's begin
    /// and end, and a gap, are the recorder's bookkeeping: a kind listed empty has no records
    /// of its own, as the recorder's summary counts them).
    fn add(&mut self, rec: &Record) {
        if rec.op.has_object() {
            match rec.kind.known_index() {
                Some(i) => self.known[i] += 1,
                None => bump(&mut self.other, rec.kind.name(), 1),
            }
        }
        self.ops[rec.op.index()] += 1;
    }

    /// The counts by name, added to `by_kind` and `by_op` (kinds of one name counted once).
    fn into_maps(self, by_kind: &mut BTreeMap<String, u64>, by_op: &mut BTreeMap<String, u64>) {
        for (kind, n) in Kind::KNOWN.iter().zip(self.known) {
            if n > 0 {
                bump(by_kind, kind.name(), n);
            }
        }
        for (name, n) in self.other {
            bump(by_kind, &name, n);
        }
        for (name, n) in Op::NAMES.iter().zip(self.ops) {
            if n > 0 {
                bump(by_op, name, n);
            }
        }
    }
}

/// Warnings kept verbatim in the report; beyond this they are only counted.
const MAX_WARNINGS: usize = 50;

/// A hole longer than this between one file's end and the next file's first record is a gap
/// (a flight recorder's rotation leaves none).
const HOLE_TOLERANCE_NANOS: i64 = 1_000_000_000;

/// What to analyze.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only findings and timelines of this rollout (namespace, name; an empty namespace: of
    /// that name in any namespace).
    pub rollout: Option<(String, String)>,
    /// Findings before this time are not reported (records before it are still replayed).
    pub since: Option<Timestamp>,
    /// Records after this time are ignored; end-of-recording checks run at this time.
    pub until: Option<Timestamp>,
    /// Keep per-rollout timelines for the report.
    pub timelines: bool,
    /// The records are one snapshot of the cluster (a list at one moment, as `check` takes):
    /// what holds at the end is judged settled, without waiting for grace periods to pass.
    pub snapshot: bool,
    /// Hand the sink each reported condition that stops holding or holds again
    /// ([`FindingSink::condition`](crate::FindingSink::condition)): for a live caller.
    pub conditions: bool,
}

type Key = (String, String);

/// Records of the first lists marked as such up to this `seq` (a bit each: 1 MiB at most).
const MAX_LISTED_SEQ: u64 = 8 << 20;

/// Replays records through the per-rollout state machines and the detectors.
///
/// Streaming: memory grows with the live objects and the rollouts' state changes, not with the
/// number of records. Feed files with [`begin_file`](Analyzer::begin_file), records with
/// [`push`](Analyzer::push) (which returns the findings that became true with that record, for
/// live output), then call [`finish`](Analyzer::finish).
#[derive(Debug)]
pub struct Analyzer {
    opts: Options,
    detectors: Vec<Box<dyn Detector>>,
    tracks: ByName<RolloutTrack>,
    /// Live objects, by their kind, namespace and name as one key
    /// ([`Record::identity_into`]): one lookup per record (this runs on every record), the key
    /// built in `live_key`, a reused buffer, and copied only for a new object.
    live: HashSet<Box<[u8]>>,
    live_key: Vec<u8>,
    /// How many of `live` each kind has.
    live_per_kind: HashMap<Kind, usize>,
    world: World,
    /// The rollouts by what a Service may route to them through: a change of a Service's
    /// endpoints looks at the rollouts it routes to without walking every rollout of the
    /// namespace.
    routes: Routes,
    /// The Services that route to each rollout, kept between looks.
    routing: crate::model::traffic::RoutingCache,
    facts: Facts,
    /// Which rollout owns a ReplicaSet: (namespace, rs name) -> rollout name.
    /// namespace -> ReplicaSet -> rollout, nested like `live`.
    rs_owner: HashMap<String, HashMap<String, String>>,
    /// The Deployment that owns each ReplicaSet a Deployment owns, by namespace and name.
    rs_deployment: HashMap<String, HashMap<String, String>>,
    /// The timelines of plain Deployments, by namespace and name (with `timelines`).
    deployment_timelines: BTreeMap<Key, crate::model::deployment_timeline::DeploymentTimeline>,
    /// The rollouts whose tracking id or instance label names each Argo CD Application, by
    /// the Application's name: a change of an Application looks at the rollouts it manages
    /// without walking every rollout.
    tracked_by: HashMap<String, BTreeSet<Key>>,
    /// Rollouts a detector wants to look at again at a time, even if nothing changes.
    due: ByName<Timestamp>,
    /// No time in `due` is earlier (it may be earlier than all): so that a record with none due
    /// costs one comparison.
    due_from: Option<Timestamp>,
    /// `Options::snapshot` was asked for (not inferred from a header).
    snapshot_requested: bool,
    /// When the current file's history ends so far: its last record, or its trailer's time.
    file_end: Option<Timestamp>,
    /// The previous file's name and end, until the current file's first record is seen.
    hole_from: Option<(String, Timestamp)>,
    /// Findings made since the last pack.
    findings: Vec<Finding>,
    /// The earlier findings, sorted and compressed.
    packed: PackedFindings,
    /// Findings of rules amended at the end, kept out of the packs.
    held: Vec<Finding>,
    pack_every: usize,
    summary: RecordingSummary,
    /// Records by kind and op, for `summary` once the report is made.
    counts: Counts,
    /// The namespaces the files' headers say were recorded, and whether an object of one was
    /// read; `unseen` counts those not yet (the check costs nothing once it is 0).
    namespaces: BTreeMap<String, bool>,
    unseen: usize,
    warnings_dropped: u64,
    /// Notes of rollouts first seen mid-release beyond [`MAX_WARNINGS`].
    before_dropped: u64,
    /// What the lists held of the time before the recording: Events about rollouts, and when
    /// each rollout was first seen.
    history: crate::model::history::History,
    /// The kinds (and the namespace of their list, empty for all) whose first list in the
    /// first file has ended: a record listed before that is what the cluster held when the
    /// recording began.
    lists_done: HashSet<(Kind, String)>,
    /// Of a snapshot: every list is in (set at the end), and the looks at pods deferred until
    /// then.
    lists_in: bool,
    deferred: Vec<(String, String, Touched, At)>,
    /// The first file's lists, by kind and namespace, as its header names them: once they are
    /// all in, a live caller gets the history before the recording reconstructed.
    first_lists: Vec<(Kind, String)>,
    /// The history before the recording was reconstructed already (live), with these notes.
    reconstructed: Option<Vec<(crate::Subject, String)>>,
    /// The `seq` of each record of the first file's first lists, a bit each (up to
    /// [`MAX_LISTED_SEQ`]): their evidence says the object was written at or before the list.
    listed_seqs: Vec<u64>,
    file: u32,
    last_seq: Option<u64>,
    first_at: Option<Timestamp>,
    last_pos: Option<At>,
    closed_at: Option<Timestamp>,
    past_until: bool,
}

impl Analyzer {
    /// An analyzer with every detector.
    pub fn new(opts: Options) -> Self {
        let snapshot = opts.snapshot;
        let snapshot_requested = opts.snapshot;
        let mut summary = RecordingSummary {
            complete: true,
            ..RecordingSummary::default()
        };
        summary.window = Window {
            since: opts.since.map(rfc3339),
            until: opts.until.map(rfc3339),
        };
        Analyzer {
            opts,
            detectors: detectors::all(snapshot),
            tracks: ByName::default(),
            live: HashSet::default(),
            live_key: Vec::new(),
            live_per_kind: HashMap::default(),
            world: World::default(),
            routes: Routes::default(),
            routing: crate::model::traffic::RoutingCache::default(),
            facts: Facts::default(),
            rs_owner: HashMap::default(),
            rs_deployment: HashMap::default(),
            deployment_timelines: BTreeMap::new(),
            tracked_by: HashMap::default(),
            due: ByName::default(),
            due_from: None,
            snapshot_requested,
            file_end: None,
            hole_from: None,
            findings: Vec::new(),
            packed: PackedFindings::default(),
            held: Vec::new(),
            pack_every: crate::report::pack::CHUNK,
            summary,
            counts: Counts::default(),
            namespaces: BTreeMap::new(),
            unseen: 0,
            warnings_dropped: 0,
            before_dropped: 0,
            history: crate::model::history::History::default(),
            lists_done: HashSet::default(),
            lists_in: false,
            deferred: Vec::new(),
            first_lists: Vec::new(),
            reconstructed: None,
            listed_seqs: Vec::new(),
            file: 0,
            last_seq: None,
            first_at: None,
            last_pos: None,
            closed_at: None,
            past_until: false,
        }
    }

    /// Starts the next file: records pushed from now on belong to it.
    ///
    /// A recording whose header carries the note `snapshot` (as `check --save` writes) is one
    /// list at one moment: when it is the only input, it is judged as [`Options::snapshot`].
    pub fn begin_file(&mut self, name: &str, format_version: u32, header: &Header) {
        let index = u32::try_from(self.summary.files.len()).unwrap_or(u32::MAX);
        if index == 0 && self.summary.records == 0 && header.notes.contains_key("snapshot") {
            self.opts.snapshot = true;
            self.detectors = detectors::all(true);
        } else if index > 0 && self.opts.snapshot && !self.snapshot_requested {
            // A second file: a history, not one snapshot.
            self.opts.snapshot = false;
            self.detectors = detectors::all(false);
        }
        if index > 0 {
            if let (Some(end), Some(prev)) = (self.file_end, self.summary.files.last()) {
                self.hole_from = Some((short_name(&prev.name), end));
            }
            self.file = index;
            // Between two files nothing was recorded: every watch has a hole there.
            for track in self.tracks.values_mut() {
                track.mark_gap();
            }
        }
        self.last_seq = None;
        if index == 0 {
            let namespaces: Vec<String> = if header.source.namespaces.is_empty() {
                vec![String::new()]
            } else {
                header.source.namespaces.clone()
            };
            self.first_lists = header
                .source
                .kinds
                .iter()
                .flat_map(|k| namespaces.iter().map(move |ns| (k.clone(), ns.clone())))
                .collect();
        }
        for ns in &header.source.namespaces {
            if !self.namespaces.contains_key(ns) {
                self.namespaces.insert(ns.clone(), false);
                self.unseen += 1;
            }
        }
        self.summary.files.push(FileSummary::from_header(
            index,
            name,
            format_version,
            header,
        ));
    }

    /// Records how the current file ended: `closed_at` from a closed file's trailer (when
    /// recording stopped, possibly well after the last record), and the error that ended
    /// reading, if any.
    pub fn end_file(&mut self, end: FileEnd, closed_at: Option<Timestamp>, error: Option<String>) {
        if end != FileEnd::Closed {
            self.summary.complete = false;
        }
        if let Some(t) = closed_at {
            self.closed_at = Some(self.closed_at.map_or(t, |c| c.max(t)));
            self.file_end = Some(self.file_end.map_or(t, |e| e.max(t)));
        }
        if let Some(f) = self.summary.files.last_mut() {
            f.end = Some(end);
            f.closed_at = closed_at;
            f.error = error;
        }
    }

    /// True once a record after `until` was pushed: the caller can stop reading.
    pub fn past_until(&self) -> bool {
        self.past_until
    }

    fn warn(&mut self, text: String) {
        if self.summary.warnings.len() < MAX_WARNINGS {
            // Among several files, each warning names its own.
            let text = match self.summary.files.get(1..).and(self.summary.files.last()) {
                Some(f) => format!("{}: {text}", short_name(&f.name)),
                None => text,
            };
            self.summary.warnings.push(text);
        } else {
            self.warnings_dropped += 1;
        }
    }

    /// Replays one record, its object read by [`Prepared::of`] (on another thread, say): the
    /// one way records go in. The findings it makes true (within the window and rollout
    /// filter) go to `sink` as they are made, in the order found; the report holds them all
    /// whatever the sink does ([`Discard`](crate::Discard) for a caller that reads only the
    /// report).
    pub fn push(&mut self, rec: &Record, prepared: Prepared, sink: &mut dyn FindingSink) {
        if self.opts.until.is_some_and(|u| rec.observed_at > u) {
            self.past_until = true;
            return;
        }
        if self.summary.files.is_empty() {
            self.summary.files.push(FileSummary::from_header(
                0,
                "(stream)",
                rf_format::FORMAT_VERSION,
                &Header::new("", rec.observed_at, rf_format::Source::default()),
            ));
        }
        self.count(rec);
        if rec.seq < MAX_LISTED_SEQ && self.initially_listed(rec) {
            let word = usize::try_from(rec.seq / 64).unwrap_or(usize::MAX);
            if self.listed_seqs.len() <= word {
                self.listed_seqs.resize(word + 1, 0);
            }
            self.listed_seqs[word] |= 1 << (rec.seq % 64);
        }
        let pos = At {
            file: self.file,
            seq: rec.seq,
            at: rec.observed_at,
        };
        self.last_pos = Some(pos);
        self.first_at.get_or_insert(rec.observed_at);
        if let Some((before, from)) = self.hole_from.take() {
            let to = rec.observed_at;
            if to.0.saturating_sub(from.0) > HOLE_TOLERANCE_NANOS {
                self.summary.complete = false;
                let after = self
                    .summary
                    .files
                    .last()
                    .map(|f| short_name(&f.name))
                    .unwrap_or_default();
                self.summary.gaps.push(GapInfo {
                    file: self.file,
                    seq: rec.seq,
                    at: to,
                    kind: "every kind".to_owned(),
                    namespace: String::new(),
                    reason: format!(
                        "nothing was recorded between {before} (until {}) and {after} (from {}): {}",
                        rfc3339(from),
                        rfc3339(to),
                        crate::base::time::human_duration(to.0.saturating_sub(from.0))
                    ),
                });
            }
        }
        self.file_end = Some(
            self.file_end
                .map_or(rec.observed_at, |e| e.max(rec.observed_at)),
        );

        let before = self.findings.len();
        self.run_due(pos);
        match &rec.op {
            Op::Gap { reason } => {
                self.summary.complete = false;
                self.summary.gaps.push(GapInfo {
                    file: self.file,
                    seq: rec.seq,
                    at: rec.observed_at,
                    kind: rec.kind.name().to_owned(),
                    namespace: rec.namespace.clone(),
                    reason: reason.clone(),
                });
                if matches!(rec.kind, Kind::Rollout | Kind::ReplicaSet) {
                    for track in self.tracks.values_mut() {
                        if rec.namespace.is_empty() || rec.namespace == track.namespace() {
                            track.mark_gap();
                        }
                    }
                }
            }
            Op::ListBegin => {}
            Op::ListEnd => {
                if self.file == 0 {
                    self.lists_done
                        .insert((rec.kind.clone(), rec.namespace.clone()));
                }
            }
            Op::Added | Op::Modified | Op::Listed | Op::Deleted { .. } => {
                self.track_live(rec);
                match (&rec.kind, prepared.0) {
                    (_, Parsed::Unreadable(w)) => self.warn(w),
                    (Kind::Rollout, parsed) => {
                        let mut view = match parsed {
                            Parsed::Rollout(v) => Some(v),
                            _ => None,
                        };
                        self.on_rollout(rec, view.as_deref_mut(), pos);
                        self.index_routes(&rec.namespace, &rec.name);
                        self.look_at(&rec.namespace, &rec.name, None, pos, false);
                    }
                    (Kind::Event, Parsed::Event(view)) if self.initially_listed(rec) => {
                        self.history
                            .note_event(&rec.namespace, &rec.name, &view, pos);
                        self.world
                            .note_pod_event(&rec.namespace, &rec.name, &view, pos);
                        self.world.note_application_event(&rec.namespace, &view);
                    }
                    (Kind::ReplicaSet, Parsed::ReplicaSet(view)) => {
                        self.note_deployment_rs(rec, &view, pos);
                        let known = self.rs_owner(&rec.namespace, &rec.name).is_some();
                        let hash = view.metadata.labels.get(crate::base::HASH_LABEL).cloned();
                        if let Some(owner) = self.on_replicaset(rec, &view, pos) {
                            self.index_routes(&rec.namespace, &owner);
                            self.look_at(&rec.namespace, &owner, None, pos, false);
                            if !known && !matches!(rec.op, Op::Deleted { .. }) {
                                self.look_at_pods_met_before(rec, &owner, hash.as_deref(), pos);
                            }
                        }
                    }
                    (
                        Kind::Service | Kind::EndpointSlice | Kind::Pod | Kind::Application,
                        parsed,
                    ) => {
                        self.on_world_record(rec, parsed, pos);
                    }
                    (kind, parsed)
                        if rf_format::api::DEPLOYMENT.is(kind)
                            || rf_format::api::ANALYSIS_RUN.is(kind)
                            || crate::input::prepare::is_flux(kind)
                            || crate::input::prepare::is_router(kind) =>
                    {
                        self.on_world_record(rec, parsed, pos);
                    }
                    _ => {}
                }
            }
        }
        self.hand_over(before, sink);
    }

    /// Gives `sink` the wanted findings made since the first `before`, then packs them if
    /// there are enough.
    fn hand_over(&mut self, before: usize, sink: &mut dyn FindingSink) {
        for f in &self.findings[before..] {
            if self.wanted(f) {
                sink.finding(f);
            }
        }
        if self.opts.conditions {
            let mut changes = Vec::new();
            for d in &mut self.detectors {
                d.take_changes(&mut changes);
            }
            for c in &changes {
                if selects(
                    self.opts.rollout.as_ref(),
                    &c.rollout.namespace,
                    &c.rollout.name,
                ) {
                    sink.condition(c);
                }
            }
        }
        self.pack_if_full();
    }

    /// Time passed with no record: it is `now`, as a live caller's clock says (this crate reads
    /// none). Looks again at the rollouts whose re-check time has come, as the next record
    /// would, so that a finding that waits for time to pass (a grace period, a window that
    /// closes) is made when it passes. The findings it makes true go to `sink`.
    pub fn advance_to(&mut self, now: Timestamp, sink: &mut dyn FindingSink) {
        let Some(last) = self.last_pos else {
            return;
        };
        if now <= last.at || self.opts.until.is_some_and(|u| now > u) {
            return;
        }
        let before = self.findings.len();
        self.run_due(At { at: now, ..last });
        self.hand_over(before, sink);
    }

    /// A recording that goes on is at `now` (a live recorder's clock, at most every few
    /// seconds): the end-of-recording checks that are decided already (a ReplicaSet orphaned
    /// for longer than its grace period) report now, once, rather than when recording stops,
    /// which for a flight recorder is never. The findings go to `sink`.
    pub fn live_checks(&mut self, now: Timestamp, sink: &mut dyn FindingSink) {
        let Some(last) = self.last_pos else {
            return;
        };
        if now < last.at || self.opts.until.is_some_and(|u| now > u) {
            return;
        }
        let before = self.findings.len();
        let at = At { at: now, ..last };
        let tracks: Vec<&RolloutTrack> = self.tracks.values().collect();
        for d in &mut self.detectors {
            d.on_live(&tracks, &self.world, at, &mut self.findings);
        }
        // What the first lists hold of the time before: once they are all in.
        let all_in = || {
            !self.first_lists.is_empty()
                && self
                    .first_lists
                    .iter()
                    .all(|(k, ns)| self.lists_done.contains(&(k.clone(), ns.clone())))
        };
        if self.reconstructed.is_none() && all_in() {
            let mut notes = Vec::new();
            crate::detectors::reconstructed::reconstruct(
                &self.history,
                &tracks,
                &self.world,
                at,
                &mut self.findings,
                &mut notes,
            );
            self.reconstructed = Some(notes);
        }
        self.hand_over(before, sink);
    }

    fn wanted(&self, f: &Finding) -> bool {
        self.opts.since.is_none_or(|s| f.at >= s)
            && selects(
                self.opts.rollout.as_ref(),
                &f.rollout.namespace,
                &f.rollout.name,
            )
    }

    fn count(&mut self, rec: &Record) {
        self.summary.records += 1;
        if let Some(f) = self.summary.files.last_mut() {
            f.records += 1;
        }
        self.counts.add(rec);
        if self.unseen > 0 && rec.op.has_object() {
            if let Some(seen @ false) = self.namespaces.get_mut(&rec.namespace) {
                *seen = true;
                self.unseen -= 1;
            }
        }
        if let Some(prev) = self.last_seq {
            if rec.seq <= prev {
                self.warn(format!(
                    "record seq {} follows seq {prev} in file {}: out of order",
                    rec.seq, self.file
                ));
            }
        }
        self.last_seq = Some(rec.seq);
        if let Some(last) = self.last_pos {
            if rec.observed_at < last.at {
                self.warn(format!(
                    "record seq {} at {} is earlier than the record before it ({})",
                    rec.seq,
                    rfc3339(rec.observed_at),
                    rfc3339(last.at)
                ));
            }
        }
    }

    fn track_live(&mut self, rec: &Record) {
        rec.identity_into(&mut self.live_key);
        let key = self.live_key.as_slice();
        if matches!(rec.op, Op::Deleted { .. }) {
            if self.live.remove(key) {
                if let Some(n) = self.live_per_kind.get_mut(&rec.kind) {
                    *n = n.saturating_sub(1);
                }
            }
        } else if !self.live.contains(key) {
            self.live.insert(key.into());
            *self.live_per_kind.entry(rec.kind.clone()).or_default() += 1;
        }
    }

    /// The rollout owning ReplicaSet `name` of `namespace`, as last seen.
    fn rs_owner(&self, namespace: &str, name: &str) -> Option<&String> {
        self.rs_owner.get(namespace)?.get(name)
    }

    /// The pods of ReplicaSet `rec` (of pod-template hash `hash`) recorded before it, looked at
    /// now that their rollout `owner` is known: an import ordered by resourceVersion across
    /// files meets a ReplicaSet's status write after its pods. In the usual order a new
    /// ReplicaSet has no pods yet, and this finds none.
    fn look_at_pods_met_before(&mut self, rec: &Record, owner: &str, hash: Option<&str>, pos: At) {
        let Some(hash) = hash else {
            return;
        };
        let ns = rec.namespace.as_str();
        let pods: Vec<Str> = self
            .world
            .pods_of_hash(ns, hash)
            .filter(|(_, p)| p.owner.as_deref().is_none_or(|o| o == rec.name.as_str()))
            .map(|(name, _)| Str::new(name))
            .collect();
        for name in pods {
            let touched = Touched::Pod {
                namespace: Str::new(ns),
                name,
            };
            self.look_at(ns, owner, Some(&touched), pos, false);
        }
    }

    /// Indexes rollout `name` again by what a Service may route to it through.
    fn index_routes(&mut self, namespace: &str, name: &str) {
        if let Some(track) = self.tracks.get(namespace, name) {
            self.routes.update(track);
        }
    }

    /// The track of rollout `name`, made when it is new.
    fn track(&mut self, namespace: &str, name: &str) -> Option<&mut RolloutTrack> {
        let keep = self.opts.timelines;
        self.tracks
            .ensure(namespace, name, || RolloutTrack::new(namespace, name, keep));
        self.tracks.get_mut(namespace, name)
    }

    /// Sets the Application the rollout of `rec` is tracked by, from `view`, moving it in
    /// [`tracked_by`](Self::tracked_by) when that changed: the one place the track's
    /// `tracked_by` changes, so that the index follows it.
    fn set_tracked_by(&mut self, rec: &Record, view: &RolloutView) {
        let Some(track) = self.track(&rec.namespace, &rec.name) else {
            return;
        };
        let now = crate::input::view::tracking_app(&view.metadata);
        if track.tracked_by() == now {
            return;
        }
        let before = track.set_tracked_by(now.map(str::to_owned));
        let key = (rec.namespace.clone(), rec.name.clone());
        if let Some(before) = before {
            if let Some(keys) = self.tracked_by.get_mut(&before) {
                keys.remove(&key);
                if keys.is_empty() {
                    self.tracked_by.remove(&before);
                }
            }
        }
        if let Some(app) = now {
            self.tracked_by
                .entry(app.to_owned())
                .or_default()
                .insert(key);
        }
    }

    fn on_rollout(&mut self, rec: &Record, view: Option<&mut RolloutView>, pos: At) {
        if matches!(rec.op, Op::Deleted { .. }) {
            if let Some(track) = self.track(&rec.namespace, &rec.name) {
                track.mark_deleted();
            }
            return;
        }
        let Some(view) = view else { return };
        self.set_tracked_by(rec, view);
        let listed = self.initially_listed(rec);
        let Some(track) = self.track(&rec.namespace, &rec.name) else {
            return;
        };
        let first = track.last().is_none();
        if first {
            track.note_listed_initially(listed);
        }
        let changed = track.observe_rollout(view, &rec.object, pos, rec.actor.as_deref());
        if track.workload().is_some() && track.lacks_template() {
            self.follow_workload(&rec.namespace, &rec.name, false);
        }
        if first && rec.op == Op::Listed && !self.opts.snapshot {
            self.note_before(&rec.namespace, &rec.name);
        }
        let Some(prev) = changed else {
            return;
        };
        let Some(track) = self.tracks.get(&rec.namespace, &rec.name) else {
            return;
        };
        let Some(cur) = track.last() else {
            return;
        };
        let transition = Transition {
            track,
            prev: &prev,
            cur,
            revision: track.last_revision_change(),
            jump: track.last_jump(),
        };
        for d in &mut self.detectors {
            d.on_transition(&transition, &mut self.findings);
        }
    }

    /// True for a record of the first list of its kind in the first file: what the cluster held
    /// when the recording began (a list after a gap is not).
    fn initially_listed(&self, rec: &Record) -> bool {
        self.file == 0
            && rec.op == Op::Listed
            && !self
                .lists_done
                .contains(&(rec.kind.clone(), rec.namespace.clone()))
            && !self.lists_done.contains(&(rec.kind.clone(), String::new()))
    }

    /// Notes a rollout first seen in a list (it was there before the recording) in the middle
    /// of a release: how it got there is history the recording did not see, and a report of
    /// no findings says nothing of it.
    fn note_before(&mut self, ns: &str, name: &str) {
        let Some(last) = self.tracks.get(ns, name).and_then(RolloutTrack::last) else {
            return;
        };
        let settled = !last.abort
            && last.pause_reasons.is_empty()
            && last.phase.as_deref() == Some("Healthy")
            && last.pod_hash.is_some()
            && last.pod_hash == last.stable_rs;
        if settled || !selects(self.opts.rollout.as_ref(), ns, name) {
            return;
        }
        if self.summary.before.len() >= MAX_WARNINGS {
            self.before_dropped += 1;
            return;
        }
        let mut state = format!(
            "{}, current {}, stable {}",
            last.phase.as_deref().unwrap_or("no phase"),
            last.pod_hash.as_deref().unwrap_or("none"),
            last.stable_rs.as_deref().unwrap_or("none")
        );
        if !last.pause_reasons.is_empty() {
            let reasons: Vec<&str> = last.pause_reasons.iter().map(Str::as_str).collect();
            state.push_str(&format!(
                ", paused ({}) at step {}",
                reasons.join(", "),
                last.step_index
            ));
        }
        if last.abort {
            state.push_str(", aborted");
        }
        self.summary.before.push(format!(
            "rollout {ns}/{name} was in the middle of a release when the recording began at {} ({state}): the renders, restarts and pauses before it are not in this recording; the cluster's Events and ReplicaSet revisions may still hold them (kubectl -n {ns} get events --field-selector involvedObject.name={name}; kubectl -n {ns} get rs -L rollout.argoproj.io/revision)",
            rfc3339(last.pos.at)
        ));
    }

    /// Applies a ReplicaSet record; returns the rollout that owns it.
    fn on_replicaset(&mut self, rec: &Record, view: &ReplicaSetView, pos: At) -> Option<Str> {
        // Held inline when short, as a rollout's name mostly is: this runs for every record.
        let owner = match view.rollout_owner() {
            Some((name, _)) => Str::new(name),
            None => {
                // Released from its rollout (no owner): still the rollout's by name and label.
                let hash = view.hash()?;
                let name = rec.name.strip_suffix(&format!("-{hash}"))?;
                if !self.tracks.contains(&rec.namespace, name) {
                    return None;
                }
                Str::new(name)
            }
        };
        let deleted = matches!(rec.op, Op::Deleted { .. });
        let added = matches!(rec.op, Op::Added);
        if deleted {
            if let Some(m) = self.rs_owner.get_mut(&rec.namespace) {
                m.remove(&rec.name);
            }
        } else if self.rs_owner(&rec.namespace, &rec.name).map(String::as_str) != Some(&owner) {
            self.rs_owner
                .entry(rec.namespace.clone())
                .or_default()
                .insert(rec.name.clone(), owner.to_string());
        }
        let initial = self.initially_listed(rec);
        let track = self.track(&rec.namespace, &owner)?;
        let new = !track.replicasets().contains_key(rec.name.as_str());
        track.observe_replicaset(view, &rec.object, pos, deleted, added);
        if new {
            track.note_initially_listed(&rec.name, initial);
        }
        let track = self.tracks.get(&rec.namespace, &owner)?;
        for d in &mut self.detectors {
            d.on_replicaset(track, &mut self.findings);
        }
        Some(owner)
    }

    /// Applies a Service, EndpointSlice, Pod or Application record and lets the detectors look
    /// at the rollouts it concerns.
    fn on_world_record(&mut self, rec: &Record, parsed: Parsed, pos: At) {
        let Some(touched) = self.world.apply(rec, parsed, pos) else {
            return;
        };
        let keys: Vec<Key> = match &touched {
            Touched::Pod { namespace, name } => {
                let pod = self.world.pod(namespace, name);
                let by_owner = pod
                    .and_then(|p| p.owner.as_ref())
                    .and_then(|rs| self.rs_owner(namespace, rs));
                match by_owner {
                    // The usual case, at every Pod record: one rollout, its name held inline.
                    Some(r) => {
                        let rollout = Str::new(r);
                        self.look_at(namespace, &rollout, Some(&touched), pos, false);
                        return;
                    }
                    // A pod of a plain Deployment's ReplicaSet.
                    None if pod
                        .and_then(|p| p.owner.as_deref())
                        .and_then(|rs| self.rs_deployment.get(namespace.as_str())?.get(rs))
                        .is_some() =>
                    {
                        let dep = pod
                            .and_then(|p| p.owner.as_deref())
                            .and_then(|rs| self.rs_deployment.get(namespace.as_str())?.get(rs))
                            .cloned()
                            .unwrap_or_default();
                        self.on_plain_deployment(namespace, &dep, Some(name), pos, false);
                        return;
                    }
                    // Deleted, or not (yet) known by its ReplicaSet, or an Experiment's pod
                    // running a revision's template: any rollout of the namespace with a
                    // revision of that hash or name. A deleted pod is matched by name alone
                    // (`<replicaset>-<suffix>`): most of a crowded namespace's rollouts cannot
                    // hold that ReplicaSet, and are passed over without a lookup.
                    None => {
                        let deleted = name
                            .rsplit_once('-')
                            .filter(|_| pod.is_none())
                            .map(|(rs, _)| crate::model::rollout::name_bits(rs));
                        let may_hold = |t: &crate::model::rollout::RolloutTrack| {
                            pod.is_some() || deleted.is_some_and(|b| t.may_hold_replicaset(b))
                        };
                        self.tracks_in(namespace)
                            .filter(|t| {
                                may_hold(t)
                                    && (crate::model::traffic::revision(t, name, pod).is_some()
                                        || pod.and_then(|p| p.hash.as_deref()).is_some_and(|h| {
                                            crate::model::traffic::has_revision(t, h)
                                        }))
                            })
                            .map(|t| (t.namespace().to_owned(), t.name().to_owned()))
                            .collect()
                    }
                }
            }
            Touched::Service { namespace } => self
                .tracks_in(namespace)
                .map(|t| (t.namespace().to_owned(), t.name().to_owned()))
                .collect(),
            // Only the rollouts the Service routes to: a detector looks at a rollout's
            // Services through `route`, so the endpoints of any other Service change nothing
            // it sees (and a namespace of many rollouts has as many Services, each of whose
            // endpoints change at every pod that becomes ready).
            Touched::Endpoints {
                namespace,
                service,
                was,
            } => {
                let ns = self.world.namespace(namespace);
                let mut routed: BTreeSet<&str> = BTreeSet::new();
                for name in [service, was].into_iter().flatten() {
                    let Some(svc) = ns.and_then(|n| n.service(name)) else {
                        continue;
                    };
                    routed.extend(
                        self.routes
                            .candidates(namespace, name, svc)
                            .into_iter()
                            .filter(|r| {
                                self.tracks.get(namespace, r).is_some_and(|t| {
                                    crate::model::traffic::route(t, name, svc).is_some()
                                })
                            }),
                    );
                }
                // Plain Deployments whose pods a Service of these endpoints selects.
                let any = self.world.deployments().next().is_some();
                let deployments: Vec<String> = [service, was]
                    .into_iter()
                    .filter(|_| any)
                    .flatten()
                    .filter_map(|name| ns.and_then(|n| n.service(name))?.selector.as_ref())
                    .flat_map(|sel| {
                        self.world
                            .deployments_in(namespace)
                            .filter(move |d| crate::model::world::selects(sel, &d.pod_labels))
                            .map(|d| d.name.clone())
                    })
                    .collect();
                let keys = routed
                    .into_iter()
                    .map(|r| (namespace.to_string(), r.to_owned()))
                    .collect();
                for dep in deployments {
                    self.on_plain_deployment(namespace, &dep, None, pos, false);
                }
                keys
            }
            Touched::App { namespace, name } => match self.world.app(namespace, name) {
                // The rollouts it lists and the ones that name it, in (namespace, name) order
                // as a walk over every rollout gave them; its syncs and health join their
                // timelines.
                Some(app) => {
                    let named = self.tracked_by.get(&app.name).into_iter().flatten();
                    let mut keys: Vec<Key> = app
                        .rollouts
                        .iter()
                        .filter(|(ns, n)| self.tracks.contains(ns, n))
                        .chain(named)
                        .cloned()
                        .collect();
                    keys.sort_unstable();
                    keys.dedup();
                    if !app.changes.is_empty() {
                        let words: Vec<String> = app
                            .changes
                            .iter()
                            .map(|c| format!("Application {}: {c}", app.name))
                            .collect();
                        for (ns, n) in &keys {
                            if let Some(track) = self.tracks.get_mut(ns, n) {
                                track.note(pos, "Application", words.clone());
                            }
                        }
                    }
                    keys
                }
                None => Vec::new(),
            },
            // A router is a front door (for any rollout of its namespace), an NGINX canary
            // Ingress, or a VirtualService or HTTPRoute whose weights a rollout of any
            // namespace sets; routers change rarely.
            Touched::Router {
                router,
                namespace,
                name,
            } => {
                let mut keys: Vec<Key> = self
                    .tracks_in(namespace)
                    .map(|t| (t.namespace().to_owned(), t.name().to_owned()))
                    .collect();
                if *router != crate::model::world::Router::Ingress {
                    keys.extend(
                        self.tracks
                            .iter()
                            .filter(|(ns, _, t)| {
                                *ns != namespace.as_str()
                                    && t.splits().objects.iter().any(|o| {
                                        o.router == *router
                                            && o.namespace == namespace.as_str()
                                            && o.name == name.as_str()
                                    })
                            })
                            .map(|(ns, n, _)| ((*ns).to_owned(), (*n).to_owned())),
                    );
                }
                keys
            }
            // Read when a render is attributed: nothing to look at now.
            Touched::Flux => return,
            // The rollout that owns the run: what it measured joins the rollout's timeline.
            Touched::Analysis { namespace, name } => {
                let run = self.world.analysis_run(namespace, name);
                let (Some(rollout), Some(changes)) = (
                    run.and_then(|r| r.rollout.clone()),
                    run.map(|r| r.changes.clone()),
                ) else {
                    return;
                };
                let Some(track) = self.tracks.get_mut(namespace, &rollout) else {
                    return;
                };
                track.note(pos, "AnalysisRun", changes);
                vec![(namespace.to_string(), rollout)]
            }
            Touched::Deployment {
                namespace,
                name,
                template,
            } => {
                let keys: Vec<Key> = self
                    .tracks_in(namespace)
                    .filter(|t| t.workload().is_some_and(|w| w.deployment == **name))
                    .map(|t| (t.namespace().to_owned(), t.name().to_owned()))
                    .collect();
                if *template {
                    for (ns, rollout) in &keys {
                        self.follow_workload(ns, rollout, true);
                    }
                }
                if keys.is_empty() && !self.workload_of_a_rollout(namespace, name) {
                    self.on_plain_deployment(namespace, name, None, pos, false);
                }
                keys
            }
        };
        self.look(&keys, Some(&touched), pos, false);
    }

    /// Remembers which Deployment owns ReplicaSet `rec` (its pods are that Deployment's).
    fn note_deployment_rs(&mut self, rec: &Record, view: &ReplicaSetView, pos: At) {
        let ns = rec.namespace.as_str();
        let deleted = matches!(rec.op, Op::Deleted { .. });
        if let Some(dep) = view.deployment_owner() {
            if self.opts.timelines && !self.workload_of_a_rollout(ns, dep) {
                if let Some(obj) = self.world.deployment(ns, dep) {
                    let state = (!deleted).then(|| {
                        let hash = rec
                            .name
                            .strip_prefix(dep)
                            .and_then(|h| h.strip_prefix('-'))
                            .unwrap_or(&rec.name);
                        let revision = view
                            .metadata
                            .annotations
                            .get(crate::input::view::DEPLOYMENT_REVISION)
                            .and_then(|r| r.parse().ok());
                        (
                            Str::new(hash),
                            revision,
                            view.spec.replicas.unwrap_or(1),
                            view.status.ready_replicas.unwrap_or(0),
                        )
                    });
                    self.deployment_timelines
                        .entry((ns.to_owned(), dep.to_owned()))
                        .or_default()
                        .observe_replicaset(obj, pos, &rec.name, state);
                }
            }
        }
        match (deleted, view.deployment_owner()) {
            (false, Some(dep)) => {
                if self
                    .rs_deployment
                    .get(ns)
                    .and_then(|m| m.get(&rec.name))
                    .map(String::as_str)
                    != Some(dep)
                {
                    self.rs_deployment
                        .entry(rec.namespace.clone())
                        .or_default()
                        .insert(rec.name.clone(), dep.to_owned());
                }
            }
            _ => {
                if let Some(m) = self.rs_deployment.get_mut(ns) {
                    m.remove(&rec.name);
                    if m.is_empty() {
                        self.rs_deployment.remove(ns);
                    }
                }
            }
        }
    }

    /// True when a rollout of `ns` names Deployment `name` as its `workloadRef`.
    fn workload_of_a_rollout(&self, ns: &str, name: &str) -> bool {
        self.tracks_in(ns)
            .any(|t| t.workload().is_some_and(|w| w.deployment == name))
    }

    /// Lets every detector look at plain Deployment `ns`/`name`, as pod `pod` (if any) changed
    /// at `now`, or as the recording ends (`end`).
    fn on_plain_deployment(&mut self, ns: &str, name: &str, pod: Option<&str>, now: At, end: bool) {
        if self.workload_of_a_rollout(ns, name) {
            return;
        }
        let Some(dep) = self.world.deployment(ns, name) else {
            return;
        };
        if self.opts.timelines && pod.is_none() && !end {
            self.deployment_timelines
                .entry((ns.to_owned(), name.to_owned()))
                .or_default()
                .observe_deployment(dep);
        }
        let scene = crate::detectors::DeploymentScene {
            dep,
            pod: pod.and_then(|p| Some((p, self.world.pod(ns, p)?))),
            world: &self.world,
            now,
            end,
        };
        for d in &mut self.detectors {
            d.on_deployment(&scene, &mut self.findings);
        }
    }

    /// Hands rollout `ns`/`name` the pod template of the Deployment its `workloadRef` names:
    /// as a change of it when `changed` and the rollout had one, as the first seen otherwise.
    fn follow_workload(&mut self, ns: &str, name: &str, changed: bool) {
        let Some(track) = self.tracks.get_mut(ns, name) else {
            return;
        };
        let Some(workload) = track.workload() else {
            return;
        };
        let Some(dep) = self.world.deployment(ns, &workload.deployment) else {
            return;
        };
        let Some(text) = dep.template.clone() else {
            return;
        };
        let change = (changed && !track.lacks_template())
            .then(|| (dep.pos, dep.generation, dep.actor.clone()));
        let deployment = workload.deployment.clone();
        track.observe_workload_template(&deployment, &text, change);
    }

    fn tracks_in<'a>(&'a self, ns: &str) -> impl Iterator<Item = &'a RolloutTrack> + 'a {
        self.tracks.in_ns(ns).map(|(_, t)| t)
    }

    /// Lets every detector look at each rollout of `keys` and the world around it.
    fn look(&mut self, keys: &[Key], touched: Option<&Touched>, now: At, end: bool) {
        for (ns, name) in keys {
            self.look_at(ns, name, touched, now, end);
        }
    }

    /// Lets every detector look at rollout `name` of `ns` and the world around it.
    fn look_at(&mut self, ns: &str, name: &str, touched: Option<&Touched>, now: At, end: bool) {
        if self.opts.snapshot && !end && !self.lists_in {
            // One moment, listed kind after kind: judged once every list is in (a rollout
            // looked at before the list of its canary Ingress would have none). What a pod's
            // own record shows (its images) is looked at then, in list order.
            if let Some(t @ Touched::Pod { .. }) = touched {
                self.deferred
                    .push((ns.to_owned(), name.to_owned(), t.clone(), now));
            }
            return;
        }
        let Some(track) = self.tracks.get(ns, name) else {
            return;
        };
        if track.last().is_none() && !self.opts.timelines {
            return;
        }
        // Asked once per look, for the timeline and every detector.
        let routing = self.routing.routing(&self.world, track);
        if self.opts.timelines {
            if let Some(track) = self.tracks.get_mut(ns, name) {
                crate::model::traffic::observe(track, &self.world, &routing, now);
            }
        }
        let Some(track) = self.tracks.get(ns, name) else {
            return;
        };
        if track.last().is_none() {
            return;
        }
        let scene = Scene {
            track,
            world: &self.world,
            routing: &routing,
            now,
            touched,
            snapshot: self.opts.snapshot,
            end,
        };
        let mut next: Option<Timestamp> = None;
        for d in &mut self.detectors {
            if let Some(t) = d.on_world(&scene, &mut self.facts, &mut self.findings) {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        match next {
            Some(t) => {
                self.due.set(ns, name, t);
                self.due_from = Some(self.due_from.map_or(t, |d| d.min(t)));
            }
            None => {
                self.due.remove(ns, name);
            }
        }
    }

    /// Looks again at the rollouts whose re-check time has come.
    fn run_due(&mut self, pos: At) {
        if self.due_from.is_none_or(|t| t > pos.at) {
            return;
        }
        let keys: Vec<Key> = self
            .due
            .iter()
            .filter(|(_, _, t)| **t <= pos.at)
            .map(|(ns, name, _)| (ns.to_owned(), name.to_owned()))
            .collect();
        for (ns, name) in &keys {
            self.due.remove(ns, name);
        }
        self.due_from = self.due.values().min().copied();
        self.look(&keys, None, pos, false);
    }

    /// Ends the analysis: runs the end-of-recording checks and returns the report.
    pub fn finish(mut self) -> Report {
        let tail = self.end_checks();
        let resolver = self.resolver();
        let mut findings = if self.packed.is_empty() {
            let mut findings = tail;
            findings.sort_by(crate::report::pack::report_order);
            findings
        } else {
            let mut packed = std::mem::take(&mut self.packed);
            packed.push(tail);
            let all: Vec<Finding> = packed.iter().collect();
            self.check_read_back(all.len(), packed.len());
            all
        };
        for f in &mut findings {
            resolver.apply(f);
        }
        self.report(findings)
    }

    /// The moments each selected rollout became Healthy on one revision, which move past the
    /// findings before them.
    fn resolver(&self) -> Resolver {
        let mut r = self
            .resolver_of_settles()
            .with_listed(std::sync::Arc::new(self.listed_seqs.clone()));
        for d in &self.detectors {
            if let Some(a) = d.amender() {
                r = r.with_amender(a);
            }
        }
        r
    }

    fn resolver_of_settles(&self) -> Resolver {
        Resolver::new(
            self.tracks
                .iter()
                .filter(|(ns, name, _)| selects(self.opts.rollout.as_ref(), ns, name))
                .filter(|(_, _, t)| !t.settles().is_empty())
                .map(|(ns, name, t)| ((ns.to_owned(), name.to_owned()), t.settles().to_vec())),
        )
    }

    /// Where each selected rollout ended, at `at`.
    fn ends(&self, at: Timestamp) -> Vec<RolloutEnd> {
        self.tracks
            .iter()
            .filter(|(ns, name, _)| selects(self.opts.rollout.as_ref(), ns, name))
            .filter_map(|(_, _, t)| Some((t, t.last()?)))
            .map(|(t, last)| {
                let mut end = RolloutEnd {
                    rollout: t.subject(),
                    at,
                    strategy: if t.is_blue_green() {
                        "blueGreen"
                    } else {
                        "canary"
                    },
                    phase: last.phase.clone(),
                    step_index: last.step_index,
                    step_count: last.steps_len,
                    pod_hash: last.pod_hash.clone(),
                    stable_rs: last.stable_rs.clone(),
                    pause: last.pause_words(),
                    abort: last.abort,
                    message: last.message.clone(),
                    deleted: t.is_deleted(),
                    replicasets: Vec::new(),
                    last_settled: t.settles().last().cloned(),
                    applications: self
                        .world
                        .apps_of_rollout(t.namespace(), t.name(), t.tracked_by())
                        .map(|a| ApplicationEnd {
                            namespace: Str::new(&a.namespace),
                            name: Str::new(&a.name),
                            sync: a.sync.clone(),
                            health: a.health.clone(),
                            last_sync: a.history.last().map(|s| s.words()),
                            failing: a.failing.as_ref().map(|f| f.words()),
                            failed_before: self
                                .world
                                .failed_operations(&a.namespace, &a.name)
                                .map(|e| e.words())
                                .collect(),
                        })
                        .collect(),
                };
                end.replicasets = t
                    .replicasets()
                    .values()
                    .filter(|rs| !rs.deleted)
                    .filter_map(|rs| {
                        let hash = rs.hash.clone()?;
                        let role = end.role(&hash);
                        (rs.replicas > 0 || rs.ready > 0 || role != Role::Other).then(|| {
                            ReplicaSetState {
                                name: rs.name.clone(),
                                hash,
                                role,
                                replicas: rs.replicas,
                                ready: rs.ready,
                            }
                        })
                    })
                    .collect();
                end.replicasets
                    .sort_by(|a, b| a.role.cmp(&b.role).then(a.name.cmp(&b.name)));
                end
            })
            .collect()
    }

    /// Ends the analysis like [`finish`](Analyzer::finish), but leaves the findings packed (the
    /// report's `findings` is empty): to write a report of many findings without holding them
    /// all decoded. [`PackedFindings`] serializes as the report's `findings` array; the caller
    /// that writes them compares how many it wrote with [`PackedFindings::len`] (a chunk that
    /// did not decode is a bug, and would otherwise go unsaid).
    pub fn finish_packed(mut self) -> (Report, PackedFindings) {
        let tail = self.end_checks();
        let mut packed = std::mem::take(&mut self.packed);
        packed.push(tail);
        packed.resolve_with(self.resolver());
        (self.report(Vec::new()), packed)
    }

    /// Packed findings are this process's own bytes: one that does not decode is a bug, said
    /// in the report rather than lost in silence.
    fn check_read_back(&mut self, read: usize, packed: usize) {
        if let Some(warning) = read_back_warning(read, packed) {
            self.summary.warnings.push(warning);
        }
    }

    /// Packs the findings made so far once there are enough of them.
    fn pack_if_full(&mut self) {
        if self.findings.len() >= self.pack_every {
            let (held, batch): (Vec<Finding>, Vec<Finding>) = std::mem::take(&mut self.findings)
                .into_iter()
                .filter(|f| self.wanted(f))
                .partition(|f| f.rule.amended_at_end());
            self.held.extend(held);
            self.packed.push(batch);
        }
    }

    /// Packed findings go to `spill` once [`SPILL_AFTER`](crate::SPILL_AFTER) compressed bytes
    /// of them are in memory (without one they all stay in memory). Set before any record.
    pub fn spill_findings_to(mut self, spill: Box<dyn crate::Spill>) -> Self {
        self.packed = PackedFindings::default().spill_to(spill, crate::SPILL_AFTER);
        self
    }

    /// Findings are packed (sorted and compressed) every `n` findings rather than every
    /// [`crate::report::pack::CHUNK`]: for tests of the packed path on small recordings.
    #[doc(hidden)]
    pub fn pack_findings_every(mut self, n: usize) -> Self {
        self.pack_every = n.max(1);
        self
    }

    /// Runs the end-of-recording checks; returns the wanted findings not packed yet.
    fn end_checks(&mut self) -> Vec<Finding> {
        // Made before every finding made since the last pack: in front, in the order made.
        let held = std::mem::take(&mut self.held);
        self.findings.splice(0..0, held);
        let last = self.last_pos;
        if self.opts.snapshot {
            self.lists_in = true;
            for (ns, name, touched, at) in std::mem::take(&mut self.deferred) {
                self.look_at(&ns, &name, Some(&touched), at, false);
            }
        }
        if let Some(last) = last {
            let end = At {
                at: self.end_time(last.at),
                ..last
            };
            let keys: Vec<Key> = self
                .tracks
                .iter()
                .map(|(ns, name, _)| (ns.to_owned(), name.to_owned()))
                .collect();
            self.look(&keys, None, end, true);
            // A rule still waiting, at the end, for a condition to hold for its grace period:
            // the recording is too short to decide it (a recording begun after the incident,
            // seconds long, is).
            let mut waiting: Vec<(String, String, Timestamp)> = self
                .due
                .iter()
                .filter(|(_, _, t)| **t > end.at)
                .map(|(ns, name, t)| (ns.to_owned(), name.to_owned(), *t))
                .collect();
            waiting.sort();
            let mut waiting_notes = Vec::new();
            for (ns, name, t) in waiting {
                waiting_notes.push((
                    crate::Subject::new(Kind::Rollout, &ns, &name),
                    format!(
                        "rollout {ns}/{name}: when the recording ended at {}, a rule was waiting for a condition it found to hold until {} (its grace period): record longer, or list the cluster with `rollout-forensics now`, which judges one moment as it is",
                        rfc3339(end.at),
                        rfc3339(t)
                    ),
                ));
            }
            let deployments: Vec<Key> = self
                .world
                .deployments()
                .map(|d| (d.namespace.clone(), d.name.clone()))
                .collect();
            for (ns, name) in &deployments {
                self.on_plain_deployment(ns, name, None, end, true);
            }
            let tracks: Vec<&RolloutTrack> = self.tracks.values().collect();
            let mut undecided = Vec::new();
            for d in &mut self.detectors {
                d.on_end(
                    &tracks,
                    &self.world,
                    end,
                    &mut self.findings,
                    &mut undecided,
                );
            }
            match self.reconstructed.take() {
                // Reconstructed live already: its findings were made then.
                Some(mut notes) => undecided.append(&mut notes),
                None => crate::detectors::reconstructed::reconstruct(
                    &self.history,
                    &tracks,
                    &self.world,
                    end,
                    &mut self.findings,
                    &mut undecided,
                ),
            }
            let rollout = self.opts.rollout.as_ref();
            undecided.append(&mut waiting_notes);
            self.summary.undecided = undecided
                .into_iter()
                .filter(|(r, _)| selects(rollout, &r.namespace, &r.name))
                .map(|(_, note)| note)
                .collect();
        }
        std::mem::take(&mut self.findings)
            .into_iter()
            .filter(|f| self.wanted(f))
            .collect()
    }

    fn report(mut self, findings: Vec<Finding>) -> Report {
        let last = self.last_pos;
        let timelines = if self.opts.timelines {
            self.tracks
                .values_mut()
                .filter(|t| selects(self.opts.rollout.as_ref(), t.namespace(), t.name()))
                .filter(|t| t.last().is_some())
                .map(|t| {
                    let rollout = t.subject();
                    let (entries, traffic, truncated) = t.take_timeline();
                    Timeline {
                        rollout,
                        entries,
                        traffic,
                        truncated,
                    }
                })
                .chain(
                    std::mem::take(&mut self.deployment_timelines)
                        .into_iter()
                        .filter(|((ns, name), _)| selects(self.opts.rollout.as_ref(), ns, name))
                        .map(|((ns, name), t)| Timeline {
                            rollout: crate::Subject::new(
                                rf_format::api::DEPLOYMENT.newest(),
                                &ns,
                                &name,
                            ),
                            entries: t.entries,
                            traffic: Vec::new(),
                            truncated: t.truncated,
                        }),
                )
                .collect()
        } else {
            Vec::new()
        };

        if self.warnings_dropped > 0 {
            self.summary
                .warnings
                .push(format!("... and {} more warnings", self.warnings_dropped));
        }
        if self.history.dropped > 0 {
            self.summary.warnings.push(format!(
                "{} Events about rollouts in the first list were not read (past {} about one rollout): what they said is not in the history reconstructed",
                self.history.dropped,
                crate::model::history::KEEP_EVENTS
            ));
        }
        if self.before_dropped > 0 {
            self.summary.before.push(format!(
                "... and {} more rollouts in the middle of a release when the recording began",
                self.before_dropped
            ));
        }
        std::mem::take(&mut self.counts)
            .into_maps(&mut self.summary.by_kind, &mut self.summary.by_op);
        let ended = last.map(|p| self.end_time(p.at));
        self.summary
            .set_span(self.first_at, last.map(|p| p.at), ended);
        // By name, as `by_kind` counts them: another group's kind of the same name counts with
        // it.
        let mut live_objects = BTreeMap::new();
        for (kind, n) in &self.live_per_kind {
            if *n > 0 {
                *live_objects.entry(kind.name().to_owned()).or_default() += *n as u64;
            }
        }
        self.summary.live_objects = live_objects;
        self.summary.empty_namespaces = self
            .namespaces
            .iter()
            .filter(|(_, seen)| !**seen)
            .map(|(ns, _)| ns.clone())
            .collect();
        if self
            .summary
            .files
            .iter()
            .any(|f| f.end.is_some_and(|e| e != FileEnd::Closed))
        {
            self.summary.complete = false;
        }
        let rollouts = self.ends(ended.unwrap_or_default());
        Report {
            rollouts,
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "rollout-forensics".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            recording: self.summary,
            findings,
            timelines,
        }
    }

    /// Where the analysis ends: `--until` when records beyond it exist, else when recording
    /// stopped (the trailer's time, or the last record), capped at `--until`.
    fn end_time(&self, last_record: Timestamp) -> Timestamp {
        let stopped = self.closed_at.map_or(last_record, |c| c.max(last_record));
        match self.opts.until {
            Some(u) if self.past_until => u,
            Some(u) => stopped.min(u),
            None => stopped,
        }
    }

    /// When the history read so far ends: the latest of its last record and the time a closed
    /// file says recording stopped.
    pub fn stopped_at(&self) -> Option<Timestamp> {
        let last = self.last_pos.map(|p| p.at);
        match (last, self.closed_at) {
            (Some(l), Some(c)) => Some(l.max(c)),
            (l, c) => l.or(c),
        }
    }

    /// The time of the first record read.
    pub fn first_at(&self) -> Option<Timestamp> {
        self.first_at
    }

    /// The rollouts seen so far, whatever `Options::rollout` selects, in (namespace, name)
    /// order: so that a caller can tell a rollout filter that names none of them from a
    /// rollout with nothing to report.
    pub fn rollouts(&self) -> Vec<(String, String)> {
        self.tracks
            .iter()
            .filter(|(_, _, t)| t.last().is_some())
            .map(|(ns, name, _)| (ns.to_owned(), name.to_owned()))
            .collect()
    }

    /// Live objects and retained rollout state, for checking that memory follows the world and
    /// not the number of records.
    pub fn retained(&self) -> Retained {
        Retained {
            live_objects: self.live.len() + self.world.len(),
            rollouts: self.tracks.len(),
            replicasets: self.tracks.values().map(|t| t.replicasets().len()).sum(),
            timeline_entries: self.tracks.values().map(RolloutTrack::timeline_len).sum(),
            findings: self.findings.len(),
            packed_findings: self.packed.len(),
            packed_bytes: self.packed.bytes(),
        }
    }
}

/// True when `Options::rollout` (`filter`) lets the rollout `namespace`/`name` through.
fn selects(filter: Option<&(String, String)>, namespace: &str, name: &str) -> bool {
    filter.is_none_or(|(ns, n)| (ns.is_empty() || ns == namespace) && n == name)
}

/// The warning when `read` of `packed` findings were read back.
fn read_back_warning(read: usize, packed: usize) -> Option<String> {
    (read != packed).then(|| {
        format!(
            "internal error: {} of {packed} findings could not be read back",
            packed.saturating_sub(read)
        )
    })
}

/// What an [`Analyzer`] holds, by count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retained {
    /// Objects present now, all kinds.
    pub live_objects: usize,
    /// Rollouts followed.
    pub rollouts: usize,
    /// ReplicaSets followed (including deleted ones, for diffs).
    pub replicasets: usize,
    /// Timeline entries kept.
    pub timeline_entries: usize,
    /// Findings held decoded (at most one pack's worth).
    pub findings: usize,
    /// Findings held packed.
    pub packed_findings: usize,
    /// Their compressed size.
    pub packed_bytes: usize,
}

/// Analyzes `records` (one recording) in one call.
pub fn analyze(
    header: &Header,
    records: impl IntoIterator<Item = Record>,
    opts: Options,
) -> Report {
    let mut a = Analyzer::new(opts);
    a.begin_file("(memory)", rf_format::FORMAT_VERSION, header);
    for rec in records {
        a.push(&rec, Prepared::of(&rec), &mut crate::Discard);
        if a.past_until() {
            break;
        }
    }
    a.end_file(FileEnd::Closed, None, None);
    a.finish()
}

#[cfg(test)]
mod send_tests {
    #[test]
    fn an_analyzer_can_move_to_another_thread() {
        fn is_send<T: Send>() {}
        is_send::<super::Analyzer>();
    }
}

/// A file's name without its directory, for messages.
fn short_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod file_tests {
    use rf_format::{Header, Kind, Op, Record, Source, Timestamp};

    use super::{Analyzer, FileEnd, Options};

    #[test]
    fn records_are_counted_by_kind_and_op_name() {
        let mut a = Analyzer::new(Options::default());
        let other = |group: &str, kind: &str| Kind::Other {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
        };
        let kinds = [
            (Kind::Event, Op::Added),
            (Kind::Event, Op::Deleted { inferred: true }),
            (other("example.com", "Widget"), Op::Modified),
            (other("example.org", "Widget"), Op::Modified),
            // Another group's kind of the same name counts with it, as a name does.
            (
                other("example.com", "Event"),
                Op::Deleted { inferred: false },
            ),
            (
                Kind::Pod,
                Op::Gap {
                    reason: "410".into(),
                },
            ),
        ];
        for (seq, (kind, op)) in kinds.into_iter().enumerate() {
            let mut r = rec(seq as u64 + 1, 100 + seq as i64);
            r.kind = kind;
            r.op = op;
            a.push(&r, crate::Prepared::of(&r), &mut crate::Discard);
        }
        let report = a.finish();
        let names = |m: &std::collections::BTreeMap<String, u64>| -> Vec<(String, u64)> {
            m.iter().map(|(k, n)| (k.clone(), *n)).collect()
        };
        // The gap is the recorder's bookkeeping, not a record of a Pod (issue 46: the kinds
        // count what the recorder's summary counts).
        assert_eq!(
            names(&report.recording.by_kind),
            [("Event".into(), 3), ("Widget".into(), 2)]
        );
        assert_eq!(
            names(&report.recording.by_op),
            [
                ("added".into(), 1),
                ("deleted".into(), 1),
                ("deleted-inferred".into(), 1),
                ("gap".into(), 1),
                ("modified".into(), 2)
            ]
        );
        // Live: the added Event (deletions of objects never seen change nothing), and both
        // Widgets, counted by name like `by_kind`.
        assert_eq!(
            names(&report.recording.live_objects),
            [("Event".into(), 1), ("Widget".into(), 2)]
        );
    }

    #[test]
    fn live_objects_follow_additions_and_deletions_per_kind_namespace_and_name() {
        let mut a = Analyzer::new(Options::default());
        let mut seq = 0;
        let mut push = |a: &mut Analyzer, kind: Kind, op: Op, ns: &str, name: &str| {
            seq += 1;
            let mut r = rec(seq, 100 + seq as i64);
            (r.kind, r.op, r.namespace, r.name) = (kind, op, ns.into(), name.into());
            a.push(&r, crate::Prepared::of(&r), &mut crate::Discard);
        };
        let deleted = Op::Deleted { inferred: false };
        push(&mut a, Kind::Pod, Op::Added, "a", "p");
        push(&mut a, Kind::Pod, Op::Modified, "a", "p");
        push(&mut a, Kind::Pod, Op::Listed, "b", "p");
        // The same name in another kind, and a namespace and name that concatenate alike.
        push(&mut a, Kind::Service, Op::Added, "a", "p");
        push(&mut a, Kind::Pod, Op::Added, "ap", "");
        push(&mut a, Kind::Pod, deleted.clone(), "a", "p");
        push(&mut a, Kind::Pod, deleted.clone(), "a", "p");
        push(&mut a, Kind::Service, deleted, "a", "q");
        let report = a.finish();
        let live: Vec<(String, u64)> = report
            .recording
            .live_objects
            .iter()
            .map(|(k, n)| (k.clone(), *n))
            .collect();
        assert_eq!(live, [("Pod".into(), 2), ("Service".into(), 1)]);
    }

    fn rec(seq: u64, secs: i64) -> Record {
        Record {
            seq,
            observed_at: Timestamp::from_unix_seconds(secs),
            kind: Kind::Event,
            op: Op::Added,
            namespace: "ns".into(),
            name: format!("e{seq}"),
            uid: String::new(),
            resource_version: seq.to_string(),
            actor: None,
            object: b"{}".to_vec(),
        }
    }

    fn two_files(second_starts: i64) -> crate::Report {
        let mut a = Analyzer::new(Options::default());
        let h = Header::new("t", Timestamp::from_unix_seconds(0), Source::default());
        a.begin_file("dir/rf-1.rfr", 1, &h);
        let r = rec(1, 10);
        a.push(&r, crate::Prepared::of(&r), &mut crate::Discard);
        a.end_file(
            FileEnd::Closed,
            Some(Timestamp::from_unix_seconds(60)),
            None,
        );
        a.begin_file("dir/rf-2.rfr", 1, &h);
        let r = rec(1, second_starts);
        a.push(&r, crate::Prepared::of(&r), &mut crate::Discard);
        a.end_file(
            FileEnd::Closed,
            Some(Timestamp::from_unix_seconds(200)),
            None,
        );
        a.finish()
    }

    #[test]
    fn a_hole_between_files_is_a_gap_that_names_both() {
        let r = two_files(120);
        assert!(!r.recording.complete);
        assert_eq!(r.recording.gaps.len(), 1, "{:?}", r.recording.gaps);
        let g = &r.recording.gaps[0];
        assert_eq!((g.file, g.seq), (1, 1));
        assert!(
            g.reason.contains("rf-1.rfr") && g.reason.contains("rf-2.rfr"),
            "{}",
            g.reason
        );
        assert!(g.reason.contains("1m00s"), "{}", g.reason);
    }

    #[test]
    fn files_that_follow_each_other_have_no_gap() {
        // The second file starts within a second of the first one's close (a rotation).
        let r = two_files(60);
        assert!(r.recording.gaps.is_empty(), "{:?}", r.recording.gaps);
        assert!(r.recording.complete);
    }
}

#[cfg(test)]
mod packed_tests {
    use rf_format::{Kind, Timestamp};

    use super::{Analyzer, Options, read_back_warning};
    use crate::report::finding::{Finding, Rule, Subject};

    /// An analyzer holding `n` findings, packed every 97.
    fn holding(n: usize) -> Analyzer {
        let mut a = Analyzer::new(Options::default()).pack_findings_every(97);
        for i in 0..n {
            let name = format!("r{}", i % 7);
            a.findings.push(Finding::new(
                Rule::RerenderRestart,
                Subject::new(Kind::Rollout, "ns", &name),
                Subject::new(Kind::Rollout, "ns", &name),
                Timestamp(((i * 7919) % 1000) as i64),
                format!("finding {i}"),
            ));
            a.pack_if_full();
        }
        a
    }

    #[test]
    fn packed_findings_serialize_as_the_plain_report_does() {
        let n = 1324;
        let mut plain = holding(n).finish();
        let (mut report, packed) = holding(n).finish_packed();
        assert_eq!(packed.len(), n);
        assert!(report.findings.is_empty());
        assert!(
            report.recording.warnings.is_empty(),
            "{:?}",
            report.recording.warnings
        );
        plain.tool.version.clear();
        report.tool.version.clear();
        assert_eq!(
            serde_json::to_string(&report.with_findings(&packed)).unwrap(),
            serde_json::to_string(&plain).unwrap()
        );
    }

    #[test]
    fn findings_not_read_back_are_an_internal_error_in_the_report() {
        assert_eq!(read_back_warning(7, 7), None);
        assert_eq!(
            read_back_warning(1000, 1324).as_deref(),
            Some("internal error: 324 of 1324 findings could not be read back")
        );
    }
}
