//! Real incidents, played by the real Argo Rollouts controller on a real control plane
//! (`tests/cluster/up.sh`), recorded by `rollout-forensics record` while they happen, and
//! analyzed. Manifests are applied as Argo CD applies them; the user's moves are made with the
//! real `kubectl-argo-rollouts`. Each test asserts what the real controller did, that the
//! findings match it, and that the recording holds every write the apiserver's audit log shows.
//!
//! They need `RF_CLUSTER=DIR` (a cluster of `up.sh`) and are run by `tests/cluster/run.sh`
//! (`cargo test --test cluster -- --ignored`); without the cluster each one fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod real;

use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Killed, drain, run_bounded, text, wait_bounded};
use real::{Namespace, Recorder, analyze, assert_audit_truth, cluster, keep, rules, until};
use serde_json::Value;

/// The steps of the seed incident: a manual pause after the first weight.
const STEPS: &str = "[{setWeight: 20}, {pause: {}}, {setWeight: 50}, {pause: {duration: 5s}}]";

/// An image pinned by digest (so `image-not-pinned` stays out of the way), `n` naming it.
fn image(n: u8) -> String {
    format!(
        "registry.example/checkout-api:1.{n}@sha256:{}",
        format!("{n:02x}").repeat(32)
    )
}

/// One GitOps render: the Service and the canary Rollout `checkout-api`, `version` the pod
/// label the Service also selects when `service_version` is set.
struct Render<'a> {
    image: u8,
    checksum: &'a str,
    steps: &'a str,
    version: &'a str,
    service_version: Option<&'a str>,
    min_ready: u32,
    /// `stableMetadata` `role: stable` and `canaryMetadata` `role: canary`, and a second
    /// Service, `checkout-api-stable`, selecting `role: stable`.
    ephemeral: bool,
}

impl Default for Render<'_> {
    fn default() -> Self {
        Render {
            image: 0,
            checksum: "c0",
            steps: STEPS,
            version: "v1",
            service_version: None,
            min_ready: 0,
            ephemeral: false,
        }
    }
}

impl Render<'_> {
    fn yaml(&self) -> String {
        let selector = match self.service_version {
            Some(v) => format!("{{app: checkout-api, version: {v}}}"),
            None => "{app: checkout-api}".to_owned(),
        };
        let (metadata, stable_service) = if self.ephemeral {
            (
                "\n      stableMetadata: {labels: {role: stable}}\n      canaryMetadata: {labels: {role: canary}}",
                "apiVersion: v1\nkind: Service\nmetadata: {name: checkout-api-stable}\nspec:\n  selector: {app: checkout-api, role: stable}\n  ports: [{port: 80, targetPort: 8080}]\n---\n",
            )
        } else {
            ("", "")
        };
        format!(
            r#"{stable_service}apiVersion: v1
kind: Service
metadata: {{name: checkout-api}}
spec:
  selector: {selector}
  ports: [{{port: 80, targetPort: 8080}}]
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: checkout-api}}
spec:
  replicas: 4
  revisionHistoryLimit: 3
  minReadySeconds: {min_ready}
  selector: {{matchLabels: {{app: checkout-api}}}}
  template:
    metadata:
      labels: {{app: checkout-api, version: {version}}}
      annotations: {{checksum/config: "{checksum}"}}
    spec:
      containers: [{{name: app, image: "{image}"}}]
  strategy:
    canary:
      steps: {steps}{metadata}
"#,
            min_ready = self.min_ready,
            version = self.version,
            checksum = self.checksum,
            image = image(self.image),
            steps = self.steps,
        )
    }
}

const APP: &str = "checkout-api";

fn hash(rollout: &Value) -> String {
    rollout["status"]["currentPodHash"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The report's findings of `rule`.
fn of_rule<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

/// The undecided notes of a report: a recording too short for a rule to decide.
fn undecided(report: &Value) -> &Vec<Value> {
    report["recording"]["undecided"].as_array().unwrap()
}

/// The rules a re-render at a pause shows, reconstructed after the fact.
const RESTART_RULES: [&str; 4] = [
    "rerender-restart",
    "pause-lost",
    "config-only-rerender",
    "double-render",
];

/// `now` (and `args`) with the kubeconfig `as_`: it lists with get and list alone, reports
/// the rollout, and is refused nothing it needs.
fn now_as(c: &real::Cluster, as_: &str, args: &[&str]) {
    let mut now = c.forensics();
    now.args(["now", "-o", "json", "--kubeconfig", as_])
        .args(args);
    let o = run_bounded(now);
    let err = text(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{err}");
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        report["rollouts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["rollout"]["name"] == APP),
        "{report}"
    );
}

/// How long the real controller's log is now.
fn controller_log_len(c: &real::Cluster) -> u64 {
    std::fs::metadata(c.dir.join("rollouts-controller.log")).map_or(0, |m| m.len())
}

/// The incident investigated after the fact, on the real cluster as it was left: `now -n NS`
/// (one list), a recording begun then, 3 s long, and the real controller's log since
/// `log_from` (its length when the test began), imported; each analyzed. Each must name
/// `rules` reconstructed (the log, which holds no pod template, the restart and the lost pause).
/// Sleeps into the next whole second of the clock, and a tenth of one past it. After the fact,
/// the order of a pause and the re-render that followed it is read from whole-second times (a
/// ReplicaSet's creation, an Event's); a re-render in the pause's own second is undecided there,
/// as it should be. A test of the reconstruction re-renders in a later second.
fn into_the_next_second() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    std::thread::sleep(Duration::from_millis(
        1_100 - u64::from(now.subsec_millis()),
    ));
}

fn after_the_fact(c: &real::Cluster, ns: &str, rules: &[&str], log_from: u64) {
    let mut now = c.forensics();
    now.args(["now", "-n", ns, "-o", "json"]);
    let o = run_bounded(now);
    let now_report: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("now's report is not JSON ({e}): {}", text(&o.stderr)));
    let after = c.home.path().join(format!("{ns}-after.rfr"));
    let mut record = c.forensics();
    record
        .args(["record", "-n", ns, "--duration", "3s", "-o"])
        .arg(&after);
    let r = run_bounded(record);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
    let mut analyze = c.forensics();
    analyze.args(["analyze", "-o", "json"]).arg(&after);
    let a = run_bounded(analyze);
    let recorded: Value = serde_json::from_slice(&a.stdout).unwrap();
    // The real controller's log of this run (from `log_from`), imported.
    let log = std::fs::read(c.dir.join("rollouts-controller.log")).unwrap();
    let log_file = c.home.path().join(format!("{ns}-controller.log"));
    let from = usize::try_from(log_from).unwrap().min(log.len());
    std::fs::write(&log_file, &log[from..]).unwrap();
    let imported = c.home.path().join(format!("{ns}-controller-log.rfr"));
    let mut import = c.forensics();
    import
        .args(["import", "--from", "controller-log"])
        .arg(&log_file)
        .arg("-o")
        .arg(&imported);
    let i = run_bounded(import);
    assert_eq!(i.status.code(), Some(0), "{}", text(&i.stderr));
    let mut analyze = c.forensics();
    analyze.args(["analyze", "-o", "json"]).arg(&imported);
    let l = run_bounded(analyze);
    let from_log: Value = serde_json::from_slice(&l.stdout).unwrap();
    let log_rules: Vec<&str> = rules
        .iter()
        .copied()
        .filter(|r| ["rerender-restart", "pause-lost"].contains(r))
        .collect();
    for (what, report, code, rules) in [
        ("now", &now_report, o.status.code(), rules),
        ("a recording begun after", &recorded, a.status.code(), rules),
        (
            "the controller's log",
            &from_log,
            l.status.code(),
            log_rules.as_slice(),
        ),
    ] {
        assert_eq!(code, Some(1), "{what}: {report}");
        for rule in rules {
            let found = of_rule(report, rule);
            assert!(
                found.iter().any(|f| f["reconstructed"]["from"]
                    .as_array()
                    .is_some_and(|from| !from.is_empty())),
                "{what} reconstructs {rule}: {report}"
            );
        }
    }
}

/// `wait APP -n NS --new-revision -o json` (and `extra`; `--for pause` unless it says another)
/// running against the
/// cluster, recording what it watched, with what it prints.
struct Waiting {
    child: Killed,
    out: std::thread::JoinHandle<Vec<u8>>,
    err: std::thread::JoinHandle<Vec<u8>>,
    watched: std::path::PathBuf,
}

impl Waiting {
    fn start(c: &real::Cluster, ns: &str, file: &str, extra: &[&str]) -> Waiting {
        let watched = c.home.path().join(file);
        let mut wait = c.forensics();
        wait.args(["wait", APP, "-n", ns, "--new-revision"]);
        if !extra.contains(&"--for") {
            wait.args(["--for", "pause"]);
        }
        wait.args(["-o", "json", "--record"])
            .arg(&watched)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = Killed(wait.spawn().unwrap());
        let out = drain(child.0.stdout.take());
        let err = drain(child.0.stderr.take());
        Waiting {
            child,
            out,
            err,
            watched,
        }
    }

    /// Returns once its watch of rollouts has listed them.
    fn watching(&mut self) {
        let watched = self.watched.clone();
        until(
            "wait's watch of rollouts",
            Duration::from_secs(30),
            || {
                real::records_so_far(&watched)
                    .iter()
                    .any(|r| r.op == rf_format::Op::ListEnd && r.kind == rf_format::Kind::Rollout)
                    .then_some(())
            },
            || format!("{:?}", self.child.0.try_wait()),
        );
    }

    /// Its exit code, its JSON answer and its log, once it ended (within `limit`).
    fn end(mut self, limit: Duration) -> (Option<i32>, Value, String) {
        let status = wait_bounded(&mut self.child, limit, "wait");
        let out = text(&self.out.join().unwrap());
        let err = text(&self.err.join().unwrap());
        let answer = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("wait's answer is not JSON ({e}): {out}{err}"));
        (status.code(), answer, err)
    }
}

/// Test 1 and test 5: the seed incident. A canary paused at its first pause is re-rendered with
/// only `checksum/config` changed; the real controller restarts it at step 0. The pipeline's
/// `wait --for pause --new-revision`, started before the release, answers at the pause of the
/// release it waited for; the re-run's, started as the re-render lands, answers at the new
/// revision's pause, not at the lost one.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_seed_incident_config_only_rerender_at_the_pause() {
    let c = cluster();
    let log_from = controller_log_len(&c);
    let ns = Namespace::new(&c, "seed");
    let file = c.home.path().join("seed.rfr");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let render = |image, checksum| Render {
        image,
        checksum,
        min_ready: 8,
        ..Render::default()
    };
    c.apply(&ns.name, &render(0, "c0").yaml());
    let stable = hash(&ns.wait_phase(APP, "Healthy"));

    // The pipeline's wait, started before its release is applied.
    let mut first_wait = Waiting::start(&c, &ns.name, "wait.rfr", &["--timeout", "60s"]);
    first_wait.watching();
    c.apply(&ns.name, &render(1, "a").yaml());
    let (code, answer, log) = first_wait.end(Duration::from_secs(90));
    let first = hash(&ns.wait_paused_at(APP, 1));
    assert_eq!(code, Some(0), "{answer}{log}");
    assert_eq!(answer["last"]["pod_hash"], first.as_str(), "{answer}{log}");
    assert_ne!(first, stable);
    assert!(
        log.contains(&format!(
            "{}/{APP}: Paused at step 1/4 on {first} (new), paused",
            ns.name
        )),
        "the log shows the pause it answered at: {log}"
    );

    // The values re-render at the pause; the re-run's wait starts as it lands.
    into_the_next_second();
    c.apply(&ns.name, &render(1, "b").yaml());
    let rerun = Waiting::start(&c, &ns.name, "rerun.rfr", &["--timeout", "60s"]);
    let (code, answer, log) = rerun.end(Duration::from_secs(90));
    let second = hash(&ns.wait_paused_at(APP, 1));
    assert_ne!(
        first, second,
        "the checksum alone made a new pod-template hash"
    );
    assert_eq!(code, Some(0), "{answer}{log}");
    assert_eq!(
        answer["last"]["pod_hash"],
        second.as_str(),
        "the re-run answers at the new revision's pause, not the lost one: {answer}{log}"
    );

    // The orphan rule decides 30 s after the restart; the recording goes past that.
    std::thread::sleep(Duration::from_secs(35));
    let sets = ns.replica_sets();
    let first_running = sets.values().any(|(h, n)| *h == first && *n > 0);

    let (report, code) = finish(&c, &ns, rec, "seed-rerender-at-pause", &[]);
    let found = rules(&report);
    assert_eq!(code, Some(1), "{found:?}");
    for rule in ["rerender-restart", "pause-lost", "config-only-rerender"] {
        assert!(found.iter().any(|r| r == rule), "{rule} in {found:?}");
    }
    let restart = &of_rule(&report, "rerender-restart")[0];
    assert!(
        restart["summary"].as_str().unwrap().contains(&second),
        "{restart}"
    );
    let orphans = of_rule(&report, "orphaned-replicaset");
    assert_eq!(
        !orphans.is_empty(),
        first_running,
        "orphaned-replicaset exactly when the real controller left {first} running: {sets:?} {found:?}"
    );
    assert!(undecided(&report).is_empty(), "{report}");
    // Where it ended: paused on the second render, the first's ReplicaSet not current.
    let end = &report["rollouts"][0];
    assert_eq!(end["pod_hash"], second.as_str(), "{end}");
    assert_eq!(end["stable_rs"], stable.as_str(), "{end}");
    assert_eq!(end["step_index"], 1, "{end}");
    // The on-call paged now, and the postmortem: from what the cluster kept.
    after_the_fact(&c, &ns.name, &RESTART_RULES, log_from);
}

/// `wait --for pause --new-revision` answers at the new revision's pause whether it starts
/// before the apply, as the apply lands, or after the controller moved and paused: the new
/// revision is the one that is not stable.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_46_wait_for_a_new_revision_started_before_during_or_after_the_apply() {
    let c = cluster();
    let ns = Namespace::new(&c, "wait-start");
    let render = |image| Render {
        image,
        checksum: "c0",
        min_ready: 3,
        ..Render::default()
    };
    c.apply(&ns.name, &render(0).yaml());
    ns.wait_phase(APP, "Healthy");

    // Before: started, watching, then the release.
    let mut before = Waiting::start(&c, &ns.name, "before.rfr", &["--timeout", "60s"]);
    before.watching();
    c.apply(&ns.name, &render(1).yaml());
    let (code, answer, log) = before.end(Duration::from_secs(90));
    let paused = hash(&ns.wait_paused_at(APP, 1));
    assert_eq!(code, Some(0), "{answer}{log}");
    assert_eq!(answer["last"]["pod_hash"], paused.as_str(), "{answer}{log}");
    assert!(
        log.contains(&format!(
            "waiting for {}/{APP}: pause on a new revision",
            ns.name
        )),
        "{log}"
    );
    plugin(&c, &ns.name, &["promote", "--full", APP]);
    ns.wait_status(APP, "Healthy on the new revision", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });

    // During: the apply and the wait start together.
    let during = Waiting::start(&c, &ns.name, "during.rfr", &["--timeout", "60s"]);
    c.apply(&ns.name, &render(2).yaml());
    let (code, answer, log) = during.end(Duration::from_secs(90));
    let paused = hash(&ns.wait_paused_at(APP, 1));
    assert_eq!(code, Some(0), "{answer}{log}");
    assert_eq!(answer["last"]["pod_hash"], paused.as_str(), "{answer}{log}");

    // After: the controller has moved and paused before the wait starts (the report of
    // `wait` timing out here, 30 s after a pause it had reached, is what this replaced).
    let after = Waiting::start(&c, &ns.name, "after.rfr", &["--timeout", "30s"]);
    let begun = std::time::Instant::now();
    let (code, answer, log) = after.end(Duration::from_secs(60));
    assert_eq!(code, Some(0), "{answer}{log}");
    assert_eq!(answer["outcome"], "reached", "{answer}{log}");
    assert_eq!(answer["last"]["pod_hash"], paused.as_str(), "{answer}{log}");
    assert!(
        begun.elapsed() < Duration::from_secs(20),
        "answered at once, not at its timeout: {:?} {log}",
        begun.elapsed()
    );
    // Named by its image, the same pause counts; another image does not.
    let by_image = Waiting::start(&c, &ns.name, "image.rfr", &["--image", &image(2)]);
    let (code, answer, log) = by_image.end(Duration::from_secs(60));
    assert_eq!(code, Some(0), "{answer}{log}");
    let other = Waiting::start(
        &c,
        &ns.name,
        "other-image.rfr",
        &["--image", &image(3), "--timeout", "3s"],
    );
    let (code, answer, log) = other.end(Duration::from_secs(60));
    assert_eq!(code, Some(3), "{answer}{log}");
    assert!(
        log.contains("(not the revision waited for)"),
        "the log says the paused revision is not the one named: {log}"
    );
}

