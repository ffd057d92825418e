//! The detectors: one file per rule, each documented under the same headings (what it detects,
//! why it matters, example).

use std::fmt::Debug;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use rf_format::Timestamp;

use crate::base::At;
use crate::model::rollout::{RolloutTrack, Transition};
use crate::model::traffic::Routed;
use crate::model::world::{DeploymentObj, PodObj, Touched, World};
use crate::report::finding::{ConditionChange, Finding, Rule, Subject};

/// Makes the detector modules of the registry's lines (`crate::report::rules`), the constructor of every
/// detector, and each rule's documentation (its detector module's).
macro_rules! detector_modules {
    ($($variant:ident, $id:literal, $severity:ident, $module:ident;)*) => {
        $(mod $module;)*

        /// One instance of every detector, in rule order but for [`Facts`]: every detector
        /// that writes them before every one that reads them (a stable sort on
        /// [`Detector::facts`]), since they all look at a scene in this order.
        pub(crate) fn all(snapshot: bool) -> Vec<Box<dyn Detector>> {
            let mut all: Vec<Box<dyn Detector>> = vec![$($module::detector(snapshot)),*];
            all.sort_by_key(|d| d.facts());
            all
        }

        /// The source of a rule's detector: its module documentation is the rule's.
        fn source(rule: Rule) -> &'static str {
            match rule {
                $(Rule::$variant => include_str!(concat!(stringify!($module), ".rs")),)*
            }
        }
    };
}
crate::report::rules::registry!(detector_modules);

pub(crate) mod reconstructed;
pub(crate) mod writer;

impl Rule {
    /// The rule's documentation, in Markdown: a first paragraph `` `id` (severity): what it
    /// finds. ``, then the headings `What it detects`, `Why it matters` and `Example`, and
    /// `Evidence` and `Remedy` where there is more to say.
    pub fn documentation(self) -> String {
        let mut doc = String::new();
        for line in source(self).lines().take_while(|l| l.starts_with("//!")) {
            let line = line.trim_start_matches("//!");
            doc.push_str(line.strip_prefix(' ').unwrap_or(line));
            doc.push('\n');
        }
        doc
    }

    /// What the rule finds, in one sentence: its documentation's first paragraph, after
    /// `` `id` (severity): ``.
    pub fn summary(self) -> String {
        let doc = self.documentation();
        let first = doc.split("\n\n").next().unwrap_or_default();
        let text = first.split_once("): ").map_or(first, |(_, t)| t);
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The severities its findings can have, as its documentation says them: `error`, or
    /// `info or warning`.
    pub fn severity_words(self) -> String {
        let doc = self.documentation();
        let first = doc.lines().next().unwrap_or_default();
        first
            .split_once(" (")
            .and_then(|(_, rest)| rest.split_once("): "))
            .map_or_else(
                || self.severity().to_string(),
                |(words, _)| words.to_owned(),
            )
    }
}

/// How long a cross-object mismatch must hold before it counts: the endpoints controller and
/// Argo CD's refresh follow a change within seconds.
pub(crate) const SETTLE_SECONDS: i64 = 10;

/// A rollout and the world around it, at `now`.
#[derive(Debug)]
pub(crate) struct Scene<'a> {
    pub track: &'a RolloutTrack,
    pub world: &'a World,
    /// The Services that route to the rollout ([`World::routing`]).
    pub routing: &'a [Routed<'a>],
    /// The record being replayed (or the end of the analysis).
    pub now: At,
    /// What the record changed, when it was not the rollout itself.
    pub touched: Option<&'a Touched>,
    /// The records are one snapshot (`check`): what holds now is settled.
    pub snapshot: bool,
    /// This is the end of the analysis.
    pub end: bool,
}

impl Scene<'_> {
    /// True when a condition true since `since` has held long enough (`secs`).
    pub fn settled(&self, since: At, secs: i64) -> bool {
        self.snapshot || self.now.at.0 - since.at.0 >= secs * 1_000_000_000
    }

    /// When a condition true since `since` will have held `secs`.
    pub fn due(since: At, secs: i64) -> Timestamp {
        Timestamp(since.at.0.saturating_add(secs * 1_000_000_000))
    }
}

/// Conditions that must hold for a while before they count, each reported once: the
/// bookkeeping the cross-object detectors share. A detector calls [`begin`](Self::begin),
/// then [`holds`](Self::holds) for each condition true now, [`settled`](Self::settled) and
/// [`fire`](Self::fire) as it reports, and [`end_in`](Self::end_in) with the keys that are its own.
#[derive(Debug)]
pub(crate) struct Settling<K> {
    /// Since when each unreported condition has held.
    pending: BTreeMap<K, At>,
    fired: BTreeSet<K>,
    /// The conditions seen true during this look.
    seen: BTreeSet<K>,
    due: Option<Timestamp>,
    /// Reported conditions holding now.
    active: BTreeSet<K>,
    /// The time of this look.
    now: Option<At>,
    /// Reported conditions that started or stopped holding since they were last taken (at most
    /// [`KEEP_CHANGES`]: only a live caller takes them).
    changes: std::collections::VecDeque<(K, bool, At)>,
    /// How many keys of each rollout (by [`owner`]) are pending or active: ending a look at a
    /// rollout that holds none visits neither map. Where a recording holds conditions of many
    /// rollouts (a green Application beside each paused one), the two searches of maps of
    /// string tuples at every look at every rollout were most of a detector's time.
    held: crate::base::HashMap<u64, u32>,
}

