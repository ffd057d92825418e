//! One Rollout's changes of revision, classified as the analyzer classifies them, for a caller
//! that follows a single rollout live (`wait` in a pipeline): what it counts as a restart is
//! what `analyze` reports as one, because it is the same state machine.

use rf_format::{Kind, Op, Record};

use crate::base::At;
use crate::input::prepare::{Parsed, Prepared};
use crate::model::rollout::{RevisionClass, RolloutTrack};

/// A change of revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashChange {
    /// The pod-template hash before.
    pub from: String,
    /// The pod-template hash now.
    pub to: String,
    pub class: RevisionClass,
}

/// Follows one Rollout's records.
#[derive(Debug)]
pub struct Revisions {
    track: RolloutTrack,
    namespace: String,
    name: String,
}

impl Revisions {
    /// Follows the Rollout `namespace`/`name`.
    pub fn new(namespace: &str, name: &str) -> Self {
        Revisions {
            track: RolloutTrack::new(namespace, name, false),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// Applies a record (one not of this Rollout, or not an object, changes nothing): the
    /// change of revision it shows, if any. A restart the controller writes in two steps (the
    /// new hash, then the index back to 0) is told at the second.
    pub fn observe(&mut self, rec: &Record) -> Option<HashChange> {
        if rec.kind != Kind::Rollout
            || rec.namespace != self.namespace
            || rec.name != self.name
            || !matches!(rec.op, Op::Added | Op::Modified | Op::Listed)
        {
            return None;
        }
        let Parsed::Rollout(mut view) = Prepared::of(rec).0 else {
            return None;
        };
        let pos = At {
            file: 0,
            seq: rec.seq,
            at: rec.observed_at,
        };
        self.track
            .observe_rollout(&mut view, &rec.object, pos, rec.actor.as_deref())?;
        let change = self.track.last_revision_change.as_ref()?;
        Some(HashChange {
            from: change.from.to_string(),
            to: change.to.to_string(),
            class: change.class,
        })
    }
}