/// A re-render while the wait waits for Healthy, the canary at a timed pause, restarts the
/// canary and the wait's timer: the wait answers once the second render is Healthy, after more
/// than its timeout in all.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_46_a_rerender_during_the_wait_starts_its_timer_again() {
    let c = cluster();
    let ns = Namespace::new(&c, "wait-rerender");
    // The first render pauses 12 s at step 1; the second lands 8 s in and takes 12 s more,
    // Healthy about 22 s after the release: past the 18 s timeout, which only a reset by the
    // restart (at 8 s, to 26 s) lets the wait outlive.
    let render = |image, checksum| Render {
        image,
        checksum,
        steps: "[{setWeight: 20}, {pause: {duration: 12s}}, {setWeight: 50}]",
        ..Render::default()
    };
    c.apply(&ns.name, &render(0, "c0").yaml());
    ns.wait_phase(APP, "Healthy");
    let mut waiting = Waiting::start(
        &c,
        &ns.name,
        "wait.rfr",
        &["--for", "healthy", "--timeout", "18s"],
    );
    waiting.watching();
    let released = std::time::Instant::now();
    c.apply(&ns.name, &render(1, "a").yaml());
    let first = hash(&ns.wait_paused_at(APP, 1));
    std::thread::sleep(Duration::from_secs(8).saturating_sub(released.elapsed()));
    c.apply(&ns.name, &render(1, "b").yaml());
    let (code, answer, log) = waiting.end(Duration::from_secs(90));
    let done = ns.wait_status(APP, "Healthy on the second render", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });
    let second = hash(&done);
    assert_ne!(first, second);
    assert_eq!(code, Some(0), "{answer}{log}");
    assert_eq!(answer["outcome"], "reached", "{answer}{log}");
    assert_eq!(answer["last"]["pod_hash"], second.as_str(), "{answer}{log}");
    assert_eq!(answer["last"]["restarts"], 1, "{answer}{log}");
    assert!(
        answer["waited_seconds"].as_f64().unwrap() > 18.0,
        "waited past its timeout, the timer reset by the restart: {answer}{log}"
    );
    assert!(
        log.contains(&format!(
            "the canary restarted on a new pod template ({first} -> {second}, restart 1 of at most 3)"
        )),
        "the log says why the timer started again: {log}"
    );
}

/// Runs a rollout from nothing to Healthy on image 0, then releases image 1 and waits for the
/// pause at step 1: the start of each move of test 2.
fn released_and_paused<'a>(c: &'a real::Cluster, name: &str) -> (Namespace<'a>, Recorder) {
    let ns = Namespace::new(c, name);
    let file = rec_path(c, name);
    let rec = Recorder::start(c, &ns.name, &file, &[]);
    c.apply(&ns.name, &Render::default().yaml());
    ns.wait_phase(APP, "Healthy");
    c.apply(
        &ns.name,
        &Render {
            image: 1,
            ..Render::default()
        }
        .yaml(),
    );
    ns.wait_paused_at(APP, 1);
    (ns, rec)
}

/// `kubectl argo rollouts ARGS -n NS`, which must succeed.
fn plugin(c: &real::Cluster, ns: &str, args: &[&str]) {
    let mut all = args.to_vec();
    all.extend(["-n", ns]);
    let o = c.plugin(&all);
    assert!(
        o.status.success(),
        "kubectl argo rollouts {all:?}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// The rules no move of test 2 may produce: they would misread it as the race.
const RACE: [&str; 4] = [
    "rerender-restart",
    "pause-lost",
    "config-only-rerender",
    "orphaned-replicaset",
];

fn assert_not_the_race(report: &Value, what: &str) {
    let found = rules(report);
    for rule in RACE {
        assert!(
            !found.iter().any(|r| r == rule),
            "{what}: {rule} in {found:?}"
        );
    }
    assert!(undecided(report).is_empty(), "{what}: {report}");
}

/// `check ROLLOUT -n NS` against the live cluster: its exit code and stdout.
fn check(c: &real::Cluster, ns: &str, extra: &[&str]) -> (Option<i32>, String) {
    let mut cmd = c.forensics();
    cmd.args(["check", APP, "-n", ns]).args(extra);
    let o = run_bounded(cmd);
    (
        o.status.code(),
        format!("{}{}", text(&o.stdout), text(&o.stderr)),
    )
}

/// Test 2 and test 5: a clean image-only release, promoted with the real plugin, to Healthy:
/// no finding at all, and `check` passes on it.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_clean_release_promoted_to_healthy() {
    let c = cluster();
    let (ns, rec) = released_and_paused(&c, "clean");
    plugin(&c, &ns.name, &["promote", APP]);
    let done = ns.wait_status(APP, "Healthy on the new revision", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });
    let (code, out) = check(&c, &ns.name, &[]);
    assert_eq!(code, Some(0), "check passes on a clean release: {out}");
    std::thread::sleep(Duration::from_secs(2));
    let (report, code) = finish(&c, &ns, rec, "clean-release-promoted", &[]);
    assert_eq!(rules(&report), Vec::<String>::new(), "{done}");
    assert_eq!(code, Some(0));
    assert!(undecided(&report).is_empty(), "{report}");
}

/// The end of a test: stops `rec`, comparing the plugin's views of the live cluster and of the
/// served recording (`unrecorded` as [`Recorder::stop_and_compare_with_serve`] takes it), keeps
/// the recording as fixture `fixture`, checks it against the audit log, and analyzes it.
fn finish(
    c: &real::Cluster,
    ns: &Namespace<'_>,
    rec: Recorder,
    fixture: &str,
    unrecorded: &[&str],
) -> (Value, Option<i32>) {
    let file = rec.path.clone();
    rec.stop_and_compare_with_serve(c, APP, unrecorded);
    keep(&file, fixture);
    assert_audit_truth(c, &ns.name, &file);
    let (report, code) = analyze(c, &file);
    now_agrees(c, &ns.name, &report, fixture);
    (report, code)
}

/// `now -n NS` on the cluster the incident left: it invents no restart the recording does not
/// show, and names each error the recording does, or says what it cannot decide. (A tag that
/// moved under pods since replaced, image-digest-drift, is proven only by a recording; of an
/// analysis on a canary no customer reached, one list names the Service that sends it none.)
fn now_agrees(c: &real::Cluster, ns: &str, recorded: &Value, fixture: &str) {
    let mut now = c.forensics();
    now.args(["now", "-n", ns, "-o", "json"]);
    let o = run_bounded(now);
    assert_ne!(o.status.code(), Some(2), "{fixture}: {}", text(&o.stderr));
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{fixture}: now's report is not JSON ({e}): {}",
            text(&o.stderr)
        )
    });
    let errors = |r: &Value| -> Vec<String> {
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error")
            .map(|f| f["rule"].as_str().unwrap().to_owned())
            .collect()
    };
    let (full, once) = (errors(recorded), errors(&listed));
    for rule in ["rerender-restart", "pause-lost", "restart-churn"] {
        assert!(
            !once.iter().any(|r| r == rule) || full.iter().any(|r| r == rule),
            "{fixture}: now invents {rule}: {listed}"
        );
    }
    for rule in full
        .iter()
        .filter(|r| *r != "image-digest-drift" && *r != "analysis-without-traffic")
    {
        assert!(
            once.contains(rule) || !undecided(&listed).is_empty(),
            "{fixture}: now neither names {rule} nor says what it cannot decide: {listed}"
        );
    }
}

/// Where a test named `name` writes its recording.
fn rec_path(c: &real::Cluster, name: &str) -> std::path::PathBuf {
    c.home.path().join(format!("{name}.rfr"))
}

/// Test 2: an abort with the real plugin: the canary is scaled down, the rollout Degraded.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_abort_is_not_the_race() {
    let c = cluster();
    let (ns, rec) = released_and_paused(&c, "abort");
    plugin(&c, &ns.name, &["abort", APP]);
    ns.wait_status(APP, "aborted", |s| {
        s["abort"] == true && s["phase"] == "Degraded"
    });
    std::thread::sleep(Duration::from_secs(12));
    let (report, _) = finish(&c, &ns, rec, "abort", &[]);
    assert_not_the_race(&report, "abort");
}

/// A node no kubelet runs (kwok manages only the `fake` ones), tainted so that only the pods
/// that tolerate it land there: their status is the test's to write, as a kubelet would.
const NO_KUBELET_NODE: &str = r#"apiVersion: v1
kind: Node
metadata:
  name: no-kubelet
  labels: {kubernetes.io/hostname: no-kubelet}
spec:
  taints: [{key: rollout-forensics.test/no-kubelet, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "110"}
  capacity: {cpu: "64", memory: 256Gi, pods: "110"}
"#;

/// A canary that gives up on a revision after 20 s without progress, the revision `image`
/// placed (`on_no_kubelet`) on the node no kubelet runs.
fn deadline_rollout(image: &str, on_no_kubelet: bool) -> String {
    let placement = if on_no_kubelet {
        "\n      nodeSelector: {kubernetes.io/hostname: no-kubelet}\n      tolerations: [{key: rollout-forensics.test/no-kubelet, operator: Exists, effect: NoSchedule}]"
    } else {
        ""
    };
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: checkout-api}}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  progressDeadlineSeconds: 20
  progressDeadlineAbort: true
  selector: {{matchLabels: {{app: checkout-api}}}}
  template:
    metadata:
      labels: {{app: checkout-api}}
    spec:
      containers: [{{name: app, image: "{image}"}}]{placement}
  strategy:
    canary:
      steps: [{{setWeight: 50}}, {{pause: {{}}}}]
"#
    )
}

/// An image that cannot be pulled: the canary's pod waits on `ImagePullBackOff` (its status
/// written as the kubelet writes it, on a node no kubelet runs), the real controller passes
/// `progressDeadlineSeconds` and, with `progressDeadlineAbort`, aborts: Degraded.
/// `rollout-stopped` names the image and the pull error as the cause, and no rule advises
/// pinning a digest of a tag no pod pulled.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_48_an_image_that_cannot_be_pulled_aborts_the_canary_and_is_named() {
    let c = cluster();
    c.ok(
        &["apply", "--server-side", "-f", "-"],
        Some(NO_KUBELET_NODE),
    );
    let ns = Namespace::new(&c, "imagepull");
    let file = rec_path(&c, "imagepull");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    c.apply(&ns.name, &deadline_rollout(&image(0), false));
    ns.wait_phase(APP, "Healthy");
    let missing = "registry.example/checkout-api:1.43.0-missing";
    c.apply(&ns.name, &deadline_rollout(missing, true));
    let canary = hash(&ns.wait_status(APP, "a new revision", |s| {
        s["currentPodHash"] != s["stableRS"] && s["currentPodHash"].is_string()
    }));
    // The canary's pod, bound to the node no kubelet runs.
    let pod = until(
        "the canary's pod on the node no kubelet runs",
        Duration::from_secs(60),
        || {
            let selector = format!("rollouts-pod-template-hash={canary}");
            let out = c.ok(
                &["-n", &ns.name, "get", "pods", "-l", &selector, "-o", "json"],
                None,
            );
            let pods: Value = serde_json::from_str(&out).ok()?;
            let p = pods["items"].as_array()?.first()?.clone();
            (p["spec"]["nodeName"] == "no-kubelet")
                .then(|| p["metadata"]["name"].as_str().unwrap().to_owned())
        },
        || ns.state(),
    );
    // What the kubelet writes when the registry has no such manifest.
    let status = format!(
        r#"{{"status":{{"phase":"Pending","conditions":[{{"type":"Ready","status":"False","reason":"ContainersNotReady"}},{{"type":"ContainersReady","status":"False","reason":"ContainersNotReady"}}],"containerStatuses":[{{"name":"app","image":"{missing}","imageID":"","ready":false,"restartCount":0,"started":false,"state":{{"waiting":{{"reason":"ImagePullBackOff","message":"Back-off pulling image \"{missing}\": not found: manifest unknown"}}}}}}]}}}}"#
    );
    c.ok(
        &[
            "-n",
            &ns.name,
            "patch",
            "pod",
            &pod,
            "--subresource=status",
            "--field-manager=kubelet",
            "-p",
            &status,
        ],
        None,
    );
    let aborted = ns.wait_status(APP, "aborted past its progress deadline", |s| {
        s["abort"] == true && s["phase"] == "Degraded"
    });
    assert!(
        aborted["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Progressing" && c["reason"] == "RolloutAborted"),
        "{aborted}"
    );
    // The abort scales the canary down; no kubelet confirms the pod's end, so the test does,
    // as the node's lifecycle would.
    until(
        "the canary scaled down",
        Duration::from_secs(60),
        || {
            let sets = ns.replica_sets();
            sets.values()
                .any(|(h, n)| *h == canary && *n == 0)
                .then_some(())
        },
        || ns.state(),
    );
    c.ok(
        &[
            "-n",
            &ns.name,
            "delete",
            "pod",
            &pod,
            "--grace-period=0",
            "--force",
        ],
        None,
    );
    std::thread::sleep(Duration::from_secs(3));
    let (report, code) = finish(&c, &ns, rec, "image-pull-abort", &[]);
    assert_eq!(code, Some(1), "{report}");
    let stopped = of_rule(&report, "rollout-stopped");
    assert_eq!(stopped.len(), 1, "{report}");
    let summary = stopped[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("could not pull {missing}"))
            && summary.contains("ImagePullBackOff")
            && summary.contains("manifest unknown")
            && summary.contains("progressDeadlineAbort aborted it"),
        "{summary}"
    );
    assert!(
        stopped[0]["remedy"]["decisions"]
            .as_array()
            .unwrap()
            .is_empty(),
        "no retry of the same image: {}",
        stopped[0]
    );
    for f in of_rule(&report, "image-not-pinned") {
        let now = f["remedy"]["summary"].as_str().unwrap();
        assert!(!now.contains("the running pods use"), "{now}");
        if f["summary"].as_str().unwrap().contains(missing) {
            assert!(
                now.starts_with(&format!("No pod pulled {missing}")),
                "{now}"
            );
        }
    }
    assert_not_the_race(&report, "an abort past the progress deadline");
}

/// Test 2: while paused, a render changes only the steps: the real controller starts the
/// steps again on the same pod-template hash.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_steps_only_change_is_not_the_race() {
    let c = cluster();
    let (ns, rec) = released_and_paused(&c, "steps");
    let before = hash(&ns.rollout(APP));
    c.apply(
        &ns.name,
        &Render {
            image: 1,
            steps: "[{setWeight: 25}, {pause: {}}, {setWeight: 50}, {pause: {duration: 5s}}]",
            ..Render::default()
        }
        .yaml(),
    );
    let after = ns.wait_paused_at(APP, 1);
    assert_eq!(
        hash(&after),
        before,
        "a steps change keeps the pod-template hash"
    );
    std::thread::sleep(Duration::from_secs(12));
    let (report, _) = finish(&c, &ns, rec, "steps-only-change", &[]);
    assert_not_the_race(&report, "a steps-only change");
}

/// Test 2: `kubectl argo rollouts undo` while paused: the stable template comes back and the
/// real controller goes straight to Healthy on the stable ReplicaSet.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_undo_to_stable_is_not_the_race() {
    let c = cluster();
    let (ns, rec) = released_and_paused(&c, "undo");
    let stable = ns.rollout(APP)["status"]["stableRS"].clone();
    plugin(&c, &ns.name, &["undo", APP]);
    ns.wait_status(APP, "Healthy on the stable revision again", |s| {
        s["phase"] == "Healthy" && s["currentPodHash"] == stable
    });
    std::thread::sleep(Duration::from_secs(12));
    let (report, _) = finish(&c, &ns, rec, "undo-to-stable", &[]);
    assert_not_the_race(&report, "undo");
}

/// Test 2: a user patches `status.currentStepIndex` past the pause; the real controller goes
/// on from there to Healthy.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_a_manual_step_index_patch_is_not_the_race() {
    let c = cluster();
    let (ns, rec) = released_and_paused(&c, "patch");
    c.ok(
        &[
            "-n",
            &ns.name,
            "patch",
            "rollout",
            APP,
            "--subresource",
            "status",
            "--type",
            "merge",
            "-p",
            r#"{"status":{"currentStepIndex":2,"pauseConditions":null,"controllerPause":false}}"#,
        ],
        None,
    );
    ns.wait_status(APP, "Healthy on the new revision", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });
    std::thread::sleep(Duration::from_secs(2));
    let (report, _) = finish(&c, &ns, rec, "manual-step-index-patch", &[]);
    assert_not_the_race(&report, "a status patch");
}

