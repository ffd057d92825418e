//! What the cluster kept of the time before a recording: the Events its lists held about each
//! Rollout (the controller emits one for every new ReplicaSet, step, pause, resume, abort and
//! completion). Whether each rollout and ReplicaSet was in the first list, and the
//! ReplicaSets' revisions and creation times, are on the rollouts' tracks. `detectors::reconstructed` reads both.

use rf_format::Timestamp;

use crate::base::{At, HashMap, Str};
use crate::input::view::EventView;

/// When something happened, as the cluster wrote it: in `[lo, hi)` (nanoseconds). Events and
/// creation times are whole seconds; an Event's name holds the nanosecond it was first made
/// (the client-go recorder names it `OBJECT.HEX-UNIX-NANOS`), and `eventTime` microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct When {
    pub lo: i64,
    pub hi: i64,
    /// Its place in a log that wrote it (the log, the line), when it came from one: one
    /// controller writes its log in order, so two times of one log in the same second are
    /// ordered by their lines.
    pub order: Option<(u64, u64)>,
}

const SECOND: i64 = 1_000_000_000;

impl When {
    /// A time written in whole seconds.
    pub fn second(t: Timestamp) -> When {
        let lo = t.0.div_euclid(SECOND) * SECOND;
        When {
            lo,
            hi: lo.saturating_add(SECOND),
            order: None,
        }
    }

    /// A time known to the nanosecond.
    pub fn exact(t: Timestamp) -> When {
        When {
            lo: t.0,
            hi: t.0.saturating_add(1),
            order: None,
        }
    }

    pub fn at(self) -> Timestamp {
        Timestamp(self.lo)
    }

    /// Whether it was before `other`: `None` when their spans overlap (not known).
    pub fn before(self, other: When) -> Option<bool> {
        if self.hi <= other.lo {
            Some(true)
        } else if self.lo >= other.hi {
            Some(false)
        } else {
            match (self.order, other.order) {
                (Some((log, a)), Some((other_log, b))) if log == other_log && a != b => Some(a < b),
                _ => None,
            }
        }
    }

    /// The same time, placed at `line` of log `log`.
    fn in_log(self, order: Option<(u64, u64)>) -> When {
        When { order, ..self }
    }

    /// Whether it was after `from` and before `to`.
    pub fn between(self, from: When, to: When) -> Within {
        match (from.before(self), self.before(to)) {
            (Some(true), Some(true)) => Within::Yes,
            (Some(false), _) | (_, Some(false)) => Within::No,
            _ => Within::Maybe,
        }
    }
}

/// One Event about a rollout, as a list showed it: a series of repeats is one Event, with a
/// count and only its first and last times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Occurrence {
    pub reason: Str,
    pub message: String,
    pub first: When,
    pub last: When,
    pub count: u32,
    /// The record that listed it, and the Event's name.
    pub pos: At,
    pub name: String,
    uid: Str,
    /// What it says, read once when it is kept.
    pub said: Said,
}

impl Occurrence {
    /// `Event RolloutPaused "Rollout is paused (CanaryPauseStep)" (x2, first
    /// 2026-12-02T01:04:51Z, last 2026-12-02T01:05:10Z)`, times as `show` writes them.
    pub fn describe(&self, show: impl Fn(Timestamp) -> String) -> String {
        if self.count > 1 {
            format!(
                "Event {} \"{}\" (x{}, first {}, last {})",
                self.reason,
                self.message,
                self.count,
                show(self.first.at()),
                show(self.last.at())
            )
        } else {
            format!(
                "Event {} \"{}\" at {}",
                self.reason,
                self.message,
                show(self.first.at())
            )
        }
    }

    /// The times it is known to have happened: its first, and its last when that is another.
    pub fn times(&self) -> impl Iterator<Item = When> {
        let last = (self.count > 1).then_some(self.last);
        std::iter::once(self.first).chain(last)
    }

