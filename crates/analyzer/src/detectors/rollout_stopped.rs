//! `rollout-stopped` (error): the rollout was aborted, went Degraded or passed its progress
//! deadline; the finding names the cause the evidence shows.
//!
//! # What it detects
//! Each time a revision of the rollout is aborted (`status.abort`), reads Degraded, or its
//! `Progressing` condition reads `ProgressDeadlineExceeded`, once per revision (also when the
//! recording or the snapshot begins with it so). The cause is taken from the evidence, first
//! that holds:
//! - an AnalysisRun of the revision that ended Failed or Error (its metric: `analysis-failed`);
//! - pods of the revision that could not run, by their containers' waiting reason
//!   (`ErrImagePull`, `ImagePullBackOff`, `InvalidImageName`, `CrashLoopBackOff` with how the
//!   container last ended, `CreateContainerConfigError`...) or the scheduler's `Unschedulable`,
//!   as seen on the pods at any time while the revision was current (the abort scales them down);
//! - a status write by someone other than the controller since the rollout's last record (a
//!   person's `kubectl argo rollouts abort`, an Argo CD or Flux action), named by its field
//!   manager;
//! - the progress deadline (`progressDeadlineSeconds`, and `progressDeadlineAbort`);
//! - else the rollout's own status message.
//!
//! # Why it matters
//! "Aborted" and "Degraded" say that the rollout stopped, not why, and the pods that show why
//! are scaled down by the abort. Retrying a canary whose image does not exist pulls the same
//! missing image; retrying past a failed analysis promotes what it measured; a person's abort is
//! a decision to ask about.
//!
//! # Example
//! Revision `5d98c7bf64` of `payments/checkout-api` (image `checkout-api:1.43.0`) is aborted
//! at step 1 after `progressDeadlineSeconds` (120 s, `progressDeadlineAbort`): its pod waited
//! on `ImagePullBackOff` ("manifest unknown") the whole time.
//!
//! # Remedy
//! Chosen by the cause: fix the image reference, read the crashed container's logs, create the
//! ConfigMap or Secret, free capacity, read the analysis, or ask who aborted. Retrying is a
//! decision, offered only where the cause is not the revision itself.
//!
//! # Before the sync
//! `lint` finds a rollout the controller will refuse (`InvalidSpec`, Degraded before any step): the
//! Services it names (`stableService`, `canaryService`, `activeService`, `previewService`), its
//! traffic router's Ingress, VirtualService, DestinationRule or HTTPRoute, and the
//! AnalysisTemplates (or ClusterAnalysisTemplates) its analyses name, when the render does not hold
//! them: a warning, since another release may own them; `lint --live` looks for the Services in the
//! cluster too, and one that neither holds is an error.

use std::collections::VecDeque;

use crate::base::HashMap;

use rf_format::{Kind, Timestamp};

use crate::base::At;
use crate::base::time::rfc3339;
use crate::detectors::{Detector, Scene, argo};
use crate::model::rollout::{RolloutTrack, Snapshot};
use crate::model::world::{PodObj, Touched};
use crate::report::finding::{Evidence, Finding, Rule, Subject};

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(RolloutStopped::default())
}

/// Revisions whose pods' troubles are remembered per rollout.
const KEEP_REVISIONS: usize = 4;
/// Reasons remembered per revision.
const KEEP_REASONS: usize = 6;

/// A reason pods of a revision could not run, as first seen.
#[derive(Debug, Clone)]
struct Seen {
    reason: String,
    container: Option<String>,
    message: Option<String>,
    image: Option<String>,
    pod: String,
    pos: At,
    /// The pods seen with it (at most [`KEEP_REASONS`] named).
    pods: Vec<String>,
    /// The Event that says it, when it was read from one rather than from the pod.
    event: Option<String>,
}

/// How the rollout stands: the three stops, for the revision that is current.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Stops {
    hash: Option<String>,
    abort: bool,
    degraded: bool,
    deadline: bool,
}

impl Stops {
    fn of(cur: &Snapshot) -> Self {
        let (abort, degraded, deadline) = Stops::flags(cur);
        Stops {
            hash: cur.pod_hash.as_deref().map(str::to_owned),
            abort,
            degraded,
            deadline,
        }
    }