/// Test 3: adoption. A release also bumps the pod label `version` v417 -> v418 while the
/// Service still selects v417: the canary's pods are Ready and the real endpointslice
/// controller lists none of them. `check` exits 1 and names the mismatch; `analyze` finds it
/// from the EndpointSlices that controller wrote.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_adoption_selector_drift() {
    let c = cluster();
    let ns = Namespace::new(&c, "adoption");
    let file = c.home.path().join("adoption.rfr");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let render = |image, version| Render {
        image,
        version,
        service_version: Some("v417"),
        ..Render::default()
    };
    c.apply(&ns.name, &render(0, "v417").yaml());
    ns.wait_phase(APP, "Healthy");
    c.apply(&ns.name, &render(1, "v418").yaml());
    let paused = ns.wait_paused_at(APP, 1);
    let canary = hash(&paused);
    // The endpointslice controller lists the stable pods only.
    let slices = until(
        "EndpointSlices listing the 4 ready stable pods, not the canary's",
        Duration::from_secs(60),
        || {
            let list = c.get(&ns.name, "endpointslices").unwrap();
            let ready: Vec<String> = list["items"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
                .filter(|e| e["conditions"]["ready"] == true)
                .filter_map(|e| e["targetRef"]["name"].as_str().map(str::to_owned))
                .collect();
            (ready.len() == 4).then_some(ready)
        },
        || ns.state(),
    );
    assert!(
        slices.iter().all(|p| !p.contains(&canary)),
        "no canary pod {canary} behind the Service: {slices:?}"
    );
    let (code, out) = check(&c, &ns.name, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("NOT ADOPTED"), "{out}");
    assert!(out.contains("service-selector-mismatch"), "{out}");
    assert!(out.contains("v417") && out.contains("v418"), "{out}");
    // canary-not-in-endpoints waits for the endpoints to settle; the recording goes past it.
    std::thread::sleep(Duration::from_secs(15));
    let (report, code) = finish(&c, &ns, rec, "adoption-selector-drift", &[]);
    let found = rules(&report);
    assert_eq!(code, Some(1), "{found:?}");
    for rule in ["service-selector-mismatch", "canary-not-in-endpoints"] {
        assert!(found.iter().any(|r| r == rule), "{rule} in {found:?}");
    }
    assert_not_the_race(&report, "adoption");
}

/// Ephemeral metadata: the controller puts `role: canary` on the canary's ReplicaSet template
/// and `role: stable` on the stable's, after hashing; a Service selecting `role: stable` is for
/// the stable pods by design. Paused at step 1 with the canary behind the Service of every pod,
/// the analysis finds nothing (no "canary took no traffic", no selector mismatch on `role`),
/// and `check` passes. Promoted, the controller relabels the new revision's template and pods
/// `role: stable`: no `stale-role-labels`.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_27_ephemeral_metadata_is_the_controllers_not_a_mismatch() {
    let c = cluster();
    let ns = Namespace::new(&c, "ephemeral");
    let file = rec_path(&c, "ephemeral");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let render = |image| Render {
        image,
        ephemeral: true,
        ..Render::default()
    };
    c.apply(&ns.name, &render(0).yaml());
    ns.wait_phase(APP, "Healthy");
    c.apply(&ns.name, &render(1).yaml());
    let paused = ns.wait_paused_at(APP, 1);
    let (canary, stable) = (
        hash(&paused),
        paused["status"]["stableRS"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    );
    // What the controller did: each role's label on its ReplicaSet's template.
    let sets = c.get(&ns.name, "replicasets").unwrap();
    let role_of = |h: &str| {
        sets["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|rs| rs["metadata"]["labels"]["rollouts-pod-template-hash"] == h)
            .map(|rs| rs["spec"]["template"]["metadata"]["labels"]["role"].clone())
    };
    assert_eq!(
        role_of(&canary),
        Some(serde_json::json!("canary")),
        "{sets}"
    );
    assert_eq!(
        role_of(&stable),
        Some(serde_json::json!("stable")),
        "{sets}"
    );
    // The Service of every pod lists the canary's pod once it is ready.
    until(
        "the canary's pod behind checkout-api",
        Duration::from_secs(60),
        || {
            let list = c.get(&ns.name, "endpointslices").unwrap();
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == APP)
                .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
                .any(|e| {
                    e["conditions"]["ready"] == true
                        && e["targetRef"]["name"]
                            .as_str()
                            .is_some_and(|n| n.contains(&canary))
                })
                .then_some(())
        },
        || ns.state(),
    );
    let (code, out) = check(&c, &ns.name, &[]);
    assert_eq!(code, Some(0), "{out}");
    // Past the settle time of the cross-object rules.
    std::thread::sleep(Duration::from_secs(15));
    // Promoted: the controller relabels the new revision's template and each of its pods.
    plugin(&c, &ns.name, &["promote", APP, "--full"]);
    ns.wait_phase(APP, "Healthy");
    let roles = || {
        let pods = c.get(&ns.name, "pods").unwrap();
        pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["metadata"]["labels"]["rollouts-pod-template-hash"] == canary.as_str())
            .map(|p| {
                p["metadata"]["labels"]["role"]
                    .as_str()
                    .unwrap_or("-")
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    until(
        "the promoted revision's pods relabelled role: stable",
        Duration::from_secs(60),
        || {
            let r = roles();
            (!r.is_empty() && r.iter().all(|r| r == "stable")).then_some(())
        },
        || format!("roles {:?}; {}", roles(), ns.state()),
    );
    let sets = c.get(&ns.name, "replicasets").unwrap();
    let template_role = sets["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|rs| rs["metadata"]["labels"]["rollouts-pod-template-hash"] == canary.as_str())
        .map(|rs| rs["spec"]["template"]["metadata"]["labels"]["role"].clone());
    assert_eq!(template_role, Some(serde_json::json!("stable")), "{sets}");
    // Past the hold of `stale-role-labels`.
    std::thread::sleep(Duration::from_secs(35));
    let (report, code) = finish(&c, &ns, rec, "ephemeral-metadata", &[]);
    let found = rules(&report);
    for rule in [
        "canary-not-in-endpoints",
        "service-selector-mismatch",
        "stale-role-labels",
    ] {
        assert!(!found.iter().any(|r| r == rule), "{rule} in {found:?}");
    }
    assert_eq!(code, Some(0), "{found:?}");
    assert_not_the_race(&report, "ephemeral metadata");
}

/// A canary with NGINX traffic routing over Ingress `checkout-api` of class `class`: the
/// stable and canary Services, the Ingress, the Rollout.
fn nginx_routed(image_n: u8, class: &str) -> String {
    format!(
        r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: checkout-api}}
spec:
  ingressClassName: {class}
  rules:
    - host: shop.example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: {{service: {{name: checkout-api, port: {{number: 80}}}}}}
---
{rollout}"#,
        rollout = routed_rollout(image_n, "nginx: {stableIngress: checkout-api}"),
    )
}

/// The stable and canary Services, and a canary Rollout of image `image_n` that routes traffic
/// with `routing` (the YAML under `trafficRouting`, one line).
fn routed_rollout(image_n: u8, routing: &str) -> String {
    format!(
        r#"{stable}{canary}apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: checkout-api}}
spec:
  replicas: 4
  selector: {{matchLabels: {{app: checkout-api}}}}
  template:
    metadata:
      labels: {{app: checkout-api}}
    spec:
      containers: [{{name: app, image: "{image}"}}]
  strategy:
    canary:
      canaryService: checkout-api-canary
      stableService: checkout-api
      trafficRouting: {{{routing}}}
      steps: {STEPS}
"#,
        stable = service_yaml("checkout-api", "{app: checkout-api}"),
        canary = service_yaml("checkout-api-canary", "{app: checkout-api}"),
        image = image(image_n),
    )
}

/// A Service of port 80 to the pods' 8080, selecting `selector` (YAML flow mapping), and the
/// document separator after it.
fn service_yaml(name: &str, selector: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:\n  selector: {selector}\n  ports: [{{port: 80, targetPort: 8080}}]\n---\n"
    )
}

/// Test: NGINX traffic routing. The real controller makes `checkout-api-checkout-api-canary`
/// of the stable Ingress with the weight of each `setWeight` step, and writes it again whenever
/// an Ingress of a class it watches (`--nginx-ingress-classes`, `nginx` by default) changes:
/// a sync that sets the canary weight to 0 there is undone within seconds, and no finding
/// names it. With Ingresses of class `nginx-public`, which it does not watch, the same write
/// stands: the canary gets no request while the rollout's status still says 20, and
/// `traffic-weight-mismatch` names both sides.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_27_nginx_canary_weight_overwritten_by_a_sync() {
    const CANARY: &str = "checkout-api-checkout-api-canary";
    let c = cluster();
    // Released and paused at setWeight 20 with Ingresses of `class`; then a sync writes the
    // canary weight 0. Returns the namespace and its recorder 15 s later, and whether the
    // write stood.
    let play = |name: &str, class: &str| {
        let ns = Namespace::new(&c, name);
        let file = rec_path(&c, name);
        let rec = Recorder::start(&c, &ns.name, &file, &[]);
        let weight = || {
            c.get(&ns.name, &format!("ingress/{CANARY}")).and_then(|i| {
                i["metadata"]["annotations"]["nginx.ingress.kubernetes.io/canary-weight"]
                    .as_str()
                    .map(str::to_owned)
            })
        };
        c.apply(&ns.name, &nginx_routed(0, class));
        ns.wait_phase(APP, "Healthy");
        c.apply(&ns.name, &nginx_routed(1, class));
        let paused = ns.wait_paused_at(APP, 1);
        assert_eq!(
            paused["status"]["canary"]["weights"]["canary"]["weight"], 20,
            "{paused}"
        );
        until(
            &format!("{CANARY} at the controller's weight 20"),
            Duration::from_secs(30),
            || (weight().as_deref() == Some("20")).then_some(()),
            || format!("canary-weight {:?}; {}", weight(), ns.state()),
        );
        c.ok(
            &[
                "-n",
                &ns.name,
                "annotate",
                "ingress",
                CANARY,
                "nginx.ingress.kubernetes.io/canary-weight=0",
                "--overwrite",
                "--field-manager",
                "argocd-controller",
            ],
            None,
        );
        std::thread::sleep(Duration::from_secs(15));
        let rollout = ns.rollout(APP);
        assert_eq!(
            rollout["status"]["canary"]["weights"]["canary"]["weight"], 20,
            "{rollout}"
        );
        let stood = weight().as_deref() == Some("0");
        (ns, rec, stood)
    };

    // A class the controller watches: the write is undone, nothing to report.
    let (ns, rec, stood) = play("nginx", "nginx");
    assert!(!stood, "the controller did not write the weight again");
    let (report, code) = finish(&c, &ns, rec, "nginx-canary-weight-restored", &[]);
    assert_eq!(rules(&report), Vec::<String>::new());
    assert_eq!(code, Some(0));

    // A class it does not watch: the write stands.
    let (ns, rec, stood) = play("nginx-public", "nginx-public");
    assert!(stood, "the controller wrote the weight again");
    let (report, code) = finish(&c, &ns, rec, "nginx-canary-weight-overwritten", &[]);
    assert_not_the_race(&report, "nginx");
    let found = of_rule(&report, "traffic-weight-mismatch");
    assert_eq!(found.len(), 1, "{:?}", rules(&report));
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("weight 20") && summary.contains(&format!("{CANARY} sends it 0")),
        "{summary}"
    );
    assert_eq!(code, Some(1), "an error finding");
}

/// A canary with Istio traffic routing over VirtualService `checkout-api` (route `primary`,
/// by Service host), its template at image `image_n`; the VirtualService as Git holds it (all
/// to stable).
fn istio_routed(image_n: u8) -> String {
    format!(
        r#"apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata: {{name: checkout-api}}
spec:
  hosts: [checkout-api]
  http:
    - name: primary
      route:
        - destination: {{host: checkout-api}}
          weight: 100
        - destination: {{host: checkout-api-canary}}
          weight: 0
---
{rollout}"#,
        rollout = routed_rollout(
            image_n,
            "istio: {virtualService: {name: checkout-api, routes: [primary]}}"
        ),
    )
}

/// Test: Istio traffic routing. The real controller sets the weights of the VirtualService
/// route the rollout names at each `setWeight` step, and sets them again when something else
/// writes them (it watches VirtualServices). Recorded through a release, a sync that puts
/// Git's weights back while paused at 20, and the promotion: the analyzer reads the
/// controller's VirtualService as the controller wrote it (no `traffic-weight-mismatch` while
/// they agree, none for a write the controller mends within seconds).
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_27_istio_virtual_service_weights_follow_the_steps() {
    let c = cluster();
    let ns = Namespace::new(&c, "istio");
    let file = rec_path(&c, "istio");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let weights = || {
        c.get(&ns.name, "virtualservice/checkout-api").map(|v| {
            let route = &v["spec"]["http"][0]["route"];
            (route[0]["weight"].as_i64(), route[1]["weight"].as_i64())
        })
    };
    let at = |what: &str, want: (i64, i64)| {
        until(
            what,
            Duration::from_secs(30),
            || (weights() == Some((Some(want.0), Some(want.1)))).then_some(()),
            || format!("weights {:?}; {}", weights(), ns.state()),
        );
    };
    c.apply(&ns.name, &istio_routed(0));
    ns.wait_phase(APP, "Healthy");
    c.apply(&ns.name, &istio_routed(1));
    let paused = ns.wait_paused_at(APP, 1);
    assert_eq!(
        paused["status"]["canary"]["weights"]["canary"]["weight"], 20,
        "{paused}"
    );
    at("the route at the controller's 80/20", (80, 20));
    std::thread::sleep(Duration::from_secs(12));
    // A sync puts Git's weights back.
    c.ok(
        &[
            "-n",
            &ns.name,
            "patch",
            "virtualservice",
            APP,
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/spec/http/0/route/0/weight","value":100},{"op":"replace","path":"/spec/http/0/route/1/weight","value":0}]"#,
            "--field-manager",
            "argocd-controller",
        ],
        None,
    );
    at("the controller's 80/20 again", (80, 20));
    std::thread::sleep(Duration::from_secs(12));
    plugin(&c, &ns.name, &["promote", APP, "--full"]);
    ns.wait_phase(APP, "Healthy");
    at("all to stable after the promotion", (100, 0));
    std::thread::sleep(Duration::from_secs(12));
    let (report, code) = finish(&c, &ns, rec, "istio-virtual-service", &[]);
    assert_eq!(rules(&report), Vec::<String>::new());
    assert_eq!(code, Some(0));
    // The recording holds the controller's writes and the sync's.
    let records = real::records_so_far(&file);
    let vs: Vec<_> = records
        .iter()
        .filter(|r| r.kind.name() == "VirtualService" && r.op.has_object())
        .collect();
    assert!(vs.len() >= 4, "{} VirtualService records", vs.len());
    assert!(
        vs.iter()
            .any(|r| r.actor.as_deref() == Some("argocd-controller")
                || String::from_utf8_lossy(&r.object).contains("argocd-controller")),
        "the sync's write is recorded"
    );
}

/// Seed incident 002's front door: the rollout names its stableService `checkout-api`, but
/// Ingress `shop` sends customers to `checkout-api-legacy`, which selects `version: v1`. The
/// release moves the pod label to `v2` and is promoted to Healthy: the real endpointslice
/// controller keeps only the old pods behind the legacy Service (then none, once they are
/// scaled down), and `front-door-bypass` names the path.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_27_front_door_to_a_service_the_rollout_does_not_move() {
    let c = cluster();
    let ns = Namespace::new(&c, "frontdoor");
    let file = rec_path(&c, "frontdoor");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let render = |n: u8| front_door_render(n, STEPS);
    c.apply(&ns.name, &render(0));
    ns.wait_phase(APP, "Healthy");
    c.apply(&ns.name, &render(1));
    ns.wait_paused_at(APP, 1);
    plugin(&c, &ns.name, &["promote", APP, "--full"]);
    let done = ns.wait_status(APP, "Healthy on the new revision", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });
    // `check` follows the path customers take, and fails on it.
    let (code, out) = check(&c, &ns.name, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("front door shop.example.com/ -> ingress shop -> svc checkout-api-legacy")
            && out.contains("front-door-bypass"),
        "{out}"
    );
    // Past the settle time of the cross-object rules.
    std::thread::sleep(Duration::from_secs(15));
    let (report, code) = finish(&c, &ns, rec, "front-door-legacy-service", &[]);
    assert_not_the_race(&report, "front door");
    let found = of_rule(&report, "front-door-bypass");
    assert_eq!(found.len(), 1, "{:?}\n{done}", rules(&report));
    // The front door's Service lost its last pod when the old revision was scaled down: an
    // outage window, still open when the recording ends.
    let outage = of_rule(&report, "no-ready-endpoints");
    assert_eq!(outage.len(), 1, "{:?}", rules(&report));
    assert_eq!(outage[0]["subject"]["name"], "checkout-api-legacy");
    assert!(outage[0]["window"]["end"].is_null(), "{}", outage[0]);
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("Ingress shop sends shop.example.com/ to Service checkout-api-legacy")
            && summary.contains(&format!("revision {}", hash(&done))),
        "{summary}"
    );
    assert_eq!(code, Some(1), "an error finding");
}

