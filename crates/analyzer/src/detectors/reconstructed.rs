//! Findings about the time before a recording, reconstructed from what the cluster kept of it.
//!
//! A recording that begins after an incident (the on-call starts `record` once paged; `now`
//! lists the cluster the next morning) holds no record of the restart itself, but its first
//! lists do: the rollout's ReplicaSets, each with its revision, creation time and pod template,
//! and the Argo Rollouts controller's Events (`Created ReplicaSet X (revision N)`, `Rollout
//! step i/n completed`, `Rollout is paused (CanaryPauseStep)`, `Rollout is resumed`, `Rollout
//! completed update to revision N`, `Rollout aborted ...`). Between two ReplicaSets created one
//! after the other, a step or pause Event with no completion or abort between says the first
//! revision had progressed when the second replaced it: the restart `rerender-restart` reports
//! when it sees it happen. The same rules are then judged on that history: `pause-lost` (a
//! pause Event, and no resume before the new revision's second), `config-only-rerender` (the
//! two ReplicaSets' templates differ only in annotations), `double-render` (two ReplicaSets
//! within 120 s, the second differing only in annotations: needs no Event), `restart-churn`
//! (two restarts or more). Each finding carries `reconstructed`: the evidence in words, and
//! what it cannot tell.
//!
//! Nothing is guessed: an Event series is known at its first and last times only (a count of
//! repeats between), Events and creation times are whole seconds, and the API server keeps
//! Events an hour by default. A pair of revisions the kept Events do not cover, or cover only
//! in part, is said to be undecided, never clean.

use rf_format::Kind;

use crate::base::At;
use crate::base::time::{human_duration, rfc3339};
use crate::model::diff::{Change, diff_json, only_annotations};
use crate::model::history::{History, Occurrence, Said, When, Within};
use crate::model::rollout::{RolloutTrack, RsTrack};
use crate::model::world::{AppObj, Sync, World};
use crate::report::finding::{Evidence, Finding, Rule, Subject};

/// Two renders closer than this are a double render (as `double-render` judges live).
const DOUBLE_RENDER_NANOS: i64 = 120 * 1_000_000_000;

/// A revision replaced this soon after it was made has the shape of a re-render or a re-run.
/// Of the pairs of revisions no Event covers, only those and the pairs of the release in
/// flight (newer than the stable revision) are said to be undecided: the others are the
/// rollout's ordinary releases, since completed, which its Events no longer show.
const QUICK_REPLACE_NANOS: i64 = 10 * 60 * 1_000_000_000;

/// Undecided pairs named per rollout; the others are counted.
const NAMED_PAIRS: usize = 3;

/// A ReplicaSet's creation: a new pod template of the rollout.
#[derive(Debug)]
struct Creation<'a> {
    name: String,
    hash: String,
    at: When,
    /// Its revision when it was created (the Event's), or its annotation's now.
    revision: Option<i64>,
    rs: Option<&'a RsTrack>,
    event: Option<&'a Occurrence>,
    /// Made before the recording began: in its first list (a ReplicaSet), or known only from
    /// a listed Event.
    before: bool,
}

impl Creation<'_> {
    fn words(&self) -> String {
        match (self.revision, self.hash.is_empty()) {
            (Some(n), false) => format!("revision {n} ({}, {})", self.hash, self.name),
            (Some(n), true) => format!(
                "revision {n} (its template is not known: no kept ReplicaSet or Event names it)"
            ),
            (None, _) => format!("revision {} ({})", self.hash, self.name),
        }
    }

    /// `ReplicaSet NAME (revision N) created at T`, and whether only its Event is left.
    fn created_line(&self) -> String {
        format!(
            "ReplicaSet {} ({}) created at {}{}",
            self.name,
            self.revision
                .map_or_else(|| self.hash.clone(), |n| format!("revision {n}")),
            rfc3339(self.at.at()),
            if self.rs.is_some() {
                ""
            } else {
                " (its Event; the ReplicaSet is gone)"
            }
        )
    }
}

/// One rollout's past, as the cluster kept it.
struct Past<'a> {
    subject: Subject,
    track: Option<&'a RolloutTrack>,
    events: &'a [Occurrence],
    /// The oldest time from which every Event is kept: the earliest last time of those kept
    /// (the API server expires an Event an hour after its last).
    kept_from: Option<When>,
    /// The Argo CD Applications that manage it: their history names the syncs that made each
    /// template.
    apps: Vec<&'a AppObj>,
}