    /// Whether it happened after `from` and before `to`: `Yes` when a known time is, `Maybe`
    /// when the order of a known time and a bound is not known (the same second) or when the
    /// times of a series of more than two, between its first and last, may fall there, `No`
    /// otherwise.
    pub fn within(&self, from: When, to: When) -> Within {
        let mut found = Within::No;
        for t in self.times() {
            match t.between(from, to) {
                Within::Yes => return Within::Yes,
                Within::Maybe => found = Within::Maybe,
                Within::No => {}
            }
        }
        if found == Within::No && self.count > 2 && self.first.lo < to.hi && self.last.hi > from.lo
        {
            // Repeats between its first and last, at times not known.
            found = Within::Maybe;
        }
        found
    }

    /// The known times it happened after `from` and before `to`.
    pub fn times_within(&self, from: When, to: When) -> impl Iterator<Item = When> {
        self.times()
            .filter(move |t| t.between(from, to) == Within::Yes)
    }
}

/// Whether an Event happened in a span of time ([`Occurrence::within`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Within {
    Yes,
    Maybe,
    No,
}

/// Where an Event imported from a controller's log was written: `rollout-forensics import
/// --from controller-log` names each `ROLLOUT.log-LINE-INPUT`. (The log, the line.)
fn log_line(name: &str) -> Option<(u64, u64)> {
    name.match_indices(".log-").find_map(|(i, _)| {
        let place = &name[i + 5..];
        let (line, input) = place.split_once('-')?;
        let line = line.parse().ok()?;
        Some((crate::base::digest(input.as_bytes()), line))
    })
}

/// The nanosecond an Event was first made, from its name (`OBJECT.HEX`), when it agrees with
/// its first time (`first`, whole seconds): the client-go recorder names Events so.
fn exact_first(name: &str, first: Timestamp) -> Option<Timestamp> {
    let (_, hex) = name.rsplit_once('.')?;
    if hex.len() < 15 || hex.len() > 16 {
        return None;
    }
    let t = i64::from_str_radix(hex, 16).ok()?;
    When::second(first)
        .before(When::exact(Timestamp(t)))
        .is_none()
        .then_some(Timestamp(t))
}

/// The Events a rollout may hold at most; past it, later ones are counted, not kept (the
/// controller's Events of a day, at its usual few per release, stay far below).
pub(crate) const KEEP_EVENTS: usize = 4096;

/// The Events about each rollout from the lists.
#[derive(Debug, Default)]
pub(crate) struct History {
    events: HashMap<(String, String), Vec<Occurrence>>,
    /// Events not kept past [`KEEP_EVENTS`].
    pub dropped: u64,
}

impl History {
    /// Keeps a listed Event about a Rollout (others are not read); one listed again replaces
    /// what an earlier list showed of it.
    pub fn note_event(&mut self, namespace: &str, name: &str, view: &EventView, pos: At) {
        let about = view.about();
        if about.kind != "Rollout" || about.name.is_empty() {
            return;
        }
        let Some((first, last, count, exact)) = view.span() else {
            return;
        };
        let first = match exact_first(name, first) {
            Some(t) => When::exact(t),
            None if exact => When::exact(first),
            None => When::second(first),
        };
        let order = log_line(name);
        let first = first.in_log(order);
        let last = if count > 1 { When::second(last) } else { first };
        let ns = view.about_namespace(namespace);
        let occurrence = Occurrence {
            reason: view.reason.clone(),
            message: view.text().to_owned(),
            first,
            last,
            count,
            pos,
            name: name.to_owned(),
            uid: view.metadata.uid.clone(),
            said: Said::parse(&view.reason, view.text()),
        };
        let list = self
            .events
            .entry((ns.to_owned(), about.name.to_string()))
            .or_default();
        if let Some(old) = list
            .iter_mut()
            .find(|o| !o.uid.is_empty() && o.uid == occurrence.uid)
        {
            *old = occurrence;
        } else if list.len() < KEEP_EVENTS {
            list.push(occurrence);
        } else {
            self.dropped += 1;
        }
    }