/// Seed incident 002's front door: Service `checkout-api` (the rollout's stableService),
/// Service `checkout-api-legacy` selecting `version: v1`, Ingress `shop` sending
/// `shop.example.com/` to the legacy one, and the canary Rollout with `steps` whose pods are
/// labelled `version: v{n+1}` and run image `n`.
fn front_door_render(n: u8, steps: &str) -> String {
    format!(
        r#"{stable}{legacy}apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: shop}}
spec:
  ingressClassName: nginx
  rules:
    - host: shop.example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: {{service: {{name: checkout-api-legacy, port: {{number: 80}}}}}}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: checkout-api}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: checkout-api}}}}
  template:
    metadata:
      labels: {{app: checkout-api, version: v{v}}}
    spec:
      containers: [{{name: app, image: "{image}"}}]
  strategy:
    canary:
      stableService: checkout-api
      steps: {steps}
"#,
        stable = service_yaml("checkout-api", "{app: checkout-api}"),
        legacy = service_yaml("checkout-api-legacy", "{app: checkout-api, version: v1}"),
        v = n + 1,
        image = image(n),
    )
}

/// The gap records of a recording: (kind, reason).
fn gaps(path: &std::path::Path) -> Vec<(String, String)> {
    real::records_so_far(path)
        .into_iter()
        .filter_map(|r| match r.op {
            rf_format::Op::Gap { reason } => Some((r.kind.name().to_owned(), reason)),
            _ => None,
        })
        .collect()
}

/// Ground truth with faults: a release recorded through a kube-apiserver restart, an etcd
/// compaction behind the recorder's back (a real 410 Gone for every resumed watch), and a
/// kube-apiserver frozen past the recorder's idle timeout. Every write the audit log shows is
/// in the recording or inside a gap it states; the compaction's gaps are stated.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_ground_truth_through_restart_compaction_and_a_stalled_watch() {
    let c = cluster();
    let ns = Namespace::alone(&c, "faults");
    let file = c.home.path().join("faults.rfr");
    let rec = Recorder::start(&c, &ns.name, &file, &["--idle-timeout", "4s"]);
    c.apply(&ns.name, &Render::default().yaml());
    ns.wait_phase(APP, "Healthy");

    // 1. The API server restarts: its watches end; the recorder resumes them.
    c.fault(&["restart", "kube-apiserver"]);
    c.apply(
        &ns.name,
        &Render {
            image: 1,
            ..Render::default()
        }
        .yaml(),
    );
    ns.wait_paused_at(APP, 1);
    rec.catch_up(&c);
    let before = gaps(&file).len();

    // 2. etcd is compacted past every version the recorder holds.
    c.fault(&["compact"]);
    until(
        "a gap for the 410 Gone of each recorded kind's resumed watch",
        Duration::from_secs(60),
        || {
            let g = gaps(&file);
            let expired = g[before..]
                .iter()
                .filter(|(_, reason)| reason.contains("410"))
                .count();
            (expired >= 5).then_some(())
        },
        || format!("{:?}", gaps(&file)),
    );
    plugin(&c, &ns.name, &["promote", APP]);
    ns.wait_status(APP, "at step 3", |s| {
        s["currentStepIndex"].as_u64() >= Some(3)
    });

    // 3. The API server freezes past the recorder's idle timeout: the watches stall without
    // closing.
    c.fault(&["pause", "kube-apiserver", "7"]);
    ns.wait_status(APP, "Healthy on the new revision", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });
    rec.catch_up(&c);
    std::thread::sleep(Duration::from_secs(2));
    let err = rec.stop_and_compare_with_serve(&c, APP, &[]);
    keep(&file, "faults-restart-compaction-stall");
    let truth = assert_audit_truth(&c, &ns.name, &file);
    assert!(truth.gaps >= 5, "{truth:?}");
    assert!(err.contains("resumed"), "{err}");
    let (report, _) = analyze(&c, &file);
    assert_not_the_race(&report, "faults");
}

/// The resources the recorder reads, and two it must not.
const RESOURCES: [&str; 9] = [
    "rollouts.argoproj.io",
    "applications.argoproj.io",
    "replicasets.apps",
    "services",
    "pods",
    "events",
    "endpointslices.discovery.k8s.io",
    "secrets",
    "configmaps",
];

/// Asserts that `kubeconfig`'s user may make no write in `ns`: the real RBAC authorizer says
/// no to each verb on each resource, and real writes (server-side dry runs, which are
/// authorized as writes) are Forbidden.
fn assert_no_write(c: &real::Cluster, kubeconfig: &std::path::Path, ns: &str) {
    for resource in RESOURCES {
        for verb in ["create", "update", "patch", "delete", "deletecollection"] {
            let o = c.kubectl_as(kubeconfig, &["auth", "can-i", verb, resource, "-n", ns]);
            assert_eq!(
                text(&o.stdout).trim(),
                "no",
                "{verb} {resource}: {}",
                text(&o.stderr)
            );
        }
    }
    for resource in ["secrets", "configmaps"] {
        let o = c.kubectl_as(kubeconfig, &["auth", "can-i", "get", resource, "-n", ns]);
        assert_eq!(text(&o.stdout).trim(), "no", "get {resource}");
    }
    let attempts: [&[&str]; 3] = [
        &["-n", ns, "delete", "rollout", APP, "--dry-run=server"],
        &[
            "-n",
            ns,
            "patch",
            "service",
            APP,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"selector":{"app":"x"}}}"#,
            "--dry-run=server",
        ],
        &["-n", ns, "create", "configmap", "x", "--dry-run=server"],
    ];
    for args in attempts {
        let o = c.kubectl_as(kubeconfig, args);
        let err = text(&o.stderr);
        assert!(
            !o.status.success() && err.contains("forbidden"),
            "{args:?} is refused: {err}"
        );
    }
}

/// The real RBAC authorizer. The recorder, with a ServiceAccount token bound by
/// `deploy/rbac-namespace.yaml`, records its namespace (every write the audit log shows) and
/// is refused `-A` with an error naming `deploy/rbac.yaml`; bound by `deploy/rbac.yaml`, it
/// records all namespaces. The same token may write nothing. `wait` and `check` run with the
/// PostSync Role of `deploy/check-postsync.yaml`.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_rbac_the_recorder_reads_everything_and_may_write_nothing() {
    let c = cluster();
    let ns = Namespace::new(&c, "rbac");
    c.ok(
        &[
            "delete",
            "clusterrolebinding",
            "rollout-forensics-recorder",
            "--ignore-not-found",
        ],
        None,
    );
    // The ServiceAccount of deploy/rbac.yaml, without its cluster-wide grant yet.
    let account = real::manifests(
        "deploy/rbac.yaml",
        &ns.name,
        &["ClusterRole", "ClusterRoleBinding"],
    );
    c.ok(&["apply", "-f", "-"], Some(&account));
    c.ok(
        &["apply", "-f", "-"],
        Some(&real::manifests(
            "deploy/rbac-namespace.yaml",
            &ns.name,
            &[],
        )),
    );
    let sa = c.service_account_kubeconfig(
        "rollout-forensics",
        "rollout-forensics",
        &ns.name,
        &c.home.path().join("recorder.kubeconfig"),
    );
    let sa_arg = sa.to_str().unwrap();

    // One namespace, with the namespaced Role.
    let file = c.home.path().join("rbac-ns.rfr");
    let rec = Recorder::start(&c, &ns.name, &file, &["--kubeconfig", sa_arg]);
    c.apply(&ns.name, &Render::default().yaml());
    ns.wait_phase(APP, "Healthy");
    c.apply(
        &ns.name,
        &Render {
            image: 1,
            ..Render::default()
        }
        .yaml(),
    );
    ns.wait_paused_at(APP, 1);
    let err = rec.stop(&c);
    assert!(!err.contains("forbidden"), "{err}");
    assert_audit_truth(&c, &ns.name, &file);
    assert_no_write(&c, &sa, &ns.name);
    // `now` lists with the same rights: a kind outside them is a note, not an error.
    now_as(&c, sa_arg, &["-n", &ns.name]);

    let mut all = c.forensics();
    all.args([
        "record",
        "-A",
        "--duration",
        "5s",
        "--kubeconfig",
        sa_arg,
        "-o",
    ])
    .arg(c.home.path().join("refused.rfr"));
    let o = run_bounded(all);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("forbidden") || err.contains("Forbidden"),
        "{err}"
    );
    assert!(err.contains("deploy/rbac.yaml"), "{err}");

    // All namespaces, with the ClusterRole.
    c.ok(
        &["apply", "-f", "-"],
        Some(&real::manifests("deploy/rbac.yaml", &ns.name, &[])),
    );
    until(
        "the ClusterRoleBinding to take effect",
        Duration::from_secs(30),
        || {
            let o = c.kubectl_as(&sa, &["auth", "can-i", "watch", "pods", "-A"]);
            (text(&o.stdout).trim() == "yes").then_some(())
        },
        String::new,
    );
    let file = c.home.path().join("rbac-all.rfr");
    let rec = Recorder::start_with(&c, &ns.name, &file, &["-A", "--kubeconfig", sa_arg]);
    plugin(&c, &ns.name, &["promote", APP]);
    ns.wait_status(APP, "Healthy on the new revision", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });
    let err = rec.stop(&c);
    assert!(!err.contains("forbidden"), "{err}");
    assert_audit_truth(&c, &ns.name, &file);
    let namespaces: std::collections::BTreeSet<String> = real::records_so_far(&file)
        .into_iter()
        .filter(|r| r.kind == rf_format::Kind::Pod && r.op.has_object())
        .map(|r| r.namespace)
        .collect();
    assert!(namespaces.contains(&ns.name), "{namespaces:?}");
    assert_no_write(&c, &sa, &ns.name);
    now_as(&c, sa_arg, &["-A"]);

    // The PostSync hook's Role: wait and check, and nothing more.
    let argocd = "apiVersion: v1\nkind: Namespace\nmetadata: {name: argocd}\n";
    c.ok(&["apply", "-f", "-"], Some(argocd));
    c.ok(
        &["apply", "-f", "-"],
        Some(&real::manifests(
            "deploy/check-postsync.yaml",
            &ns.name,
            &["Job"],
        )),
    );
    let hook = c.service_account_kubeconfig(
        &ns.name,
        "rollout-forensics-check",
        &ns.name,
        &c.home.path().join("hook.kubeconfig"),
    );
    let hook_arg = hook.to_str().unwrap();
    let mut wait = c.forensics();
    wait.args([
        "wait",
        APP,
        "-n",
        &ns.name,
        "--for",
        "healthy",
        "--timeout",
        "60s",
        "--kubeconfig",
        hook_arg,
    ]);
    let o = run_bounded(wait);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let (code, out) = check(
        &c,
        &ns.name,
        &["--kubeconfig", hook_arg, "--expect-version", "version=v1"],
    );
    assert_eq!(code, Some(0), "check with the PostSync Role: {out}");
    assert_no_write(&c, &hook, &ns.name);
}

/// The active and preview Services of a blue-green rollout, applied once: a Service's selector
/// is an atomic map, so a forced server-side apply of it again would take the whole selector
/// back from the controller, its pod-template hash included.
const BLUE_GREEN_SERVICES: &str = r#"apiVersion: v1
kind: Service
metadata: {name: checkout-api}
spec:
  selector: {app: checkout-api}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: checkout-api-preview}
spec:
  selector: {app: checkout-api}
  ports: [{port: 80, targetPort: 8080}]
"#;

/// A blue-green Rollout render, promoted by hand.
fn blue_green(image_n: u8, checksum: &str) -> String {
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: checkout-api}}
spec:
  replicas: 3
  revisionHistoryLimit: 3
  selector: {{matchLabels: {{app: checkout-api}}}}
  template:
    metadata:
      labels: {{app: checkout-api}}
      annotations: {{checksum/config: "{checksum}"}}
    spec:
      containers: [{{name: app, image: "{image}"}}]
  strategy:
    blueGreen:
      activeService: checkout-api
      previewService: checkout-api-preview
      autoPromotionEnabled: false
      scaleDownDelaySeconds: 20
"#,
        image = image(image_n),
    )
}

/// The pod-template hash a Service selects, if it selects one.
fn selected_hash(c: &real::Cluster, ns: &str, service: &str) -> Option<String> {
    let s = c.get(ns, &format!("service/{service}"))?;
    s["spec"]["selector"]["rollouts-pod-template-hash"]
        .as_str()
        .map(str::to_owned)
}

/// Test 4: blue-green with a pre-promotion pause, re-rendered (only `checksum/config`) while
/// paused, then promoted. What the real controller does with the Services and the first
/// render's ReplicaSet is asserted; the recording is a fixture for the blue-green rules.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_blue_green_rerendered_while_paused_before_promotion() {
    let c = cluster();
    let log_from = controller_log_len(&c);
    let ns = Namespace::new(&c, "bluegreen");
    let file = rec_path(&c, "bluegreen");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    c.apply(&ns.name, BLUE_GREEN_SERVICES);
    c.apply(&ns.name, &blue_green(0, "c0"));
    let stable = hash(&ns.wait_phase(APP, "Healthy"));
    assert_eq!(
        selected_hash(&c, &ns.name, APP).as_deref(),
        Some(stable.as_str())
    );

    c.apply(&ns.name, &blue_green(1, "a"));
    let first = hash(&ns.wait_status(APP, "paused before promotion", |s| {
        s["phase"] == "Paused" && s["pauseConditions"][0]["reason"] == "BlueGreenPause"
    }));
    assert_ne!(first, stable);
    let preview_on = |render: &str, hash: &str| {
        until(
            &format!("the preview Service on the {render} render"),
            Duration::from_secs(30),
            || {
                (selected_hash(&c, &ns.name, "checkout-api-preview").as_deref() == Some(hash))
                    .then_some(())
            },
            || ns.state(),
        );
    };
    preview_on("first", &first);
    assert_eq!(
        selected_hash(&c, &ns.name, APP).as_deref(),
        Some(stable.as_str())
    );

    into_the_next_second();
    c.apply(&ns.name, &blue_green(1, "b"));
    let second = hash(
        &ns.wait_status(APP, "paused before promotion on a new hash", |s| {
            s["phase"] == "Paused"
                && s["pauseConditions"][0]["reason"] == "BlueGreenPause"
                && s["currentPodHash"] != first.as_str()
        }),
    );
    preview_on("second", &second);
    assert_eq!(
        selected_hash(&c, &ns.name, APP).as_deref(),
        Some(stable.as_str()),
        "the active Service stays on stable while paused"
    );
    // `check` before promotion: the preview Service routes to the new revision, the active
    // one stays on the stable revision.
    let (code, out) = check(&c, &ns.name, &["--retry-for", "30s"]);
    assert_eq!(code, Some(0), "check passes on the preview: {out}");
    assert!(
        out.contains(&format!(
            "adopted so far: the preview Service checkout-api-preview routes to revision {second}; the active Service checkout-api stays on {stable} until promotion"
        )),
        "{out}"
    );
    std::thread::sleep(Duration::from_secs(35));
    let sets = ns.replica_sets();
    let first_left = sets.values().find(|(h, _)| *h == first).map(|(_, n)| *n);
    assert_eq!(
        first_left,
        Some(0),
        "the real controller scales the replaced preview revision down: {sets:?}"
    );
    // Investigated while still paused, after the fact.
    after_the_fact(&c, &ns.name, &RESTART_RULES, log_from);
    plugin(&c, &ns.name, &["promote", APP]);
    ns.wait_status(APP, "Healthy on the second render", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == second.as_str()
    });
    assert_eq!(
        selected_hash(&c, &ns.name, APP).as_deref(),
        Some(second.as_str())
    );
    // `check` after promotion, inside the old active revision's scaleDownDelaySeconds: the
    // active Service routes to the new revision, and the old one still up is no orphan.
    let (code, out) = check(&c, &ns.name, &["--retry-for", "30s"]);
    assert_eq!(code, Some(0), "check passes once promoted: {out}");
    assert!(
        out.contains(&format!("adopted: the Services route to revision {second}")),
        "{out}"
    );
    assert!(!out.contains("orphaned-replicaset"), "{out}");
    // The old active revision keeps its pods for scaleDownDelaySeconds (20) after the switch;
    // the recording ends once the controller has scaled it down, in a state that no longer
    // changes with the clock (the plugin shows the delay counting down to its own "now").
    until(
        "the old active revision scaled down after its delay",
        Duration::from_secs(60),
        || {
            let sets = ns.replica_sets();
            sets.values()
                .any(|(h, n)| *h == stable && *n == 0)
                .then_some(())
        },
        || ns.state(),
    );
    std::thread::sleep(Duration::from_secs(2));
    let (report, _) = finish(&c, &ns, rec, "blue-green-rerender-while-paused", &[]);
    let found = rules(&report);
    // The two renders, the preview restarted by the second, the pre-promotion pause it lost,
    // and that only checksum/config changed; nothing after the promotion.
    let mut found = found;
    found.sort();
    assert_eq!(
        found,
        [
            "config-only-rerender",
            "double-render",
            "pause-lost",
            "rerender-restart"
        ],
        "{found:?}"
    );
    assert!(undecided(&report).is_empty(), "{report}");
}