    /// Aborted, Degraded, past its deadline.
    fn flags(cur: &Snapshot) -> (bool, bool, bool) {
        (
            cur.abort,
            cur.phase.as_deref() == Some("Degraded"),
            // The controller's own words once the deadline aborted it: the condition then
            // reads RolloutAborted, the message says the ReplicaSet timed out.
            cur.progressing_reason.as_deref() == Some("ProgressDeadlineExceeded")
                || (cur.abort
                    && cur
                        .message
                        .as_deref()
                        .is_some_and(|m| m.contains("has timed out progressing"))),
        )
    }

    fn any(&self) -> bool {
        self.abort || self.degraded || self.deadline
    }

    /// True when `cur` stands as this (what [`Stops::of`] gives, compared without copying).
    fn same(&self, cur: &Snapshot) -> bool {
        let other = Stops::flags(cur);
        self.hash.as_deref() == cur.pod_hash.as_deref()
            && (self.abort, self.degraded, self.deadline) == other
    }

    fn words(&self) -> String {
        let mut w = Vec::new();
        if self.abort {
            w.push("aborted");
        }
        if self.degraded {
            w.push("Degraded");
        }
        if self.deadline {
            w.push("past its progress deadline");
        }
        match w.as_slice() {
            [] => String::new(),
            [one] => (*one).to_owned(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        }
    }
}

/// How a rollout stood at its last look, and the positions of its last two records.
#[derive(Debug)]
struct Follow {
    stops: Stops,
    last_pos: At,
    prev_pos: Option<At>,
}

/// Pods' troubles of one rollout, by revision, oldest first.
type Troubles = VecDeque<(String, Vec<Seen>)>;

#[derive(Debug, Default)]
pub(crate) struct RolloutStopped {
    /// Namespace -> rollout -> how it stood at its last look, and its last two records.
    last: HashMap<String, HashMap<String, Follow>>,
    /// Per rollout: pods' troubles by revision, oldest first.
    troubles: HashMap<(String, String), Troubles>,
    /// Revisions reported, per rollout.
    fired: HashMap<(String, String), VecDeque<String>>,
}

/// What the cause is, for the remedy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CauseKind {
    Analysis,
    ImagePull,
    Crash,
    Config,
    Unschedulable,
    OtherPod,
    Person,
    GitOps,
    Deadline,
    Unknown,
}

struct Cause {
    kind: CauseKind,
    words: String,
    evidence: Vec<Evidence>,
    pod: Option<String>,
    container: Option<String>,
    image: Option<String>,
    run: Option<String>,
    actor: Option<String>,
}

fn pod_cause_kind(reason: &str) -> CauseKind {
    match reason {
        "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" | "ErrImageNeverPull"
        | "RegistryUnavailable" => CauseKind::ImagePull,
        "CrashLoopBackOff" | "Error" | "OOMKilled" | "RunContainerError" => CauseKind::Crash,
        "CreateContainerConfigError" | "CreateContainerError" | "FailedMount" => CauseKind::Config,
        "Unschedulable" => CauseKind::Unschedulable,
        _ => CauseKind::OtherPod,
    }
}

/// The image container `container` of `pod` runs.
fn image_of(pod: &PodObj, container: Option<&str>) -> Option<String> {
    let c = container?;
    pod.images
        .iter()
        .find(|i| &*i.container == c)
        .map(|i| i.image.to_string())
}

/// Field managers of GitOps tools that write a rollout.
fn gitops_manager(manager: &str) -> bool {
    manager.starts_with("argocd")
        || (manager.starts_with("helm") && manager.ends_with("-controller"))
        || manager.starts_with("kustomize-controller")
}