/// Reconstructs, for each rollout first seen in a list (and each rollout only Events name),
/// the restarts before the recording. `end`: where the replay ended.
pub(crate) fn reconstruct(
    history: &History,
    tracks: &[&RolloutTrack],
    world: &World,
    end: At,
    out: &mut Vec<Finding>,
    undecided: &mut Vec<(Subject, String)>,
) {
    let mut seen = std::collections::BTreeSet::new();
    for track in tracks {
        let (ns, name) = (track.namespace(), track.name());
        seen.insert((ns.to_owned(), name.to_owned()));
        if !track.listed_initially() {
            // Created while recording: its whole history is in the records.
            continue;
        }
        let mut past = Past::new(track.subject(), Some(track), history.events(ns, name));
        past.apps = world.apps_of(track).collect();
        past.judge(end, out, undecided);
    }
    // Rollouts the Events name and no record shows (an export of Events alone).
    let mut others: Vec<&(String, String)> =
        history.rollouts().filter(|k| !seen.contains(*k)).collect();
    others.sort();
    for (ns, name) in others {
        let past = Past::new(
            Subject::new(Kind::Rollout, ns, name),
            None,
            history.events(ns, name),
        );
        past.judge(end, out, undecided);
    }
}

/// A restart found between two creations.
struct Restart<'a> {
    from: usize,
    to: usize,
    /// The furthest step Event of the first revision, and its time.
    step: Option<(&'a Occurrence, i64, i64, String, When)>,
    /// Its pause Event and time, and whether the pause was still on when the second came.
    pause: Option<(&'a Occurrence, String, When, Lost<'a>)>,
}