/// Test 4: a Rollout whose template is a Deployment's (`workloadRef`, `scaleDown: onsuccess`):
/// the real controller reads the Deployment, runs its template, and scales the Deployment to 0
/// once its first revision is Healthy. A render of a new image applies the Deployment's manifest
/// with its `replicas: 3` again: the controller makes the new template its canary and never
/// scales the Deployment down again (it does so only for revision 1), so both run. The
/// recording holds the Deployment: the plugin shows the served recording as it showed the live
/// cluster, and `analyze` names the Deployment running beside the rollout, not the race.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_27_workload_ref_deployment_scaled_up_again_by_a_render() {
    let c = cluster();
    let ns = Namespace::new(&c, "workloadref");
    let file = rec_path(&c, "workloadref");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let render = |n: u8| {
        format!(
            r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: checkout-api}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: checkout-api}}}}
  template:
    metadata:
      labels: {{app: checkout-api}}
    spec:
      containers: [{{name: app, image: "{image}"}}]
---
apiVersion: v1
kind: Service
metadata: {{name: checkout-api}}
spec:
  selector: {{app: checkout-api}}
  ports: [{{port: 80, targetPort: 8080}}]
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: checkout-api}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: checkout-api}}}}
  workloadRef: {{apiVersion: apps/v1, kind: Deployment, name: checkout-api, scaleDown: onsuccess}}
  strategy:
    canary:
      steps: {STEPS}
"#,
            image = image(n),
        )
    };
    let deployment = |what: &str, f: &dyn Fn(&Value) -> bool| {
        until(
            &format!("deployment {}/checkout-api: {what}", ns.name),
            Duration::from_secs(60),
            || c.get(&ns.name, "deployment/checkout-api").filter(|d| f(d)),
            || ns.state(),
        )
    };
    c.apply(&ns.name, &render(0));
    ns.wait_phase(APP, "Healthy");
    deployment("scaled to 0 by the controller", &|d| {
        d["spec"]["replicas"] == 0 && d["status"]["readyReplicas"].as_u64().unwrap_or(0) == 0
    });
    c.apply(&ns.name, &render(1));
    let paused = ns.wait_paused_at(APP, 1);
    let canary = hash(&paused);
    let sets = ns.replica_sets();
    assert!(
        sets.values().any(|(h, n)| *h == canary && *n == 1),
        "the controller made the Deployment's template its canary: {sets:?}"
    );
    deployment("back at 3 ready replicas after the render", &|d| {
        d["spec"]["replicas"] == 3 && d["status"]["readyReplicas"] == 3
    });
    // Past the rule's 30 s, with both still running: the controller left the Deployment up.
    std::thread::sleep(Duration::from_secs(35));
    let d = c.get(&ns.name, "deployment/checkout-api").unwrap();
    assert_eq!(
        d["spec"]["replicas"], 3,
        "the controller scaled it down again: {d}"
    );
    let file = rec.path.clone();
    rec.stop_and_compare_with_serve(&c, APP, &[]);
    keep(&file, "workload-ref-scaled-up-by-render");
    assert_audit_truth(&c, &ns.name, &file);
    let (report, _) = analyze(&c, &file);
    assert_not_the_race(&report, "workloadRef");
    let found = of_rule(&report, "deployment-not-scaled-down");
    assert_eq!(found.len(), 1, "{:?}", rules(&report));
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("runs 3 ready pod(s)")
            && summary.contains("scaleDown: onsuccess")
            && summary.contains("0 -> 3"),
        "{summary}"
    );
}

/// A loopback HTTP server that answers every request with `body` and counts them.
struct Metric {
    port: u16,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

fn metric_server(body: &'static str) -> Metric {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.read(&mut buf);
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Metric { port, hits }
}

/// AnalysisTemplate `ok`: a `web` metric asking `metric` twice, 2 s apart, successful when its
/// answer's `ok` is true.
fn web_template(metric: &Metric) -> String {
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {{name: ok}}
spec:
  metrics:
  - name: ok
    count: 2
    interval: 2s
    successCondition: result == true
    provider:
      web:
        url: "http://127.0.0.1:{port}/ok"
        jsonPath: "{{$.ok}}"
"#,
        port = metric.port
    )
}

/// A failed analysis: the web metric answers `ok: false`, the real controller marks the
/// AnalysisRun Failed at its first measurement and aborts the rollout. `analysis-failed` names
/// the metric, its query, its condition and the value it failed on.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_28_a_failed_web_analysis_names_its_metric_and_value() {
    let c = cluster();
    let metric = metric_server(r#"{"ok": false}"#);
    let ns = Namespace::new(&c, "analysis-failed");
    let file = rec_path(&c, "analysis-failed");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    c.apply(&ns.name, &web_template(&metric));
    let steps = "[{setWeight: 20}, {analysis: {templates: [{templateName: ok}]}}, {setWeight: 60}]";
    let render = |image| Render {
        image,
        steps,
        ..Render::default()
    };
    c.apply(&ns.name, &render(0).yaml());
    ns.wait_phase(APP, "Healthy");
    c.apply(&ns.name, &render(1).yaml());
    ns.wait_status(APP, "aborted by its analysis", |s| s["abort"] == true);
    let runs = c.get(&ns.name, "analysisruns").unwrap();
    assert_eq!(runs["items"][0]["status"]["phase"], "Failed", "{runs}");
    std::thread::sleep(Duration::from_secs(3));
    let (report, _) = finish(&c, &ns, rec, "analysis-failed-web", &[]);
    let found = of_rule(&report, "analysis-failed");
    assert_eq!(found.len(), 1, "{:?}", rules(&report));
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(
            "metric ok (web GET http://127.0.0.1:{}/ok {{$.ok}}) assessed Failed by successCondition result == true",
            metric.port
        )) && summary.contains("Failed (false)")
            && summary.ends_with("the rollout aborted"),
        "{summary}"
    );
    // The run's start, its measurement and its end are on the rollout's timeline.
    let changes = timeline_changes(&c, &file, "AnalysisRun");
    assert!(
        changes
            .iter()
            .any(|l| l.contains("(Step analysis) of revision"))
            && changes
                .iter()
                .any(|l| l.ends_with("metric ok: Failed (false)"))
            && changes.iter().any(|l| l.contains(" Failed: metric ok")),
        "{changes:?}"
    );
}

/// AnalysisTemplate `smoke`: a job metric running `registry.example/smoke:1.IMAGE`; when
/// `fails`, its Job can be placed on no node and fails at its 3 s deadline.
fn job_template(image: u8, fails: bool) -> String {
    let (deadline, place) = if fails {
        (
            "\n          activeDeadlineSeconds: 3",
            "\n              nodeSelector: {rollout-forensics.test/no-such-node: \"true\"}",
        )
    } else {
        ("", "")
    };
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {{name: smoke}}
spec:
  metrics:
  - name: smoke
    provider:
      job:
        spec:
          backoffLimit: 0{deadline}
          template:
            spec:{place}
              restartPolicy: Never
              containers: [{{name: smoke, image: "registry.example/smoke:1.{image}"}}]
"#
    )
}

/// A `job` metric, run by the real Job controller (kwok completes a Job's pod): an analysis of
/// a web metric and a job metric passes, and the release rolls out; the next release's Job can
/// be placed on no node and passes its deadline, the Job fails, and the run with it.
/// `analysis-failed` names the job metric and its Job, with the commands that read the Job.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_28_a_job_metric_passes_then_fails_and_names_its_job() {
    let c = cluster();
    let metric = metric_server(r#"{"ok": true}"#);
    let ns = Namespace::new(&c, "analysis-job");
    let file = rec_path(&c, "analysis-job");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    c.apply(&ns.name, &web_template(&metric));
    c.apply(&ns.name, &job_template(1, false));
    let steps = "[{setWeight: 20}, {analysis: {templates: [{templateName: ok}, {templateName: smoke}]}}, {setWeight: 60}]";
    let render = |image| Render {
        image,
        steps,
        ..Render::default()
    };
    c.apply(&ns.name, &render(0).yaml());
    ns.wait_phase(APP, "Healthy");
    c.apply(&ns.name, &render(1).yaml());
    ns.wait_status(APP, "the first release rolled out past its analysis", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });
    let runs = c.get(&ns.name, "analysisruns").unwrap();
    let first = &runs["items"][0];
    assert_eq!(first["status"]["phase"], "Successful", "{runs}");
    let job = first["status"]["metricResults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "smoke")
        .unwrap()["measurements"][0]["metadata"]["job-name"]
        .as_str()
        .unwrap()
        .to_owned();
    c.apply(&ns.name, &job_template(2, true));
    c.apply(&ns.name, &render(2).yaml());
    ns.wait_status(APP, "aborted by its job metric", |s| s["abort"] == true);
    std::thread::sleep(Duration::from_secs(3));
    let (report, _) = finish(&c, &ns, rec, "analysis-job-metric", &[]);
    let found = of_rule(&report, "analysis-failed");
    assert_eq!(found.len(), 1, "{:?}", rules(&report));
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains(
            "metric smoke (job running registry.example/smoke:1.2) assessed Failed by its Job's end (Complete or Failed); last Failed, job "
        ) && summary.ends_with("the rollout aborted")
            && !summary.contains("metric ok"),
        "{summary}"
    );
    let commands: Vec<&str> = found[0]["remedy"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        commands
            .iter()
            .any(|c| c.starts_with(&format!("kubectl -n {} logs job/", ns.name))),
        "{commands:?}"
    );
    // The first run's job measurement is on the timeline, naming its Job.
    let changes = timeline_changes(&c, &file, "AnalysisRun");
    assert!(
        changes
            .iter()
            .any(|l| l.ends_with(&format!("metric smoke: Successful, job {job}"))),
        "{changes:?}"
    );
}

/// Seed incident 002's analysis: the canary's step analysis passes while the front door
/// (Ingress `shop`) sends every request to `checkout-api-legacy`, which selects only the old
/// revision's pods. `analysis-without-traffic` says the analysis measured idle pods.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_28_an_analysis_passed_on_a_canary_no_customer_reached() {
    let c = cluster();
    let metric = metric_server(r#"{"ok": true}"#);
    let ns = Namespace::new(&c, "analysis-idle");
    let file = rec_path(&c, "analysis-idle");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    c.apply(&ns.name, &web_template(&metric));
    let render = |n: u8| {
        front_door_render(
            n,
            "[{setWeight: 30}, {analysis: {templates: [{templateName: ok}]}}, {pause: {}}]",
        )
    };
    c.apply(&ns.name, &render(0));
    ns.wait_phase(APP, "Healthy");
    c.apply(&ns.name, &render(1));
    let paused = ns.wait_paused_at(APP, 2);
    let runs = c.get(&ns.name, "analysisruns").unwrap();
    assert_eq!(runs["items"][0]["status"]["phase"], "Successful", "{runs}");
    std::thread::sleep(Duration::from_secs(3));
    let (report, code) = finish(&c, &ns, rec, "analysis-without-traffic", &[]);
    let found = of_rule(&report, "analysis-without-traffic");
    assert_eq!(found.len(), 1, "{:?}", rules(&report));
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("passed on revision {}", hash(&paused)))
            && summary.contains("the front door reaches checkout-api-legacy")
            && summary.contains("Successful (true)"),
        "{summary}"
    );
    assert_eq!(code, Some(1), "an error finding");
}

/// An experiment step: the real controller runs an Experiment whose ReplicaSet
/// (`<experiment>-canary`, owned by the Experiment) runs the canary's template, its pods
/// selected by the Service of every pod. Its hash label is its own (1.10.2 hashes the
/// experiment's template, which is not byte for byte the rollout's), and no rule counts its
/// pods as the revision's.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_28_experiment_pods_are_not_the_revisions() {
    let c = cluster();
    let ns = Namespace::new(&c, "experiment");
    let file = rec_path(&c, "experiment");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let steps = "[{setWeight: 25}, {experiment: {duration: 6s, templates: [{name: canary, specRef: canary}]}}, {pause: {}}]";
    let render = |image| Render {
        image,
        steps,
        ..Render::default()
    };
    c.apply(&ns.name, &render(0).yaml());
    ns.wait_phase(APP, "Healthy");
    c.apply(&ns.name, &render(1).yaml());
    // While the experiment runs.
    let canary = ns.wait_status(APP, "the experiment's ReplicaSet up", |s| {
        s["currentStepIndex"] == 1
            && c.get(&ns.name, "replicasets").is_some_and(|rs| {
                rs["items"].as_array().unwrap().iter().any(|r| {
                    r["metadata"]["ownerReferences"][0]["kind"] == "Experiment"
                        && r["status"]["readyReplicas"].as_i64().unwrap_or(0) > 0
                })
            })
    });
    let sets = c.get(&ns.name, "replicasets").unwrap();
    let experiment = sets["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metadata"]["ownerReferences"][0]["kind"] == "Experiment")
        .unwrap();
    let own = experiment["metadata"]["labels"]["rollouts-pod-template-hash"]
        .as_str()
        .unwrap();
    assert_ne!(
        own,
        hash(&canary),
        "the experiment's ReplicaSet runs the canary's image under a hash of its own: {experiment}"
    );
    assert_eq!(
        experiment["spec"]["template"]["spec"]["containers"][0]["image"],
        image(1),
        "{experiment}"
    );
    ns.wait_paused_at(APP, 2);
    std::thread::sleep(Duration::from_secs(3));
    let (report, code) = finish(&c, &ns, rec, "experiment-step", &[]);
    assert_eq!(rules(&report), Vec::<String>::new());
    assert_eq!(code, Some(0));
}