    /// The Events kept about the rollout.
    pub fn events(&self, namespace: &str, name: &str) -> &[Occurrence] {
        self.events
            .get(&(namespace.to_owned(), name.to_owned()))
            .map_or(&[], Vec::as_slice)
    }

    /// The rollouts Events were kept about.
    pub fn rollouts(&self) -> impl Iterator<Item = &(String, String)> {
        self.events.keys()
    }
}

/// What the Argo Rollouts controller's Event messages say, read from their formats in its
/// source (`utils/conditions`, `rollout/canary.go`, `rollout/sync.go`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Said {
    /// `NewReplicaSetCreated`: `Created ReplicaSet NAME (revision N)`.
    Created {
        replicaset: String,
        revision: i64,
    },
    /// `RolloutUpdated`: `Rollout updated to revision N`: a new pod template (or an old one
    /// again, which gets a new revision).
    Updated {
        revision: i64,
    },
    /// `RolloutNotCompleted`: `Rollout not completed, started update to revision N (HASH)`.
    Started {
        revision: i64,
        hash: String,
    },
    /// `RolloutCompleted`: `Rollout completed update to revision N (HASH): ...`.
    Completed {
        revision: i64,
        hash: String,
    },
    /// `SkipSteps`: `Rollback to stable ReplicaSets`: the new revision is the stable one.
    BackToStable,
    /// `RolloutAborted`: `Rollout aborted update to revision N`, or a progress deadline's
    /// message.
    Aborted,
    /// `RolloutStepCompleted`: `Rollout step I/N completed (STEP)`.
    Step {
        index: i64,
        of: i64,
        step: String,
    },
    /// `RolloutPaused`: `Rollout is paused (REASON)`.
    Paused {
        reason: String,
    },
    /// `RolloutResumed`.
    Resumed,
    Other,
}