impl RolloutStopped {
    /// Notes the trouble of a pod of `track` that a record changed.
    fn note_pod(&mut self, s: &Scene<'_>) {
        let Some(Touched::Pod { namespace, name }) = s.touched else {
            return;
        };
        let Some(pod) = s.world.pod(namespace, name) else {
            return;
        };
        let (Some(t), Some(hash)) = (pod.trouble.as_deref(), pod.hash.as_deref()) else {
            return;
        };
        let key = (
            s.track.namespace().to_owned(),
            s.track.name().to_owned(),
        );
        let revs = self.troubles.entry(key).or_default();
        let i = match revs.iter().position(|(h, _)| h == hash) {
            Some(i) => i,
            None => {
                if revs.len() == KEEP_REVISIONS {
                    revs.pop_front();
                }
                revs.push_back((hash.to_owned(), Vec::new()));
                revs.len() - 1
            }
        };
        let seen = &mut revs[i].1;
        let full = seen.len() >= KEEP_REASONS;
        match seen.iter_mut().find(|x| x.reason == *t.reason) {
            Some(x) if x.pods.len() < KEEP_REASONS && !x.pods.iter().any(|p| **p == **name) => {
                x.pods.push(name.to_string());
            }
            Some(_) => {}
            None if !full => seen.push(Seen {
                reason: t.reason.to_string(),
                container: t.container.as_deref().map(str::to_owned),
                message: t.message.as_deref().map(str::to_owned),
                image: image_of(pod, t.container.as_deref()),
                pod: name.to_string(),
                pos: pod.pos,
                pods: vec![name.to_string()],
                event: None,
            }),
            None => {}
        }
    }

    /// The troubles seen on pods of `hash`, those its pods show now, and, when none, those the
    /// kubelet's and the scheduler's Events of the first lists say of its pods (the pods an
    /// abort scaled down are gone; their Events stay an hour).
    fn pod_troubles(&self, s: &Scene<'_>, hash: &str) -> Vec<Seen> {
        let key = (
            s.track.namespace().to_owned(),
            s.track.name().to_owned(),
        );
        let mut all: Vec<Seen> = self
            .troubles
            .get(&key)
            .and_then(|revs| revs.iter().find(|(h, _)| h == hash))
            .map(|(_, seen)| seen.clone())
            .unwrap_or_default();
        for (name, pod) in s.world.pods_of_hash(s.track.namespace(), hash) {
            let Some(t) = pod.trouble.as_deref() else {
                continue;
            };
            if all.iter().any(|x| x.reason == *t.reason) {
                continue;
            }
            all.push(Seen {
                reason: t.reason.to_string(),
                container: t.container.as_deref().map(str::to_owned),
                message: t.message.as_deref().map(str::to_owned),
                image: image_of(pod, t.container.as_deref()),
                pod: name.to_owned(),
                pos: pod.pos,
                pods: vec![name.to_owned()],
                event: None,
            });
        }
        if all.is_empty() {
            let prefix = format!("{}-", s.track.rs_name(hash));
            for e in s.world.pod_events(s.track.namespace(), &prefix) {
                let full = all.len() >= KEEP_REASONS;
                match all.iter_mut().find(|x| x.reason == e.reason) {
                    Some(x) if x.pods.len() < KEEP_REASONS && !x.pods.contains(&e.pod) => {
                        x.pods.push(e.pod.clone());
                    }
                    Some(_) => {}
                    None if !full => all.push(Seen {
                        reason: e.reason.clone(),
                        container: None,
                        message: Some(e.message.clone()),
                        image: e.image.clone(),
                        pod: e.pod.clone(),
                        pos: e.pos,
                        pods: vec![e.pod.clone()],
                        event: Some(e.name.clone()),
                    }),
                    None => {}
                }
            }
        }
        all
    }
}