/// A key of [`Settling`] names its rollout first: its namespace, then its name.
pub(crate) trait RolloutKey {
    fn rollout(&self) -> (&str, &str);
}

macro_rules! rollout_keys_of {
    ($(($($t:ident),*)),*) => {$(
        impl<$($t),*> RolloutKey for (String, String, $($t),*) {
            fn rollout(&self) -> (&str, &str) {
                (&self.0, &self.1)
            }
        }
    )*};
}
rollout_keys_of!((C), (C, D), (C, D, E), (C, D, E, F));

/// The number [`Settling::held`] counts a rollout's keys under (two rollouts may share one:
/// then a look at either visits the maps).
fn owner(key: &impl RolloutKey) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x6f77_6e65_7273).hash_one(key.rollout())
}

/// Condition changes kept untaken per detector (a caller that does not take them loses the
/// oldest).
const KEEP_CHANGES: usize = 256;

impl<K> Default for Settling<K> {
    fn default() -> Self {
        Settling {
            pending: BTreeMap::new(),
            fired: BTreeSet::new(),
            seen: BTreeSet::new(),
            due: None,
            active: BTreeSet::new(),
            now: None,
            changes: std::collections::VecDeque::new(),
            held: crate::base::HashMap::default(),
        }
    }
}

impl<K: Ord + Clone + RolloutKey> Settling<K> {
    /// Starts a look at `now`: nothing seen true yet.
    pub fn begin(&mut self, now: At) {
        self.seen.clear();
        self.due = None;
        self.now = Some(now);
    }

    /// `key` holds now. Returns since when it has held, or `None` when it was reported already.
    pub fn holds(&mut self, key: &K, now: At) -> Option<At> {
        self.seen.insert(key.clone());
        if self.fired.contains(key) {
            // Reported, stopped holding, and holds again (while it goes on holding, as at most
            // looks, nothing is copied).
            if !self.active.contains(key) {
                self.active.insert(key.clone());
                self.count(key, true);
                self.change(key.clone(), true, now);
            }
            return None;
        }
        if let Some(since) = self.pending.get(key) {
            return Some(*since);
        }
        self.pending.insert(key.clone(), now);
        self.count(key, true);
        Some(now)
    }

    /// One key of `key`'s rollout more (`more`) or fewer in `pending` or `active`.
    fn count(&mut self, key: &K, more: bool) {
        let owner = owner(key);
        if more {
            *self.held.entry(owner).or_default() += 1;
        } else if let Some(n) = self.held.get_mut(&owner) {
            *n -= 1;
            if *n == 0 {
                self.held.remove(&owner);
            }
        }
    }

    /// True when a condition true since `since` has held `secs`; if not, remembers when it
    /// will have, for [`end_in`](Self::end_in) to return.
    pub fn settled(&mut self, scene: &Scene<'_>, since: At, secs: i64) -> bool {
        if scene.settled(since, secs) {
            return true;
        }
        let t = Scene::due(since, secs);
        self.due = Some(self.due.map_or(t, |d| d.min(t)));
        false
    }

    /// [`holds`](Self::holds), then [`settled`](Self::settled) for `secs`: when it has held
    /// that long, `key` is reported now ([`fire`](Self::fire)) and since when it has held is
    /// returned.
    pub fn ripe(&mut self, scene: &Scene<'_>, key: K, secs: i64) -> Option<At> {
        let since = self.holds(&key, scene.now)?;
        if !self.settled(scene, since, secs) {
            return None;
        }
        self.fire(key, scene.now);
        Some(since)
    }

    /// `key` is reported now: never again.
    pub fn fire(&mut self, key: K, now: At) {
        if self.pending.remove(&key).is_some() {
            self.count(&key, false);
        }
        if self.active.insert(key.clone()) {
            self.count(&key, true);
        }
        self.change(key.clone(), true, now);
        self.fired.insert(key);
    }

    fn change(&mut self, key: K, holds: bool, at: At) {
        if self.changes.len() == KEEP_CHANGES {
            self.changes.pop_front();
        }
        self.changes.push_back((key, holds, at));
    }

    /// The reported conditions that started or stopped holding since last asked, each as
    /// (`rule`, the rollout `of` its key names, the key's name, holds, when).
    pub fn take_changes(
        &mut self,
        rule: Rule,
        of: impl Fn(&K) -> (&str, &str),
        out: &mut Vec<ConditionChange>,
    ) where
        K: std::fmt::Debug,
    {
        for (key, holds, at) in self.changes.drain(..) {
            let (ns, name) = of(&key);
            out.push(ConditionChange {
                rule,
                rollout: Subject::new(rf_format::Kind::Rollout, ns, name),
                condition: format!("{key:?}"),
                holds,
                at: at.at,
            });
        }
    }

