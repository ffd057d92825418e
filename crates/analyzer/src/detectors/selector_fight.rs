//! `selector-fight` (warning): another writer and the Argo Rollouts controller take turns on the
//! `rollouts-pod-template-hash` of a Service the rollout names.
//!
//! # What it detects
//! A Service the rollout names (its `stableService` or `canaryService`, a blue-green rollout's
//! `activeService` or `previewService`) whose selector's `rollouts-pod-template-hash` was
//! written at least twice by a field manager other than the Argo Rollouts controller, the
//! controller writing it in between: the owner of the key in `managedFields` names each writer.
//! Where no change of the key was recorded (`now`, a recording begun between two turns), the
//! Argo CD Application that manages the rollout says it: its last operation is self-heal attempt
//! 2 or more, a sync of that Service alone, whose selector carries the key. Once per Service and rollout.
//!
//! # Why it matters
//! The controller owns that key: it points each Service at the revision of its role, and moves
//! it at promotion. A Service whose selector in Git carries the key (exported from the cluster
//! with `kubectl get -o yaml`, or a chart that templates it) is written back by every sync: with
//! automated self-heal, Argo CD reads the controller's switch as drift and undoes it, the
//! controller undoes the sync, and so on at Argo CD's self-heal backoff, for as long as both
//! run. Each turn points the Service at a revision the controller has scaled down, and each
//! turn is a sync of the whole Application.
//!
//! # Example
//! After `checkout-api` promotes `7bf9c8fd9d`, `argocd-controller` writes the selector of
//! Service `checkout-api` back to `5699dbb5c7` four times in 30 s; each time
//! `rollouts-controller` sets `7bf9c8fd9d` again within 20 ms.
//!
//! # Remedy
//! Take `rollouts-pod-template-hash` out of the Service in Git; lint rendered manifests for it.
//!
//! # Before the sync
//! `lint` reads a rendered Service whose selector carries `rollouts-pod-template-hash`: whatever
//! value it pins, a sync of the manifests writes it back over the controller's.

use rf_format::{Kind, Timestamp};

use crate::base::HASH_LABEL;
use crate::base::time::{human_duration, rfc3339};
use crate::detectors::{Detector, Facts, Scene, argo};
use crate::model::world::{AppObj, HashWrite, ServiceObj};
use crate::report::finding::{Evidence, Finding, Rule, Subject};

/// (namespace, rollout, Service).
type Key = (String, String, String);

/// How many write-backs make a fight, not a one-off sync the controller corrected.
const TURNS: usize = 2;

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one
/// snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(SelectorFight::default())
}

#[derive(Debug, Default)]
pub(crate) struct SelectorFight {
    fired: std::collections::BTreeSet<Key>,
}

