//! The catalog of scripted incidents.

use crate::recording::Recording;
use crate::sim::Sim;
use crate::spec::{NEW_IMAGE, STABLE_IMAGE, SimConfig, Step, TemplateChange, config_checksum};

/// A scenario's name and what it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScenarioInfo {
    /// The name [`generate`] takes (kebab-case).
    pub name: &'static str,
    /// One sentence: what happens.
    pub summary: &'static str,
}

static CATALOG: [ScenarioInfo; 8] = [
    ScenarioInfo {
        name: "rerender-race",
        summary: "Two GitOps renders 30 s apart differ only in checksum/config: the canary restarts \
                  at step 0 and the first render's ReplicaSet is left running (empty \
                  scale-down-deadline).",
    },
    ScenarioInfo {
        name: "rerender-race-reruns",
        summary: "The re-render race, then two pipeline re-runs that render both checksums again: \
                  ReplicaSets are reused with revision-history and the canary restarts each time.",
    },
    ScenarioInfo {
        name: "image-only-release",
        summary: "A clean release of a new image: pause at step 1, promoted by the pipeline, timed \
                  pauses elapse, fully promoted and Healthy.",
    },
    ScenarioInfo {
        name: "abort",
        summary: "A new image pauses at step 1 and a user aborts: the canary is scaled to 0, the \
                  stable back to full, the rollout Degraded.",
    },
    ScenarioInfo {
        name: "steps-change",
        summary: "While paused at step 1 a render changes only the steps: currentStepHash changes, \
                  currentPodHash stays, the canary restarts at step 0.",
    },
    ScenarioInfo {
        name: "rollback-to-stable",
        summary: "While paused at step 1 the stable template is rendered again: the index jumps to \
                  len(steps), the canary is scaled to 0, Healthy.",
    },
    ScenarioInfo {
        name: "manual-step-jump",
        summary: "A status patch moves currentStepIndex from 0 past an unprocessed pause to 2; \
                  later a checksum-only re-render resets the canary to step 0.",
    },
    ScenarioInfo {
        name: "hash-only-change",
        summary: "A controller upgrade changes the pod-template-hash function: an identical \
                  template gets a new ReplicaSet and a full canary.",
    },
];

/// Every scenario, in catalog order.
pub fn catalog() -> &'static [ScenarioInfo] {
    &CATALOG
}

/// Runs the scenario called `name`; `None` for an unknown name.
pub fn generate(name: &str) -> Option<Recording> {
    let sim = match name {
        "rerender-race" => rerender_race(),
        "rerender-race-reruns" => rerender_race_reruns(),
        "image-only-release" => image_only_release(),
        "abort" => abort(),
        "steps-change" => steps_change(),
        "rollback-to-stable" => rollback_to_stable(),
        "manual-step-jump" => manual_step_jump(),
        "hash-only-change" => hash_only_change(),
        _ => return None,
    };
    Some(sim.finish(name))
}

/// The `checksum/config` of the inline values (the first render).
fn checksum_a() -> String {
    config_checksum("checkout-api/values.yaml@inline")
}

/// The `checksum/config` of the values file from a lagging checkout (the second render).
fn checksum_b() -> String {
    config_checksum("checkout-api/values.yaml@checkout-lag")
}

fn render_new_image(sim: &mut Sim, checksum: Option<String>) {
    let mut change = TemplateChange::new().with_image(NEW_IMAGE);
    if let Some(checksum) = checksum {
        change = change.with_annotation("checksum/config", checksum);
    }
    sim.render(change);
}

fn render_checksum(sim: &mut Sim, checksum: String) {
    sim.render(TemplateChange::new().with_annotation("checksum/config", checksum));
}

/// Runs until the canary is paused at `step` (at most `max` seconds).
fn run_until_paused_at(sim: &mut Sim, step: u32, max: u32) {
    sim.run_until(max, |s| {
        s.phase() == "Paused" && s.current_step_index() == step
    });
}

fn start() -> Sim {
    Sim::new(SimConfig::default())
}

fn rerender_race() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, Some(checksum_a()));
    sim.run_for(30);
    sim.leak_replaced_canary(true);
    render_new_image(&mut sim, Some(checksum_b()));
    sim.run_until_elapsed(360);
    sim
}