    /// Ends the look: conditions of this look's subject, the keys in `range`, not seen true
    /// stopped holding and start over. Returns when to look again. Only those keys are visited
    /// (not every rollout's held keys, at each look), and the range is made only when a key is
    /// held at all (most looks, of most rollouts, hold none): see [`rollout_keys`].
    pub fn end_in(&mut self, range: impl FnOnce() -> (Bound<K>, Bound<K>)) -> Option<Timestamp> {
        if self.holds_none() {
            return self.due;
        }
        let range = range();
        if let Bound::Included(least) | Bound::Excluded(least) = &range.0 {
            if !self.held.contains_key(&owner(least)) {
                return self.due;
            }
        }
        let seen = &self.seen;
        let stale: Vec<K> = self
            .pending
            .range(range.clone())
            .filter(|(k, _)| !seen.contains(*k))
            .map(|(k, _)| k.clone())
            .collect();
        let gone: Vec<K> = self
            .active
            .range(range)
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for k in stale {
            if self.pending.remove(&k).is_some() {
                self.count(&k, false);
            }
        }
        self.stopped(gone)
    }

    /// True when no condition of any subject is pending or reported (most looks): ending a
    /// look then has nothing to visit.
    fn holds_none(&self) -> bool {
        self.pending.is_empty() && self.active.is_empty()
    }

    /// Reported conditions that stopped holding by this look; returns when to look again.
    fn stopped(&mut self, gone: Vec<K>) -> Option<Timestamp> {
        for k in gone {
            if self.active.remove(&k) {
                self.count(&k, false);
            }
            if let Some(at) = self.now {
                self.change(k, false, at);
            }
        }
        self.due
    }

    /// True when nothing was seen true during this look.
    pub fn none_seen(&self) -> bool {
        self.seen.is_empty()
    }
}

/// The bounds of rollout `name`'s keys in an ordered map whose keys begin with a rollout's
/// namespace and name ([`Settling::end_in`]); `least` makes the least key of a rollout of the
/// name it is given. A rollout's name holds no NUL, so `name` followed by one sorts after each
/// of its keys and before the next rollout's.
pub(crate) fn rollout_keys<K>(name: &str, least: impl Fn(String) -> K) -> (Bound<K>, Bound<K>) {
    (
        Bound::Included(least(name.to_owned())),
        Bound::Excluded(least({
            let mut past = String::with_capacity(name.len() + 1);
            past.push_str(name);
            past.push('\0');
            past
        })),
    )
}

/// The name a detector keeps a workload's state under, beside the rollouts': a plain
/// Deployment as `deployment/NAME` (no rollout's name holds a slash).
pub(crate) fn deployment_key(name: &str) -> String {
    format!("deployment/{name}")
}

/// [`deployment_key`] of a finding's `rollout` when it is a Deployment, else the rollout's
/// name.
pub(crate) fn workload_key(owner: &Subject) -> String {
    if owner.kind == rf_format::Kind::Rollout {
        owner.name.clone()
    } else {
        deployment_key(&owner.name)
    }
}

/// Images remembered per rollout by the detectors that remember images.
pub(crate) const KEEP_IMAGES: usize = 32;

/// What a detector remembers of each image one rollout ran, so that it does not grow with the
/// number of releases a recording holds (a day of a busy namespace ships a new tag every few
/// minutes): every image still in use (`in_use`: in the template, in a running pod), and of the
/// others the ones seen most recently, up to [`KEEP_IMAGES`] images in all. An image out of use
/// for that many newer images is forgotten: more releases ago than a rollback reaches
/// (`revisionHistoryLimit`, 10 by default).
#[derive(Debug)]
pub(crate) struct RecentImages<V> {
    /// (image, when last seen, what is known of it), in the order first seen.
    images: Vec<(Box<str>, u64, V)>,
    clock: u64,
    /// Where the image touched last is: almost every touch is of the same one again (the
    /// template's image, at every state change of the rollout), found there without a walk.
    last: usize,
}

impl<V> Default for RecentImages<V> {
    fn default() -> Self {
        RecentImages {
            images: Vec::new(),
            clock: 0,
            last: 0,
        }
    }
}

impl<V> RecentImages<V> {
    /// Each image remembered, with what is known of it.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.images.iter().map(|(image, _, v)| (&**image, v))
    }
}