/// The cause of the stop of `cur` (revision `hash`), from the evidence.
fn cause(
    s: &Scene<'_>,
    cur: &Snapshot,
    hash: &str,
    since: Option<At>,
    troubles: &[Seen],
) -> Cause {
    let track = s.track;
    let ns = track.namespace();
    let mut evidence = vec![track.evidence(
        cur.pos,
        format!(
            "phase {}{}{}",
            cur.phase.as_deref().unwrap_or("unknown"),
            if cur.abort { ", abort" } else { "" },
            cur.message
                .as_deref()
                .map(|m| format!(", message \"{m}\""))
                .unwrap_or_default()
        ),
    )];
    let blank = |kind, words: String, evidence| Cause {
        kind,
        words,
        evidence,
        pod: None,
        container: None,
        image: None,
        run: None,
        actor: None,
    };
    // A failed analysis of the revision.
    let failed = s
        .world
        .analysis_runs_of(ns, track.name())
        .filter(|r| r.hash.as_deref() == Some(hash))
        .filter(|r| matches!(r.phase.as_str(), "Failed" | "Error"))
        .max_by_key(|r| r.pos.at);
    if let Some(run) = failed {
        evidence.push(Evidence::of(
            run.pos,
            Subject::new(rf_format::api::ANALYSIS_RUN.newest(), ns, &run.name),
            format!("phase {}", run.phase),
        ));
        let metrics: Vec<&str> = run.deciding().map(|m| m.name.as_str()).collect();
        let mut c = blank(
            CauseKind::Analysis,
            format!(
                "its AnalysisRun {} ended {}{}{} (see analysis-failed)",
                run.name,
                run.phase,
                if metrics.is_empty() {
                    String::new()
                } else {
                    format!(" on metric {}", metrics.join(", "))
                },
                run.message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
            evidence,
        );
        c.run = Some(run.name.clone());
        return c;
    }
    // Pods of the revision that could not run.
    if let Some(t) = troubles
        .iter()
        .min_by_key(|t| (pod_cause_kind(&t.reason) == CauseKind::OtherPod, t.pos.at))
    {
        evidence.push(match &t.event {
            Some(event) => Evidence::of(
                t.pos,
                Subject::new(Kind::Event, ns, event),
                format!("about pod {}: {}", t.pod, t.message.as_deref().unwrap_or(&t.reason)),
            ),
            None => Evidence::of(
                t.pos,
                Subject::new(Kind::Pod, ns, &t.pod),
                format!(
                    "{}{}",
                    t.container
                        .as_deref()
                        .map(|c| format!("container {c} "))
                        .unwrap_or_default(),
                    t.reason
                ),
            ),
        });
        let kind = pod_cause_kind(&t.reason);
        let what = match kind {
            CauseKind::ImagePull => format!(
                "could not pull {}",
                t.image.as_deref().unwrap_or("their image")
            ),
            CauseKind::Crash => "kept crashing".to_owned(),
            CauseKind::Config => "could not create their containers".to_owned(),
            CauseKind::Unschedulable => "could not be scheduled".to_owned(),
            _ => "could not run".to_owned(),
        };
        let others: Vec<&str> = troubles
            .iter()
            .filter(|x| x.reason != t.reason)
            .map(|x| x.reason.as_str())
            .collect();
        let (deadline, aborts) = track.progress_deadline();
        let deadline_words = if Stops::flags(cur).2 {
            format!(
                "; the revision passed progressDeadlineSeconds ({} s){}",
                deadline.unwrap_or(600),
                if aborts {
                    " and progressDeadlineAbort aborted it"
                } else {
                    ""
                }
            )
        } else {
            String::new()
        };
        let mut c = blank(
            kind,
            format!(
                "its pods {what}: {} on {} pod(s){}{}{}{deadline_words}",
                t.reason,
                t.pods.len(),
                t.container
                    .as_deref()
                    .map(|c| format!(", container {c}"))
                    .unwrap_or_default(),
                t.message
                    .as_deref()
                    .map(|m| format!(" (\"{m}\")"))
                    .unwrap_or_default(),
                if others.is_empty() {
                    String::new()
                } else {
                    format!("; also {}", others.join(", "))
                }
            ),
            evidence,
        );
        c.pod = Some(t.pod.clone());
        c.container = t.container.clone();
        c.image = t.image.clone();
        return c;
    }
    // Someone other than the controller wrote the status since the last record.
    if cur.abort {
        if let Some((t, who)) = &cur.status_user {
            let recent = since.is_none_or(|p| *t >= p.at.0 - p.at.0.rem_euclid(1_000_000_000));
            if recent {
                let kind = if gitops_manager(who) {
                    CauseKind::GitOps
                } else {
                    CauseKind::Person
                };
                let mut c = blank(
                    kind,
                    format!(
                        "{who} wrote the abort ({} status write at {}, as managedFields say)",
                        if kind == CauseKind::GitOps {
                            "a GitOps tool's"
                        } else {
                            "a manual"
                        },
                        rfc3339(Timestamp(*t)),
                    ),
                    evidence,
                );
                c.actor = Some(who.to_string());
                return c;
            }
        }
    }
    let (deadline, aborts) = track.progress_deadline();
    if Stops::flags(cur).2 {
        let ready = s
            .world
            .pods_of_hash(ns, hash)
            .filter(|(_, p)| p.ready)
            .count();
        let all = s.world.pods_of_hash(ns, hash).count();
        return blank(
            CauseKind::Deadline,
            format!(
                "revision {hash} made no progress within progressDeadlineSeconds ({} s){}; {ready} of its {all} recorded pod(s) Ready, and no pod showed a reason",
                deadline.unwrap_or(600),
                if aborts {
                    ", and progressDeadlineAbort aborted it"
                } else {
                    ""
                }
            ),
            evidence,
        );
    }
    blank(
        CauseKind::Unknown,
        match cur.message.as_deref() {
            Some(m) => format!("the recording shows no cause beyond the rollout's message \"{m}\""),
            None => "the recording shows no cause: no failed analysis, no pod reason, no status write by another manager".to_owned(),
        },
        evidence,
    )
}

impl Detector for RolloutStopped {
    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut super::Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        self.note_pod(s);
        // Its stops change only with a record of the rollout (or a look due, or the end).
        if s.touched.is_some() {
            return None;
        }
        let track = s.track;
        let cur = track.last()?;
        let (ns, name) = (track.namespace(), track.name());
        // At every look: compared in place, nothing copied unless the rollout's stops changed.
        let (first_seen, since) = match self.last.get_mut(ns).and_then(|m| m.get_mut(name)) {
            Some(f) => {
                if f.last_pos != cur.pos {
                    f.prev_pos = Some(f.last_pos);
                    f.last_pos = cur.pos;
                }
                if f.stops.same(cur) {
                    return None;
                }
                f.stops = Stops::of(cur);
                (false, f.prev_pos)
            }
            None => {
                let stops = Stops::of(cur);
                let any = stops.any();
                let follow = Follow {
                    stops,
                    last_pos: cur.pos,
                    prev_pos: None,
                };
                self.last
                    .entry(ns.to_owned())
                    .or_default()
                    .insert(name.to_owned(), follow);
                if !any {
                    return None;
                }
                (true, None)
            }
        };
        let now = Stops::of(cur);
        let hash = now.hash.clone().filter(|_| now.any())?;
        let key = (ns.to_owned(), name.to_owned());
        let fired = self.fired.entry(key).or_default();
        if fired.contains(&hash) {
            return None;
        }
        if fired.len() == KEEP_REVISIONS {
            fired.pop_front();
        }
        fired.push_back(hash.clone());
        let troubles = self.pod_troubles(s, &hash);
        let c = cause(s, cur, &hash, since, &troubles);
        out.push(finding(track, cur, &hash, &now, first_seen, c));
        None
    }
}