fn rerender_race_reruns() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, Some(checksum_a()));
    sim.run_for(30);
    sim.leak_replaced_canary(true);
    render_new_image(&mut sim, Some(checksum_b()));
    for rerun in 1..=2u32 {
        sim.run_until_elapsed(5 + rerun * 300);
        render_checksum(&mut sim, checksum_a());
        sim.run_for(30);
        render_checksum(&mut sim, checksum_b());
    }
    sim.run_until_elapsed(900);
    sim
}

fn image_only_release() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    sim.run_for(30);
    // The pipeline's second sync renders the identical manifest: nothing is applied.
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    // The pipeline's promotion gate fires 60 s after the pause began.
    let paused_at = sim.paused_since().unwrap_or(sim.elapsed());
    sim.run_until_elapsed(paused_at + 60);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(60);
    sim
}

fn abort() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.abort();
    sim.run_for(120);
    sim
}

fn steps_change() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.render(TemplateChange::new().with_steps(vec![
        Step::SetWeight(10),
        Step::Pause(None),
        Step::SetWeight(50),
        Step::Pause(Some(30)),
        Step::SetWeight(80),
        Step::Pause(Some(30)),
    ]));
    sim.run_for(30);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(90);
    sim
}

fn rollback_to_stable() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.render(TemplateChange::new().with_image(STABLE_IMAGE));
    sim.run_until(300, |s| s.phase() == "Healthy");
    sim.run_for(90);
    sim
}

fn manual_step_jump() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    // The canary RS is scaled up but not yet ready: still at step 0.
    sim.run_for(4);
    sim.patch_step_index(2);
    run_until_paused_at(&mut sim, 3, 180);
    sim.run_for(15);
    render_checksum(&mut sim, checksum_b());
    sim.run_for(5);
    run_until_paused_at(&mut sim, 1, 180);
    sim.run_for(90);
    sim
}

fn hash_only_change() -> Sim {
    let mut sim = start();
    sim.run_for(10);
    sim.upgrade_controller();
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(60);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(60);
    sim
}

#[cfg(test)]
mod tests {
    use rf_format::{Kind, Op, Record};
    use serde_json::Value;

    use super::*;

    fn object(record: &Record) -> Value {
        serde_json::from_slice(&record.object).unwrap()
    }