impl<V: Default> RecentImages<V> {
    /// What is known of `image`, which is seen now, and whether it is new to this memory. An
    /// image new beyond [`KEEP_IMAGES`] takes the place of the one seen least recently among
    /// those not `in_use` (asked only then); if all are in use, it is added.
    pub fn touch(&mut self, image: &str, mut in_use: impl FnMut(&str) -> bool) -> (&mut V, bool) {
        self.clock += 1;
        // Each image is held once: where it was last is where it is, if it is that one.
        let at = match self.images.get(self.last) {
            Some((known, ..)) if **known == *image => Some(self.last),
            _ => self.images.iter().position(|(known, ..)| **known == *image),
        };
        let (i, new) = match at {
            Some(i) => {
                self.images[i].1 = self.clock;
                (i, false)
            }
            None => {
                let entry = (image.into(), self.clock, V::default());
                let unused = (self.images.len() >= KEEP_IMAGES)
                    .then(|| {
                        (0..self.images.len())
                            .filter(|&i| !in_use(&self.images[i].0))
                            .min_by_key(|&i| self.images[i].1)
                    })
                    .flatten();
                match unused {
                    Some(i) => {
                        self.images[i] = entry;
                        (i, true)
                    }
                    None => {
                        self.images.push(entry);
                        (self.images.len() - 1, true)
                    }
                }
            }
        };
        self.last = i;
        (&mut self.images[i].2, new)
    }

    /// How many images are remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.images.len()
    }
}

/// Facts one detector establishes for another, by (namespace, rollout, pod hash), within one
/// look at a scene. Who writes and who reads them says so ([`Detector::facts`]), and
/// [`all`] orders the writers first.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// Revisions that should take traffic and do not: written by `canary-not-in-endpoints`
    /// (no Service that should route to it does) and `front-door-bypass` (the router sends
    /// customers elsewhere), read by `gitops-health-mismatch`. A handful at most.
    not_adopted: Vec<NotAdopted>,
}

/// A revision that should take traffic and does not, as the rule that knows it says why.
#[derive(Debug)]
pub(crate) struct NotAdopted {
    namespace: String,
    rollout: String,
    hash: String,
    by: Rule,
    /// What keeps customers from the revision, as a clause ("no Service sends ...").
    pub what: String,
    /// The same, as the rollout's evidence line.
    pub detail: String,
}

impl Facts {
    /// Rule `by` finds revision `hash` of `track` not adopted; `words` (what, detail) say why,
    /// called only when it was not known yet.
    pub fn not_adopted_by(
        &mut self,
        by: Rule,
        track: &RolloutTrack,
        hash: &str,
        words: impl FnOnce() -> (String, String),
    ) {
        if self
            .not_adopted
            .iter()
            .any(|n| n.by == by && n.is(track, hash))
        {
            return;
        }
        let (what, detail) = words();
        self.not_adopted.push(NotAdopted {
            namespace: track.namespace().to_owned(),
            rollout: track.name().to_owned(),
            hash: hash.to_owned(),
            by,
            what,
            detail,
        });
    }

    /// Rule `by` no longer finds any revision of `track` not adopted.
    pub fn adopted_by(&mut self, by: Rule, track: &RolloutTrack) {
        if !self.not_adopted.is_empty() {
            self.not_adopted.retain(|n| {
                !(n.by == by && n.namespace == track.namespace() && n.rollout == track.name())
            });
        }
    }

    /// Why revision `hash` of `track` takes no traffic it should, if a rule found so.
    pub fn not_adopted(&self, track: &RolloutTrack, hash: &str) -> Option<&NotAdopted> {
        self.not_adopted.iter().find(|n| n.is(track, hash))
    }
}

impl NotAdopted {
    fn is(&self, track: &RolloutTrack, hash: &str) -> bool {
        self.hash == hash && self.namespace == track.namespace() && self.rollout == track.name()
    }
}

/// What a detector does with the [`Facts`], in the order the detectors must run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum FactsUse {
    Writes,
    Ignores,
    Reads,
}
/// A plain Deployment (one no rollout's `workloadRef` names) as a record changed it or one of
/// its pods (`pod`).
#[derive(Debug)]
pub(crate) struct DeploymentScene<'a> {
    pub dep: &'a DeploymentObj,
    /// The pod whose record this is, when it is a pod's.
    pub pod: Option<(&'a str, &'a PodObj)>,
    pub world: &'a World,
    /// The record looked at (at the end, the recording's end).
    pub now: At,
    /// The recording ended: nothing more will be recorded of it.
    pub end: bool,
}

impl DeploymentScene<'_> {
    /// The Deployment as a finding's subject and rollout.
    pub fn subject(&self) -> Subject {
        Subject::new(
            rf_format::api::DEPLOYMENT.newest(),
            &self.dep.namespace,
            &self.dep.name,
        )
    }

    /// Evidence of the Deployment's last record.
    pub fn evidence(&self, detail: impl Into<String>) -> crate::report::finding::Evidence {
        crate::report::finding::Evidence::of(self.dep.pos, self.subject(), detail)
    }
}