/// Seed incident 004 on a plain Deployment: `revisionHistoryLimit: 0`, an image by tag, and a
/// release rendered twice 5 s apart, the second render changing only `checksum/config`. The
/// real Deployment controller rolls out both; the findings name the Deployment with its own
/// commands, and `check deployment/web` verifies it once rolled out.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_28_a_plain_deployment_rendered_twice_without_history() {
    let c = cluster();
    let ns = Namespace::new(&c, "deployment");
    let file = rec_path(&c, "deployment");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let render = |tag: u8, checksum: &str| {
        format!(
            r#"{svc}apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 3
  revisionHistoryLimit: 0
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata:
      labels: {{app: web}}
      annotations: {{checksum/config: "{checksum}"}}
    spec:
      containers: [{{name: app, image: "registry.example/web:1.{tag}"}}]
"#,
            svc = service_yaml("web", "{app: web}"),
        )
    };
    let rolled_out = |generation: i64| {
        until(
            &format!("deployment web rolled out generation {generation}"),
            real::SETTLE,
            || {
                let d = c.get(&ns.name, "deployment/web")?;
                let st = &d["status"];
                (st["observedGeneration"] == generation
                    && st["updatedReplicas"] == 3
                    && st["availableReplicas"] == 3
                    && st["replicas"] == 3)
                    .then_some(d)
            },
            || format!("{:?}", c.get(&ns.name, "deployment/web")),
        )
    };
    c.apply(&ns.name, &render(0, "c0"));
    rolled_out(1);
    c.apply(&ns.name, &render(1, "c1"));
    std::thread::sleep(Duration::from_secs(5));
    c.apply(&ns.name, &render(1, "c2"));
    rolled_out(3);
    // The controller kept no old ReplicaSet: `kubectl rollout undo` has nothing.
    let sets = c.get(&ns.name, "replicasets").unwrap();
    until(
        "old ReplicaSets deleted",
        real::SETTLE,
        || {
            let sets = c.get(&ns.name, "replicasets")?;
            (sets["items"].as_array()?.len() == 1).then_some(())
        },
        || format!("{sets}"),
    );
    let mut cmd = c.forensics();
    cmd.args(["check", "deployment/web", "-n", &ns.name]);
    let o = run_bounded(cmd);
    let out = text(&o.stdout);
    assert!(
        out.contains("RollingUpdate revision 3") && out.contains("3 of 3 updated"),
        "{out}{}",
        text(&o.stderr)
    );
    // Warnings only: adopted.
    assert_eq!(o.status.code(), Some(0), "{out}");
    std::thread::sleep(Duration::from_secs(2));
    // No rollout here to compare the plugin's view of: kubectl's own view of the Deployment,
    // live and from the served recording, must agree instead.
    let history = |kubeconfig: &std::path::Path| {
        let mut cmd = std::process::Command::new(c.bin.join("kubectl"));
        cmd.arg("--kubeconfig").arg(kubeconfig).args([
            "-n",
            &ns.name,
            "rollout",
            "history",
            "deployment/web",
        ]);
        let o = run_bounded(cmd);
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let live = history(&c.kubeconfig);
    rec.stop(&c);
    let served = common::serve(&file, &[]);
    assert_eq!(
        history(&served.kubeconfig),
        live,
        "kubectl rollout history of the served recording"
    );
    keep(&file, "deployment-rendered-twice");
    assert_audit_truth(&c, &ns.name, &file);
    let (report, _) = analyze(&c, &file);
    let found = |rule: &str| {
        of_rule(&report, rule)
            .iter()
            .map(|f| f["summary"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        found("no-rollback-history"),
        vec![
            "Deployment web keeps no old ReplicaSets (revisionHistoryLimit: 0): `kubectl rollout undo` has nothing to go back to"
        ],
        "{:?}",
        rules(&report)
    );
    assert_eq!(
        found("image-not-pinned"),
        vec![
            "image registry.example/web:1.0 is referenced by tag, not by digest",
            "image registry.example/web:1.1 is referenced by tag, not by digest"
        ]
    );
    let double = found("double-render");
    assert_eq!(double.len(), 1, "{:?}", rules(&report));
    assert!(
        double[0].starts_with("Deployment web was rendered twice")
            && double[0].contains("generation 2 at")
            && double[0].contains("generation 3 at")
            && double[0].contains("annotations only"),
        "{}",
        double[0]
    );
}

/// Seed incident 004's first failure mode on a plain Deployment: the first two pods of
/// `registry.example/web:1.1` pulled build A; the tag moved; a scale-up pulls build B into the
/// same ReplicaSet. kwok reports no image digest, so the test writes each pod's `imageID` as a
/// kubelet would, with a status patch once kwok has made the pod Ready (no kwok stage writes a
/// Ready pod again). The real ReplicaSet controller scales; `image-digest-drift` names the two
/// builds within one ReplicaSet, and `check deployment/web --expect-image ...@A` fails naming
/// the pods that run B.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_28_a_tag_moved_under_a_plain_deployment() {
    let c = cluster();
    let ns = Namespace::new(&c, "moved-tag");
    let file = rec_path(&c, "moved-tag");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let digest = |build: char| format!("sha256:{}", build.to_string().repeat(64));
    let deployment = |replicas: u8| {
        format!(
            r#"{svc}apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers: [{{name: app, image: "registry.example/web:1.1"}}]
"#,
            svc = service_yaml("web", "{app: web}"),
        )
    };
    // Waits for `ready` Ready pods, then writes `build` as the imageID of those that have none.
    let pull = |ready: usize, build: char| -> Vec<String> {
        let pods = until(
            &format!("{ready} pods of web Ready"),
            real::SETTLE,
            || {
                let pods = c.get(&ns.name, "pods")?;
                let items = pods["items"].as_array()?.clone();
                let is_ready = |p: &Value| {
                    p["status"]["conditions"].as_array().is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
                };
                (items.len() == ready && items.iter().all(is_ready)).then_some(items)
            },
            || format!("{:?}", c.get(&ns.name, "pods")),
        );
        let mut pulled = Vec::new();
        for p in pods {
            if p["status"]["containerStatuses"][0]["imageID"]
                .as_str()
                .is_some_and(|id| !id.is_empty())
            {
                continue;
            }
            let name = p["metadata"]["name"].as_str().unwrap().to_owned();
            let patch = format!(
                r#"[{{"op": "add", "path": "/status/containerStatuses/0/imageID", "value": "registry.example/web@{}"}}]"#,
                digest(build)
            );
            c.ok(
                &[
                    "-n",
                    &ns.name,
                    "patch",
                    "pod",
                    &name,
                    "--subresource=status",
                    "--type=json",
                    "-p",
                    &patch,
                ],
                None,
            );
            pulled.push(name);
        }
        pulled
    };
    c.apply(&ns.name, &deployment(2));
    let first = pull(2, 'a');
    assert_eq!(first.len(), 2);
    c.apply(&ns.name, &deployment(4));
    let moved = pull(4, 'b');
    assert_eq!(moved.len(), 2);
    std::thread::sleep(Duration::from_secs(2));
    let mut cmd = c.forensics();
    cmd.args(["check", "deployment/web", "-n", &ns.name, "--expect-image"])
        .arg(format!("registry.example/web:1.1@{}", digest('a')));
    let o = run_bounded(cmd);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", text(&o.stderr));
    for pod in &moved {
        assert!(
            out.contains(&format!(
                "pod {pod} of the current revision {}: container app runs registry.example/web@{}, not {}",
                pod.rsplit('-').nth(1).unwrap(),
                digest('b'),
                digest('a')
            )),
            "{out}"
        );
    }
    for pod in &first {
        assert!(!out.contains(&format!("pod {pod} ")), "{out}");
    }
    rec.stop(&c);
    keep(&file, "deployment-moved-tag");
    assert_audit_truth(&c, &ns.name, &file);
    let (report, _) = analyze(&c, &file);
    let drift: Vec<&str> = of_rule(&report, "image-digest-drift")
        .iter()
        .map(|f| f["summary"].as_str().unwrap())
        .collect();
    assert_eq!(drift.len(), 1, "{:?}", rules(&report));
    assert!(
        drift[0].contains("ran as two digests within ReplicaSet web-")
            && first
                .iter()
                .any(|p| drift[0].contains(&format!("aaaaaaaaaaaa in {p}")))
            && moved
                .iter()
                .any(|p| drift[0].contains(&format!("bbbbbbbbbbbb in {p}"))),
        "{}",
        drift[0]
    );
    let mut all = rules(&report);
    all.sort();
    all.dedup();
    assert_eq!(all, vec!["image-digest-drift", "image-not-pinned"]);
}

/// What deploy/ ships is accepted by a real API server (server-side dry run, strict field
/// validation): the recorder's RBAC, the flight recorder with its metrics Service, the
/// prometheus-operator's ServiceMonitor and PrometheusRule (their CRDs installed by up.sh), and
/// the PostSync Job with its init container.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_29_the_deploy_manifests_are_accepted_by_a_real_api_server() {
    let c = cluster();
    let ns = Namespace::new(&c, "deploy-dry-run");
    // The namespaces must exist for the dry run of what goes in them: the recorder's, and
    // Argo CD's (the PostSync Role reads Applications there).
    for name in ["rollout-forensics", "argocd"] {
        c.ok(
            &["apply", "-f", "-"],
            Some(&format!(
                "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n"
            )),
        );
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = |f: &str| root.join(f).to_str().unwrap().to_owned();
    let out = c.ok(
        &[
            "apply",
            "--dry-run=server",
            "--validate=strict",
            "-f",
            &file("deploy/rbac.yaml"),
            "-f",
            &file("deploy/flight-recorder.yaml"),
            "-f",
            &file("deploy/monitoring.yaml"),
        ],
        None,
    );
    for made in [
        "deployment.apps/flight-recorder",
        "service/flight-recorder-metrics",
        "servicemonitor.monitoring.coreos.com/rollout-forensics",
        "prometheusrule.monitoring.coreos.com/rollout-forensics",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(made) && l.ends_with("(server dry run)")),
            "{made}: {out}"
        );
    }
    // Its RBAC applied (another test may have made the Role in argocd already); the Job,
    // named by generateName (a hook Argo CD creates per sync), created.
    let rbac = real::manifests("deploy/check-postsync.yaml", &ns.name, &["Job"]);
    let out = c.ok(
        &["apply", "--dry-run=server", "--validate=strict", "-f", "-"],
        Some(&rbac),
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("role.rbac.authorization.k8s.io/")
                && l.ends_with("(server dry run)")),
        "{out}"
    );
    let job = real::manifests(
        "deploy/check-postsync.yaml",
        &ns.name,
        &["ServiceAccount", "Role", "RoleBinding"],
    );
    assert!(
        job.contains("kind: Job") && !job.contains("kind: Role"),
        "{job}"
    );
    let out = c.ok(
        &["create", "--dry-run=server", "--validate=strict", "-f", "-"],
        Some(&job),
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("job.batch/") && l.ends_with("(server dry run)")),
        "{out}"
    );
}

/// The changes of `rollout-forensics timeline FILE -o json` from `source`, one line each.
fn timeline_changes(c: &real::Cluster, file: &std::path::Path, source: &str) -> Vec<String> {
    let mut cmd = c.forensics();
    cmd.args(["timeline", "-o", "json"]).arg(file);
    let o = run_bounded(cmd);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut lines = Vec::new();
    for t in v.as_array().into_iter().flatten() {
        for e in t["entries"].as_array().into_iter().flatten() {
            if e["source"] == source {
                for c in e["changes"].as_array().into_iter().flatten() {
                    lines.push(c.as_str().unwrap_or_default().to_owned());
                }
            }
        }
    }
    lines
}

/// Test 4: a canary whose second step is an analysis with a `web` metric, answered by a
/// loopback server of this test: the real controller runs the AnalysisRun against it and goes
/// on to Healthy.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_25_canary_with_a_web_metric_analysis() {
    let c = cluster();
    let metric = metric_server(r#"{"ok": true}"#);
    let ns = Namespace::new(&c, "analysis");
    let file = rec_path(&c, "analysis");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    let template = web_template(&metric);
    c.apply(&ns.name, &template);
    let steps = "[{setWeight: 20}, {analysis: {templates: [{templateName: ok}]}}, {setWeight: 60}]";
    c.apply(
        &ns.name,
        &Render {
            steps,
            ..Render::default()
        }
        .yaml(),
    );
    ns.wait_phase(APP, "Healthy");
    c.apply(
        &ns.name,
        &Render {
            image: 1,
            steps,
            ..Render::default()
        }
        .yaml(),
    );
    ns.wait_status(APP, "Healthy on the new revision after its analysis", |s| {
        s["phase"] == "Healthy" && s["stableRS"] == s["currentPodHash"]
    });
    let runs = c.get(&ns.name, "analysisruns").unwrap();
    let run = &runs["items"][0];
    assert_eq!(run["status"]["phase"], "Successful", "{runs}");
    assert!(
        metric.hits.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "the controller asked the metric"
    );
    std::thread::sleep(Duration::from_secs(2));
    let (report, code) = finish(&c, &ns, rec, "canary-web-analysis", &[]);
    assert_eq!(rules(&report), Vec::<String>::new());
    assert_eq!(code, Some(0));
}

/// What the live-against-served comparison takes out is only what the plugin measures to its
/// own clock; a status, a name or a count that differs still fails it.
#[test]
fn the_plugin_views_compared_differ_only_in_the_clock() {
    let live = "⧉ checkout-api-6f99d57796  ReplicaSet  ✔ Healthy  2m5s  delay:18s\n\n";
    let served = "⧉ checkout-api-6f99d57796   ReplicaSet  ✔ Healthy  2m9s  delay:14s";
    assert_eq!(real::comparable(live), real::comparable(served));
    for other in [
        "⧉ checkout-api-6f99d57796  ReplicaSet  ✔ Healthy  2m9s  delay:passed",
        "⧉ checkout-api-6f99d57796  ReplicaSet  • ScaledDown  2m9s  delay:14s",
        "⧉ checkout-api-5599dbf775  ReplicaSet  ✔ Healthy  2m9s  delay:14s",
        "⧉ checkout-api-6f99d57796  ReplicaSet  ✔ Healthy  2m9s  ready:1/1",
    ] {
        assert_ne!(real::comparable(live), real::comparable(other), "{other}");
    }
}

/// The seed incident played by the real Argo CD: a multi-source Application (the chart with the
/// image as inline parameters, the values file from a second repository) syncs automatically.
/// The pipeline writes the new image into the Application, which Argo CD applies at once, and
/// pushes the config change to the values repository, which Argo CD resolves at its next
/// refresh: two renders, the second changing only `checksum/config`, and the real Argo Rollouts
/// controller restarts the canary at its pause.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_49_seed_000_rendered_twice_by_the_real_argo_cd() {
    use real::argocd::{
        GitRepo, NEXT_REFRESH, application, chart, image_parameters, set_parameters, syncs,
    };
    let c = cluster();
    c.argocd();
    let log_from = controller_log_len(&c);
    let ns = Namespace::new(&c, "argocd-seed");
    let repos = tempfile::tempdir().unwrap();
    let charts = GitRepo::new(repos.path(), "charts");
    let values = GitRepo::new(repos.path(), "values");
    charts.commit(&chart(STEPS), "checkout-api chart");
    let values_file = |flag: &str| format!("config: {{FEATURE_CHECKOUT_V2: \"{flag}\"}}\n");
    let v1 = values.commit(
        &[("checkout-api/values.yaml", &values_file("off"))],
        "v2 off",
    );
    c.apply(
        &ns.name,
        &application(
            &ns.name,
            APP,
            (&charts, "checkout-api"),
            &values,
            &image_parameters(0),
            true,
        ),
    );
    let app = c.wait_app(&ns.name, APP, "synced and healthy", |a| {
        a["status"]["sync"]["status"] == "Synced" && a["status"]["health"]["status"] == "Healthy"
    });
    assert_eq!(syncs(&app), 1, "{}", app["status"]);
    let stable = hash(&ns.wait_phase(APP, "Healthy"));

    let file = rec_path(&c, "argocd-seed");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    // The pipeline: the image into the Application, which Argo CD syncs at once ...
    set_parameters(&c, &ns.name, APP, &image_parameters(1));
    let first = hash(&ns.wait_paused_at(APP, 1));
    assert_ne!(first, stable);
    // ... and the config change into the values repository, which it reads at its next
    // refresh: the second render reaches the canary at its pause.
    into_the_next_second();
    let v2 = values.commit(&[("checkout-api/values.yaml", &values_file("on"))], "v2 on");
    let app = until(
        "Argo CD's sync of the values commit",
        NEXT_REFRESH,
        || {
            let app = c.application(&ns.name, APP);
            (syncs(&app) >= 3).then_some(app)
        },
        || c.application(&ns.name, APP)["status"].to_string(),
    );
    let second = hash(&ns.wait_paused_at(APP, 1));
    assert_ne!(
        first, second,
        "the checksum alone made a new pod-template hash"
    );
    // What the real Argo CD wrote: three automated syncs; the one of the new image deployed the
    // same revisions as the first (only the Application's parameters changed), the last one
    // the values commit.
    let history = app["status"]["history"].as_array().unwrap();
    assert_eq!(history.len(), 3, "{}", app["status"]);
    for h in history {
        assert_eq!(h["initiatedBy"]["automated"], true, "{h}");
    }
    assert_eq!(
        history[0]["revisions"], history[1]["revisions"],
        "{}",
        app["status"]
    );
    assert_eq!(history[1]["revisions"][1], v1.as_str());
    assert_eq!(history[2]["revisions"][1], v2.as_str());

    // The orphan rule decides 30 s after the restart; the recording goes past that.
    std::thread::sleep(Duration::from_secs(35));
    let (report, code) = finish(&c, &ns, rec, "argocd-seed-double-render", &[]);
    let found = rules(&report);
    assert_eq!(code, Some(1), "{found:?}");
    for rule in RESTART_RULES {
        assert!(found.iter().any(|r| r == rule), "{rule} in {found:?}");
    }
    // The two renders, named as Argo CD's history names them.
    let double = &of_rule(&report, "double-render")[0];
    let summary = double["summary"].as_str().unwrap();
    for words in [
        "sync 1 (automated)".to_owned(),
        "image.digest".to_owned(),
        "sync 2 (automated)".to_owned(),
        format!("values {} -> {}", &v1[..8], &v2[..8]),
        "checksum/config".to_owned(),
    ] {
        assert!(summary.contains(&words), "{words} in {double}");
    }
    assert!(
        double["explanation"]
            .as_str()
            .unwrap()
            .contains("written by argocd-controller and then by argocd-controller"),
        "{double}"
    );
    let restart = &of_rule(&report, "rerender-restart")[0];
    let why = restart["explanation"].as_str().unwrap();
    assert!(
        restart["summary"].as_str().unwrap().contains(&second),
        "{restart}"
    );
    assert!(
        why.contains("by argocd-controller") && !why.contains("written by rollouts-controller"),
        "the render is Argo CD's, not the controller's `resources: {{}}`: {restart}"
    );
    // The paused canary reads Suspended in Argo CD, and the report says it is by design.
    let health = of_rule(&report, "gitops-health-mismatch");
    assert!(
        health.iter().any(
            |f| f["severity"] == "info" && f["summary"].as_str().unwrap().contains("Suspended")
        ),
        "{found:?}"
    );
    // The timeline shows the Application's syncs and health beside the rollout.
    let mut timeline = c.forensics();
    timeline
        .args(["timeline", "--brief"])
        .arg(rec_path(&c, "argocd-seed"));
    let t = run_bounded(timeline);
    let t = text(&t.stdout);
    for words in [
        "Application checkout-api: sync 2 (automated)",
        "health Healthy -> Progressing",
        "health Progressing -> Suspended",
    ] {
        assert!(t.contains(words), "{words} in the timeline:\n{t}");
    }
    assert!(undecided(&report).is_empty(), "{report}");
    // The on-call paged now, and the postmortem: from what the cluster kept.
    after_the_fact(&c, &ns.name, &RESTART_RULES, log_from);
}