    fn watch(recording: &Recording, kind: Kind) -> Vec<(usize, Value)> {
        recording
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == kind && r.op.has_object())
            .map(|(i, r)| (i, object(r)))
            .collect()
    }

    fn last(recording: &Recording, kind: Kind, name: &str) -> Value {
        recording
            .records
            .iter()
            .rev()
            .find(|r| r.kind == kind && r.name == name && r.op.has_object())
            .map(object)
            .unwrap()
    }

    fn last_rollout(recording: &Recording) -> Value {
        watch(recording, Kind::Rollout).pop().unwrap().1
    }

    /// The latest state of every ReplicaSet still present at the end, in creation order.
    fn final_replica_sets(recording: &Recording) -> Vec<Value> {
        let mut names: Vec<&str> = Vec::new();
        for r in &recording.records {
            if r.kind == Kind::ReplicaSet && r.op.has_object() && !names.contains(&r.name.as_str())
            {
                names.push(&r.name);
            }
        }
        let deleted = |name: &str| {
            recording.records.iter().any(|r| {
                r.kind == Kind::ReplicaSet
                    && r.name == name
                    && r.op == Op::Deleted { inferred: false }
            })
        };
        names
            .into_iter()
            .filter(|n| !deleted(n))
            .map(|n| last(recording, Kind::ReplicaSet, n))
            .collect()
    }

    fn events(recording: &Recording) -> Vec<Value> {
        watch(recording, Kind::Event)
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }

    fn status_str<'a>(rollout: &'a Value, field: &str) -> &'a str {
        rollout["status"][field].as_str().unwrap_or("")
    }

    #[test]
    fn catalog_lists_every_scenario_once_and_unknown_names_give_none() {
        let names: Vec<&str> = catalog().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "rerender-race",
                "rerender-race-reruns",
                "image-only-release",
                "abort",
                "steps-change",
                "rollback-to-stable",
                "manual-step-jump",
                "hash-only-change"
            ]
        );
        assert!(catalog().iter().all(|s| !s.summary.is_empty()));
        assert!(generate("no-such-scenario").is_none());
    }

    #[test]
    fn every_scenario_is_deterministic_and_its_records_are_consistent() {
        for info in catalog() {
            let a = generate(info.name).unwrap();
            let b = generate(info.name).unwrap();
            assert_eq!(a.records, b.records, "{} is not deterministic", info.name);
            assert_eq!(a.header, b.header);
            assert_eq!(
                a.header.source.context.as_deref(),
                Some(format!("rf-scenarios/{}", info.name).as_str())
            );
            assert!(a.records.len() > 20, "{} is too short", info.name);
            let mut last_rv = 0u64;
            for (i, r) in a.records.iter().enumerate() {
                assert_eq!(r.seq, i as u64 + 1, "{}: seq", info.name);
                if i > 0 {
                    assert!(
                        r.observed_at > a.records[i - 1].observed_at,
                        "{}: time goes back at seq {}",
                        info.name,
                        r.seq
                    );
                }
                assert!(r.actor.is_none());
                assert_eq!(r.namespace, "payments");
                assert!(r.resource_version.bytes().all(|b| b.is_ascii_digit()));
                let rv: u64 = r.resource_version.parse().unwrap();
                if r.op.has_object() {
                    let v = object(r);
                    assert_eq!(v["metadata"]["name"], r.name.as_str(), "seq {}", r.seq);
                    assert_eq!(v["metadata"]["namespace"], r.namespace.as_str());
                    assert_eq!(v["metadata"]["uid"], r.uid.as_str());
                    assert_eq!(
                        v["metadata"]["resourceVersion"],
                        r.resource_version.as_str()
                    );
                    let kind = Kind::from_api(
                        v["apiVersion"].as_str().unwrap(),
                        v["kind"].as_str().unwrap(),
                    );
                    assert_eq!(kind, r.kind);
                    if r.op != Op::Listed {
                        assert!(
                            rv > last_rv,
                            "{}: rv not increasing at seq {}",
                            info.name,
                            r.seq
                        );
                        last_rv = rv;
                    }
                } else {
                    assert!(r.object.is_empty() && r.name.is_empty());
                    last_rv = last_rv.max(rv);
                }
            }
        }
    }

    #[test]
    fn recordings_start_with_the_lists_of_rollouts_replica_sets_and_events() {
        let rec = generate("abort").unwrap();
        let ops: Vec<(Kind, &str)> = rec.records[..9]
            .iter()
            .map(|r| (r.kind.clone(), r.op.name()))
            .collect();
        assert_eq!(
            ops,
            [
                (Kind::Rollout, "list-begin"),
                (Kind::Rollout, "listed"),
                (Kind::Rollout, "list-end"),
                (Kind::ReplicaSet, "list-begin"),
                (Kind::ReplicaSet, "listed"),
                (Kind::ReplicaSet, "listed"),
                (Kind::ReplicaSet, "list-end"),
                (Kind::Event, "list-begin"),
                (Kind::Event, "list-end"),
            ]
        );
        let rollout = object(&rec.records[1]);
        assert_eq!(rollout["status"]["phase"], "Healthy");
        assert_eq!(rollout["status"]["observedGeneration"], "2");
        assert!(rollout["status"].get("pauseConditions").is_none());
        assert_eq!(
            rollout["spec"]["template"]["spec"]["containers"][0]["image"],
            STABLE_IMAGE
        );
    }

    #[test]
    fn rerender_race_rerender_follows_the_five_step_order_and_leaks_the_first_canary() {
        let rec = generate("rerender-race").unwrap();
        let rollouts = watch(&rec, Kind::Rollout);
        // 1. the second render: generation 4, observedGeneration lagging.
        let (render2, r) = rollouts
            .iter()
            .find(|(_, v)| v["metadata"]["generation"] == 4)
            .unwrap();
        assert_eq!(r["status"]["observedGeneration"], "3");
        let first_canary = status_str(r, "currentPodHash").to_owned();
        assert_eq!(r["status"]["currentStepIndex"], 1);
        assert!(r["status"]["pauseConditions"].is_array());
        // 2. the new ReplicaSet is added with 0 replicas and revision 4.
        let (rs_added, rs) = watch(&rec, Kind::ReplicaSet)
            .into_iter()
            .find(|(i, _)| *i > *render2 && rec.records[*i].op == Op::Added)
            .unwrap();
        assert_eq!(rs["spec"]["replicas"], 0);
        assert_eq!(
            rs["metadata"]["annotations"]["rollout.argoproj.io/revision"],
            "4"
        );
        let new_hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_ne!(new_hash, first_canary);
        let after: Vec<&(usize, Value)> = rollouts.iter().filter(|(i, _)| *i > rs_added).collect();
        // 3. the revision annotation.
        assert_eq!(
            after[0].1["metadata"]["annotations"]["rollout.argoproj.io/revision"],
            "4"
        );
        assert_eq!(status_str(&after[0].1, "currentPodHash"), first_canary);
        // 4. NewReplicaSetCreated with the old hash and the old pause conditions.
        let progressing = |v: &Value| {
            v["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Progressing")
                .unwrap()["reason"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(progressing(&after[1].1), "NewReplicaSetCreated");
        assert_eq!(status_str(&after[1].1, "currentPodHash"), first_canary);
        assert!(after[1].1["status"]["pauseConditions"].is_array());
        // 5. the new hash, index 0, pauses cleared, in one write.
        let step5 = &after[2].1;
        assert_eq!(status_str(step5, "currentPodHash"), new_hash);
        assert_eq!(step5["status"]["currentStepIndex"], 0);
        assert!(step5["status"].get("pauseConditions").is_none());
        assert!(step5["status"].get("controllerPause").is_none());
        assert_eq!(progressing(step5), "ReplicaSetUpdated");
        assert_eq!(step5["status"]["phase"], "Progressing");
        assert_eq!(step5["status"]["observedGeneration"], "4");
        let paused = step5["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Paused")
            .unwrap();
        assert_eq!(paused["status"], "True", "Paused stays True one more sync");
        // ... and a RolloutResumed event although nobody resumed.
        assert!(rec.records[after[2].0..].iter().take(3).any(|r| {
            r.kind == Kind::Event && r.op.has_object() && object(r)["reason"] == "RolloutResumed"
        }));
        // The first render's ReplicaSet is still up at the end, marked with an empty deadline.
        let leaked = last(
            &rec,
            Kind::ReplicaSet,
            &format!("checkout-api-{first_canary}"),
        );
        assert!(leaked["spec"]["replicas"].as_i64().unwrap() > 0);
        assert_eq!(leaked["metadata"]["annotations"]["scale-down-deadline"], "");
        // The new canary paused at step 1 again, and nobody promoted.
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Paused");
        assert_eq!(end["status"]["currentStepIndex"], 1);
        assert_eq!(status_str(end, "currentPodHash"), new_hash);
        assert_eq!(
            crate::calendar::rfc3339(rec.closed_at.as_unix_nanos().div_euclid(1_000_000_000)),
            "2026-03-14T13:06:00Z"
        );
    }

    #[test]
    fn reruns_reuse_replica_sets_with_revision_history_and_keep_the_first_canary_up() {
        let rec = generate("rerender-race-reruns").unwrap();
        let rs_added = rec
            .records
            .iter()
            .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Added)
            .count();
        assert_eq!(rs_added, 2, "re-runs reuse the two canary ReplicaSets");
        let histories: Vec<String> = final_replica_sets(&rec)
            .iter()
            .filter_map(|rs| {
                rs["metadata"]["annotations"]["rollout.argoproj.io/revision-history"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(histories, ["3,5", "4,6"]);
        let end = &last_rollout(&rec);
        assert_eq!(
            end["metadata"]["annotations"]["rollout.argoproj.io/revision"],
            "8"
        );
        assert_eq!(end["status"]["phase"], "Paused");
        let first = final_replica_sets(&rec)
            .into_iter()
            .find(|rs| {
                rs["metadata"]["annotations"]["rollout.argoproj.io/revision-history"] == "3,5"
            })
            .unwrap();
        assert_eq!(first["spec"]["replicas"], 1);
        let resets = watch(&rec, Kind::Rollout)
            .windows(2)
            .filter(|w| {
                w[0].1["status"]["currentPodHash"] != w[1].1["status"]["currentPodHash"]
                    && w[1].1["status"]["currentStepIndex"] == 0
            })
            .count();
        assert_eq!(resets, 6, "every render restarts the canary at step 0");
    }

    #[test]
    fn image_only_release_ends_healthy_with_every_other_replica_set_at_zero() {
        let rec = generate("image-only-release").unwrap();
        let renders = watch(&rec, Kind::Rollout)
            .iter()
            .filter(|(_, v)| {
                v["metadata"]["managedFields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["manager"] == "argocd-controller")
            })
            .map(|(_, v)| v["metadata"]["generation"].as_i64().unwrap())
            .max();
        assert_eq!(
            renders,
            Some(3),
            "the identical second render is not applied"
        );
        let end = &last_rollout(&rec);
        assert_eq!(end["status"]["phase"], "Healthy");
        assert_eq!(end["status"]["currentStepIndex"], 6);
        let stable = status_str(end, "stableRS");
        assert_eq!(stable, status_str(end, "currentPodHash"));
        for rs in final_replica_sets(&rec) {
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap();
            let want = if hash == stable { 5 } else { 0 };
            assert_eq!(rs["spec"]["replicas"], want, "{hash}");
            assert_eq!(rs["status"]["replicas"], want, "{hash}");
        }
        let promoted = watch(&rec, Kind::Rollout).iter().any(|(_, v)| {
            v["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["manager"] == "kubectl-argo-rollouts")
        });
        assert!(promoted);
        assert!(
            events(&rec)
                .iter()
                .any(|e| e["reason"] == "RolloutCompleted")
        );
    }

    #[test]
    fn abort_converges_to_degraded_with_the_canary_at_zero_and_stable_at_full() {
        let rec = generate("abort").unwrap();
        let end = &last_rollout(&rec);
        assert_eq!(end["status"]["phase"], "Degraded");
        assert_eq!(
            end["status"]["message"],
            "RolloutAborted: Rollout aborted update to revision 3"
        );
        assert_eq!(end["status"]["abort"], true);
        assert!(end["status"]["abortedAt"].is_string());
        assert_eq!(end["status"]["currentStepIndex"], 0);
        let canary = status_str(end, "currentPodHash");
        let stable = status_str(end, "stableRS");
        assert_ne!(canary, stable);
        for rs in final_replica_sets(&rec) {
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap();
            let want = if hash == stable { 5 } else { 0 };
            assert_eq!(rs["spec"]["replicas"], want);
        }
        let (at, warning) = watch(&rec, Kind::Event)
            .into_iter()
            .find(|(_, e)| e["reason"] == "RolloutAborted")
            .unwrap();
        assert_eq!(warning["type"], "Warning");
        let last_seconds = (rec.records.last().unwrap().observed_at.0
            - rec.records[at].observed_at.0)
            / 1_000_000_000;
        assert!(last_seconds >= 2, "the recording goes on after the abort");
    }

    #[test]
    fn steps_change_changes_the_step_hash_but_not_the_pod_hash() {
        let rec = generate("steps-change").unwrap();
        let rollouts = watch(&rec, Kind::Rollout);
        let (i, before) = rollouts
            .iter()
            .find(|(_, v)| v["metadata"]["generation"] == 4)
            .unwrap();
        let reset = &rollouts
            .iter()
            .find(|(j, v)| j > i && v["status"]["observedGeneration"] == "4")
            .unwrap()
            .1;
        assert_ne!(
            status_str(before, "currentStepHash"),
            status_str(reset, "currentStepHash")
        );
        assert_eq!(
            status_str(before, "currentPodHash"),
            status_str(reset, "currentPodHash")
        );
        assert_eq!(reset["status"]["currentStepIndex"], 0);
        assert!(reset["status"].get("pauseConditions").is_none());
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Paused");
        assert_eq!(end["status"]["currentStepIndex"], 1);
        assert_eq!(
            end["spec"]["strategy"]["canary"]["steps"][0]["setWeight"],
            10
        );
        let added = rec
            .records
            .iter()
            .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Added)
            .count();
        assert_eq!(added, 1, "a steps-only change creates no ReplicaSet");
    }

    #[test]
    fn rollback_to_stable_jumps_to_the_last_step_and_becomes_healthy() {
        let rec = generate("rollback-to-stable").unwrap();
        let rollouts = watch(&rec, Kind::Rollout);
        let (i, _) = rollouts
            .iter()
            .find(|(_, v)| v["metadata"]["generation"] == 4)
            .unwrap();
        let reset = &rollouts
            .iter()
            .find(|(j, v)| j > i && v["status"]["observedGeneration"] == "4")
            .unwrap()
            .1;
        assert_eq!(reset["status"]["currentStepIndex"], 6);
        assert_eq!(
            status_str(reset, "currentPodHash"),
            status_str(reset, "stableRS")
        );
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Healthy");
        let stable = status_str(end, "stableRS");
        for rs in final_replica_sets(&rec) {
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap();
            assert_eq!(rs["spec"]["replicas"], if hash == stable { 5 } else { 0 });
            if hash == stable {
                assert_eq!(
                    rs["metadata"]["annotations"]["rollout.argoproj.io/revision-history"],
                    "2"
                );
            }
        }
    }

    #[test]
    fn manual_step_jump_is_a_status_patch_the_controller_follows() {
        let rec = generate("manual-step-jump").unwrap();
        let rollouts = watch(&rec, Kind::Rollout);
        let (pos, patched) = rollouts
            .iter()
            .enumerate()
            .find(|(_, (_, v))| {
                v["metadata"]["managedFields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["manager"] == "kubectl-patch")
            })
            .map(|(k, (_, v))| (k, v))
            .unwrap();
        let before = &rollouts[pos - 1].1;
        assert_eq!(before["status"]["currentStepIndex"], 0);
        assert_eq!(patched["status"]["currentStepIndex"], 2);
        assert_eq!(
            patched["metadata"]["generation"],
            before["metadata"]["generation"]
        );
        // The pause at step 1 was never reached before the jump.
        assert!(
            rollouts[..pos]
                .iter()
                .all(|(_, v)| v["status"].get("pauseConditions").is_none())
        );
        // The controller continued at step 2 and paused at step 3 (timed pause).
        assert!(rollouts[pos..].iter().any(|(_, v)| {
            v["status"]["currentStepIndex"] == 3 && v["status"]["pauseConditions"].is_array()
        }));
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Paused");
        assert_eq!(end["status"]["currentStepIndex"], 1);
        // No leak: every ReplicaSet but the new and the stable one is at 0.
        let (new, stable) = (
            status_str(end, "currentPodHash"),
            status_str(end, "stableRS"),
        );
        for rs in final_replica_sets(&rec) {
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap();
            if hash != new && hash != stable {
                assert_eq!(rs["spec"]["replicas"], 0, "{hash}");
            }
        }
    }

    #[test]
    fn hash_only_change_gives_an_identical_template_a_new_replica_set() {
        let rec = generate("hash-only-change").unwrap();
        let added = rec
            .records
            .iter()
            .find(|r| r.kind == Kind::ReplicaSet && r.op == Op::Added)
            .map(object)
            .unwrap();
        let listed_stable = object(&rec.records[5]);
        let strip = |rs: &Value| {
            let mut t = rs["spec"]["template"].clone();
            t["metadata"]["labels"]
                .as_object_mut()
                .unwrap()
                .remove("rollouts-pod-template-hash");
            t
        };
        assert_eq!(strip(&added), strip(&listed_stable));
        assert_ne!(added["metadata"]["name"], listed_stable["metadata"]["name"]);
        let rollouts = watch(&rec, Kind::Rollout);
        assert!(
            rollouts
                .iter()
                .all(|(_, v)| v["metadata"]["generation"] == 2)
        );
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Healthy");
        assert_eq!(
            status_str(end, "stableRS"),
            added["metadata"]["labels"]["rollouts-pod-template-hash"]
        );
    }
}
