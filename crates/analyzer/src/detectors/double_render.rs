//! `double-render` (warning): two renders of the rollout's pod template within 120 s, the second
//! changing only annotations (or two Application syncs, then a restart).
//!
//! # What it detects
//! Two renders of the same rollout within 120 s: two changes of its pod template,
//! the second changing only annotations (a config checksum, a timestamp); or, when the Rollout's
//! records do not show both changes (a relist after a gap coalesces them), two syncs of the Argo
//! CD Application that manages it with different revisions, followed by a restart of its canary.
//! The finding names both times, both generations and, when an Application manages the rollout,
//! the syncs of its history nearest to each (waiting up to 30 s for that history to catch up):
//! each by its id, who started it (`automated` or a user) and what it deployed that the sync
//! before it did not, a source's revision or an inline Helm parameter (a pipeline that writes
//! the image into the Application changes no revision). For a rollout a Flux HelmRelease or Kustomization renders (its
//! `helm.toolkit.fluxcd.io/name` or `kustomize.toolkit.fluxcd.io/name` label), it names that
//! object's attempt nearest each render instead: a HelmRelease's Helm releases (chart version,
//! values digest, release number), a Kustomization's attempted revision.
//! For a plain Deployment (one no rollout's `workloadRef` names): two changes of its pod
//! template within 120 s, the second changing only annotations; each restarts every pod. The
//! Application or Flux object that applies it is named the same way (its tracking id or
//! instance label, its Flux labels).
//!
//! # Why it matters
//! These are the two renders of the re-render race: the first starts a canary, the second
//! restarts it at step 0 for nothing a user would call a release. Whatever renders twice (a
//! values file and a config file committed separately, two pipelines, an image updater and a
//! config change) should render once.
//!
//! # Example
//! Generation 2 at 13:02:30 (image and `checksum/config`, revision 3f2a…) and generation 3 at
//! 13:03:00 (`checksum/config` only, revision 9c1e…): 30 s apart.
//!
//! # Remedy
//! Render once per release.
//!
//! # Before the sync
//! `lint` reads a multi-source Argo CD Application whose `ref` values source follows a branch or
//! `HEAD` while another source pins the release inline (Helm parameters or values): the image and
//! the values commit then reach the cluster as two renders.

use crate::base::HashMap;
use crate::base::by_name::ByName;

use rf_format::{Kind, Timestamp};

use crate::detectors::{DeploymentScene, Detector, Facts, Scene, argo, revision_word};
use crate::report::finding::{Finding, Rule, Subject};
use crate::model::rollout::{SpecChange, Transition};
use crate::base::time::{human_duration, rfc3339};
use crate::model::world::{AppObj, DeploymentObj, FluxObj, TemplateChange, World};

/// Two renders closer than this are one render too many.
pub(crate) const WINDOW_SECONDS: i64 = crate::detectors::writer::QUICK_SECONDS;

/// How long to wait for the Application's history to name the second render's revision.
const WAIT_FOR_APP_SECONDS: i64 = 30;

const NS: i64 = 1_000_000_000;

/// A plain Deployment's double render, waiting like a rollout's for what applied it to say so.
#[derive(Debug)]
struct PendingDeployment {
    namespace: String,
    name: String,
    first: TemplateChange,
    second: TemplateChange,
}

#[derive(Debug)]
struct Pending {
    namespace: String,
    rollout: String,
    first: SpecChange,
    second: SpecChange,
}

/// Reported renders remembered per rollout: only recent ones are asked about (an
/// Application's last two syncs, a render just made).
const KEEP_FIRED: usize = 16;


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(DoubleRender::default())
}

