//! The timeline of a plain Deployment (one no rollout's `workloadRef` names): its spec and
//! status changes and those of its ReplicaSets, in the rows a rollout's timeline has.

use std::collections::BTreeMap;

use crate::base::{At, Str};
use crate::model::world::DeploymentObj;
use crate::report::timeline::{MAX_TIMELINE_ENTRIES, ReplicaSetState, Role, TimelineEntry};

/// One ReplicaSet of the Deployment, as last recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rs {
    hash: Str,
    revision: Option<i64>,
    replicas: i64,
    ready: i64,
}

/// What the timeline has shown of the Deployment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Shown {
    generation: Option<i64>,
    replicas: i64,
    ready: i64,
    history_limit: Option<i64>,
    template_changes: usize,
}

/// One Deployment's timeline in the making.
#[derive(Debug, Default)]
pub(crate) struct DeploymentTimeline {
    shown: Option<Shown>,
    /// Its ReplicaSets by name.
    replicasets: BTreeMap<String, Rs>,
    /// Template changes seen in all (the world keeps only the last two).
    template_changes: usize,
    last_change: Option<At>,
    pub entries: Vec<TimelineEntry>,
    pub truncated: bool,
}

impl DeploymentTimeline {
    /// A record of the Deployment: its changes since the last one, if any.
    pub fn observe_deployment(&mut self, dep: &DeploymentObj) {
        let change = dep.template_changes.back();
        if let Some(c) = change.filter(|c| Some(c.pos) != self.last_change) {
            self.template_changes += 1;
            self.last_change = Some(c.pos);
        }
        let now = Shown {
            generation: dep.generation,
            replicas: dep.replicas,
            ready: dep.ready,
            history_limit: dep.revision_history_limit,
            template_changes: self.template_changes,
        };
        let mut words = Vec::new();
        match &self.shown {
            None => words.push(format!(
                "first seen: replicas {}, revisionHistoryLimit {}",
                dep.replicas,
                dep.revision_history_limit
                    .map_or("10 (default)".to_owned(), |l| l.to_string())
            )),
            Some(s) => {
                if s.generation != now.generation {
                    words.push(format!(
                        "generation {} -> {}",
                        s.generation.map_or("-".to_owned(), |g| g.to_string()),
                        now.generation.map_or("-".to_owned(), |g| g.to_string())
                    ));
                }
                if s.template_changes != now.template_changes {
                    if let Some(c) = change {
                        let (paths, _) = c.paths();
                        words.push(format!("pod template changed: {}", paths.join(", ")));
                    }
                }
                if s.replicas != now.replicas {
                    words.push(format!("replicas {} -> {}", s.replicas, now.replicas));
                }
                if s.history_limit != now.history_limit {
                    words.push(format!(
                        "revisionHistoryLimit {} -> {}",
                        s.history_limit.map_or("-".to_owned(), |l| l.to_string()),
                        now.history_limit.map_or("-".to_owned(), |l| l.to_string())
                    ));
                }
            }
        }
        self.shown = Some(now);
        if !words.is_empty() {
            self.push(dep, dep.pos, "Deployment", words, dep.actor.clone());
        }
    }

    /// A record of ReplicaSet `name` of the Deployment (`None`: deleted).
    pub fn observe_replicaset(
        &mut self,
        dep: &DeploymentObj,
        pos: At,
        name: &str,
        state: Option<(Str, Option<i64>, i64, i64)>,
    ) {
        let before = self.replicasets.get(name);
        let mut words = Vec::new();
        match (before, &state) {
            (None, Some((_, revision, replicas, _))) => words.push(format!(
                "rs {name} created{} (replicas {replicas})",
                revision
                    .map(|r| format!(", revision {r}"))
                    .unwrap_or_default()
            )),
            (Some(_), None) => words.push(format!("rs {name} deleted")),
            (Some(b), Some((_, revision, replicas, ready))) => {
                if b.replicas != *replicas {
                    words.push(format!("rs {name} replicas {} -> {replicas}", b.replicas));
                }
                if b.ready != *ready {
                    words.push(format!("rs {name} ready {} -> {ready}", b.ready));
                }
                if b.revision != *revision {
                    words.push(format!(
                        "rs {name} revision {} -> {}",
                        b.revision.map_or("-".to_owned(), |r| r.to_string()),
                        revision.map_or("-".to_owned(), |r| r.to_string())
                    ));
                }
            }
            (None, None) => {}
        }
        let created = before.is_none();
        match state {
            // A ReplicaSet first seen counts no ready pod yet: its pods coming up are changes.
            Some((hash, revision, replicas, ready)) => {
                self.replicasets.insert(
                    name.to_owned(),
                    Rs {
                        hash,
                        revision,
                        replicas,
                        ready: if created { 0 } else { ready },
                    },
                );
            }
            None => {
                self.replicasets.remove(name);
            }
        }
        if !words.is_empty() {
            self.push(dep, pos, "ReplicaSet", words, None);
        }
    }

    fn push(
        &mut self,
        dep: &DeploymentObj,
        pos: At,
        source: &str,
        changes: Vec<String>,
        actor: Option<Str>,
    ) {
        if self.entries.len() >= MAX_TIMELINE_ENTRIES {
            self.truncated = true;
            return;
        }
        // The newest revision is the Deployment's current one.
        let newest = self.replicasets.values().filter_map(|r| r.revision).max();
        let current = self
            .replicasets
            .values()
            .find(|r| r.revision.is_some() && r.revision == newest)
            .map(|r| r.hash.clone());
        let replicasets = self
            .replicasets
            .iter()
            .filter(|(_, r)| r.replicas > 0 || r.ready > 0)
            .map(|(name, r)| ReplicaSetState {
                name: Str::new(name),
                hash: r.hash.clone(),
                role: if Some(&r.hash) == current.as_ref() {
                    Role::New
                } else {
                    Role::Other
                },
                replicas: r.replicas,
                ready: r.ready,
            })
            .collect();
        self.entries.push(TimelineEntry {
            at: pos.at,
            file: pos.file,
            seq: pos.seq,
            source: source.to_owned(),
            changes,
            actor,
            generation: dep.generation,
            observed_generation: None,
            pod_hash: current,
            stable_rs: None,
            step_index: 0,
            step_count: 0,
            phase: None,
            pause: Vec::new(),
            abort: false,
            message: None,
            replicasets,
        });
    }
}