fn finding(
    track: &RolloutTrack,
    cur: &Snapshot,
    hash: &str,
    stops: &Stops,
    first_seen: bool,
    c: Cause,
) -> Finding {
    let ns = track.namespace();
    let argo = argo(track);
    let stable = cur.stable_rs.as_deref().filter(|s| *s != hash);
    let serving = stable.map_or_else(
        || "no other revision is stable".to_owned(),
        |s| format!("the stable revision {s} serves meanwhile"),
    );
    let summary = format!(
        "revision {hash} {} {}: {}",
        if first_seen { "was" } else { "is" },
        stops.words(),
        c.words
    );
    let explanation = format!(
        "The rollout {} {} {} on revision {hash}{}. Cause: {}.",
        track.name(),
        if first_seen { "was already" } else { "is" },
        stops.words(),
        if first_seen {
            " when it was first recorded"
        } else {
            ""
        },
        c.words
    );
    let mut commands = Vec::new();
    let mut decisions = Vec::new();
    let (now, prevent) = match c.kind {
        CauseKind::ImagePull => {
            if let Some(p) = &c.pod {
                commands.push(format!("kubectl -n {ns} describe pod {p}"));
                commands.push(format!(
                    "kubectl -n {ns} get events --field-selector involvedObject.name={p}"
                ));
            }
            (
                format!(
                    "The image {} cannot be pulled (a tag that does not exist, a registry that refuses the credentials): {serving}. Fix the image reference and render again; retrying this revision pulls the same image.",
                    c.image.as_deref().unwrap_or("of this revision")
                ),
                "Resolve the image to a digest when CI pushes it and deploy that digest: a render then names only an image that exists.".to_owned(),
            )
        }
        CauseKind::Crash => {
            if let Some(p) = &c.pod {
                let container = c
                    .container
                    .as_deref()
                    .map(|c| format!(" -c {c}"))
                    .unwrap_or_default();
                commands.push(format!("kubectl -n {ns} logs {p}{container} --previous"));
                commands.push(format!("kubectl -n {ns} describe pod {p}"));
            }
            (
                format!("Revision {hash}'s containers crash: {serving}. Read the crashed container's last logs; the fix is in the application or its configuration, and retrying runs the same."),
                "A readiness probe and an analysis step at the first weight stop a crashing revision before it takes traffic; the crash itself is the application's.".to_owned(),
            )
        }
        CauseKind::Config => {
            if let Some(p) = &c.pod {
                commands.push(format!("kubectl -n {ns} describe pod {p}"));
            }
            (
                format!("Revision {hash}'s containers could not be created (a ConfigMap, Secret or key it names is missing): {serving}. Create what the pod names, then retry."),
                "Create the ConfigMaps and Secrets a revision needs before the revision (an earlier sync wave, or the same commit).".to_owned(),
            )
        }
        CauseKind::Unschedulable => {
            if let Some(p) = &c.pod {
                commands.push(format!("kubectl -n {ns} describe pod {p}"));
            }
            commands.push("kubectl describe nodes".to_owned());
            (
                format!("Revision {hash}'s pods could not be placed on any node: {serving}. Free capacity or lower the requests, then retry."),
                "Leave room for the canary's extra pods (maxSurge), or give the canary requests that fit the nodes.".to_owned(),
            )
        }
        CauseKind::OtherPod => {
            if let Some(p) = &c.pod {
                commands.push(format!("kubectl -n {ns} describe pod {p}"));
            }
            (
                format!("Revision {hash}'s pods could not run: {serving}. Read the pod's status and Events."),
                "Catch it before the rollout: the pods' own errors are the revision's.".to_owned(),
            )
        }
        CauseKind::Analysis => {
            if let Some(r) = &c.run {
                commands.push(format!("kubectl -n {ns} get analysisrun {r} -o yaml"));
            }
            decisions.push(format!("kubectl argo rollouts retry rollout {argo}"));
            (
                format!("The analysis judged revision {hash} and failed it: {serving}. Read what it measured (analysis-failed); retry only if the measurement was wrong."),
                "Keep the analysis's queries and conditions in review with the application: a failure is a verdict on the revision.".to_owned(),
            )
        }
        CauseKind::Person | CauseKind::GitOps => {
            decisions.push(format!("kubectl argo rollouts retry rollout {argo}"));
            (
                format!(
                    "{} aborted it: {serving}. Ask why before retrying.",
                    c.actor.as_deref().unwrap_or("someone")
                ),
                if c.kind == CauseKind::GitOps {
                    "An abort by a GitOps tool is one of its resource actions or syncs: find which in its history.".to_owned()
                } else {
                    "A manual abort is a decision; nothing to prevent.".to_owned()
                },
            )
        }
        CauseKind::Deadline => {
            commands.push(format!(
                "kubectl -n {ns} get pods -l rollouts-pod-template-hash={hash} -o wide"
            ));
            (
                format!("Revision {hash} did not become available in time: {serving}. See why its pods are not Ready."),
                "Set progressDeadlineSeconds to what a revision needs to start, and give the pods a readiness probe that says why they are not ready.".to_owned(),
            )
        }
        CauseKind::Unknown => (
            format!("{serving}. See the rollout's conditions and Events."),
            "Record the namespace (rollout-forensics record) so that the next stop shows its cause.".to_owned(),
        ),
    };
    commands.push(format!("kubectl argo rollouts get rollout {argo}"));
    Finding::new(
        Rule::RolloutStopped,
        track.subject(),
        track.subject(),
        cur.pos.at,
        summary,
    )
    .explain(explanation)
    .with_evidence(c.evidence)
    .remedy(now, commands, prevent)
    .decide(decisions)
}