#[derive(Debug, Default)]
pub(crate) struct DoubleRender {
    /// Renders waiting to be judged, by namespace and rollout, in the order they were made: a
    /// look at a rollout visits its own only (this runs on every look at every rollout).
    pending: ByName<Vec<Pending>>,
    /// Rollout renders reported, by namespace and rollout: the times of the second renders,
    /// the latest [`KEEP_FIRED`]. Per rollout, so that a look costs the same however many
    /// renders were reported before, and what is kept does not grow with them.
    fired: HashMap<String, HashMap<String, Vec<i64>>>,
    /// Application syncs reported, by namespace and app: the last one (revision, time). Only an
    /// app's last two syncs are looked at, so an earlier one is not asked about again.
    fired_apps: HashMap<String, HashMap<String, (String, i64)>>,
    /// The last render of a rollout's Deployment (`workloadRef`) looked at, by namespace and
    /// rollout: such a render is a record of its own, looked at from the rollout's next
    /// transition.
    seen_deployment_renders: HashMap<(String, String), crate::base::At>,
    /// Plain Deployments' second renders reported, by (namespace, name): the last one's time.
    fired_deployments: HashMap<(String, String), i64>,
    pending_deployments: Vec<PendingDeployment>,
}

/// What applied an object: the Applications that track it, the Flux objects that apply it.
struct Appliers<'a> {
    apps: Vec<&'a AppObj>,
    flux: Vec<&'a FluxObj>,
}

impl<'a> Appliers<'a> {
    fn of_rollout(world: &'a World, track: &'a crate::model::rollout::RolloutTrack) -> Self {
        Appliers {
            apps: world.apps_of(track).collect(),
            flux: track
                .flux()
                .map(|(kind, name)| world.flux_named(kind, name).collect())
                .unwrap_or_default(),
        }
    }

    fn of_deployment(world: &'a World, dep: &'a DeploymentObj) -> Self {
        Appliers {
            apps: dep
                .tracked_by
                .as_deref()
                .map(|app| world.apps_named(app).collect())
                .unwrap_or_default(),
            flux: dep
                .flux
                .as_ref()
                .map(|(kind, name)| world.flux_named(kind, name).collect())
                .unwrap_or_default(),
        }
    }

    /// The Argo CD sync nearest `at` and what it changed, else the Flux attempt nearest it, in
    /// words.
    fn near(&self, at: Timestamp) -> Option<String> {
        sync_near(&self.apps, at)
            .map(|(app, i)| sync_words(app, i))
            .or_else(|| {
                self.flux.iter().find_map(|f| {
                    f.attempt_near(at)
                        .map(|a| format!("{} {}: {}", f.kind, f.name, a.words))
                })
            })
    }

    /// Whether the Argo CD syncs nearest `first` and `second` deployed the same input (the same
    /// revisions and parameters): then the second render's difference was made at render time.
    /// `None` when the syncs are not both known.
    fn same_input(&self, first: Timestamp, second: Timestamp) -> Option<bool> {
        let (a1, i1) = sync_near(&self.apps, first)?;
        let (a2, i2) = sync_near(&self.apps, second)?;
        Some(a2.history[i2].changes_from(&a1.history[i1]).is_empty())
    }

    /// Whether what applied the second render (at `second`) has said so: a sync or attempt
    /// near it that is not the one near the first; true when nothing applies it.
    fn know(&self, first: Timestamp, second: Timestamp) -> bool {
        // The Flux object writes its attempt once the upgrade is done: after the render.
        let flux = self.flux.is_empty()
            || self.flux.iter().any(|f| {
                f.attempt_near(second)
                    .is_some_and(|a2| f.attempt_near(first).is_none_or(|a1| a1 != a2))
            });
        let same = |(a, i): (&AppObj, usize), (b, j): (&AppObj, usize)| {
            std::ptr::eq(a, b) && a.history[i] == b.history[j]
        };
        flux && (self.apps.is_empty()
            || sync_near(&self.apps, second)
                .is_some_and(|s2| sync_near(&self.apps, first).is_none_or(|s1| !same(s1, s2))))
    }