/// Whether a pause was lost to the new revision.
enum Lost<'a> {
    /// No resume between the pause and the new revision's second; the resume Event in that
    /// second, if any (the controller resumes a rollout a new template replaces).
    Yes(Option<&'a Occurrence>),
    /// Resumed before (promoted): the pause was passed, not lost.
    No(&'a Occurrence),
    /// A resume series spans it: not known.
    Unknown(&'a Occurrence),
}

impl<'a> Past<'a> {
    fn new(subject: Subject, track: Option<&'a RolloutTrack>, events: &'a [Occurrence]) -> Self {
        Past {
            subject,
            track,
            events,
            kept_from: events.iter().map(|o| o.last).min_by_key(|w| w.lo),
            apps: Vec::new(),
        }
    }

    fn ns(&self) -> &str {
        &self.subject.namespace
    }

    fn name(&self) -> &str {
        &self.subject.name
    }

    /// The rollout's ReplicaSet creations, oldest first, from its ReplicaSets and from the
    /// controller's `NewReplicaSetCreated` Events (a ReplicaSet the history limit deleted has
    /// only its Event).
    fn creations(&self) -> Vec<Creation<'a>> {
        let mut all: Vec<Creation<'a>> = Vec::new();
        if let Some(track) = self.track {
            for rs in track.replicasets().values() {
                let Some(at) = rs.created_at else { continue };
                let hash = rs
                    .hash
                    .as_deref()
                    .map(str::to_owned)
                    .or_else(|| self.hash_of(&rs.name))
                    .unwrap_or_default();
                all.push(Creation {
                    name: rs.name.to_string(),
                    hash,
                    at: When::second(at),
                    revision: rs.revision,
                    rs: Some(rs),
                    event: None,
                    before: rs.listed_initially,
                });
            }
        }
        for o in self.events {
            let Said::Created {
                replicaset,
                revision,
            } = &o.said
            else {
                continue;
            };
            let revision = *revision;
            match all.iter_mut().find(|c| c.name == *replicaset) {
                Some(c) => {
                    c.revision = Some(revision);
                    c.event = Some(o);
                    // The Event's time is finer (its name's nanosecond) when it is in the
                    // creation's second.
                    if o.first.hi - o.first.lo < c.at.hi - c.at.lo && c.at.before(o.first).is_none()
                    {
                        c.at = o.first;
                    }
                }
                None => all.push(Creation {
                    hash: self.hash_of(replicaset).unwrap_or_default(),
                    name: replicaset.clone(),
                    at: o.first,
                    revision: Some(revision),
                    rs: None,
                    event: Some(o),
                    before: true,
                }),
            }
        }
        all.sort_by(|a, b| (a.at.lo, a.revision, &a.name).cmp(&(b.at.lo, b.revision, &b.name)));
        all
    }

    /// The rollout's changes of pod template, oldest first: each revision the controller's
    /// `RolloutUpdated` Events name (an old template brought back gets a new revision, and no
    /// new ReplicaSet), and the ReplicaSet creations no such Event covers (older than the
    /// Events kept).
    fn changes(&self) -> Vec<Creation<'a>> {
        let created = self.creations();
        let mut changes: Vec<Creation<'a>> = Vec::new();
        for o in self.events {
            let Said::Updated { revision } = o.said else {
                continue;
            };
            if changes.iter().any(|c| c.revision == Some(revision)) {
                continue;
            }
            // Made for this revision, or holding it now.
            let made = created
                .iter()
                .find(|c| c.event.is_some() && c.revision == Some(revision))
                .or_else(|| {
                    created
                        .iter()
                        .find(|c| c.rs.is_some_and(|rs| rs.revision == Some(revision)))
                });
            let hash = made
                .map(|c| c.hash.clone())
                .or_else(|| self.hash_of_revision(revision))
                .unwrap_or_default();
            let rs = made.and_then(|c| c.rs).or_else(|| self.rs_of_hash(&hash));
            changes.push(Creation {
                name: rs.map_or_else(
                    || {
                        if hash.is_empty() {
                            format!("{}-?", self.name())
                        } else {
                            format!("{}-{hash}", self.name())
                        }
                    },
                    |rs| rs.name.to_string(),
                ),
                hash,
                // When the ReplicaSet was made for it, to the nanosecond, if it was.
                at: made
                    .filter(|c| c.revision == Some(revision) && c.event.is_some())
                    .map_or(o.first, |c| c.at),
                revision: Some(revision),
                rs,
                event: made.and_then(|c| c.event).or(Some(o)),
                before: made.is_none_or(|c| c.before),
            });
        }
        for c in created {
            let covered = changes.iter().any(|u| {
                (c.event.is_some() && u.revision == c.revision)
                    || (u.hash == c.hash && u.at.before(c.at).is_none())
            });
            if !covered {
                changes.push(c);
            }
        }
        changes.sort_by(|a, b| (a.at.lo, a.revision, &a.name).cmp(&(b.at.lo, b.revision, &b.name)));
        changes
    }

    /// The pod-template hash of revision `n`, from the controller's Events that name both.
    fn hash_of_revision(&self, n: i64) -> Option<String> {
        self.events.iter().find_map(|o| match &o.said {
            Said::Started { revision, hash } | Said::Completed { revision, hash }
                if *revision == n =>
            {
                Some(hash.clone())
            }
            Said::Created {
                replicaset,
                revision,
            } if *revision == n => self.hash_of(replicaset),
            _ => None,
        })
    }

    fn rs_of_hash(&self, hash: &str) -> Option<&'a RsTrack> {
        let track = self.track?;
        (!hash.is_empty())
            .then(|| {
                track
                    .replicasets()
                    .values()
                    .find(|rs| rs.hash.as_deref() == Some(hash))
            })
            .flatten()
    }

    /// The pod-template hash in a ReplicaSet's name (the controller names it `ROLLOUT-HASH`).
    fn hash_of(&self, replicaset: &str) -> Option<String> {
        replicaset
            .strip_prefix(self.name())
            .and_then(|s| s.strip_prefix('-'))
            .filter(|h| !h.is_empty())
            .map(str::to_owned)
    }

    fn blue_green(&self) -> bool {
        self.track.is_some_and(RolloutTrack::is_blue_green)
            || self
                .events
                .iter()
                .any(|o| matches!(&o.said, Said::Paused { reason } if reason == "BlueGreenPause"))
    }

    fn judge(&self, end: At, out: &mut Vec<Finding>, undecided: &mut Vec<(Subject, String)>) {
        let creations = self.changes();
        let mut restarts: Vec<Restart<'a>> = Vec::new();
        let mut uncovered: Vec<(usize, usize)> = Vec::new();
        // Pairs the kept Events cannot decide, each with why.
        let mut open: Vec<(usize, usize, String)> = Vec::new();
        for i in 1..creations.len() {
            let (a, b) = (&creations[i - 1], &creations[i]);
            if !b.before {
                // Made while recording: the detectors saw it (and what follows it).
                break;
            }
            if b.at.lo - a.at.lo <= DOUBLE_RENDER_NANOS {
                self.double_render(a, b, end, out);
            }
            match self.pair(i - 1, i, &creations) {
                Verdict::Clean => {}
                Verdict::Restart(r) => restarts.push(r),
                Verdict::Undecided(why) => open.push((i - 1, i, why)),
                Verdict::Uncovered
                    if self.in_flight(b) || b.at.lo - a.at.lo <= QUICK_REPLACE_NANOS =>
                {
                    uncovered.push((i - 1, i));
                }
                Verdict::Uncovered => {}
            }
        }
        for r in &restarts {
            self.report_restart(r, &creations, end, out);
        }
        if restarts.len() >= 2 {
            self.churn(&restarts, &creations, end, out);
        }
        // One note a rollout: the latest pair in full, and how many more (a rollout re-run all
        // day under one series of Events would otherwise be a page of them).
        if let Some((i, j, why)) = open.last() {
            let (a, b) = (&creations[*i], &creations[*j]);
            let more = match open.len() - 1 {
                0 => String::new(),
                n => {
                    let earlier: Vec<String> = open[..open.len() - 1]
                        .iter()
                        .rev()
                        .take(NAMED_PAIRS)
                        .map(|(i, j, _)| {
                            format!(
                                "revision {} -> {} at {}",
                                creations[*i]
                                    .revision
                                    .map_or_else(|| creations[*i].hash.clone(), |r| r.to_string()),
                                creations[*j]
                                    .revision
                                    .map_or_else(|| creations[*j].hash.clone(), |r| r.to_string()),
                                rfc3339(creations[*j].at.at())
                            )
                        })
                        .collect();
                    format!(
                        " The same holds for {n} earlier pair(s) of revisions ({}{}).",
                        earlier.join(", "),
                        if n > NAMED_PAIRS { ", ..." } else { "" }
                    )
                }
            };
            undecided.push((
                self.subject.clone(),
                format!(
                    "rollout {}/{}: whether {} had reached a step or pause when {} replaced it at {} (before the recording) cannot be decided: {why}.{more}",
                    self.ns(),
                    self.name(),
                    a.words(),
                    b.words(),
                    rfc3339(b.at.at())
                ),
            ));
        }
        if !uncovered.is_empty() {
            let named: Vec<String> = uncovered
                .iter()
                .rev()
                .take(NAMED_PAIRS)
                .rev()
                .map(|&(i, j)| {
                    let (a, b) = (&creations[i], &creations[j]);
                    format!(
                        "{} -> {} at {} ({} after)",
                        a.words(),
                        b.words(),
                        rfc3339(b.at.at()),
                        human_duration(b.at.lo - a.at.lo)
                    )
                })
                .collect();
            let more = uncovered.len().saturating_sub(NAMED_PAIRS);
            undecided.push((
                self.subject.clone(),
                format!(
                    "rollout {}/{}: {}{} replaced an earlier revision before the recording, and the Events that would tell whether it had reached a step or pause are gone ({}; the API server keeps Events an hour by default): a restart there can be neither shown nor ruled out",
                    self.ns(),
                    self.name(),
                    named.join("; "),
                    if more > 0 {
                        format!(" (and {more} earlier)")
                    } else {
                        String::new()
                    },
                    match self.kept_from {
                        Some(t) => format!("the Events kept about it begin at {}", rfc3339(t.at())),
                        None => "none about it is kept".to_owned(),
                    }
                ),
            ));
        }
    }

    /// Whether the first of two consecutive creations had progressed, and was still in
    /// progress, when the second replaced it.
    fn pair(&self, i: usize, j: usize, creations: &[Creation<'a>]) -> Verdict<'a> {
        let (a, b) = (&creations[i], &creations[j]);
        let (from, to) = (a.at, b.at);
        if self.was_stable_before(a, b) {
            return Verdict::Clean;
        }
        let mut progress_yes = false;
        let mut progress_maybe: Option<&Occurrence> = None;
        let mut settled_maybe: Option<&Occurrence> = None;
        let just_after = When {
            lo: to.lo,
            hi: to.hi.saturating_add(2_000_000_000),
            order: None,
        };
        for o in self.events {
            match &o.said {
                Said::Completed { hash, .. }
                    if *hash == a.hash && o.times().any(|t| t.before(to) != Some(false)) =>
                {
                    // The first revision itself completed: the second is a new release.
                    return Verdict::Clean;
                }
                Said::Completed { hash, .. }
                    if *hash == b.hash && o.times().any(|t| t.before(to) == Some(true)) =>
                {
                    // The second template had completed before: going back to it is a
                    // rollback, not a new release restarting the first.
                    return Verdict::Clean;
                }
                Said::BackToStable
                    if o.times().any(|t| {
                        to.before(t) != Some(false) && t.before(just_after) != Some(false)
                    }) =>
                {
                    // The controller skipped to the end: a rollback to stable.
                    return Verdict::Clean;
                }
                _ => {}
            }
            match o.said {
                Said::Completed { .. } | Said::Aborted => match o.within(from, to) {
                    // Completed or aborted in between: the second is a new release, or a
                    // change after an abort, not a restart.
                    Within::Yes => return Verdict::Clean,
                    Within::Maybe => settled_maybe = Some(o),
                    Within::No => {}
                },
                Said::Step { .. } | Said::Paused { .. } => match o.within(from, to) {
                    Within::Yes => progress_yes = true,
                    Within::Maybe => progress_maybe = progress_maybe.or(Some(o)),
                    Within::No => {}
                },
                _ => {}
            }
        }
        let covered = self.kept_from.is_some_and(|k| k.lo <= from.lo);
        if let Some(o) = settled_maybe {
            if progress_yes || progress_maybe.is_some() || !covered {
                return Verdict::Undecided(format!(
                    "{} may have been between them (an Event series gives its first and last times and a count, not each time)",
                    o.describe(rfc3339)
                ));
            }
        }
        if progress_yes {
            return Verdict::Restart(self.restart(i, j, creations));
        }
        if let Some(o) = progress_maybe {
            return Verdict::Undecided(format!(
                "{} may have happened between them, or in the second {} was created in (Events and creation times are whole seconds; a series gives its first and last times only)",
                o.describe(rfc3339),
                b.name
            ));
        }
        if covered {
            // Replaced before any step or pause: not a restart of anything reached.
            Verdict::Clean
        } else {
            Verdict::Uncovered
        }
    }

    /// True when `b` is newer than the stable revision: part of the release in flight (or, for
    /// a rollout only Events name, not known otherwise).
    fn in_flight(&self, b: &Creation<'_>) -> bool {
        let Some(track) = self.track else { return true };
        let stable = track
            .last()
            .and_then(|l| l.stable_rs.as_deref())
            .and_then(|h| self.rs_of_hash(h))
            .and_then(|rs| rs.revision);
        match (stable, b.revision) {
            (Some(s), Some(n)) => n > s,
            _ => true,
        }
    }

    /// True when `a` completed before `b` was made: it is (or was, when seen) the stable
    /// revision, and has not been brought back since (its revision is older than `b`'s). The
    /// controller makes a revision stable only once it completed.
    fn was_stable_before(&self, a: &Creation<'_>, b: &Creation<'_>) -> bool {
        let Some(rs) = a.rs else { return false };
        let stable_now = self
            .track
            .and_then(RolloutTrack::last)
            .and_then(|l| l.stable_rs.as_deref());
        let stable = rs.was_stable || (!a.hash.is_empty() && stable_now == Some(a.hash.as_str()));
        stable && rs.revision.zip(b.revision).is_some_and(|(x, y)| x < y)
    }

    fn restart(&self, i: usize, j: usize, creations: &[Creation<'a>]) -> Restart<'a> {
        let (from, to) = (creations[i].at, creations[j].at);
        let mut step: Option<(&Occurrence, i64, i64, String, When)> = None;
        let mut pause: Option<(&Occurrence, String, When)> = None;
        for o in self.events {
            let Some(t) = o.times_within(from, to).max_by_key(|t| t.lo) else {
                continue;
            };
            match &o.said {
                Said::Step {
                    index,
                    of,
                    step: what,
                } if step.as_ref().is_none_or(|s| *index > s.1) => {
                    step = Some((o, *index, *of, what.clone(), t));
                }
                Said::Paused { reason } if pause.as_ref().is_none_or(|p| t.lo > p.2.lo) => {
                    pause = Some((o, reason.clone(), t));
                }
                _ => {}
            }
        }
        let pause = pause.map(|(o, reason, at)| {
            // A resume after the pause and before the new revision is a promotion; one in the
            // moment the new revision came is the controller resuming a rollout a new template
            // replaced.
            let mut lost = Lost::Yes(None);
            let just_after = When {
                lo: to.lo,
                hi: to.hi.saturating_add(1_000_000_000),
                order: None,
            };
            for r in self.events.iter().filter(|r| r.said == Said::Resumed) {
                if r.within(at, to) == Within::Yes {
                    lost = Lost::No(r);
                    break;
                }
                let with_the_new = r.times().any(|t| {
                    at.before(t) == Some(true) && t.before(to) != Some(true) && t.lo < just_after.hi
                });
                if with_the_new {
                    if matches!(lost, Lost::Yes(None)) {
                        lost = Lost::Yes(Some(r));
                    }
                } else if r.within(at, to) == Within::Maybe {
                    lost = Lost::Unknown(r);
                }
            }
            (o, reason, at, lost)
        });
        Restart {
            from: i,
            to: j,
            step,
            pause,
        }
    }

    /// The Application sync that made the template created at `at`: the nearest in its
    /// history from a minute before to ten seconds after (a sync is recorded as it starts).
    fn sync_near(&self, at: When) -> Option<(&'a AppObj, &'a Sync)> {
        const NS: i64 = 1_000_000_000;
        self.apps
            .iter()
            .flat_map(|a| a.history.iter().map(move |h| (*a, h)))
            .filter(|(_, h)| {
                h.deployed_at.0 <= at.hi + 10 * NS && at.lo - h.deployed_at.0 <= 60 * NS
            })
            .min_by_key(|(_, h)| (h.deployed_at.0 - at.lo).abs())
    }

    /// What the Applications' history says of the syncs that made `a` and `b`: lines for
    /// `from`, and the evidence.
    fn syncs(&self, a: &Creation<'_>, b: &Creation<'_>) -> (Vec<String>, Vec<Evidence>) {
        let mut lines = Vec::new();
        let mut evidence = Vec::new();
        for c in [a, b] {
            if let Some((app, sync)) = self.sync_near(c.at) {
                let line = format!(
                    "Argo CD Application {}/{} synced revision {} at {} (its history), as {} was made",
                    app.namespace,
                    app.name,
                    sync.revision,
                    rfc3339(sync.deployed_at),
                    c.name
                );
                evidence.push(app.evidence(line.clone()));
                lines.push(line);
            }
        }
        (lines, evidence)
    }

    fn evidence_of_event(&self, o: &Occurrence) -> Evidence {
        Evidence::of(
            o.pos,
            Subject::new(Kind::Event, self.ns(), &o.name),
            o.describe(rfc3339),
        )
    }

    fn evidence_of_creation(&self, c: &Creation<'_>, end: At) -> Vec<Evidence> {
        let mut evidence = Vec::new();
        if let Some(rs) = c.rs {
            evidence.push(Evidence::of(
                rs.created.unwrap_or(rs.last),
                Subject::new(Kind::ReplicaSet, self.ns(), &rs.name),
                format!(
                    "ReplicaSet {} created at {}{}",
                    rs.name,
                    rfc3339(c.at.at()),
                    rs.revision
                        .map(|n| format!(", revision {n} now"))
                        .unwrap_or_default()
                ),
            ));
        }
        if let Some(o) = c.event {
            evidence.push(self.evidence_of_event(o));
        }
        if evidence.is_empty() {
            evidence.push(Evidence::of(end, self.subject.clone(), c.words()));
        }
        evidence
    }

    /// The pod-template hash the rollout runs now: for a remedy that fits.
    fn now(&self) -> Option<String> {
        self.track?.last()?.pod_hash.as_deref().map(str::to_owned)
    }

    fn unknowns(&self) -> Vec<String> {
        let mut unknown = vec![
            "who or what made the second template: the writes to the Rollout before the recording are not kept (its managedFields name only each writer's last)".to_owned(),
            "the times of an Event series between its first and last (it keeps only a count); an Event's last time and a ReplicaSet's creation time are whole seconds".to_owned(),
        ];
        unknown.push(match self.kept_from {
            Some(t) => format!(
                "anything before {}: the API server keeps Events an hour after their last time by default",
                rfc3339(t.at())
            ),
            None => "anything an Event would have said: none is kept about this rollout".to_owned(),
        });
        unknown
    }

    fn report_restart(
        &self,
        r: &Restart<'a>,
        creations: &[Creation<'a>],
        end: At,
        out: &mut Vec<Finding>,
    ) {
        let (a, b) = (&creations[r.from], &creations[r.to]);
        let blue_green = self.blue_green();
        let what = if blue_green { "preview" } else { "canary" };
        let gap = human_duration(b.at.lo - a.at.lo);
        let reached = match (&r.step, &r.pause) {
            _ if blue_green => "the pause before promotion".to_owned(),
            (Some((_, i, n, s, _)), Some(_)) => format!("step {i}/{n} ({s}) and its pause"),
            (Some((_, i, n, s, _)), None) => format!("step {i}/{n} ({s})"),
            (None, Some((_, reason, _, _))) => format!("a pause ({reason})"),
            (None, None) => "a step".to_owned(),
        };
        let summary = if blue_green {
            format!(
                "preview restarted (reconstructed): the pre-promotion pause of {} was lost to a new pod template {} created {gap} later",
                a.hash, b.hash
            )
        } else {
            format!(
                "canary restarted at step 0 (reconstructed): {reached} of {} was lost to a new pod template {} created {gap} later",
                a.hash, b.hash
            )
        };
        let mut from = Vec::new();
        let mut evidence = Vec::new();
        from.push(a.created_line());
        evidence.extend(self.evidence_of_creation(a, end));
        if let Some((o, _, _, _, _)) = &r.step {
            from.push(o.describe(rfc3339));
            evidence.push(self.evidence_of_event(o));
        }
        if let Some((o, _, _, _)) = &r.pause {
            from.push(o.describe(rfc3339));
            evidence.push(self.evidence_of_event(o));
        }
        from.push(b.created_line());
        evidence.extend(self.evidence_of_creation(b, end));
        from.push(format!(
            "no RolloutCompleted or RolloutAborted Event between {} and {}",
            rfc3339(a.at.at()),
            rfc3339(b.at.at())
        ));
        let (sync_lines, sync_evidence) = self.syncs(a, b);
        from.extend(sync_lines);
        evidence.extend(sync_evidence);
        let mut explanation = format!(
            "Reconstructed from what the cluster kept: ReplicaSet {} was created at {} and {} at {}, {gap} later. In between, the controller's Events say the {what} on {} reached {reached}, and none says it completed or was aborted: it was in progress when a new pod template replaced it, and the controller started the {what} again from step 0 on {}.",
            a.name,
            rfc3339(a.at.at()),
            b.name,
            rfc3339(b.at.at()),
            a.hash,
            b.hash
        );
        let mut unknown = self.unknowns();
        let mut lost_pause = None;
        if let Some((o, reason, at, lost)) = &r.pause {
            match lost {
                Lost::Yes(resume) => {
                    explanation.push_str(&format!(
                        " It had paused ({reason}) at {} and was not resumed before the new revision came{}.",
                        rfc3339(at.at()),
                        if resume.is_some() {
                            ": the resume Event in that second is the controller's, for the new template"
                        } else {
                            ""
                        }
                    ));
                    if let Some(resume) = resume {
                        from.push(resume.describe(rfc3339));
                        evidence.push(self.evidence_of_event(resume));
                    }
                    lost_pause = Some((*o, reason.clone(), *at, *resume));
                }
                Lost::No(resume) => {
                    explanation.push_str(&format!(
                        " It had paused ({reason}) at {} and was resumed before the new revision came ({}).",
                        rfc3339(at.at()),
                        resume.describe(rfc3339)
                    ));
                }
                Lost::Unknown(resume) => unknown.push(format!(
                    "whether the pause at {} was resumed before the new revision: {} spans it",
                    rfc3339(at.at()),
                    resume.describe(rfc3339)
                )),
            }
        }
        let changes = templates_diff(a, b);
        if let Some(changes) = &changes {
            if only_annotations(changes) {
                explanation.push_str(
                    " The two templates differ only in annotations (see config-only-rerender).",
                );
            }
        }
        let current = self.now().unwrap_or_else(|| b.hash.clone());
        let argo = format!("{} -n {}", self.name(), self.ns());
        out.push(
            Finding::new(Rule::RerenderRestart, self.subject.clone(), self.subject.clone(), b.at.at(), summary.clone())
                .explain(explanation)
                .with_evidence(evidence.clone())
                .remedy(
                    format!(
                        "Do not re-run the pipeline: a run that renders twice restarts the {what} again. See where the {what} on {current} is now, and let it progress, or abort it and do one clean run."
                    ),
                    vec![
                        format!("kubectl argo rollouts get rollout {argo}"),
                        format!(
                            "kubectl -n {} get events --field-selector involvedObject.kind=Rollout,involvedObject.name={} --sort-by=.lastTimestamp",
                            self.ns(),
                            self.name()
                        ),
                    ],
                    "Render once per release: take the image tag and the values that feed checksum/config from the same Git revision, and make the pipeline's wait reset its timer when status.currentPodHash changes (rollout-forensics wait --new-revision).".to_owned(),
                )
                .reconstructed(from.clone(), unknown.clone()),
        );
        if let Some((o, reason, at, resume)) = lost_pause {
            let mut from_p = vec![o.describe(rfc3339)];
            from_p.extend(resume.map(|r| r.describe(rfc3339)));
            from_p.push(format!(
                "ReplicaSet {} created at {}",
                b.name,
                rfc3339(b.at.at())
            ));
            out.push(
                Finding::new(
                    Rule::PauseLost,
                    self.subject.clone(),
                    self.subject.clone(),
                    b.at.at(),
                    format!(
                        "pause lost (reconstructed): {} paused ({reason}) at {}, and {} replaced it {} later before it was resumed",
                        a.hash,
                        rfc3339(at.at()),
                        b.hash,
                        human_duration(b.at.lo - at.lo)
                    ),
                )
                .explain(format!(
                    "Reconstructed from the controller's Events: the rollout paused ({reason}) on {} at {}, and {}. A pipeline waiting for that pause times out: it comes back only after the earlier steps run again on {}.",
                    a.hash,
                    rfc3339(at.at()),
                    resume.map_or_else(
                        || format!("no resume came before {} was created", b.name),
                        |r| format!(
                            "the next resume, at {}, came with {} (the controller resumes a rollout a new template replaces)",
                            rfc3339(r.last.at()),
                            b.name
                        )
                    ),
                    b.hash
                ))
                .with_evidence(evidence.clone())
                .remedy(
                    format!("Watch the rollout reach the pause again on {current}; do not re-run the pipeline."),
                    vec![format!("kubectl argo rollouts get rollout {argo}")],
                    "Make the pipeline's wait restart its timer when status.currentPodHash changes (rollout-forensics wait --new-revision --for paused).".to_owned(),
                )
                .reconstructed(from_p, self.unknowns()),
            );
        }
        if let Some(changes) = changes.filter(|c| only_annotations(c) && !c.is_empty()) {
            let keys: Vec<String> = changes.iter().map(describe_change).collect();
            out.push(
                Finding::new(
                    Rule::ConfigOnlyRerender,
                    self.subject.clone(),
                    self.subject.clone(),
                    b.at.at(),
                    format!(
                        "the re-render changed only pod-template annotations (reconstructed): {}",
                        keys.join("; ")
                    ),
                )
                .explain(format!(
                    "The pod templates of ReplicaSets {} and {} differ only in metadata.annotations (hash label ignored): {}. Nothing about the application changed: the restart came from rendering one release twice with different config inputs.",
                    a.name,
                    b.name,
                    keys.join("; ")
                ))
                .with_evidence(self.evidence_of_creation(a, end).into_iter().chain(self.evidence_of_creation(b, end)))
                .remedy(
                    format!("Nothing about the application changed: do not roll back. Let the {what} on {current} proceed and do not re-run the pipeline."),
                    vec![format!(
                        "kubectl -n {} get rs {} {} -o jsonpath='{{range .items[*]}}{{.metadata.name}}{{\"\\t\"}}{{.spec.template.metadata.annotations}}{{\"\\n\"}}{{end}}'",
                        self.ns(),
                        a.name,
                        b.name
                    )],
                    "Resolve the values revision before the image tag is written: render the image tag and every values file from one Git revision, so a release renders once.".to_owned(),
                )
                .reconstructed(
                    vec![
                        format!("the pod templates of ReplicaSets {} and {}", a.name, b.name),
                        summary,
                    ],
                    Vec::new(),
                ),
            );
        }
    }

    fn double_render(&self, a: &Creation<'_>, b: &Creation<'_>, end: At, out: &mut Vec<Finding>) {
        let Some(changes) = templates_diff(a, b) else {
            return;
        };
        if changes.is_empty() || !only_annotations(&changes) {
            return;
        }
        let keys: Vec<String> = changes.iter().map(describe_change).collect();
        let gap = human_duration(b.at.lo - a.at.lo);
        let (sync_lines, sync_evidence) = self.syncs(a, b);
        let mut from = vec![
            format!("ReplicaSet {} created at {}", a.name, rfc3339(a.at.at())),
            format!("ReplicaSet {} created at {}", b.name, rfc3339(b.at.at())),
            format!("their pod templates: {}", keys.join("; ")),
        ];
        let unknown = vec![if sync_lines.is_empty() {
            "who wrote each template: the writes before the recording are not kept, and no Application's history names a sync then".to_owned()
        } else {
            "which writer applied each template: an Application's history names its syncs, not the field managers of the writes".to_owned()
        }];
        from.extend(sync_lines);
        let mut commands = vec![format!(
            "kubectl -n {} get rs -l rollouts-pod-template-hash -L rollout.argoproj.io/revision --sort-by=.metadata.creationTimestamp",
            self.ns()
        )];
        commands.extend(
            self.apps
                .iter()
                .map(|app| format!("argocd app history {}", app.name)),
        );
        out.push(
            Finding::new(
                Rule::DoubleRender,
                self.subject.clone(),
                self.subject.clone(),
                b.at.at(),
                format!(
                    "two renders {gap} apart (reconstructed): ReplicaSet {} at {}, then {} changing only annotations",
                    a.name,
                    rfc3339(a.at.at()),
                    b.name
                ),
            )
            .explain(format!(
                "Reconstructed from the rollout's ReplicaSets: {} was created at {} and {} at {}, {gap} later, and their pod templates differ only in annotations ({}). Two pod templates of one release in quick succession are the two renders of the re-render race.",
                a.words(),
                rfc3339(a.at.at()),
                b.words(),
                rfc3339(b.at.at()),
                keys.join("; ")
            ))
            .with_evidence(
                self.evidence_of_creation(a, end)
                    .into_iter()
                    .chain(self.evidence_of_creation(b, end))
                    .chain(sync_evidence),
            )
            .remedy(
                "Render once per release.".to_owned(),
                commands,
                "Take the image tag and every values file from one Git revision, so a release renders once.".to_owned(),
            )
            .reconstructed(from, unknown),
        );
    }

    fn churn(
        &self,
        restarts: &[Restart<'a>],
        creations: &[Creation<'a>],
        end: At,
        out: &mut Vec<Finding>,
    ) {
        let times: Vec<String> = restarts
            .iter()
            .map(|r| rfc3339(creations[r.to].at.at()))
            .collect();
        let last = &creations[restarts[restarts.len() - 1].to];
        let evidence: Vec<Evidence> = restarts
            .iter()
            .flat_map(|r| self.evidence_of_creation(&creations[r.to], end))
            .collect();
        out.push(
            Finding::new(
                Rule::RestartChurn,
                self.subject.clone(),
                self.subject.clone(),
                last.at.at(),
                format!(
                    "{} restarts before the recording (reconstructed), at {}",
                    restarts.len(),
                    times.join(", ")
                ),
            )
            .explain("Reconstructed from the rollout's ReplicaSets and Events: each new pod template replaced a revision that had progressed and not completed. Re-running a pipeline whose release renders twice restarts the canary every time.".to_owned())
            .with_evidence(evidence)
            .remedy(
                "Stop re-running the pipeline; render once per release.".to_owned(),
                vec![format!("kubectl argo rollouts get rollout {} -n {}", self.name(), self.ns())],
                "Render once per release.".to_owned(),
            )
            .reconstructed(
                times.iter().map(|t| format!("a restart at {t} (see rerender-restart)")).collect(),
                self.unknowns(),
            ),
        );
    }
}

enum Verdict<'a> {
    Clean,
    Restart(Restart<'a>),
    Undecided(String),
    /// No kept Event covers the time between them.
    Uncovered,
}

/// The differences between two creations' templates, when both ReplicaSets are known.
fn templates_diff(a: &Creation<'_>, b: &Creation<'_>) -> Option<Vec<Change>> {
    let (ta, tb) = (a.rs?.template()?, b.rs?.template()?);
    diff_json(ta.text(), tb.text())
}

fn describe_change(c: &Change) -> String {
    format!(
        "{}: {} -> {}",
        c.path
            .last_key()
            .map_or_else(|| c.path.to_string(), str::to_owned),
        Change::show(c.old.as_ref()),
        Change::show(c.new.as_ref())
    )
}