impl Said {
    /// What an Event of `reason` says with `message`.
    pub fn parse(reason: &str, message: &str) -> Said {
        let m = message;
        match reason {
            "NewReplicaSetCreated" => m
                .strip_prefix("Created ReplicaSet ")
                .and_then(|rest| rest.strip_suffix(')'))
                .and_then(|rest| rest.split_once(" (revision "))
                .and_then(|(rs, n)| {
                    Some(Said::Created {
                        replicaset: rs.to_owned(),
                        revision: n.parse().ok()?,
                    })
                })
                .unwrap_or(Said::Other),
            "RolloutCompleted" => m
                .strip_prefix("Rollout completed update to revision ")
                .and_then(|rest| rest.split_once(" ("))
                .and_then(|(n, rest)| {
                    Some(Said::Completed {
                        revision: n.parse().ok()?,
                        hash: rest.split_once(')')?.0.to_owned(),
                    })
                })
                .unwrap_or(Said::Other),
            "RolloutAborted" => Said::Aborted,
            "RolloutUpdated" => m
                .strip_prefix("Rollout updated to revision ")
                .and_then(|n| n.trim().parse().ok())
                .map_or(Said::Other, |revision| Said::Updated { revision }),
            "RolloutNotCompleted" => m
                .strip_prefix("Rollout not completed, started update to revision ")
                .and_then(|rest| rest.split_once(" ("))
                .and_then(|(n, rest)| {
                    Some(Said::Started {
                        revision: n.parse().ok()?,
                        hash: rest.strip_suffix(')')?.to_owned(),
                    })
                })
                .unwrap_or(Said::Other),
            "SkipSteps" if m.starts_with("Rollback to stable") => Said::BackToStable,
            "RolloutStepCompleted" => m
                .strip_prefix("Rollout step ")
                .and_then(|rest| rest.split_once(" completed"))
                .and_then(|(frac, rest)| {
                    let (i, n) = frac.split_once('/')?;
                    let step = rest
                        .trim()
                        .strip_prefix('(')
                        .and_then(|s| s.strip_suffix(')'))
                        .unwrap_or_default();
                    Some(Said::Step {
                        index: i.parse().ok()?,
                        of: n.parse().ok()?,
                        step: step.to_owned(),
                    })
                })
                .unwrap_or(Said::Other),
            "RolloutPaused" => Said::Paused {
                reason: m
                    .strip_prefix("Rollout is paused")
                    .map(str::trim)
                    .and_then(|s| s.strip_prefix('('))
                    .and_then(|s| s.strip_suffix(')'))
                    .unwrap_or_default()
                    .to_owned(),
            },
            "RolloutResumed" => Said::Resumed,
            _ => Said::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(reason: &str, message: &str, first: i64, last: i64, count: u32) -> Occurrence {
        let t = |s: i64| When::second(Timestamp(s * SECOND));
        Occurrence {
            reason: reason.into(),
            message: message.to_owned(),
            first: t(first),
            last: t(last),
            count,
            pos: At {
                file: 0,
                seq: 1,
                at: Timestamp(100 * SECOND),
            },
            name: "e".to_owned(),
            uid: Str::default(),
            said: Said::parse(reason, message),
        }
    }

    #[test]
    fn the_controllers_messages_read_as_it_writes_them() {
        let said = |r: &str, m: &str| occurrence(r, m, 0, 0, 1).said;
        assert_eq!(
            said(
                "NewReplicaSetCreated",
                "Created ReplicaSet checkout-api-774f4b6fd4 (revision 2)"
            ),
            Said::Created {
                replicaset: "checkout-api-774f4b6fd4".to_owned(),
                revision: 2
            }
        );
        assert_eq!(
            said(
                "RolloutCompleted",
                "Rollout completed update to revision 1 (7d4c9cb965): Initial deploy"
            ),
            Said::Completed {
                revision: 1,
                hash: "7d4c9cb965".to_owned()
            }
        );
        assert_eq!(
            said(
                "RolloutStepCompleted",
                "Rollout step 1/4 completed (setWeight: 20)"
            ),
            Said::Step {
                index: 1,
                of: 4,
                step: "setWeight: 20".to_owned()
            }
        );
        assert_eq!(
            said("RolloutPaused", "Rollout is paused (CanaryPauseStep)"),
            Said::Paused {
                reason: "CanaryPauseStep".to_owned()
            }
        );
        assert_eq!(said("RolloutResumed", "Rollout is resumed"), Said::Resumed);
        assert_eq!(
            said("RolloutUpdated", "Rollout updated to revision 3"),
            Said::Updated { revision: 3 }
        );
        assert_eq!(
            said(
                "RolloutNotCompleted",
                "Rollout not completed, started update to revision 2 (749497bb6)"
            ),
            Said::Started {
                revision: 2,
                hash: "749497bb6".to_owned()
            }
        );
        assert_eq!(
            said("SkipSteps", "Rollback to stable ReplicaSets"),
            Said::BackToStable
        );
        assert_eq!(
            said("RolloutAborted", "Rollout aborted update to revision 3"),
            Said::Aborted
        );
        // Another format is another reason's, or a later controller's: not guessed at.
        assert_eq!(
            said("NewReplicaSetCreated", "Created ReplicaSet x"),
            Said::Other
        );
        assert_eq!(said("RolloutStepCompleted", "step one done"), Said::Other);
    }

    #[test]
    fn a_series_is_known_at_its_first_and_last_times_only() {
        let at = |s: i64| When::exact(Timestamp(s * SECOND + 400_000_000));
        // Once, at 10.
        let once = occurrence("R", "m", 10, 10, 1);
        assert_eq!(once.within(at(5), at(20)), Within::Yes);
        assert_eq!(once.within(at(11), at(20)), Within::No);
        // In the second the span ends: which came first is not known.
        assert_eq!(once.within(at(5), at(10)), Within::Maybe);
        // Twice, at 10 and 30: nothing between.
        let twice = occurrence("R", "m", 10, 30, 2);
        assert_eq!(twice.within(at(15), at(25)), Within::No);
        assert_eq!(twice.within(at(25), at(35)), Within::Yes);
        // Five times from 10 to 30: three of them at times not known.
        let five = occurrence("R", "m", 10, 30, 5);
        assert_eq!(five.within(at(15), at(25)), Within::Maybe);
        assert_eq!(five.within(at(31), at(40)), Within::No);
        assert_eq!(
            twice.times_within(at(0), at(40)).count(),
            2,
            "both ends inside"
        );
        assert_eq!(
            once.times_within(at(0), at(40)).count(),
            1,
            "one time, once"
        );
    }

    #[test]
    fn an_events_name_dates_it_to_the_nanosecond_when_it_agrees_with_its_time() {
        // The seed recording's: first made at 01:04:51.0xx.
        let first = parse("2026-12-02T01:04:51Z");
        let t = exact_first("checkout-api.18ed4a4607f39820", first).unwrap();
        assert_eq!(t.0.div_euclid(SECOND), first.0.div_euclid(SECOND));
        assert!(t.0 > first.0);
        // Another second, another naming, no dot: not read.
        assert_eq!(
            exact_first(
                "checkout-api.18ed4a4607f39820",
                parse("2026-12-02T01:05:51Z")
            ),
            None
        );
        assert_eq!(exact_first("checkout-api.abc", first), None);
        assert_eq!(exact_first("checkout-api", first), None);
        // Two times a nanosecond apart are ordered; a second and a time in it are not.
        let (a, b) = (When::exact(Timestamp(5)), When::exact(Timestamp(6)));
        assert_eq!(a.before(b), Some(true));
        assert_eq!(b.before(a), Some(false));
        assert_eq!(When::second(Timestamp(5)).before(b), None);
    }

    #[test]
    fn two_lines_of_one_log_in_one_second_are_ordered_by_their_lines() {
        let t = When::second(parse("2026-12-06T07:54:44Z"));
        let at = |name: &str| t.in_log(log_line(name));
        let (a, b) = (at("r.log-7-controller.log"), at("r.log-9-controller.log"));
        assert_eq!(a.before(b), Some(true));
        assert_eq!(b.before(a), Some(false));
        // Another log, or no log: the second says nothing of the order.
        assert_eq!(a.before(at("r.log-9-other.log")), None);
        assert_eq!(a.before(t), None);
        assert_eq!(log_line("checkout-api.18ed4a4607f39820"), None);
    }

    #[test]
    fn events_past_the_bound_of_one_rollout_are_counted_not_kept() {
        let mut h = History::default();
        let pos = At {
            file: 0,
            seq: 1,
            at: Timestamp(0),
        };
        for i in 0..=KEEP_EVENTS {
            let view: EventView = serde_json::from_value(serde_json::json!({
                "metadata": {"uid": format!("u{i}")},
                "involvedObject": {"kind": "Rollout", "name": "r", "namespace": "ns"},
                "reason": "RolloutPaused", "message": "Rollout is paused (CanaryPauseStep)",
                "firstTimestamp": "2026-05-01T10:00:00Z"
            }))
            .unwrap();
            h.note_event("ns", &format!("r.{i}"), &view, pos);
        }
        assert_eq!(h.events("ns", "r").len(), KEEP_EVENTS);
        assert_eq!(h.dropped, 1);
        assert_eq!(
            h.events("ns", "r")[0].said,
            Said::Paused {
                reason: "CanaryPauseStep".to_owned()
            }
        );
    }

    fn parse(s: &str) -> Timestamp {
        crate::base::time::parse_rfc3339(s).unwrap()
    }
}