/// A detector sees every rollout transition, every change of a rollout's ReplicaSets, and the
/// end of the analysis; it pushes what it finds.
pub(crate) trait Detector: Debug + Send {
    /// A plain Deployment changed, or a pod of it.
    fn on_deployment(&mut self, _d: &DeploymentScene<'_>, _out: &mut Vec<Finding>) {}
    /// Whether it writes [`Facts`] for others, reads them, or neither.
    fn facts(&self) -> FactsUse {
        FactsUse::Ignores
    }
    /// A rollout's state changed.
    fn on_transition(&mut self, _t: &Transition<'_>, _out: &mut Vec<Finding>) {}
    /// One of the rollout's ReplicaSets changed.
    fn on_replicaset(&mut self, _track: &RolloutTrack, _out: &mut Vec<Finding>) {}
    /// The analysis ends at `end` (the last record, or `--at`). `findings` holds the findings
    /// not packed yet, among them every one of a rule that is
    /// [`amended_at_end`](crate::report::finding::Rule::amended_at_end): a detector may amend those.
    /// What the analysis ended too soon to decide (a grace period not yet over) goes to
    /// `undecided`, one sentence each with the rollout it concerns, so that no finding's
    /// absence reads as a clean bill.
    fn on_end(
        &mut self,
        _tracks: &[&RolloutTrack],
        _world: &World,
        _end: At,
        _findings: &mut Vec<Finding>,
        _undecided: &mut Vec<(Subject, String)>,
    ) {
    }
    /// What it changes in its findings once the analysis has ended, as each is read (a
    /// finding made early is packed, not held: the change comes with the reading).
    fn amender(&self) -> Option<crate::report::end::Amender> {
        None
    }
    /// The reported conditions that stopped holding or hold again since last asked (the
    /// detectors that keep their conditions in a [`Settling`]).
    fn take_changes(&mut self, _out: &mut Vec<ConditionChange>) {}
    /// A recording that goes on (a live recorder) is at `now`: what [`on_end`](Self::on_end)
    /// would find at this time that is decided already, reported once, and not again at the end.
    fn on_live(
        &mut self,
        _tracks: &[&RolloutTrack],
        _world: &World,
        _now: At,
        _findings: &mut Vec<Finding>,
    ) {
    }
    /// Something around a rollout changed (a Service, its endpoints, a Pod, an Application),
    /// or the rollout itself, or a re-check it asked for is due, or the analysis ends. Returns
    /// when it wants to look again even if nothing changes.
    fn on_world(
        &mut self,
        _scene: &Scene<'_>,
        _facts: &mut Facts,
        _out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        None
    }
}

/// A revision change whose templates are compared once both are known (the new ReplicaSet can
/// arrive after the status that names its hash).
#[derive(Debug, Clone)]
pub(crate) struct PendingDiff {
    pub namespace: String,
    pub rollout: String,
    pub change: crate::model::rollout::RevisionChange,
    pub pos: At,
}

impl PendingDiff {
    pub fn of(
        track: &RolloutTrack,
        change: &crate::model::rollout::RevisionChange,
        pos: At,
    ) -> Self {
        PendingDiff {
            namespace: track.namespace().to_owned(),
            rollout: track.name().to_owned(),
            change: change.clone(),
            pos,
        }
    }

    pub fn is_for(&self, track: &RolloutTrack) -> bool {
        self.namespace == track.namespace() && self.rollout == track.name()
    }

    /// The template differences, when both templates are known.
    pub fn resolve(
        &self,
        track: &RolloutTrack,
    ) -> Option<(Vec<crate::model::diff::Change>, &'static str)> {
        let (a, b, source) = track.comparable_templates(&self.change.from, &self.change.to)?;
        Some((track.template_diff(a, b)?, source))
    }
}

/// Turns a resolved comparison into findings.
pub(crate) type EmitFn = fn(
    &PendingDiff,
    &RolloutTrack,
    Vec<crate::model::diff::Change>,
    &'static str,
    &mut Vec<Finding>,
);

/// Template comparisons kept waiting per rollout ([`Comparisons::queue`]).
pub(crate) use crate::model::rollout::KEEP_PENDING;

/// Template comparisons waiting for both templates, shared by the detectors that compare the
/// two revisions of a change.
#[derive(Debug)]
pub(crate) struct Comparisons {
    pending: Vec<PendingDiff>,
    emit: EmitFn,
}

impl Comparisons {
    pub fn new(emit: EmitFn) -> Self {
        Comparisons {
            pending: Vec::new(),
            emit,
        }
    }

    /// Compares the templates of `change` now, or as soon as both are known. A rollout keeps
    /// its latest [`KEEP_PENDING`] comparisons waiting: one whose templates never come (a
    /// ReplicaSet deleted before the recording began) would otherwise wait, and be looked at
    /// at every ReplicaSet record, for the rest of the recording.
    pub fn queue(
        &mut self,
        t: &Transition<'_>,
        change: &crate::model::rollout::RevisionChange,
        out: &mut Vec<Finding>,
    ) {
        self.wait(t.track, change, t.cur.pos, out);
    }

    fn wait(
        &mut self,
        track: &RolloutTrack,
        change: &crate::model::rollout::RevisionChange,
        pos: At,
        out: &mut Vec<Finding>,
    ) {
        if self.waiting(track) >= KEEP_PENDING {
            if let Some(oldest) = self.pending.iter().position(|p| p.is_for(track)) {
                self.pending.remove(oldest);
            }
        }
        self.pending.push(PendingDiff::of(track, change, pos));
        self.drain(&[track], out);
    }

    /// How many comparisons of `track` wait for a template.
    fn waiting(&self, track: &RolloutTrack) -> usize {
        self.pending.iter().filter(|p| p.is_for(track)).count()
    }

    /// A ReplicaSet of `track` changed: its template may complete a comparison.
    pub fn retry(&mut self, track: &RolloutTrack, out: &mut Vec<Finding>) {
        if self.pending.iter().any(|p| p.is_for(track)) {
            self.drain(&[track], out);
        }
    }

    /// Runs every comparison whose templates are known, keeping the others.
    pub fn drain(&mut self, tracks: &[&RolloutTrack], out: &mut Vec<Finding>) {
        let emit = self.emit;
        self.pending.retain(|p| {
            let Some(track) = tracks.iter().find(|t| p.is_for(t)) else {
                return true;
            };
            match p.resolve(track) {
                Some((changes, source)) => {
                    emit(p, track, changes, source, out);
                    false
                }
                None => true,
            }
        });
    }
}

/// `word` as one shell word: as it is when it holds only characters no shell reads specially,
/// else in single quotes (a quote inside closed, escaped and reopened).
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=,:@%+".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `name` (namespace `ns`) as `kubectl argo rollouts` arguments.
pub(crate) fn argo(track: &RolloutTrack) -> String {
    format!("{} -n {}", track.name(), track.namespace())
}

/// A change of revision as the status record shows it: "currentPodHash a -> b, currentStepIndex
/// 1 -> 0", without the index (there is none) for a blue-green rollout.
pub(crate) fn hash_change_words(
    track: &RolloutTrack,
    t: &Transition<'_>,
    change: &crate::model::rollout::RevisionChange,
) -> String {
    if track.is_blue_green() {
        format!("currentPodHash {} -> {}", change.from, change.to)
    } else {
        format!(
            "currentPodHash {} -> {}, currentStepIndex {} -> {}",
            change.from, change.to, t.prev.step_index, t.cur.step_index
        )
    }
}

/// What a new pod template restarts: a canary, or a blue-green rollout's preview.
pub(crate) fn revision_word(track: &RolloutTrack) -> &'static str {
    if track.is_blue_green() {
        "preview"
    } else {
        "canary"
    }
}

/// The pause of `track` at step `index` as a record shows it: "paused at step 1
/// (CanaryPauseStep)", or "paused before promotion (BlueGreenPause)".
pub(crate) fn paused_words(track: &RolloutTrack, index: i64) -> String {
    if track.is_blue_green() {
        "paused before promotion (BlueGreenPause)".to_owned()
    } else {
        format!("paused at step {index} (CanaryPauseStep)")
    }
}

/// The pause at step `index` of `track` in a sentence: "the pause at step 1", or "the
/// pre-promotion pause" of a blue-green rollout.
pub(crate) fn pause_words(track: &RolloutTrack, index: i64) -> String {
    if track.is_blue_green() {
        "the pre-promotion pause".to_owned()
    } else {
        format!("the pause at step {index}")
    }
}

/// "step 1 (pause (until promoted))" for a step index of `track`; "the pre-promotion pause"
/// for a blue-green rollout.
pub(crate) fn step_words(track: &RolloutTrack, index: i64) -> String {
    if track.is_blue_green() {
        return "the pre-promotion pause".to_owned();
    }
    let what = usize::try_from(index)
        .ok()
        .and_then(|i| track.steps().get(i))
        .map(|s| format!(" ({})", s.describe()))
        .unwrap_or_default();
    format!("step {index}{what}")
}

#[cfg(test)]
mod tests {
    use super::{Comparisons, KEEP_IMAGES, KEEP_PENDING, RecentImages};
    use crate::base::At;
    use crate::model::rollout::{Progress, RevisionChange, RevisionClass, RolloutTrack};
    use crate::report::finding::{Rule, Severity};