/// Seed 002 as Argo CD deploys it: the Ingress `shop` sends customers to
/// `checkout-api-legacy`, whose selector pins `version: v1` in the environment's values file;
/// the pipeline releases `v2` of the blue-green rollout (inline parameters), which promotes
/// itself and moves its activeService. The old revision runs on through its scale-down delay,
/// and every request through the front door still reaches it, while the real Argo CD reads
/// the Application Synced and Healthy (its Rollout health check follows the rollout's phase).
/// `check` fails on the front door; `analyze` names the bypass and the green Application.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_49_seed_002_synced_and_healthy_while_the_front_door_serves_the_old_revision() {
    use real::argocd::{GitRepo, application, front_door_chart, image_parameters, set_parameters};
    let c = cluster();
    c.argocd();
    let ns = Namespace::new(&c, "argocd-frontdoor");
    let repos = tempfile::tempdir().unwrap();
    let charts = GitRepo::new(repos.path(), "charts");
    let values = GitRepo::new(repos.path(), "values");
    charts.commit(&front_door_chart(), "shop chart");
    values.commit(
        &[("shop/values.yaml", "legacyVersion: v1\n")],
        "production pins the legacy Service",
    );
    let release = |n: u8| {
        let [tag, digest] = image_parameters(n);
        [tag, digest, ("version", format!("v{}", n + 1))]
    };
    let app = |n: u8| application(&ns.name, APP, (&charts, "shop"), &values, &release(n), true);
    c.apply(&ns.name, &app(0));
    // No ingress controller runs here: the test publishes the Ingress's address as one would
    // (Argo CD reads an Ingress without one as Progressing).
    until(
        "Argo CD's sync of Ingress shop",
        real::SETTLE,
        || c.get(&ns.name, "ingress/shop"),
        || ns.state(),
    );
    c.ok(
        &[
            "-n",
            &ns.name,
            "patch",
            "ingress",
            "shop",
            "--subresource=status",
            "--type=merge",
            "--field-manager",
            "ingress-nginx-controller",
            "-p",
            r#"{"status":{"loadBalancer":{"ingress":[{"ip":"10.96.0.80"}]}}}"#,
        ],
        None,
    );
    c.wait_app(&ns.name, APP, "synced and healthy", |a| {
        a["status"]["sync"]["status"] == "Synced" && a["status"]["health"]["status"] == "Healthy"
    });
    let old = hash(&ns.wait_phase(APP, "Healthy"));

    let file = rec_path(&c, "argocd-frontdoor");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    set_parameters(&c, &ns.name, APP, &release(1));
    let done = ns.wait_status(APP, "promoted to v2", |s| {
        s["currentPodHash"] != old.as_str()
            && s["phase"] == "Healthy"
            && s["stableRS"] == s["currentPodHash"]
            && s["blueGreen"]["activeSelector"] == s["currentPodHash"]
    });
    let new = hash(&done);
    assert_ne!(new, old);
    let app = c.wait_app(
        &ns.name,
        APP,
        "synced and healthy on the new release",
        |a| {
            real::argocd::syncs(a) == 2
                && a["status"]["sync"]["status"] == "Synced"
                && a["status"]["health"]["status"] == "Healthy"
        },
    );
    // The old revision runs on through the scale-down delay, and the legacy Service, the
    // Ingress's backend, still selects it alone.
    let legacy = c.get(&ns.name, "service/checkout-api-legacy").unwrap();
    assert_eq!(legacy["spec"]["selector"]["version"], "v1", "{legacy}");
    assert_eq!(
        selected_hash(&c, &ns.name, APP).as_deref(),
        Some(new.as_str())
    );
    let (code, out) = check(&c, &ns.name, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("front door shop.example.com/ -> ingress shop -> svc checkout-api-legacy"),
        "{out}"
    );
    // Past the settle time of the cross-object rules.
    std::thread::sleep(Duration::from_secs(15));
    let (report, code) = finish(&c, &ns, rec, "argocd-front-door-old-revision", &[]);
    assert_eq!(code, Some(1), "{:?}", rules(&report));
    assert_not_the_race(&report, "front door");
    let bypass = of_rule(&report, "front-door-bypass");
    assert_eq!(bypass.len(), 1, "{:?}", rules(&report));
    assert!(
        bypass[0]["summary"]
            .as_str()
            .unwrap()
            .contains("Ingress shop sends shop.example.com/ to Service checkout-api-legacy"),
        "{}",
        bypass[0]
    );
    // The Application read green the whole time, and the report says what that green hides.
    let green: Vec<&Value> = of_rule(&report, "gitops-health-mismatch")
        .into_iter()
        .filter(|f| f["severity"] == "warning")
        .collect();
    assert_eq!(green.len(), 1, "{:?} {}", rules(&report), app["status"]);
    let summary = green[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("reads Healthy and Synced")
            && summary.contains("Ingress shop")
            && summary.contains("checkout-api-legacy")
            && summary.contains(&new),
        "{}",
        green[0]
    );
    assert!(undecided(&report).is_empty(), "{report}");
}

/// Self-heal against the controller: the stableService's selector exported into Git with the
/// `rollouts-pod-template-hash` of the day. At the next promotion the Argo Rollouts controller
/// moves the key to the new revision; Argo CD, with self-heal, reads the Service OutOfSync
/// and writes the old hash back, and the two take turns.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_49_self_heal_fights_the_controller_over_a_pinned_selector() {
    use real::argocd::{
        GitRepo, NEXT_REFRESH, application, image_parameters, pinned_chart, set_parameters, syncs,
    };
    let c = cluster();
    c.argocd();
    let ns = Namespace::new(&c, "argocd-selfheal");
    let repos = tempfile::tempdir().unwrap();
    let charts = GitRepo::new(repos.path(), "charts");
    let values = GitRepo::new(repos.path(), "values");
    charts.commit(&pinned_chart(None), "pinned chart");
    values.commit(&[("pinned/values.yaml", "{}\n")], "values");
    c.apply(
        &ns.name,
        &application(
            &ns.name,
            APP,
            (&charts, "pinned"),
            &values,
            &image_parameters(0),
            true,
        ),
    );
    c.wait_app(&ns.name, APP, "synced and healthy", |a| {
        a["status"]["sync"]["status"] == "Synced" && a["status"]["health"]["status"] == "Healthy"
    });
    let old = hash(&ns.wait_phase(APP, "Healthy"));
    // The live Service, as the controller left it, exported into the chart.
    let pinned = charts.commit(&pinned_chart(Some(&old)), "export the live Service");
    until(
        "Argo CD's sync of the exported Service",
        NEXT_REFRESH,
        || {
            let app = c.application(&ns.name, APP);
            (app["status"]["sync"]["revisions"][0] == pinned.as_str()
                && app["status"]["sync"]["status"] == "Synced")
                .then_some(app)
        },
        || c.application(&ns.name, APP)["status"].to_string(),
    );

    let file = rec_path(&c, "argocd-selfheal");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);
    set_parameters(&c, &ns.name, APP, &image_parameters(1));
    let done = ns.wait_status(APP, "promoted", |s| {
        s["currentPodHash"] != old.as_str()
            && s["phase"] == "Healthy"
            && s["stableRS"] == s["currentPodHash"]
    });
    let new = hash(&done);
    // The fight, for as long as a pipeline would watch the release: Argo CD's self-heal
    // backoff (2 s, then 6 s, 18 s, ...) gives it four turns within the minute.
    std::thread::sleep(Duration::from_secs(60));
    let app = c.application(&ns.name, APP);
    // Read once, after the fact: the Service as the controller last left it, and the
    // Application whose last operation counts its self-heals of that Service alone.
    let mut now = c.forensics();
    // (The Application is in the rollout's namespace, where `now` looks besides Argo CD's.)
    now.args(["now", "-n", &ns.name, "-o", "json"]);
    let o = run_bounded(now);
    let listed: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("now: {e}: {}", text(&o.stderr)));
    let healed = of_rule(&listed, "selector-fight");
    assert_eq!(healed.len(), 1, "{:?} {}", rules(&listed), app["status"]);
    assert!(
        healed[0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("Argo CD's self-heal of Application checkout-api is at attempt "),
        "{}",
        healed[0]
    );
    let (report, _) = finish(&c, &ns, rec, "argocd-self-heal-fight", &[]);
    let mut timeline = c.forensics();
    timeline
        .args(["timeline", "--brief"])
        .arg(rec_path(&c, "argocd-selfheal"));
    let t = text(&run_bounded(timeline).stdout);
    assert!(
        t.contains("Application checkout-api: self-heal 2: a sync of Service checkout-api"),
        "{t}"
    );
    assert_not_the_race(&report, "self-heal");
    // Each write-back was a self-heal sync of the Service alone: Argo CD keeps no history
    // entry of such a partial sync, only the count in its last operation.
    assert_eq!(syncs(&app), 2, "{}", app["status"]);
    let op = &app["status"]["operationState"]["operation"]["sync"];
    assert!(
        op["autoHealAttemptsCount"].as_i64().unwrap_or(0) >= 2,
        "{}",
        app["status"]
    );
    assert_eq!(
        op["resources"],
        serde_json::json!([{"kind": "Service", "name": APP}]),
        "{}",
        app["status"]
    );
    let fight = of_rule(&report, "selector-fight");
    assert_eq!(fight.len(), 1, "{:?}", rules(&report));
    let summary = fight[0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("argocd-controller and the Argo Rollouts controller take turns on the selector of Service checkout-api")
            && summary.contains(&format!("back to {old} and the controller set {new} again")),
        "{}",
        fight[0]
    );
    assert_eq!(fight[0]["subject"]["name"], APP);
    let commands = fight[0]["remedy"]["commands"].to_string();
    assert!(
        commands.contains(&format!("argocd app diff {APP} -N {}", ns.name)),
        "{commands}"
    );
}

/// `lint` of what the real helm renders (the helm of up.sh, which Argo CD's repo server runs)
/// finds each seed's failure before the sync, and nothing in a clean render: seed 002's legacy
/// Service pinned to `version: v1` by the environment's values and the Ingress in front of it;
/// a selector exported with the controller's hash; an image by tag; a `rollme` annotation of
/// `randAlphaNum` (two renders differ); seed 000's Application with its values on a branch.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_50_lint_finds_each_seed_in_real_helm_renders() {
    use real::argocd::{
        GitRepo, application, chart, digest, front_door_chart, helm_template, image_parameters,
        pinned_chart,
    };
    let c = cluster();
    let lint = |render: &str| -> Vec<(String, String)> {
        let mut l = c.forensics();
        l.args(["lint", "-", "-o", "json", "-n", "shop"]);
        let o = real::run_with_input(l, Some(render));
        assert_ne!(o.status.code(), Some(2), "{}\n{render}", text(&o.stderr));
        let report: Value = serde_json::from_slice(&o.stdout).unwrap();
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["rule"].as_str().unwrap().to_owned(),
                    format!(
                        "{} {}",
                        f["name"].as_str().unwrap(),
                        f["field"].as_str().unwrap()
                    ),
                )
            })
            .collect()
    };
    let pin = format!("image.digest={}", digest(1));
    let found = |rule: &str, at: &str| (rule.to_owned(), at.to_owned());

    // Seed 002: the environment's values pin the legacy Service to v1; the release is v2.
    let render = helm_template(
        &c,
        &front_door_chart(),
        "shop",
        &["legacyVersion: v1\n"],
        &["version=v2", &pin],
    );
    assert_eq!(
        lint(&render),
        [
            found(
                "service-selector-mismatch",
                "checkout-api-legacy spec.selector.version"
            ),
            found(
                "front-door-bypass",
                "shop spec.rules.0.http.paths.0.backend.service.name"
            ),
        ]
    );
    // The same chart with the environment's values right: nothing.
    let render = helm_template(
        &c,
        &front_door_chart(),
        "shop",
        &["legacyVersion: v2\n"],
        &["version=v2", &pin],
    );
    assert_eq!(
        lint(&render),
        [found(
            "front-door-bypass",
            "shop spec.rules.0.http.paths.0.backend.service.name"
        )],
        "the Ingress still bypasses the activeService"
    );
    // The controller's key exported into the chart.
    let render = helm_template(
        &c,
        &pinned_chart(Some("5699dbb5c7")),
        "pinned",
        &[],
        &[&pin],
    );
    assert_eq!(
        lint(&render),
        [found(
            "selector-fight",
            "checkout-api spec.selector.rollouts-pod-template-hash"
        )]
    );
    // The seed's chart, clean, then with the image by tag, then with a `rollme`.
    let values = "config: {FEATURE_CHECKOUT_V2: \"on\"}\n";
    let clean = helm_template(&c, &chart(STEPS), "checkout-api", &[values], &[&pin]);
    assert_eq!(lint(&clean), []);
    let by_tag = helm_template(&c, &chart(STEPS), "checkout-api", &[values], &[]);
    assert_eq!(
        lint(&by_tag),
        [found(
            "image-not-pinned",
            "checkout-api spec.template.spec.containers.0.image"
        )]
    );
    let rollme: Vec<(&str, String)> = chart(STEPS)
        .into_iter()
        .map(|(p, s)| {
            let s = s.replace(
                "      annotations:\n",
                "      annotations:\n        rollme: {{ randAlphaNum 5 | quote }}\n",
            );
            (p, s)
        })
        .collect();
    let once = helm_template(&c, &rollme, "checkout-api", &[values], &[&pin]);
    let twice = helm_template(&c, &rollme, "checkout-api", &[values], &[&pin]);
    assert_ne!(once, twice, "randAlphaNum renders differently each time");
    assert_eq!(
        lint(&once),
        [found(
            "hash-only-change",
            "checkout-api spec.template.metadata.annotations.rollme"
        )]
    );
    // The two renders given together: the value that differs between them is named as such.
    let mut l = c.forensics();
    l.args(["lint", "-", "-o", "json", "-n", "shop"]);
    let o = real::run_with_input(l, Some(&format!("{once}\n---\n{twice}")));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let compared: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["message"]
                .as_str()
                .unwrap()
                .contains("is rendered twice in the input and the renders differ only in the pod template's annotations rollme")
        })
        .collect();
    assert_eq!(compared.len(), 1, "{report}");
    // Seed 000's Application: the values repository at `main` beside the inline image.
    let repos = tempfile::tempdir().unwrap();
    let charts = GitRepo::new(repos.path(), "charts");
    let values_repo = GitRepo::new(repos.path(), "values");
    let app = application(
        "shop",
        APP,
        (&charts, "checkout-api"),
        &values_repo,
        &image_parameters(1),
        true,
    );
    assert_eq!(
        lint(&app),
        [found(
            "double-render",
            "checkout-api spec.sources.1.targetRevision"
        )]
    );
}

/// Seed 000's chart with the PreSync gate of `deploy/lint-presync.yaml` among its templates.
fn gated_chart() -> Vec<(&'static str, String)> {
    let gate = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/lint-presync.yaml"),
    )
    .unwrap();
    let mut files = real::argocd::chart(STEPS);
    files.push(("checkout-api/templates/gate.yaml", gate));
    files
}

/// A render of `gated_chart`, taken apart: the release's own objects, the gate's permissions
/// (its ServiceAccount, Role and RoleBinding), and the render the gate's ConfigMap hands its
/// Job.
struct GatedRender {
    release: String,
    rbac: String,
    gate_input: String,
    job: Value,
}

