//! `selector-fight` (warning): another writer and the Argo Rollouts controller take turns on the
//! `rollouts-pod-template-hash` of a Service the rollout names.
//!
//! # What it detects
//! A Service the rollout names (its `stableService` or `canaryService`, a blue-green rollout's
//! `activeService` or `previewService`) whose selector's `rollouts-pod-template-hash` was
//! written at least twice by a field manager other than the Argo Rollouts controller, the
//! controller writing it in between: the owner of the key in `managedFields` names each writer.
//! Once per Service and rollout.
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

use rf_format::{Kind, Timestamp};

use crate::base::HASH_LABEL;
use crate::base::time::{human_duration, rfc3339};
use crate::detectors::{Detector, Facts, Scene, argo};
use crate::model::traffic::Route;
use crate::model::world::HashChange;
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
            if !matches!(why, Route::Stable | Route::Canary) || svc.hash_changes.len() < 2 * TURNS
            {
                continue;
            }
            // The write-backs that the controller answered: a fight, turn by turn.
            let changes = &svc.hash_changes;
            let turns: Vec<(&HashChange, &str)> = changes
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let writer = c.by_other()?;
                    changes[i + 1..]
                        .iter()
                        .any(HashChange::by_controller)
                        .then_some((c, writer))
                })
                .collect();
            if turns.len() < TURNS {
                continue;
            }
            let key = (ns.to_owned(), track.name().to_owned(), name.to_owned());
            if self.fired.contains(&key) {
                continue;
            }
            let (first, writer) = turns[0];
            let back: Vec<&str> = dedup(turns.iter().map(|(c, _)| hash_words(c)));
            let moved: Vec<&str> = dedup(changes.iter().filter(|c| c.by_controller()).map(hash_words));
            let role = match (why, track.is_blue_green()) {
                (Route::Stable, true) => "activeService",
                (Route::Canary, true) => "previewService",
                (Route::Stable, false) => "stableService",
                _ => "canaryService",
            };
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
            self.fired.insert(key);
        }
        None
    }
}

/// The hash a change wrote, or that it removed the key.
fn hash_words(c: &HashChange) -> &str {
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