impl Detector for SelectorFight {
    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let ns = track.namespace();
        for &(name, svc, why) in s.routing {
            let Some(role) = why.field(track.is_blue_green()) else {
                continue;
            };
            // The write-backs that the controller answered: a fight, turn by turn.
            let changes = &svc.hash_writes;
            let turns: Vec<(&HashWrite, &str)> = changes
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let writer = c.by_other()?;
                    changes[i + 1..]
                        .iter()
                        .any(HashWrite::by_controller)
                        .then_some((c, writer))
                })
                .collect();
            // No change of the key recorded at all (the state of a cluster read once, a
            // recording begun between two turns): the Application's last operation may say it.
            // Where the recording shows the key change, the turns themselves will.
            let healing = if changes.is_empty() {
                match healing(s, name, svc) {
                    Some(app) => Some(app),
                    None => continue,
                }
            } else if turns.len() < TURNS {
                continue;
            } else {
                None
            };
            // Held, and said once: the key is made only now (this runs at every look).
            let key = (ns.to_owned(), track.name().to_owned(), name.to_owned());
            if !self.fired.insert(key) {
                continue;
            }
            if let Some(app) = healing {
                out.push(healed(s, name, svc, role, app));
                continue;
            }
            let (first, writer) = turns[0];
            let back: Vec<&str> = dedup(turns.iter().map(|(c, _)| hash_words(c)));
            let moved: Vec<&str> = dedup(changes.iter().filter(|c| c.by_controller()).map(hash_words));
            let stale_pods: Vec<String> = back
                .iter()
                .map(|h| match track.rs_by_hash(h).filter(|rs| !rs.deleted) {
                    Some(rs) if rs.ready > 0 => format!("{h} has {} ready pod(s)", rs.ready),
                    Some(_) | None => format!("{h} has no ready pod"),
                })
                .collect();
            let subject = Subject::new(Kind::Service, ns, name);
            let last = turns[turns.len() - 1].0;
            let summary = format!(
                "{writer} and the Argo Rollouts controller take turns on the selector of Service {name}: {writer} wrote {HASH_LABEL} back to {} and the controller set {} again, {} times in {}",
                back.join(", "),
                moved.join(", "),
                turns.len(),
                human_duration(last.pos.at.0 - first.pos.at.0)
            );
            let apps: Vec<(String, String)> = s
                .world
                .apps_of(track)
                .map(|a| (a.namespace.clone(), a.name.clone()))
                .collect();
            let who = if apps.is_empty() {
                String::new()
            } else {
                format!(
                    " (Argo CD Application {} manages the rollout)",
                    apps.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(", ")
                )
            };
            let explanation = format!(
                "{name} is the rollout's {role}: the controller owns its {HASH_LABEL} and points it at the revision of that role. The source {writer} applies{who} pins the key ({}), so each of its syncs reads the controller's switch as drift and writes it back, and the controller switches it again. Each turn points {name} at a revision the rollout has left ({}): requests through {name} in that moment reach old pods or none. The first write-back was at {}; the turns go on as long as both run.",
                back.join(", "),
                stale_pods.join("; "),
                rfc3339(first.pos.at)
            );
            let mut evidence: Vec<Evidence> = changes
                .iter()
                .rev()
                .take(6)
                .rev()
                .map(|c| {
                    Evidence::of(
                        c.pos,
                        subject.clone(),
                        format!(
                            "selector {HASH_LABEL} -> {} by {}",
                            hash_words(c),
                            c.writer.as_deref().unwrap_or("an unnamed writer")
                        ),
                    )
                })
                .collect();
            if let Some(cur) = track.last() {
                evidence.push(track.evidence(
                    cur.pos,
                    format!(
                        "{role} {name}; stable revision {}",
                        cur.stable_rs.as_deref().unwrap_or("none")
                    ),
                ));
            }
            let mut commands = vec![
                format!("kubectl -n {ns} get svc {name} -o jsonpath='{{.spec.selector}}'"),
                format!(
                    "kubectl -n {ns} get svc {name} --show-managed-fields -o jsonpath='{{range .metadata.managedFields[*]}}{{.manager}}{{\" \"}}{{.time}}{{\"\\n\"}}{{end}}'"
                ),
            ];
            commands.extend(
                apps.iter()
                    .map(|(app_ns, app)| format!("argocd app diff {app} -N {app_ns}")),
            );
            commands.push(format!("kubectl argo rollouts get rollout {}", argo(track)));
            out.push(
                Finding::new(
                    Rule::SelectorFight,
                    subject,
                    track.subject(),
                    first.pos.at,
                    summary,
                )
                .explain(explanation)
                .with_evidence(evidence)
                .remedy(
                    format!(
                        "Take {HASH_LABEL} out of Service {name}'s selector in the source {writer} applies (Git, the chart); until then every sync of it points {name} at {} again.",
                        back.join(", ")
                    ),
                    commands,
                    format!(
                        "Leave {HASH_LABEL} out of every Service in Git: the controller adds it and moves it. Lint rendered manifests for it before the sync; where a tool must own the selector, have it ignore that key (an Argo CD ignoreDifferences jsonPointer /spec/selector/{HASH_LABEL})."
                    ),
                ),
            );
        }
        None
    }
}