fn gated_render(c: &real::Cluster, ns: &str, image: u8, flag: &str) -> GatedRender {
    let values = format!("config: {{FEATURE_CHECKOUT_V2: \"{flag}\"}}\n");
    let render = real::argocd::helm_template_in(
        c,
        Some(ns),
        &gated_chart(),
        "checkout-api",
        &[&values],
        &[
            &format!("image.tag=1.{image}"),
            &format!("image.digest={}", real::argocd::digest(image)),
        ],
    );
    let (mut release, mut rbac, mut gate_input, mut job) =
        (Vec::new(), Vec::new(), String::new(), Value::Null);
    for doc in render.split("\n---\n") {
        let v: Value = yaml_serde::from_str(doc).unwrap();
        if v.is_null() {
            continue;
        }
        let hook = v["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PreSync";
        match (hook, v["kind"].as_str().unwrap()) {
            (false, _) => release.push(doc.to_owned()),
            (true, "ConfigMap") => {
                gate_input = v["data"]["render.yaml"].as_str().unwrap().to_owned();
            }
            (true, "Job") => job = v,
            (true, _) => rbac.push(doc.to_owned()),
        }
    }
    assert_eq!(rbac.len(), 3, "{render}");
    assert!(!gate_input.is_empty() && job.is_object(), "{render}");
    GatedRender {
        release: release.join("\n---\n"),
        rbac: rbac.join("\n---\n"),
        gate_input,
        job,
    }
}

/// `rollout-forensics lint --live` as the gate's Job runs it, with its own permissions
/// (`kubeconfig`, the gate's ServiceAccount): the arguments of `pod`'s container (a pod
/// template's spec, or a pod's), `input` (its ConfigMap's render) at the path it mounts. The
/// exit code and the JSON report.
fn run_gate(
    c: &real::Cluster,
    pod: &Value,
    input: &str,
    kubeconfig: &std::path::Path,
) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("render.yaml"), input).unwrap();
    let container = &pod["containers"][0];
    assert_eq!(
        pod["volumes"][0]["configMap"]["name"], "rollout-forensics-gate-render",
        "{pod}"
    );
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    let mut cmd = c.forensics();
    for a in container["args"].as_array().unwrap() {
        let a = a.as_str().unwrap();
        match a.strip_prefix(mount) {
            Some(rest) => cmd.arg(format!("{}{rest}", dir.path().display())),
            None => cmd.arg(a),
        };
    }
    cmd.arg("--kubeconfig").arg(kubeconfig).args(["-o", "json"]);
    let o = run_bounded(cmd);
    assert_ne!(o.status.code(), Some(2), "{}", text(&o.stderr));
    (o.status.code(), serde_json::from_slice(&o.stdout).unwrap())
}

impl GatedRender {
    fn run(&self, c: &real::Cluster, kubeconfig: &std::path::Path) -> (Option<i32>, Value) {
        run_gate(
            c,
            &self.job["spec"]["template"]["spec"],
            &self.gate_input,
            kubeconfig,
        )
    }
}

/// The gate before a sync, on the real controller: seed 000's chart rendered by the real helm,
/// applied as Argo CD applies it, with `lint --live` run as the PreSync Job of
/// `deploy/lint-presync.yaml` runs it (its arguments, its render, its ServiceAccount's
/// get/list). The image's render passes (nothing in progress); the config's render, while the
/// canary is paused at step 1, is refused with the revision and the pause; applied anyway, the
/// real controller restarts the canary as the gate said, and `analyze` finds the restart.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_50_the_gate_refuses_a_checksum_only_render_of_a_paused_canary() {
    let c = cluster();
    let ns = Namespace::new(&c, "gate");
    let r0 = gated_render(&c, &ns.name, 0, "off");
    c.apply(&ns.name, &r0.rbac);
    let kubeconfig = c.service_account_kubeconfig(
        &ns.name,
        "rollout-forensics-gate",
        &ns.name,
        &c.home.path().join("gate.kubeconfig"),
    );
    // The first sync: nothing of the release in the cluster yet.
    let (code, report) = r0.run(&c, &kubeconfig);
    assert_eq!(code, Some(0), "{report}");
    assert!(
        report["live"]["notes"][0]
            .as_str()
            .unwrap()
            .ends_with("not in the cluster; applying it starts its first revision"),
        "{report}"
    );
    c.apply(&ns.name, &r0.release);
    let stable = hash(&ns.wait_phase(APP, "Healthy"));
    let file = rec_path(&c, "gate");
    let rec = Recorder::start(&c, &ns.name, &file, &[]);

    // The image: a new release of a promoted rollout passes.
    let r1 = gated_render(&c, &ns.name, 1, "off");
    let (code, report) = r1.run(&c, &kubeconfig);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["findings"], serde_json::json!([]), "{report}");
    assert!(
        report["live"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().ends_with(
                "no revision in progress; applying the render starts a new one (1 change)"
            )),
        "{report}"
    );
    c.apply(&ns.name, &r1.release);
    let paused = ns.wait_paused_at(APP, 1);
    let first = hash(&paused);
    assert_ne!(first, stable);
    let since = paused["status"]["pauseConditions"][0]["startTime"]
        .as_str()
        .unwrap()
        .to_owned();

    // The config: refused, with where the canary is and what the render changes.
    let r2 = gated_render(&c, &ns.name, 1, "on");
    let (code, report) = r2.run(&c, &kubeconfig);
    assert_eq!(code, Some(1), "{report}");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report}");
    let f = &findings[0];
    assert_eq!(
        (&f["rule"], &f["severity"], &f["field"]),
        (
            &Value::from("pause-lost"),
            &Value::from("error"),
            &Value::from("spec.template.metadata.annotations.checksum/config")
        ),
        "{f}"
    );
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "Rollout checkout-api, paused at step 1 of 4 of {first} since {since}; the change is annotations only (metadata.annotations[\"checksum/config\"]: "
        )) && message.contains("applying it restarts the canary at step 0 on a new revision: the pause is lost"),
        "{message}"
    );
    // Nothing changed while the gate looked.
    assert_eq!(hash(&ns.rollout(APP)), first);

    // Applied anyway: the real controller restarts the canary, as the gate said.
    c.apply(&ns.name, &r2.release);
    let second = ns.wait_status(APP, "a new revision paused at step 1", |s| {
        s["currentPodHash"] != first.as_str()
            && s["currentStepIndex"] == 1
            && s["pauseConditions"].is_array()
    });
    let second = hash(&second);
    // The orphan rule decides 30 s after the restart; the recording goes past that.
    std::thread::sleep(Duration::from_secs(35));
    let (report, code) = finish(&c, &ns, rec, "gate-refused-render-applied-anyway", &[]);
    let found = rules(&report);
    assert_eq!(code, Some(1), "{found:?}");
    let lost = of_rule(&report, "pause-lost");
    assert_eq!(lost.len(), 1, "{found:?}");
    let summary = lost[0]["summary"].as_str().unwrap();
    // The report dates the pause when the recorder saw it; the controller's startTime is the
    // same moment cut to the second, so the two may fall on either side of a second's edge.
    let seen = summary
        .split_once(&format!("{first} had been paused at it since "))
        .and_then(|(_, rest)| rest.split_once(' '))
        .and_then(|(t, _)| rf_analyzer::parse_rfc3339(t))
        .unwrap_or_else(|| panic!("the pause the gate named, lost: {summary}"));
    let started = rf_analyzer::parse_rfc3339(&since).unwrap();
    assert!(
        (0..5_000_000_000).contains(&(seen.0 - started.0)),
        "the pause the gate named ({since}), seen then: {summary}"
    );
    let restart = &of_rule(&report, "rerender-restart")[0];
    assert!(
        restart["summary"].as_str().unwrap().contains(&second),
        "to the restart the gate predicted: {restart}"
    );
    assert!(
        found.iter().any(|r| r == "config-only-rerender"),
        "{found:?}"
    );
    assert!(undecided(&report).is_empty(), "{report}");
}

/// The node label no node of the cluster has: the gate's Job pods wait for the test, which
/// plays their kubelet.
const TEST_KUBELET: &str = "rollout-forensics.test/kubelet";

/// Plays the kubelet of the gate's Job pods in `ns` until `stop`: each new pod's container is
/// run as [`run_gate`] runs it (its arguments, its ConfigMap's render as the cluster holds it,
/// its ServiceAccount's token), and the pod's phase set to what the container's exit says; the
/// real Job controller and Argo CD take it from there. Each run's exit code and report go to
/// `ran`, in order.
fn play_gate_pods(
    c: &real::Cluster,
    ns: &str,
    stop: &std::sync::atomic::AtomicBool,
    ran: &std::sync::Mutex<Vec<(Option<i32>, Value)>>,
) {
    let mut done = std::collections::BTreeSet::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(300));
        let Some(pods) = c.get(ns, "pods") else {
            continue;
        };
        for pod in pods["items"].as_array().into_iter().flatten() {
            let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_owned();
            let gate = pod["metadata"]["labels"]["job-name"] == "rollout-forensics-gate";
            if !gate || pod["status"]["phase"] != "Pending" || done.contains(&uid) {
                continue;
            }
            done.insert(uid.clone());
            let account = pod["spec"]["serviceAccountName"].as_str().unwrap();
            let kubeconfig = c.service_account_kubeconfig(
                ns,
                account,
                ns,
                &c.home.path().join(format!("{account}.kubeconfig")),
            );
            let cm = pod["spec"]["volumes"][0]["configMap"]["name"]
                .as_str()
                .unwrap();
            // The hook's render, made in the wave before the Job's.
            let Some(input) = c.get(ns, &format!("configmap/{cm}")) else {
                panic!("the gate's pod {uid} before its ConfigMap {cm}");
            };
            let input = input["data"]["render.yaml"].as_str().unwrap().to_owned();
            let (code, report) = run_gate(c, &pod["spec"], &input, &kubeconfig);
            let phase = if code == Some(0) {
                "Succeeded"
            } else {
                "Failed"
            };
            let name = pod["metadata"]["name"].as_str().unwrap();
            c.ok(
                &[
                    "-n",
                    ns,
                    "patch",
                    "pod",
                    name,
                    "--subresource",
                    "status",
                    "--type",
                    "merge",
                    "-p",
                    &serde_json::json!({"status": {"phase": phase}}).to_string(),
                ],
                None,
            );
            ran.lock().unwrap().push((code, report));
        }
    }
}

/// Seed 000 with the gate in front of the sync: the chart carries `deploy/lint-presync.yaml`,
/// and the real Argo CD runs it as a PreSync hook at every sync (its ServiceAccount, Role,
/// RoleBinding and render first, then the Job, whose pod this test runs as a kubelet would).
/// The install and the image's sync pass the gate; the values commit, which changes only
/// `checksum/config` while the canary is paused at step 1, is refused: the hook Job fails, the
/// real Job controller and Argo CD fail the sync, and the rollout keeps its revision and its
/// pause. The recording shows no restart.
#[test]
#[ignore = "needs a real cluster: RF_CLUSTER=DIR of tests/cluster/up.sh, or tests/cluster/run.sh"]
fn issue_49_the_presync_gate_stops_seed_000s_second_render() {
    use real::argocd::{GitRepo, NEXT_REFRESH, application, image_parameters, set_parameters};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    let c = cluster();
    c.argocd();
    let ns = Namespace::new(&c, "argocd-gate");
    let repos = tempfile::tempdir().unwrap();
    let charts = GitRepo::new(repos.path(), "charts");
    let values = GitRepo::new(repos.path(), "values");
    let chart: Vec<(&str, String)> = gated_chart()
        .into_iter()
        .map(|(p, s)| {
            if p.ends_with("gate.yaml") {
                let placed = s.replace(
                    "      restartPolicy: Never\n",
                    &format!("      restartPolicy: Never\n      nodeSelector: {{{TEST_KUBELET}: \"true\"}}\n"),
                );
                assert_ne!(placed, s);
                (p, placed)
            } else {
                (p, s)
            }
        })
        .collect();
    charts.commit(&chart, "checkout-api chart with the gate");
    let values_file = |flag: &str| format!("config: {{FEATURE_CHECKOUT_V2: \"{flag}\"}}\n");
    values.commit(
        &[("checkout-api/values.yaml", &values_file("off"))],
        "v2 off",
    );
    let stop = AtomicBool::new(false);
    let ran = Mutex::new(Vec::new());
    /// Stops the kubelet's loop however the test ends (a failed assertion included), so
    /// that the scope can join it.
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|scope| {
        let kubelet = scope.spawn(|| play_gate_pods(&c, &ns.name, &stop, &ran));
        let stopping = Stop(&stop);
        let ops = |app: &Value| app["status"]["operationState"]["phase"].clone();
        c.apply(
            &ns.name,
            &application(
                &ns.name,
                APP,
                (&charts, "checkout-api"),
                &values,
                &image_parameters(0),
                false,
            ),
        );
        c.wait_app(&ns.name, APP, "installed past the gate", |a| {
            a["status"]["sync"]["status"] == "Synced"
                && a["status"]["health"]["status"] == "Healthy"
                && ops(a) == "Succeeded"
        });
        let stable = hash(&ns.wait_phase(APP, "Healthy"));
        let file = rec_path(&c, "argocd-gate");
        let rec = Recorder::start(&c, &ns.name, &file, &[]);
        set_parameters(&c, &ns.name, APP, &image_parameters(1));
        let paused = ns.wait_paused_at(APP, 1);
        let first = hash(&paused);
        assert_ne!(first, stable);
        let v2 = values.commit(&[("checkout-api/values.yaml", &values_file("on"))], "v2 on");
        // Argo CD retries a failed automated sync (the operation carries `retry: {limit: 5}`)
        // and runs the hooks again each time; the gate refuses every attempt.
        let app = until(
            "Argo CD's sync of the values commit, refused by the gate",
            NEXT_REFRESH,
            || {
                let app = c.application(&ns.name, APP);
                let result = &app["status"]["operationState"]["syncResult"];
                let refused = result["revisions"][1] == v2.as_str()
                    && result["resources"].as_array().is_some_and(|r| {
                        r.iter().any(|r| {
                            r["kind"] == "Job"
                                && r["hookType"] == "PreSync"
                                && r["hookPhase"] == "Failed"
                        })
                    });
                refused.then_some(app)
            },
            || c.application(&ns.name, APP)["status"].to_string(),
        );
        let message = app["status"]["operationState"]["message"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert_ne!(ops(&app), "Succeeded", "{}", app["status"]);
        assert!(
            message.starts_with("one or more synchronization tasks completed unsuccessfully"),
            "{message}"
        );
        // The rollout kept its revision and its pause.
        std::thread::sleep(Duration::from_secs(5));
        let now = ns.rollout(APP);
        assert_eq!(hash(&now), first, "{}", now["status"]);
        assert_eq!(now["status"]["currentStepIndex"], 1, "{}", now["status"]);
        drop(stopping);
        kubelet.join().unwrap();
        let ran = ran.lock().unwrap();
        let codes: Vec<Option<i32>> = ran.iter().map(|(code, _)| *code).collect();
        assert!(
            codes.len() >= 3
                && codes[..2] == [Some(0), Some(0)]
                && codes[2..].iter().all(|c| *c == Some(1)),
            "the install and the image pass, the values commit is refused at each attempt: {ran:?}\n{message}"
        );
        let refused = &ran[2].1["findings"][0];
        assert_eq!(refused["rule"], "pause-lost", "{refused}");
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains(&format!("paused at step 1 of 4 of {first} since")),
            "{refused}"
        );
        // After the fact: the Application's refused sync, from what Argo CD wrote.
        let mut now = c.forensics();
        now.args(["now", "-n", &ns.name]);
        let o = run_bounded(now);
        let told = text(&o.stdout).replace("\n      ", " ");
        assert!(
            told.contains(&format!("Application {}/{APP}: OutOfSync, Suspended", ns.name))
                && told.contains(
                    "PreSync hook Job rollout-forensics-gate Failed: Job has reached the specified backoff limit"
                ),
            "{told}"
        );
        // The on-call stops the retries (`argocd app terminate-op` sets the phase): Argo CD
        // fails the operation and says so in an Event, the one record of the refusal once
        // another operation replaces this one's state; `now` reads it.
        c.ok(
            &[
                "-n",
                &ns.name,
                "patch",
                "applications.argoproj.io",
                APP,
                "--type",
                "merge",
                "--field-manager",
                "on-call",
                "-p",
                r#"{"status":{"operationState":{"phase":"Terminating"}}}"#,
            ],
            None,
        );
        let warning = until(
            "Argo CD's Event of the terminated operation",
            Duration::from_secs(60),
            || {
                let events = c.get(&ns.name, "events")?;
                events["items"].as_array()?.iter().find_map(|e| {
                    (e["involvedObject"]["kind"] == "Application"
                        && e["reason"] == "OperationCompleted"
                        && e["type"] == "Warning")
                        .then(|| e["message"].as_str().unwrap_or_default().to_owned())
                })
            },
            || c.application(&ns.name, APP)["status"]["operationState"].to_string(),
        );
        assert!(
            warning.starts_with("Sync operation to ") && warning.contains(" failed: "),
            "{warning}"
        );
        let mut now = c.forensics();
        now.args(["now", "-n", &ns.name, "-o", "json"]);
        let o = run_bounded(now);
        let told: Value = serde_json::from_slice(&o.stdout).unwrap();
        let failed = &told["rollouts"][0]["applications"][0]["failed_before"];
        assert!(
            failed
                .as_array()
                .is_some_and(|f| f.len() == 1 && f[0].as_str().unwrap().ends_with(&warning)),
            "{warning}\n{told}"
        );
        let (report, _) = finish(&c, &ns, rec, "argocd-presync-gate-refused", &[]);
        let found = rules(&report);
        for rule in RESTART_RULES {
            assert!(!found.iter().any(|r| r == rule), "{rule} in {found:?}");
        }
        assert_eq!(
            report["rollouts"][0]["pod_hash"],
            first.as_str(),
            "{report}"
        );
        assert!(undecided(&report).is_empty(), "{report}");
        eprintln!("Argo CD's operation: {message}");
    });
}