    /// Evidence of each: an Application's history, a Flux object's attempts.
    fn evidence(&self) -> Vec<crate::report::finding::Evidence> {
        let mut evidence = Vec::new();
        for app in &self.apps {
            evidence.push(app.evidence(format!(
                "history: {}",
                (0..app.history.len())
                    .map(|i| sync_words(app, i))
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        for f in &self.flux {
            evidence.push(f.evidence(format!(
                "attempts: {}",
                f.attempts
                    .iter()
                    .map(|a| format!("{} at {}", a.words, rfc3339(a.at)))
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        evidence
    }

    /// The commands that show their history.
    fn commands(&self) -> Vec<String> {
        let mut commands: Vec<String> = self.apps.iter().map(|app| history_command(app)).collect();
        commands.extend(self.flux.iter().map(|f| f.command()));
        commands
    }
}

/// `argocd app history NAME -N NAMESPACE`: the Application's namespace as the CLI takes it for
/// an Application in any namespace, its control plane's included.
fn history_command(app: &AppObj) -> String {
    format!("argocd app history {} -N {}", app.name, app.namespace)
}

/// Sync `i` of `app`'s history in words, with what it deployed that the sync before it did
/// not: `Application NAME sync 2 (automated) at TIME: values 4c3758d6 -> 5467196d`.
fn sync_words(app: &AppObj, i: usize) -> String {
    format!("Application {} {}", app.name, sync_text(app, i))
}

/// [`sync_words`] without the Application's name.
fn sync_text(app: &AppObj, i: usize) -> String {
    let what = crate::model::world::sync_changes(&app.history, i)
        .unwrap_or_else(|| "the same revisions and parameters as the sync before".to_owned());
    format!("{}: {what}", app.history[i].words())
}

/// The Application sync nearest before (or just after) `at`: the Application and its place in
/// that Application's history.
fn sync_near<'a>(apps: &[&'a AppObj], at: Timestamp) -> Option<(&'a AppObj, usize)> {
    apps.iter()
        .flat_map(|a| a.history.iter().enumerate().map(move |(i, h)| (*a, i, h)))
        .filter(|(_, _, h)| h.deployed_at.0 <= at.0 + 10 * NS && at.0 - h.deployed_at.0 <= 60 * NS)
        .min_by_key(|(_, _, h)| (h.deployed_at.0 - at.0).abs())
        .map(|(a, i, _)| (a, i))
}

impl DoubleRender {
    /// True when a render of `rollout` reported before fell in `lo..=hi`.
    fn fired_within(&self, namespace: &str, rollout: &str, lo: i64, hi: i64) -> bool {
        self.fired
            .get(namespace)
            .and_then(|by_name| by_name.get(rollout))
            .is_some_and(|times| times.iter().any(|t| (lo..=hi).contains(t)))
    }

    /// Remembers that the render of `rollout` at `at` is reported; false if it was already.
    fn fire(&mut self, namespace: &str, rollout: &str, at: i64) -> bool {
        let by_name = match self.fired.get_mut(namespace) {
            Some(m) => m,
            None => self.fired.entry(namespace.to_owned()).or_default(),
        };
        let times = match by_name.get_mut(rollout) {
            Some(t) => t,
            None => by_name.entry(rollout.to_owned()).or_default(),
        };
        if times.contains(&at) {
            return false;
        }
        if times.len() >= KEEP_FIRED {
            times.remove(0);
        }
        times.push(at);
        true
    }

    fn emit(
        &mut self,
        p: &Pending,
        world: &World,
        track: &crate::model::rollout::RolloutTrack,
        out: &mut Vec<Finding>,
    ) {
        let appliers = Appliers::of_rollout(world, track);
        let (r1, r2) = (appliers.near(p.first.pos.at), appliers.near(p.second.pos.at));
        let with_rev = |c: &SpecChange, r: &Option<String>| {
            format!(
                "{} at {}{}",
                c.generation_words(),
                rfc3339(c.pos.at),
                r.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
            )
        };
        let gap = p.second.pos.at.0 - p.first.pos.at.0;
        let summary = format!(
            "two renders {} apart: {} and {}; the second changed only {}",
            human_duration(gap),
            with_rev(&p.first, &r1),
            with_rev(&p.second, &r2),
            p.second.paths.join(", ")
        );
        let who = |c: &SpecChange| {
            c.actor
                .clone()
                .unwrap_or_else(|| "an unknown writer".into())
        };
        let restarted = if track.is_blue_green() {
            "a preview that starts over"
        } else {
            "a canary restarted at step 0"
        };
        // Two renders of the same input that still differ: a value made at render time.
        let same_input = appliers
            .same_input(p.first.pos.at, p.second.pos.at)
            .unwrap_or_else(|| r1.is_some() && r1 == r2);
        let story = crate::detectors::writer::story(
            Some(&p.second),
            Some(&p.first),
            revision_word(track),
            track.last().and_then(|c| c.pod_hash.as_deref()).unwrap_or("the new revision"),
            same_input,
        );
        let explanation = format!(
            "The pod template was written by {} and then by {} within {}. A change of annotations alone is still a new pod template: a new hash, a new ReplicaSet, and {restarted}. {}",
            who(&p.first),
            who(&p.second),
            human_duration(WINDOW_SECONDS * NS),
            if story.render_race {
                "This is the re-render race.".to_owned()
            } else {
                story.why.clone()
            }
        );
        let mut evidence = vec![
            p.first.evidence(
                track,
                format!(
                    "{} changed {}",
                    p.first.generation_words(),
                    p.first.paths.join(", ")
                ),
            ),
            p.second.evidence(
                track,
                format!(
                    "{} changed {}",
                    p.second.generation_words(),
                    p.second.paths.join(", ")
                ),
            ),
        ];
        evidence.extend(appliers.evidence());
        let mut commands = vec![format!("kubectl argo rollouts get rollout {}", argo(track))];
        commands.extend(appliers.commands());
        out.push(
            Finding::new(Rule::DoubleRender, track.subject(), track.subject(), p.second.pos.at, summary)
                .explain(explanation)
                .with_evidence(evidence)
                .remedy(
                    if story.render_race {
                        format!(
                            "Do not re-run the pipeline: it renders twice again. Let the {} that runs now finish.",
                            revision_word(track)
                        )
                    } else {
                        story.now
                    },
                    commands,
                    if story.render_race {
                        "Render once per release: commit values and config together, or compute config checksums from the same commit the image tag comes from.".to_owned()
                    } else {
                        story.prevent
                    },
                ),
        );
    }

    fn check_apps(&mut self, s: &Scene<'_>, out: &mut Vec<Finding>) {
        let track = s.track;
        for app in s.world.apps_of(track) {
            let [.., h1, h2] = app.history.as_slice() else {
                continue;
            };
            let n = app.history.len();
            // The window first: it is a subtraction, the change words are formatted (this runs
            // on every look at the rollout).
            if h2.deployed_at.0 - h1.deployed_at.0 > WINDOW_SECONDS * NS {
                continue;
            }
            // Then whether they were reported (a lookup), before the syncs' changes are worked
            // out: once reported, the pair is looked at again at every look until a third sync.
            let reported = self
                .fired_apps
                .get(&app.namespace)
                .and_then(|by_name| by_name.get(&app.name))
                .is_some_and(|(rev, at)| *rev == h2.revision && *at == h2.deployed_at.0);
            if reported || h2.changes_from(h1).is_empty() {
                continue;
            }
            let lo = h1.deployed_at.0 - 5 * NS;
            let hi = h2.deployed_at.0 + WINDOW_SECONDS * NS;
            let in_window = |t: i64| t >= lo && t <= hi;
            if self.fired_within(track.namespace(), track.name(), lo, hi)
                || self
                    .pending
                    .get(track.namespace(), track.name())
                    .is_some_and(|mine| mine.iter().any(|p| in_window(p.second.pos.at.0)))
            {
                continue;
            }
            let Some(change) = track.restarts().iter().find(|r| in_window(r.pos.at.0)) else {
                continue;
            };
            self.fired_apps
                .entry(app.namespace.clone())
                .or_default()
                .insert(app.name.clone(), (h2.revision.clone(), h2.deployed_at.0));
            out.push(
                Finding::new(
                    Rule::DoubleRender,
                    Subject::new(Kind::Application, &app.namespace, &app.name),
                    track.subject(),
                    h2.deployed_at,
                    format!(
                        "two syncs of {} {} apart, {} and {}, then the {} of {} restarted ({} -> {})",
                        app.name,
                        human_duration(h2.deployed_at.0 - h1.deployed_at.0),
                        sync_text(app, n - 2),
                        sync_text(app, n - 1),
                        revision_word(track),
                        track.name(),
                        change.from,
                        change.to
                    ),
                )
                .explain(format!("Two renders of the same application within two minutes, and the rollout's {} restarted after them: the re-render race, seen through Argo CD's history.", revision_word(track)))
                .with_evidence([
                    app.evidence(format!("history: {}; {}", sync_words(app, n - 2), sync_words(app, n - 1))),
                    track.evidence(change.pos, format!("{} restarted: {} -> {}", revision_word(track), change.from, change.to)),
                ])
                .remedy(
                    "Do not re-run the pipeline: it renders twice again.".to_owned(),
                    vec![history_command(app), format!("kubectl argo rollouts get rollout {}", argo(track))],
                    "Render once per release: commit values and config together.".to_owned(),
                ),
            );
        }
    }
}

/// The finding of plain Deployment `d`'s double render `p`.
fn deployment_finding(d: &DeploymentScene<'_>, p: &PendingDeployment, appliers: &Appliers<'_>) -> Finding {
    let (first, second) = (&p.first, &p.second);
    let (first_paths, _) = first.paths();
    let (second_paths, _) = second.paths();
    let (ns, name) = (&p.namespace, &p.name);
    let generation = |g: Option<i64>| g.map_or("?".to_owned(), |g| g.to_string());
    let by = |a: &Option<crate::base::Str>| a.as_deref().map(|a| format!(" by {a}")).unwrap_or_default();
    let rev = |c: &TemplateChange| {
        appliers
            .near(c.pos.at)
            .map(|r| format!(", {r}"))
            .unwrap_or_default()
    };
    let mut evidence = vec![
        crate::report::finding::Evidence::of(first.pos, d.subject(), format!("template change, generation {}{}: {}", generation(first.generation), by(&first.actor), first_paths.join(", "))),
        crate::report::finding::Evidence::of(second.pos, d.subject(), format!("template change, generation {}{}: {}", generation(second.generation), by(&second.actor), second_paths.join(", "))),
    ];
    evidence.extend(appliers.evidence());
    let mut commands = vec![format!("kubectl -n {ns} rollout history deployment/{name}")];
    commands.extend(appliers.commands());
    Finding::new(
        Rule::DoubleRender,
        d.subject(),
        d.subject(),
        second.pos.at,
        format!(
            "Deployment {name} was rendered twice {} apart: generation {} at {}{} ({}) and generation {} at {}{} (annotations only: {}); the second restarted every pod for nothing",
            human_duration(second.pos.at.0 - first.pos.at.0),
            generation(first.generation),
            rfc3339(first.pos.at),
            rev(first),
            first_paths.join(", "),
            generation(second.generation),
            rfc3339(second.pos.at),
            rev(second),
            second_paths.join(", ")
        ),
    )
    .explain(format!(
        "Two changes of the pod template within {}: the Deployment controller rolls out each one. The second changed only annotations (a config checksum, a timestamp), so it replaced every pod of the first again, and `kubectl rollout undo` now goes back to the first render, not to the release before it.",
        human_duration(WINDOW_SECONDS * NS)
    ))
    .with_evidence(evidence)
    .remedy(
        "Nothing to undo: both renders are live. Find what rendered twice.".to_owned(),
        commands,
        "Render once per release: commit the values and the config together, or let one pipeline render.".to_owned(),
    )
}

impl Detector for DoubleRender {
    fn on_deployment(&mut self, d: &DeploymentScene<'_>, out: &mut Vec<Finding>) {
        let dep = d.dep;
        let (ns, name) = (&dep.namespace, &dep.name);
        let changes = &dep.template_changes;
        if let (Some(first), Some(second)) = (
            changes.len().checked_sub(2).and_then(|i| changes.get(i)),
            changes.back(),
        ) {
            let apart = second.pos.at.0 - first.pos.at.0;
            let key = (ns.clone(), name.clone());
            let new = apart <= WINDOW_SECONDS * NS
                && self.fired_deployments.get(&key) != Some(&second.pos.at.0)
                && !self.pending_deployments.iter().any(|p| {
                    p.namespace == *ns && p.name == *name && p.second.pos == second.pos
                });
            if new && second.paths().1 {
                self.pending_deployments.push(PendingDeployment {
                    namespace: ns.clone(),
                    name: name.clone(),
                    first: first.clone(),
                    second: second.clone(),
                });
            }
        }
        let mut i = 0;
        while i < self.pending_deployments.len() {
            let p = &self.pending_deployments[i];
            if p.namespace != *ns || p.name != *name {
                i += 1;
                continue;
            }
            let appliers = Appliers::of_deployment(d.world, dep);
            let known = appliers.know(p.first.pos.at, p.second.pos.at);
            let waited = d.now.at.0 - p.second.pos.at.0 >= WAIT_FOR_APP_SECONDS * NS;
            if !(known || waited || d.end) {
                i += 1;
                continue;
            }
            let p = self.pending_deployments.remove(i);
            self.fired_deployments
                .insert((ns.clone(), name.clone()), p.second.pos.at.0);
            out.push(deployment_finding(d, &p, &appliers));
        }
    }

    fn on_transition(&mut self, t: &Transition<'_>, _out: &mut Vec<Finding>) {
        let track = t.track;
        let Some(last) = track.template_changes().back() else {
            return;
        };
        let fresh = match &last.deployment {
            None => last.pos == t.cur.pos,
            Some(_) => {
                let key = (track.namespace().to_owned(), track.name().to_owned());
                self.seen_deployment_renders.insert(key, last.pos) != Some(last.pos)
            }
        };
        if !fresh || !last.only_annotations {
            return;
        }
        let Some(first) = track
            .template_changes()
            .iter()
            .rev()
            .skip(1)
            .find(|c| c.template_changed)
        else {
            return;
        };
        if last.pos.at.0 - first.pos.at.0 > WINDOW_SECONDS * NS {
            return;
        }
        let p = Pending {
            namespace: track.namespace().to_owned(),
            rollout: track.name().to_owned(),
            first: first.clone(),
            second: last.clone(),
        };
        match self.pending.get_mut(track.namespace(), track.name()) {
            Some(mine) => mine.push(p),
            None => self.pending.set(track.namespace(), track.name(), vec![p]),
        }
    }

    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let mut due: Option<Timestamp> = None;
        let (ns, name) = (track.namespace(), track.name());
        // Taken out while judged (emitting needs the detector); the entry goes with the last.
        if let Some(mut mine) = self.pending.get_mut(ns, name).map(std::mem::take) {
            let mut i = 0;
            while i < mine.len() {
                let p = &mine[i];
                let known =
                    Appliers::of_rollout(s.world, track).know(p.first.pos.at, p.second.pos.at);
                let waited = s.now.at.0 - p.second.pos.at.0 >= WAIT_FOR_APP_SECONDS * NS;
                if known || waited || s.end || s.snapshot {
                    let p = mine.remove(i);
                    if self.fire(&p.namespace, &p.rollout, p.second.pos.at.0) {
                        self.emit(&p, s.world, track, out);
                    }
                } else {
                    let t = Timestamp(p.second.pos.at.0 + WAIT_FOR_APP_SECONDS * NS);
                    due = Some(due.map_or(t, |d| d.min(t)));
                    i += 1;
                }
            }
            match self.pending.get_mut(ns, name) {
                Some(slot) if !mine.is_empty() => *slot = mine,
                _ => {
                    self.pending.remove(ns, name);
                }
            }
        }
        self.check_apps(s, out);
        due
    }
}

#[cfg(test)]
mod tests {
    use crate::Rule;
    use crate::testkit::{Kit, template};

    fn count(report: &crate::Report) -> usize {
        report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::DoubleRender)
            .count()
    }

    /// Seed 000's incident under Flux: a chart bump and a values change in one commit upgrade
    /// the HelmRelease twice; the finding names both attempts.
    #[test]
    fn issue_28_a_double_render_names_the_helm_releases_attempts() {
        use serde_json::json;
        let mut kit = Kit::new();
        kit.label("helm.toolkit.fluxcd.io/name", "checkout-api");
        // As helm-controller writes it: newest first, the latest and the previous deployed
        // one; `firstDeployed` is the release name's first install, the same in each.
        let history = |entries: &[(&str, &str, i64, &str)]| {
            let newest = entries.len() - 1;
            json!({"history": entries.iter().enumerate().rev().map(|(i, (chart, digest, v, at))| json!({
                "chartName": "checkout-api", "chartVersion": chart, "configDigest": digest,
                "version": v, "firstDeployed": "2026-01-05T09:00:00Z", "lastDeployed": at,
                "status": if i == newest { "deployed" } else { "superseded" }}))
                .collect::<Vec<_>>()})
        };
        let at = |kit: &Kit| crate::base::time::rfc3339(kit.now());
        kit.release_to_pause("a", template("app:2", "c1"));
        let first = at(&kit);
        kit.helm_release("checkout-api", history(&[("1.4.2", "sha256:aaaa1111aaaa", 7, &first)]));
        kit.advance(20);
        kit.new_revision("b", template("app:2", "c2"));
        let second = at(&kit);
        kit.advance(3);
        kit.helm_release(
            "checkout-api",
            history(&[("1.4.2", "sha256:aaaa1111aaaa", 7, &first), ("1.4.2", "sha256:bbbb2222bbbb", 8, &second)]),
        );
        kit.advance(1);
        kit.step(0);
        let f = kit.of_rule(Rule::DoubleRender);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains("(HelmRelease checkout-api: chart 1.4.2, values sha256:aaaa1111 (Helm release 7))")
                && f[0].summary.contains("(HelmRelease checkout-api: chart 1.4.2, values sha256:bbbb2222 (Helm release 8))"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].remedy.commands.contains(&"flux -n flux-system get helmreleases checkout-api".to_owned()),
            "{:?}",
            f[0].remedy.commands
        );
    }

    /// A Kustomization names no chart: its attempted Git revision at each render.
    #[test]
    fn issue_28_a_double_render_names_the_kustomizations_attempted_revisions() {
        use serde_json::json;
        let mut kit = Kit::new();
        kit.label("kustomize.toolkit.fluxcd.io/name", "apps");
        kit.release_to_pause("a", template("app:2", "c1"));
        kit.advance(1);
        kit.kustomization("apps", json!({"lastAttemptedRevision": "main@sha1:3f2a9c1e"}));
        kit.advance(20);
        kit.new_revision("b", template("app:2", "c2"));
        kit.advance(1);
        kit.kustomization("apps", json!({"lastAttemptedRevision": "main@sha1:9c1e77aa"}));
        kit.advance(1);
        kit.step(0);
        let f = kit.of_rule(Rule::DoubleRender);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains("(Kustomization apps: main@sha1:3f2a9c1e)")
                && f[0].summary.contains("(Kustomization apps: main@sha1:9c1e77aa)"),
            "{}",
            f[0].summary
        );
        assert!(f[0].remedy.commands.contains(&"flux -n flux-system get kustomizations apps".to_owned()));
    }

    #[test]
    fn reported_renders_are_remembered_per_rollout_and_only_the_latest() {
        use super::{DoubleRender, KEEP_FIRED};
        let mut d = DoubleRender::default();
        for t in 0..(3 * KEEP_FIRED as i64) {
            assert!(d.fire("ns", "a", t * 100));
            assert!(!d.fire("ns", "a", t * 100), "reported twice at {t}");
        }
        assert!(d.fire("ns", "b", 0), "another rollout's render is its own");
        let kept = &d.fired["ns"]["a"];
        assert_eq!(kept.len(), KEEP_FIRED);
        let last = (3 * KEEP_FIRED as i64 - 1) * 100;
        assert!(d.fired_within("ns", "a", last - 50, last + 50));
        assert!(!d.fired_within("ns", "a", last + 1, last + 99));
        assert!(!d.fired_within("ns", "c", 0, last));
        // The oldest are forgotten: far older than an Application's last two syncs.
        assert!(!d.fired_within("ns", "a", 0, 50));
    }

    #[test]
    fn a_checksum_only_render_30s_after_a_release_is_a_double_render() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template("app:2", "c1"));
        kit.advance(20);
        kit.new_revision("b", template("app:2", "c2"));
        kit.advance(60);
        kit.step(0);
        let report = kit.finish();
        assert_eq!(count(&report), 1, "{:#?}", report.findings);
        let f = report
            .findings
            .iter()
            .find(|f| f.rule == Rule::DoubleRender)
            .unwrap();
        assert!(f.summary.contains("checksum/config"), "{}", f.summary);
        assert!(
            f.summary.contains("generation 2") && f.summary.contains("generation 3"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn the_app_revisions_are_named_when_an_application_manages_the_rollout() {
        let mut kit = Kit::new();
        kit.app("Synced", "Healthy", &[("r0", 0)]);
        kit.advance(10);
        kit.new_revision("a", template("app:2", "c1"));
        kit.app("Synced", "Progressing", &[("r0", 0), ("rev-one", 10)]);
        kit.advance(20);
        kit.new_revision("b", template("app:2", "c2"));
        kit.app(
            "Synced",
            "Progressing",
            &[("r0", 0), ("rev-one", 10), ("rev-two", 30)],
        );
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::DoubleRender)
            .collect();
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert!(
            f[0].summary.contains("rev-one") && f[0].summary.contains("rev-two"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn renders_far_apart_or_changing_more_than_annotations_are_not() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template("app:2", "c1"));
        kit.advance(300);
        kit.new_revision("b", template("app:2", "c2"));
        kit.advance(20);
        kit.new_revision("c", template("app:3", "c2"));
        kit.advance(60);
        kit.step(0);
        let report = kit.finish();
        assert_eq!(count(&report), 0, "{:#?}", report.findings);
    }
}

#[cfg(test)]
mod blue_green_tests {
    use crate::Rule;
    use crate::detectors::pause_lost::blue_green_tests::preview;
    use crate::testkit::template;

    #[test]
    fn a_blue_green_double_render_speaks_of_the_preview() {
        let mut kit = preview();
        kit.pause_before_promotion();
        kit.advance(30);
        kit.new_revision("h2", template("app:2", "c2"));
        let found = kit.finish().findings;
        let f = found
            .iter()
            .find(|f| f.rule == Rule::DoubleRender)
            .unwrap_or_else(|| panic!("{found:?}"));
        let all = format!("{} {} {}", f.summary, f.explanation, f.remedy.summary);
        assert!(all.contains("a preview that starts over"), "{all}");
        assert!(all.contains("Let the preview that runs now finish"), "{all}");
        assert!(!all.contains("canary"), "{all}");
    }
}