    /// `end_in` ends a look for the keys of its rollout ([`super::rollout_keys`]) and leaves
    /// the others: a reported condition of this rollout not seen true stops holding (and is
    /// reported again when it holds again), another rollout's stays, also one whose name
    /// begins with this one's.
    #[test]
    fn ending_a_look_in_a_range_touches_that_rollouts_keys_only() {
        type Key = (String, String, &'static str);
        let key = |rollout: &str, what| ("ns".to_owned(), rollout.to_owned(), what);
        let at = |s: i64| At {
            file: 0,
            seq: s as u64,
            at: rf_format::Timestamp::from_unix_seconds(s),
        };
        let of = |rollout: &str| super::rollout_keys(rollout, |n| ("ns".to_owned(), n, ""));
        let mut s: super::Settling<Key> = super::Settling::default();
        // Both rollouts' conditions reported, and one of web's still pending.
        for rollout in ["web", "web-2"] {
            s.begin(at(1));
            s.holds(&key(rollout, "red"), at(1));
            s.fire(key(rollout, "red"), at(1));
            s.end_in(|| of(rollout));
        }
        s.begin(at(2));
        assert_eq!(s.holds(&key("web", "red"), at(2)), None);
        s.holds(&key("web", "green"), at(2));
        s.end_in(|| of("web"));
        assert_eq!(s.pending.len(), 1);
        assert_eq!(s.active.len(), 2);
        // A look at web that sees nothing: its conditions stop holding, web-2's do not.
        s.begin(at(3));
        s.end_in(|| of("web"));
        assert!(s.pending.is_empty());
        assert_eq!(s.active.iter().collect::<Vec<_>>(), [&key("web-2", "red")]);
        assert_eq!(s.changes.back(), Some(&(key("web", "red"), false, at(3))));
        // Holding again, it is not reported again; it holds again.
        s.begin(at(4));
        assert_eq!(s.holds(&key("web", "red"), at(4)), None);
        s.end_in(|| of("web"));
        assert_eq!(s.active.len(), 2);
    }

    /// What [`Settling::held`] counts, counted again from the maps.
    fn held_again<K: Ord + Clone + super::RolloutKey>(
        s: &super::Settling<K>,
    ) -> crate::base::HashMap<u64, u32> {
        let mut held = crate::base::HashMap::default();
        for k in s.pending.keys().chain(s.active.iter()) {
            *held.entry(super::owner(k)).or_default() += 1;
        }
        held
    }

    /// Looks at rollouts whose conditions come, are reported, go and come again, in a
    /// scrambled order: the keys counted per rollout are always those the maps hold, and a
    /// look at a rollout that holds none changes nothing.
    #[test]
    fn the_keys_held_per_rollout_are_counted_as_the_maps_hold_them() {
        type Key = (String, String, u8);
        let at = |s: u64| At {
            file: 0,
            seq: s,
            at: rf_format::Timestamp::from_unix_seconds(s as i64),
        };
        let mut s: super::Settling<Key> = super::Settling::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for t in 1..3000 {
            let rollout = format!("r{}", next(6));
            s.begin(at(t));
            for what in 0..3u8 {
                if next(3) == 0 {
                    let key = ("ns".to_owned(), rollout.clone(), what);
                    if s.holds(&key, at(t)).is_some() && next(4) == 0 {
                        s.fire(key, at(t));
                    }
                }
            }
            let (pending, active) = (s.pending.len(), s.active.len());
            let holds_some =
                s.held
                    .contains_key(&super::owner(&("ns".to_owned(), rollout.clone(), 0u8)));
            s.end_in(|| super::rollout_keys(&rollout, |n| ("ns".to_owned(), n, 0)));
            if !holds_some {
                assert_eq!((s.pending.len(), s.active.len()), (pending, active));
            }
            assert_eq!(s.held, held_again(&s), "after look {t}");
        }
        assert!(!s.active.is_empty() && !s.fired.is_empty());
    }

    #[test]
    fn detectors_that_write_facts_look_before_those_that_read_them() {
        let uses: Vec<super::FactsUse> = super::all(false).iter().map(|d| d.facts()).collect();
        let last_writer = uses.iter().rposition(|u| *u == super::FactsUse::Writes);
        let first_reader = uses.iter().position(|u| *u == super::FactsUse::Reads);
        assert!(last_writer.is_some() && first_reader.is_some(), "{uses:?}");
        assert!(last_writer < first_reader, "{uses:?}");
    }

    #[test]
    fn every_rule_has_one_detector_and_its_documentation_under_the_same_headings() {
        assert_eq!(super::all(false).len(), Rule::ALL.len());
        let mut ids = std::collections::BTreeSet::new();
        for &rule in Rule::ALL {
            assert!(ids.insert(rule.id()), "{rule}: the id is taken");
            assert_eq!(Rule::from_id(rule.id()), Some(rule));
            let doc = rule.documentation();
            let first = format!("`{}` ({}): ", rule.id(), rule.severity_words());
            assert!(doc.starts_with(&first), "{rule}: begins {first:?}:\n{doc}");
            assert!(
                rule.severity_words()
                    .split(" or ")
                    .any(|w| w == rule.severity().as_str()),
                "{rule}: its severity {} is not in {:?}",
                rule.severity(),
                rule.severity_words()
            );
            let summary = rule.summary();
            assert!(
                summary.len() > 20 && !summary.contains('\n'),
                "{rule}: {summary:?}"
            );
            let headings: Vec<&str> = doc.lines().filter(|l| l.starts_with("# ")).collect();
            let want = ["# What it detects", "# Why it matters", "# Example"];
            assert_eq!(&headings[..3], want, "{rule}: headings {headings:?}");
            for h in &headings[3..] {
                assert!(
                    ["# Evidence", "# Remedy", "# Before the sync"].contains(h),
                    "{rule}: heading {h}"
                );
            }
            // What `lint` checks of it, exactly for the rules it checks.
            assert_eq!(
                headings.contains(&"# Before the sync"),
                crate::lint::LINT_RULES.contains(&rule)
                    || crate::lint::gate::GATE_RULES.contains(&rule),
                "{rule}: # Before the sync"
            );
            // What users read is plain Markdown: no rustdoc links into the code.
            assert!(
                !doc.contains("](") && !doc.contains("[`"),
                "{rule}: a rustdoc link:\n{doc}"
            );
        }
        // The durations the documentation states are the code's.
        assert!(Rule::OrphanedReplicaSet.documentation().contains(&format!(
            "at least {} s",
            super::orphaned_replicaset::GRACE_SECONDS
        )));
        assert!(Rule::DoubleRender.documentation().contains(&format!(
            "within {} s",
            super::double_render::WINDOW_SECONDS
        )));
        for rule in [
            Rule::CanaryNotInEndpoints,
            Rule::ServiceSelectorMismatch,
            Rule::GitopsHealthMismatch,
        ] {
            assert!(
                rule.documentation()
                    .contains(&format!("at least {} s", super::SETTLE_SECONDS)),
                "{rule}"
            );
        }
        assert_eq!(Rule::GitopsHealthMismatch.severity(), Severity::Warning);
    }

    #[test]
    fn a_rollout_keeps_its_latest_comparisons_waiting_for_templates_that_never_come() {
        fn never_emitted(
            _: &super::PendingDiff,
            _: &RolloutTrack,
            _: Vec<crate::model::diff::Change>,
            _: &'static str,
            _: &mut Vec<crate::Finding>,
        ) {
            panic!("no template is known: nothing to compare");
        }
        let mut c = Comparisons::new(never_emitted);
        let (a, b) = (
            RolloutTrack::new("ns", "a", false),
            RolloutTrack::new("ns", "b", false),
        );
        let change = |n: usize| RevisionChange {
            from: format!("gone{n}").into(),
            to: format!("gone{}", n + 1).into(),
            class: RevisionClass::Restart,
            old_progress: Progress::default(),
            render: None,
            previous_render: None,
            deferred: false,
        };
        let at = |n: usize| At {
            file: 0,
            seq: n as u64,
            at: rf_format::Timestamp(n as i64),
        };
        let mut out = Vec::new();
        for n in 0..3 {
            c.wait(&b, &change(n), at(n), &mut out);
        }
        for n in 0..(4 * KEEP_PENDING) {
            c.wait(&a, &change(n), at(n), &mut out);
        }
        assert_eq!(c.waiting(&a), KEEP_PENDING);
        assert_eq!(c.waiting(&b), 3, "another rollout's are its own");
        // The latest kept, in order.
        let kept: Vec<u64> = c
            .pending
            .iter()
            .filter(|p| p.is_for(&a))
            .map(|p| p.pos.seq)
            .collect();
        let latest: Vec<u64> = (3 * KEEP_PENDING..4 * KEEP_PENDING)
            .map(|n| n as u64)
            .collect();
        assert_eq!(kept, latest);
        assert!(out.is_empty());
    }

    #[test]
    fn recent_images_keep_what_is_in_use_and_the_images_seen_most_recently() {
        let mut m = RecentImages::<u32>::default();
        let never = |_: &str| false;
        let (v, new) = m.touch("sidecar:1", never);
        assert!(new);
        *v = 7;
        m.touch("base:1", never);
        // Far more releases than the bound, the sidecar seen at each of them, the base image
        // not seen again but in use throughout.
        let in_use = |image: &str| image == "base:1";
        for release in 0..(3 * KEEP_IMAGES) {
            assert!(
                m.touch(&format!("app:{release}"), in_use).1,
                "app:{release} is new"
            );
            let (v, new) = m.touch("sidecar:1", in_use);
            assert!(!new, "the sidecar was forgotten at release {release}");
            assert_eq!(*v, 7, "the sidecar's state was lost at release {release}");
            assert!(m.len() <= KEEP_IMAGES);
        }
        assert_eq!(m.len(), KEEP_IMAGES);
        assert!(!m.touch("base:1", never).1, "an image in use was forgotten");
        // The latest releases are remembered; the first ones, not seen since, are not.
        let last = 3 * KEEP_IMAGES - 1;
        assert!(!m.touch(&format!("app:{last}"), never).1);
        assert!(!m.touch(&format!("app:{}", last + 3 - KEEP_IMAGES), never).1);
        assert!(
            m.touch("app:0", never).1,
            "app:0 was seen before all the others"
        );
        assert_eq!(m.len(), KEEP_IMAGES);
        // With every image in use, a new one is added: what is in use is never forgotten.
        assert!(m.touch("app:new", |_| true).1);
        assert_eq!(m.len(), KEEP_IMAGES + 1);
    }
}

#[cfg(test)]
mod deployment_tests;