#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, NAME, template_unpinned};

    fn stopped(kit: &Kit) -> Vec<&crate::Finding> {
        kit.of_rule(Rule::RolloutStopped)
    }

    /// Revision `new1` released to its first step; its pod then shows `state` (and
    /// `conditions`) and the controller gives up: progress deadline, abort, Degraded.
    fn release_then(state: serde_json::Value, conditions: serde_json::Value) -> Kit {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s.insert("progressDeadlineSeconds".into(), json!(120));
            s.insert("progressDeadlineAbort".into(), json!(true));
        });
        kit.advance(5);
        kit.new_revision("new1", template_unpinned("app:2", "c1"));
        kit.scale("new1", 1, template_unpinned("app:2", "c1"));
        kit.advance(2);
        kit.troubled_pod("new1", "p0", "registry.example.com/app:2", state, conditions);
        kit.advance(120);
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("phase".into(), json!("Degraded"));
            s.insert(
                "message".into(),
                json!("RolloutAborted: Rollout aborted update to revision 2"),
            );
            s.insert(
                "conditions".into(),
                json!([{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]),
            );
        });
        kit.scale("new1", 0, template_unpinned("app:2", "c1"));
        kit.delete_pod("new1", "p0");
        kit
    }

    #[test]
    fn issue_48_an_image_that_cannot_be_pulled_is_named_as_the_cause_of_the_abort() {
        let kit = release_then(
            json!({"waiting": {"reason": "ImagePullBackOff",
                "message": "Back-off pulling image \"registry.example.com/app:2\": manifest unknown"}}),
            json!([]),
        );
        let f = stopped(&kit);
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        let f = f[0];
        assert!(
            f.summary.contains("revision new1 is aborted, Degraded and past its progress deadline")
                && f.summary.contains("could not pull registry.example.com/app:2")
                && f.summary.contains("ImagePullBackOff"),
            "{}",
            f.summary
        );
        assert!(f.remedy.summary.contains("cannot be pulled"), "{}", f.remedy.summary);
        assert!(f.remedy.summary.contains("stable revision stable0 serves"));
        assert!(f.remedy.decisions.is_empty(), "no retry of the same image");
        assert!(f.remedy.commands.iter().any(|c| c.contains("describe pod checkout-api-new1-p0")));
        // The pod the abort deleted is the evidence.
        assert!(f.evidence.iter().any(|e| e.object.name == "checkout-api-new1-p0"));
        // No advice to pin the digest of pods that never pulled the tag.
        let report = kit.finish();
        for f in report.findings.iter().filter(|f| f.rule == Rule::ImageNotPinned) {
            if f.summary.contains("app:2") {
                assert!(
                    !f.remedy.summary.contains("the running pods use"),
                    "{}",
                    f.remedy.summary
                );
            }
        }
    }

    #[test]
    fn a_crash_loop_names_how_the_container_last_ended_and_its_logs() {
        let kit = release_then(
            json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}}),
            json!([]),
        );
        let f = stopped(&kit);
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("kept crashing: CrashLoopBackOff"), "{}", f[0].summary);
        assert!(
            f[0].remedy.commands[0].contains("logs checkout-api-new1-p0 -c app --previous"),
            "{:?}",
            f[0].remedy.commands
        );
    }

    #[test]
    fn an_unschedulable_pod_is_the_schedulers_reason() {
        let kit = release_then(
            json!({}),
            json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient cpu."}]),
        );
        let f = stopped(&kit);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].summary.contains("could not be scheduled: Unschedulable")
                && f[0].summary.contains("Insufficient cpu"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn a_deadline_with_no_pod_reason_says_so() {
        let kit = release_then(json!({"waiting": {"reason": "ContainerCreating"}}), json!([]));
        let f = stopped(&kit);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].summary.contains("no progress within progressDeadlineSeconds (120 s), and progressDeadlineAbort aborted it"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn a_manual_abort_names_who_wrote_it_and_offers_the_retry_as_a_decision() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template_unpinned("app:2", "c1"));
        kit.advance(30);
        let time = crate::base::time::rfc3339(kit.now());
        // The plugin's status write, in the same second as the controller's.
        kit.managed_fields(json!([
            {"manager": "rollouts-controller", "operation": "Update", "subresource": "status", "time": time},
            {"manager": "kubectl-argo-rollouts", "operation": "Update", "subresource": "status", "time": time}
        ]));
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
        });
        let f = stopped(&kit);
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert!(f[0].summary.contains("kubectl-argo-rollouts wrote the abort (a manual status write"), "{}", f[0].summary);
        assert_eq!(
            f[0].remedy.decisions,
            [format!("kubectl argo rollouts retry rollout {NAME} -n payments")]
        );
    }

    #[test]
    fn a_failed_analysis_is_the_cause_before_the_pods() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template_unpinned("app:2", "c1"));
        kit.analysis_run(
            "checkout-api-new1-2-1",
            json!({
                "metadata": {"labels": {"rollouts-pod-template-hash": "new1", "rollout-type": "Step"},
                    "ownerReferences": [{"kind": "Rollout", "name": NAME, "uid": "uid-checkout-api"}]},
                "spec": {"metrics": [{"name": "error-rate", "failureLimit": 0,
                    "provider": {"prometheus": {"query": "q"}}}]},
                "status": {"phase": "Failed", "message": "Metric \"error-rate\" assessed Failed",
                    "metricResults": [{"name": "error-rate", "phase": "Failed", "count": 1,
                        "measurements": [{"phase": "Failed", "value": "[0.2]"}]}]}
            }),
        );
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("phase".into(), json!("Degraded"));
        });
        let f = stopped(&kit);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].summary.contains("AnalysisRun checkout-api-new1-2-1 ended Failed on metric error-rate"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn a_stop_with_no_evidence_quotes_the_rollouts_message() {
        let mut kit = Kit::new();
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("phase".into(), json!("Degraded"));
            s.insert("message".into(), json!("RolloutAborted: Rollout aborted update to revision 3"));
        });
        let report = kit.finish();
        let f: Vec<_> = report.findings.iter().filter(|f| f.rule == Rule::RolloutStopped).collect();
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("RolloutAborted: Rollout aborted update to revision 3"), "{}", f[0].summary);
    }

    /// After the fact: the abort scaled the pods down, and the kubelet's Events of the first
    /// list still say why they did not run.
    #[test]
    fn issue_48_the_kubelets_events_name_the_cause_when_the_pods_are_gone() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template_unpinned("registry.example.com/app:2", "c1"));
        kit.listed_pod_event(
            "checkout-api-new1-p0.18a2b3c4d5e6f708",
            "checkout-api-new1-p0",
            "Failed",
            "Failed to pull image \"registry.example.com/app:2\": rpc error: code = NotFound desc = manifest unknown",
        );
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("phase".into(), json!("Degraded"));
            s.insert(
                "message".into(),
                json!("RolloutAborted: Rollout aborted update to revision 2: ReplicaSet \"checkout-api-new1\" has timed out progressing."),
            );
        });
        let f = stopped(&kit);
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert!(
            f[0].summary.contains("could not pull registry.example.com/app:2: ErrImagePull")
                && f[0].summary.contains("passed progressDeadlineSeconds"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].evidence.iter().any(|e| e.object.kind == rf_format::Kind::Event),
            "{:#?}",
            f[0].evidence
        );
    }

    /// An abort written by Argo CD (a resource action of its server): named as a GitOps
    /// tool's, with its history to read.
    #[test]
    fn an_abort_by_argo_cd_is_a_gitops_tools() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template_unpinned("app:2", "c1"));
        kit.advance(30);
        let time = crate::base::time::rfc3339(kit.now());
        kit.managed_fields(json!([
            {"manager": "argocd-server", "operation": "Update", "subresource": "status", "time": time}
        ]));
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
        });
        let f = stopped(&kit);
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert!(
            f[0].summary.contains("argocd-server wrote the abort (a GitOps tool's status write"),
            "{}",
            f[0].summary
        );
        assert!(f[0].remedy.prevention.contains("GitOps tool"), "{}", f[0].remedy.prevention);
    }

    /// After the fact, the scheduler's Event says why the canary's pods never ran.
    #[test]
    fn the_schedulers_event_names_an_unschedulable_canary_after_the_fact() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template_unpinned("app:2", "c1"));
        kit.listed_pod_event(
            "checkout-api-new1-p0.18a2b3c4d5e6f709",
            "checkout-api-new1-p0",
            "FailedScheduling",
            "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
        );
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("phase".into(), json!("Degraded"));
        });
        let f = stopped(&kit);
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert!(
            f[0].summary.contains("could not be scheduled: Unschedulable")
                && f[0].summary.contains("Insufficient memory"),
            "{}",
            f[0].summary
        );
        assert!(f[0].remedy.commands.iter().any(|c| c == "kubectl describe nodes"));
    }
}