/// The Application managing the rollout whose last operation is self-heal attempt [`TURNS`]
/// or more of Service `name` alone, a Service the rollout names whose selector carries the
/// hash. Argo CD heals only what drifted from Git, and of that Service the controller writes
/// only the hash.
fn healing<'w>(s: &Scene<'w>, name: &str, svc: &ServiceObj) -> Option<&'w AppObj> {
    svc.selector.as_ref()?.get(HASH_LABEL)?;
    s.world.apps_of(s.track).find(|a| {
        a.self_heal.as_ref().is_some_and(|h| {
            h.attempts >= TURNS as i64
                && h.resources.len() == 1
                && h.resources[0].0 == "Service"
                && h.resources[0].1 == name
        })
    })
}

/// The fight as `app`, the Application of [`healing`], says it.
fn healed(s: &Scene<'_>, name: &str, svc: &ServiceObj, role: &str, app: &AppObj) -> Finding {
    let track = s.track;
    let ns = track.namespace();
    let hash = svc
        .selector
        .as_ref()
        .and_then(|sel| sel.get(HASH_LABEL))
        .map_or("", String::as_str);
    let attempts = app.self_heal.as_ref().map_or(0, |h| h.attempts);
    let subject = Subject::new(Kind::Service, ns, name);
    let summary = format!(
        "Argo CD's self-heal of Application {} is at attempt {attempts}, the last a sync of Service {name} alone: its selector in Git pins {HASH_LABEL}, which the Argo Rollouts controller moves",
        app.name
    );
    let explanation = format!(
        "{name} is the rollout's {role}, and its selector carries {HASH_LABEL} ({hash} now). Argo CD heals only what drifted from Git, and of a Service the rollout names the controller writes only that key: a self-heal of it writes back the hash Git pins, and the controller, which owns the key, sets its own again. The recording does not show the turns themselves (this is one reading of the cluster, or the recording began between two turns); the Application's last operation is self-heal attempt {attempts} of the same revisions, a sync of {name} alone."
    );
    let selector = svc
        .selector
        .as_ref()
        .map(crate::detectors::service_selector_mismatch::format_selector)
        .unwrap_or_default();
    let evidence = vec![
        app.evidence(format!(
            "operationState: self-heal attempt {attempts}, a sync of Service {name}"
        )),
        Evidence::of(svc.pos, subject.clone(), format!("selector {selector}")),
    ];
    Finding::new(Rule::SelectorFight, subject, track.subject(), app.pos.at, summary)
            .explain(explanation)
            .with_evidence(evidence)
            .remedy(
                format!(
                    "Take {HASH_LABEL} out of Service {name}'s selector in Git; until then every self-heal points {name} at the revision Git pins."
                ),
                vec![
                    format!("argocd app diff {} -N {}", app.name, app.namespace),
                    format!("kubectl -n {ns} get svc {name} -o jsonpath='{{.spec.selector}}'"),
                    format!("kubectl argo rollouts get rollout {}", argo(track)),
                ],
                format!(
                    "Leave {HASH_LABEL} out of every Service in Git: the controller adds it and moves it. Lint rendered manifests for it before the sync."
                ),
            )
}

/// The hash a change wrote, or that it removed the key.
fn hash_words(c: &HashWrite) -> &str {
    c.hash.as_deref().unwrap_or("(removed)")
}

/// `words` without repeats, in first-seen order.
fn dedup<'a>(words: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for w in words {
        if !seen.contains(&w) {
            seen.push(w);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, NAME, template};

    /// A promoted canary whose stableService `checkout-api` Git pins to `stable0`: the
    /// controller moves it to `new1`, and `writer` writes `stable0` back `turns` times, the
    /// controller answering each time.
    fn fight(writer: &str, turns: usize) -> Kit {
        let mut kit = Kit::new();
        kit.spec(|s| s["strategy"]["canary"]["stableService"] = json!(NAME));
        let pinned = |h: &str| json!({"app": NAME, "rollouts-pod-template-hash": h});
        kit.service_by(NAME, pinned("stable0"), "argocd-controller");
        kit.new_revision("new1", template("app:2", "c0"));
        kit.status(|st| {
            st.insert("stableRS".into(), json!("new1"));
            st.insert("phase".into(), json!("Healthy"));
        });
        kit.service_by(NAME, pinned("new1"), "rollouts-controller");
        for _ in 0..turns {
            kit.advance(2);
            kit.service_by(NAME, pinned("stable0"), writer);
            kit.service_by(NAME, pinned("new1"), "rollouts-controller");
        }
        kit.advance(1);
        kit.step(0);
        kit
    }

    #[test]
    fn a_sync_that_writes_the_hash_back_twice_is_a_fight_named_with_its_writer() {
        let kit = fight("argocd-controller", 3);
        let f = kit.of_rule(Rule::SelectorFight);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains(
                "argocd-controller wrote rollouts-pod-template-hash back to stable0 and the controller set new1 again, 2 times in 2s"
            ),
            "{}",
            f[0].summary
        );
        assert!(f[0].explanation.contains("stableService"), "{}", f[0].explanation);
        assert!(
            f[0].remedy.commands.iter().all(|c| c.starts_with("kubectl -n payments get") || c.starts_with("kubectl argo rollouts get")),
            "read-only: {:?}",
            f[0].remedy.commands
        );
        // Another writer is named as itself, not as Argo CD.
        let kit = fight("kustomize-controller", 2);
        let f = kit.of_rule(Rule::SelectorFight);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(f[0].summary.starts_with("kustomize-controller and"), "{}", f[0].summary);
    }

    /// Read once, after the turns: the Service's selector as the controller last left it,
    /// and the Application whose last operation is its fourth self-heal of that Service alone.
    #[test]
    fn the_applications_self_heal_of_the_service_alone_names_it_after_the_fact() {
        let setup = |attempts: i64, resources: serde_json::Value| {
            let mut kit = Kit::new();
            kit.spec(|s| s["strategy"]["canary"]["stableService"] = json!(NAME));
            kit.service(NAME, json!({"app": NAME, "rollouts-pod-template-hash": "stable0"}));
            kit.app_healing(attempts, resources);
            kit.advance(1);
            kit.step(0);
            kit
        };
        let kit = setup(4, json!([{"kind": "Service", "name": NAME}]));
        let f = kit.of_rule(Rule::SelectorFight);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.starts_with(
                "Argo CD's self-heal of Application checkout-api is at attempt 4, the last a sync of Service checkout-api alone"
            ),
            "{}",
            f[0].summary
        );
        assert!(f[0].remedy.commands[0].starts_with("argocd app diff checkout-api -N argocd"));
        // A recording that shows the key move waits for the turns themselves: Argo CD writes
        // its operation (attempt 2, of the Service) before it writes the Service.
        let mut kit = fight("argocd-controller", 0);
        kit.app_healing(2, json!([{"kind": "Service", "name": NAME}]));
        kit.advance(1);
        kit.step(0);
        assert!(kit.of_rule(Rule::SelectorFight).is_empty(), "{:?}", kit.rules());
        // One self-heal, or one of every resource, or of another Service: no fight shown.
        for (attempts, resources) in [
            (1, json!([{"kind": "Service", "name": NAME}])),
            (4, json!(null)),
            (4, json!([{"kind": "Service", "name": "other"}])),
        ] {
            let kit = setup(attempts, resources.clone());
            assert!(
                kit.of_rule(Rule::SelectorFight).is_empty(),
                "{attempts} {resources}: {:?}",
                kit.rules()
            );
        }
    }

    #[test]
    fn one_write_back_the_controller_corrects_is_no_fight() {
        let kit = fight("argocd-controller", 1);
        assert!(kit.of_rule(Rule::SelectorFight).is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn the_controller_alone_moving_the_hash_is_no_fight() {
        let kit = fight("rollouts-controller", 3);
        assert!(kit.of_rule(Rule::SelectorFight).is_empty(), "{:?}", kit.rules());
    }
}
