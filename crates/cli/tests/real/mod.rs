//! The harness of the real-cluster tests: a cluster started by `tests/cluster/up.sh` (its
//! directory in `RF_CLUSTER`), namespaces, manifests applied as Argo CD applies them, the real
//! `kubectl` and `kubectl-argo-rollouts`, `rollout-forensics record` running while an incident
//! happens, and the apiserver's audit log as the ground truth of what was written.
//!
//! Every wait is bounded and says what it waited for; every child process is killed on every
//! path.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rf_format::{Op, Reader, Record};
use serde_json::Value;

use crate::common::{Killed, bin, drain, run_bounded, text, wait_bounded};

pub mod argocd;

/// How long any condition of the real controller may take before the test fails.
pub const SETTLE: Duration = Duration::from_secs(120);

/// The kinds `record` records, as the audit log names their resources.
const RECORDED: [(&str, &str); 13] = [
    ("rollouts", "Rollout"),
    ("replicasets", "ReplicaSet"),
    ("services", "Service"),
    ("endpointslices", "EndpointSlice"),
    ("pods", "Pod"),
    ("events", "Event"),
    ("deployments", "Deployment"),
    ("endpoints", "Endpoints"),
    ("ingresses", "Ingress"),
    ("virtualservices", "VirtualService"),
    ("analysisruns", "AnalysisRun"),
    ("analysistemplates", "AnalysisTemplate"),
    ("experiments", "Experiment"),
];

/// A cluster of `tests/cluster/up.sh`.
pub struct Cluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    /// Where `kubectl`, `kubectl-argo-rollouts` and the rest were built.
    pub bin: PathBuf,
    /// A home for the binary with nothing in it.
    pub home: tempfile::TempDir,
}

/// The cluster named by `RF_CLUSTER`. A test that needs it fails without it: it never passes
/// by returning early.
pub fn cluster() -> Cluster {
    let dir = std::env::var_os("RF_CLUSTER").map(PathBuf::from).expect(
        "RF_CLUSTER names no cluster: these tests need one started by tests/cluster/up.sh DIR \
         (RF_CLUSTER=DIR), or run them all with tests/cluster/run.sh",
    );
    let kubeconfig = dir.join("kubeconfig");
    assert!(
        kubeconfig.is_file(),
        "RF_CLUSTER={}: no kubeconfig there; is the cluster up (tests/cluster/up.sh)?",
        dir.display()
    );
    let bin = PathBuf::from(
        std::fs::read_to_string(dir.join("bin"))
            .expect("up.sh writes DIR/bin")
            .trim(),
    );
    Cluster {
        dir,
        kubeconfig,
        bin,
        home: tempfile::tempdir().unwrap(),
    }
}

/// Where to keep a copy of each recording the tests make (`RF_KEEP_RECORDINGS=DIR`): how the
/// fixtures of `recordings/real/` are made again.
pub fn keep(recording: &Path, name: &str) {
    if let Some(dir) = std::env::var_os("RF_KEEP_RECORDINGS") {
        let to = Path::new(&dir).join(format!("{name}.rfr"));
        std::fs::copy(recording, &to)
            .unwrap_or_else(|e| panic!("keeping {} as {}: {e}", recording.display(), to.display()));
        eprintln!("kept {}", to.display());
    }
}

impl Cluster {
    /// The real kubectl of the cluster's build, as cluster admin.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut c = Command::new(self.bin.join("kubectl"));
        c.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        run_with_input(c, stdin)
    }

    /// The real kubectl with another kubeconfig (a ServiceAccount's).
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        let mut c = Command::new(self.bin.join("kubectl"));
        c.arg("--kubeconfig").arg(kubeconfig).args(args);
        run_with_input(c, None)
    }

    /// `kubectl ARGS`, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let o = self.kubectl(args, stdin);
        assert!(
            o.status.success(),
            "kubectl {args:?} failed: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    /// Applies `yaml` in `ns` as Argo CD's controller does: server-side, as field manager
    /// `argocd-controller`, taking fields over from whoever wrote them last.
    pub fn apply(&self, ns: &str, yaml: &str) {
        self.ok(
            &[
                "-n",
                ns,
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager",
                "argocd-controller",
                "-f",
                "-",
            ],
            Some(yaml),
        );
    }

    /// `kubectl get WHAT -o json` in `ns` (empty: cluster-scoped); None when it does not
    /// exist.
    pub fn get(&self, ns: &str, what: &str) -> Option<Value> {
        let o = if ns.is_empty() {
            self.kubectl(&["get", what, "-o", "json"], None)
        } else {
            self.kubectl(&["-n", ns, "get", what, "-o", "json"], None)
        };
        if !o.status.success() {
            let err = text(&o.stderr);
            assert!(err.contains("NotFound"), "kubectl get {what}: {err}");
            return None;
        }
        Some(serde_json::from_slice(&o.stdout).unwrap())
    }

    /// The real `kubectl-argo-rollouts` plugin, run as `kubectl argo rollouts ARGS`.
    pub fn plugin(&self, args: &[&str]) -> Output {
        let mut c = Command::new(self.bin.join("kubectl-argo-rollouts"));
        c.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        run_with_input(c, None)
    }

    /// `rollout-forensics ARGS` with this cluster's kubeconfig in the environment.
    pub fn forensics(&self) -> Command {
        let mut c = bin(self.home.path());
        c.env("KUBECONFIG", &self.kubeconfig);
        c
    }
}

pub fn run_with_input(mut c: Command, stdin: Option<&str>) -> Output {
    let Some(input) = stdin else {
        return run_bounded(c);
    };
    let mut child = Killed(
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let out = drain(child.0.stdout.take());
    let err = drain(child.0.stderr.take());
    let mut pipe = child.0.stdin.take().unwrap();
    pipe.write_all(input.as_bytes()).unwrap();
    drop(pipe);
    let status = wait_bounded(&mut child, crate::common::LIMIT, &format!("{c:?}"));
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Polls `f` every 200 ms until it gives a value; fails the test after `limit`, saying what
/// it waited for and what `state` shows then.
pub fn until<T>(
    what: &str,
    limit: Duration,
    mut f: impl FnMut() -> Option<T>,
    mut state: impl FnMut() -> String,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            started.elapsed() < limit,
            "waited {limit:?} for {what}; now:\n{}",
            state()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Tests share the cluster; a test that breaks it on purpose (a fault) has it alone.
static CLUSTER_USE: RwLock<()> = RwLock::new(());

enum Use {
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
}

/// A namespace of its own for one test, created empty (an earlier run's is deleted first)
/// and deleted when dropped. While it lives, the test shares the cluster with the others, or
/// has it alone ([`Namespace::alone`]).
pub struct Namespace<'a> {
    pub name: String,
    cluster: &'a Cluster,
    _use: Use,
}

impl<'a> Namespace<'a> {
    pub fn new(cluster: &'a Cluster, name: &str) -> Self {
        let guard = CLUSTER_USE.read().unwrap_or_else(PoisonError::into_inner);
        Self::create(cluster, name, Use::Shared(guard))
    }

    /// A namespace for a test that stops, freezes or compacts parts of the cluster: it waits
    /// until no other test runs, and none starts until it is done.
    pub fn alone(cluster: &'a Cluster, name: &str) -> Self {
        let guard = CLUSTER_USE.write().unwrap_or_else(PoisonError::into_inner);
        Self::create(cluster, name, Use::Alone(guard))
    }

    fn create(cluster: &'a Cluster, name: &str, use_: Use) -> Self {
        if cluster.get("", &format!("namespace/{name}")).is_some() {
            cluster.ok(
                &["delete", "namespace", name, "--wait=true", "--timeout=120s"],
                None,
            );
        }
        cluster.ok(&["create", "namespace", name], None);
        Namespace {
            name: name.to_owned(),
            cluster,
            _use: use_,
        }
    }

    /// The rollout `name`'s object.
    pub fn rollout(&self, name: &str) -> Value {
        self.cluster
            .get(&self.name, &format!("rollout/{name}"))
            .unwrap_or_else(|| panic!("rollout {}/{name} does not exist", self.name))
    }

    /// What `kubectl get rollout,rs,pods` shows, for a failure message.
    pub fn state(&self) -> String {
        let o = self.cluster.kubectl(
            &[
                "-n",
                &self.name,
                "get",
                "rollout,rs,pods,endpointslices",
                "-o",
                "wide",
            ],
            None,
        );
        format!("{}{}", text(&o.stdout), text(&o.stderr))
    }

    /// Waits until rollout `name`'s controller has observed its newest generation and its
    /// status satisfies `f`; the rollout then.
    pub fn wait_status(&self, name: &str, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        until(
            &format!("rollout {}/{name}: {what}", self.name),
            SETTLE,
            || {
                let r = self.rollout(name);
                let generation = r["metadata"]["generation"].to_string();
                let observed = match &r["status"]["observedGeneration"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (observed == generation && f(&r["status"])).then_some(r)
            },
            || self.state(),
        )
    }

    /// Waits until rollout `name` has observed its newest generation, with `phase`.
    pub fn wait_phase(&self, name: &str, phase: &str) -> Value {
        self.wait_status(name, &format!("phase {phase}"), |s| s["phase"] == phase)
    }

    /// Waits until rollout `name` is paused at step `step` on its current pod-template hash,
    /// with that hash's ReplicaSet's pods available.
    pub fn wait_paused_at(&self, name: &str, step: u64) -> Value {
        self.wait_status(name, &format!("paused at step {step}"), |s| {
            s["phase"] == "Paused" && s["currentStepIndex"] == step
        })
    }

    /// The ReplicaSets of the namespace, by name: (pod-template hash, spec.replicas).
    pub fn replica_sets(&self) -> BTreeMap<String, (String, u64)> {
        let list = self.cluster.get(&self.name, "replicasets").unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|rs| {
                (
                    rs["metadata"]["name"].as_str().unwrap().to_owned(),
                    (
                        rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        rs["spec"]["replicas"].as_u64().unwrap_or(0),
                    ),
                )
            })
            .collect()
    }
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        let _ = self
            .cluster
            .kubectl(&["delete", "namespace", &self.name, "--wait=false"], None);
    }
}

impl Cluster {
    /// `tests/cluster/fault.sh DIR ARGS`, which must succeed.
    pub fn fault(&self, args: &[&str]) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/cluster/fault.sh");
        let mut c = Command::new(script);
        c.arg(&self.dir).args(args);
        let o = run_bounded(c);
        assert!(
            o.status.success(),
            "fault.sh {args:?}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        eprint!("{}", text(&o.stderr));
    }
}

/// `rollout-forensics record -n NS` running against the cluster.
pub struct Recorder {
    child: Killed,
    pub path: PathBuf,
    err: Option<JoinHandle<Vec<u8>>>,
    namespace: String,
}

/// Every record of `path` that reads so far (a file being written reads to its last flush).
pub fn records_so_far(path: &Path) -> Vec<Record> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let Ok(mut r) = Reader::new(file) else {
        return Vec::new();
    };
    let mut all = Vec::new();
    while let Ok(Some(rec)) = r.next_record() {
        all.push(rec);
    }
    all
}

impl Recorder {
    /// Starts recording namespace `ns` into `path` (with `extra` flags) and waits until its
    /// first lists of every served kind are in the file.
    pub fn start(cluster: &Cluster, ns: &str, path: &Path, extra: &[&str]) -> Recorder {
        let mut args = vec!["-n", ns];
        args.extend(extra);
        Self::start_with(cluster, ns, path, &args)
    }

    /// Starts `record ARGS -o PATH` and waits until its first lists of every served kind are
    /// in the file; [`Recorder::catch_up`] then looks at namespace `ns`.
    pub fn start_with(cluster: &Cluster, ns: &str, path: &Path, args: &[&str]) -> Recorder {
        let mut c = cluster.forensics();
        c.args(["record", "--flush-interval", "200ms", "-o"])
            .arg(path)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = Killed(c.spawn().unwrap());
        let err = drain(child.0.stderr.take());
        let lists = RECORDED.len();
        until(
            &format!("the recorder's first {lists} lists in {}", path.display()),
            Duration::from_secs(30),
            || {
                let ends = records_so_far(path)
                    .iter()
                    .filter(|r| r.op == Op::ListEnd)
                    .count();
                (ends >= lists).then_some(())
            },
            || format!("{:?}", child.0.try_wait()),
        );
        Recorder {
            child,
            path: path.to_owned(),
            err: Some(err),
            namespace: ns.to_owned(),
        }
    }

    /// Waits until the file holds every object of the recorded kinds now in the namespace,
    /// at its current resourceVersion: what has happened so far is recorded.
    pub fn catch_up(&self, cluster: &Cluster) {
        let kinds: Vec<&str> = RECORDED.iter().map(|(r, _)| *r).collect();
        let list = cluster
            .get(&self.namespace, &kinds.join(","))
            .expect("the namespace lists");
        let want: BTreeSet<(String, String, String)> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["kind"].as_str().unwrap().to_owned(),
                    o["metadata"]["name"].as_str().unwrap().to_owned(),
                    o["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                )
            })
            .collect();
        until(
            &format!("the recording to hold the {} objects now live", want.len()),
            Duration::from_secs(30),
            || {
                let have: BTreeSet<(String, String, String)> = records_so_far(&self.path)
                    .iter()
                    .filter(|r| r.op.has_object())
                    .map(|r| {
                        (
                            r.kind.name().to_owned(),
                            r.name.clone(),
                            r.resource_version.clone(),
                        )
                    })
                    .collect();
                want.is_subset(&have).then_some(())
            },
            || "(see the recording)".to_owned(),
        );
    }

    /// Catches up, stops the recorder with SIGTERM and returns its stderr; it must exit 0
    /// with a closed file.
    pub fn stop(mut self, cluster: &Cluster) -> String {
        self.catch_up(cluster);
        let id = self.child.0.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &id])
                .status()
                .unwrap()
                .success()
        );
        let status = wait_bounded(&mut self.child, Duration::from_secs(20), "the recorder");
        let err = text(&self.err.take().unwrap().join().unwrap());
        assert_eq!(status.code(), Some(0), "the recorder: {err}");
        assert!(err.contains("recorded "), "{err}");
        err
    }
}

/// The JSON report of `analyze FILE`, and its exit code.
pub fn analyze(cluster: &Cluster, file: &Path) -> (Value, Option<i32>) {
    let mut c = cluster.forensics();
    c.args(["analyze", "-o", "json"]).arg(file);
    let o = run_bounded(c);
    let report = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("analyze -o json: {e}: {}", text(&o.stderr)));
    (report, o.status.code())
}

/// The rules of `report`'s findings, in order.
pub fn rules(report: &Value) -> Vec<String> {
    crate::common::findings(report)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// How a recording compares with the audit log's writes in its namespace.
#[derive(Debug, Default)]
pub struct Truth {
    /// Writes of a recorded kind the audit log shows, with the object version they made.
    pub writes: usize,
    /// Of those, the ones whose object version is in the recording.
    pub recorded: usize,
    /// Gaps the recording states.
    pub gaps: usize,
    /// Writes inside a stated gap that are not in the recording.
    pub in_gaps: usize,
    /// Writes the audit log shows with no object version (a pod binding answers with a
    /// Status): nothing to compare.
    pub unversioned: usize,
    /// Writes neither recorded nor inside a gap: (kind, name, resourceVersion, verb).
    pub missed: Vec<(String, String, String, String)>,
}

/// Compares the recording at `path` with every write the audit log shows in namespace `ns`
/// made after the recorder's first list of that kind: each must be in the recording (object
/// and resourceVersion), or inside a gap the recording states.
pub fn audit_truth(cluster: &Cluster, ns: &str, path: &Path) -> Truth {
    let records = records_so_far(path);
    // The first list's resourceVersion per kind: writes before it are not the recorder's.
    let mut first_list: BTreeMap<&str, u64> = BTreeMap::new();
    let mut have: BTreeSet<(String, String, String)> = BTreeSet::new();
    // Per kind: resourceVersion intervals (exclusive, inclusive] that a gap covers: from the
    // newest version recorded before it to the list that ends it.
    let mut gap_open: BTreeMap<String, u64> = BTreeMap::new();
    let mut gaps: Vec<(String, u64, u64)> = Vec::new();
    let mut newest: BTreeMap<String, u64> = BTreeMap::new();
    let mut truth = Truth::default();
    for r in &records {
        let kind = r.kind.name().to_owned();
        let rv: u64 = r.resource_version.parse().unwrap_or(0);
        match r.op {
            Op::ListEnd => {
                first_list.entry(r.kind.name()).or_insert(rv);
                if let Some(from) = gap_open.remove(&kind) {
                    gaps.push((kind.clone(), from, rv));
                }
            }
            Op::Gap { .. } => {
                truth.gaps += 1;
                let from = newest.get(&kind).copied().unwrap_or(0);
                gap_open.entry(kind.clone()).or_insert(from);
            }
            _ => {}
        }
        if r.op.has_object() {
            have.insert((kind.clone(), r.name.clone(), r.resource_version.clone()));
        }
        if rv > 0 {
            let n = newest.entry(kind).or_insert(0);
            *n = (*n).max(rv);
        }
    }
    // A gap still open at the end covers everything after it.
    for (kind, from) in gap_open {
        gaps.push((kind, from, u64::MAX));
    }

    let log = std::fs::File::open(cluster.dir.join("audit.log")).expect("the audit log");
    for line in BufReader::new(log).lines() {
        let line = line.unwrap();
        let Ok(e) = serde_json::from_str::<Value>(&line) else {
            continue; // a line being written
        };
        let verb = e["verb"].as_str().unwrap_or_default();
        if !matches!(verb, "create" | "update" | "patch" | "delete") {
            continue;
        }
        let object = &e["objectRef"];
        if object["namespace"] != ns {
            continue;
        }
        let resource = object["resource"].as_str().unwrap_or_default();
        let Some((_, kind)) = RECORDED.iter().find(|(r, _)| *r == resource) else {
            continue;
        };
        let code = e["responseStatus"]["code"].as_u64().unwrap_or(0);
        if !(200..300).contains(&code) {
            continue; // refused: nothing was written
        }
        let response = &e["responseObject"];
        let Some(rv) = response["metadata"]["resourceVersion"].as_str() else {
            truth.unversioned += 1;
            continue;
        };
        if response["kind"] == "Status" {
            truth.unversioned += 1;
            continue;
        }
        let n: u64 = rv.parse().unwrap_or(0);
        if first_list.get(kind).is_none_or(|&l| n <= l) {
            continue; // before the recorder listed this kind
        }
        let name = response["metadata"]["name"]
            .as_str()
            .or(object["name"].as_str())
            .unwrap_or_default()
            .to_owned();
        truth.writes += 1;
        if have.contains(&((*kind).to_owned(), name.clone(), rv.to_owned())) {
            truth.recorded += 1;
        } else if gaps
            .iter()
            .any(|(k, from, to)| k == kind && *from < n && n <= *to)
        {
            truth.in_gaps += 1;
        } else {
            truth
                .missed
                .push(((*kind).to_owned(), name, rv.to_owned(), verb.to_owned()));
        }
    }
    eprintln!(
        "audit truth {ns}: {} writes in the audit log, {} recorded, {} gaps, {} inside gaps, {} missed ({} unversioned writes not compared)",
        truth.writes,
        truth.recorded,
        truth.gaps,
        truth.in_gaps,
        truth.missed.len(),
        truth.unversioned
    );
    truth
}

/// Asserts that nothing the audit log shows is missing from the recording outside its gaps,
/// and that there was something to compare.
pub fn assert_audit_truth(cluster: &Cluster, ns: &str, path: &Path) -> Truth {
    let t = audit_truth(cluster, ns, path);
    assert!(t.writes > 0, "the audit log shows writes in {ns}: {t:?}");
    assert!(
        t.missed.is_empty(),
        "writes missing from the recording: {t:?}"
    );
    t
}

impl Cluster {
    /// A kubeconfig at `path` that authenticates as ServiceAccount `ns/name` with a token of
    /// the TokenRequest API, with `namespace` its context's namespace.
    pub fn service_account_kubeconfig(
        &self,
        ns: &str,
        name: &str,
        namespace: &str,
        path: &Path,
    ) -> PathBuf {
        let token = self.ok(
            &["-n", ns, "create", "token", name, "--duration", "1h"],
            None,
        );
        let admin: Value =
            serde_json::from_str(&self.ok(&["config", "view", "--raw", "-o", "json"], None))
                .unwrap();
        let cluster = &admin["clusters"][0]["cluster"];
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "real", "cluster": cluster}],
            "users": [{"name": name, "user": {"token": token.trim()}}],
            "contexts": [{"name": "real", "context": {"cluster": "real", "user": name, "namespace": namespace}}],
            "current-context": "real",
        });
        std::fs::write(path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
        path.to_owned()
    }
}

/// The YAML documents of `file` (a path from the repository's root), each with every
/// `payments` replaced by `ns`, without those of the kinds in `skip`.
pub fn manifests(file: &str, ns: &str, skip: &[&str]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let all = std::fs::read_to_string(&path).unwrap();
    all.split("\n---\n")
        .filter(|doc| {
            !doc.lines()
                .any(|l| skip.iter().any(|k| l.strip_prefix("kind: ") == Some(k)))
        })
        .map(|doc| doc.replace("payments", ns))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// `kubectl argo rollouts get rollout` output with what differs between two looks at the same
/// objects taken apart (ages and scale-down delays, measured to each one's "now"; the widths
/// that follow from them; the screen clears of `-w`) taken out.
pub fn comparable(output: &str) -> String {
    let is_age = |t: &str| {
        let mut digits = false;
        let mut units = 0;
        for ch in t.chars() {
            match ch {
                '0'..='9' => digits = true,
                's' | 'm' | 'h' | 'd' | 'y' if digits => {
                    digits = false;
                    units += 1;
                }
                _ => return false,
            }
        }
        units > 0 && !digits
    };
    output
        .lines()
        .map(|l| {
            l.split_whitespace()
                .map(|t| match t.strip_prefix("delay:") {
                    // A ReplicaSet's scale-down delay, counted down to the plugin's "now".
                    Some(d) if is_age(d) => "delay:AGE",
                    _ if is_age(t) => "AGE",
                    _ => t,
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

impl Cluster {
    /// `kubectl argo rollouts get rollout NAME -n NS` with `kubeconfig`: its stdout, which
    /// must be a success.
    pub fn plugin_get(&self, kubeconfig: &Path, ns: &str, name: &str) -> String {
        let mut c = Command::new(self.bin.join("kubectl-argo-rollouts"));
        c.arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["get", "rollout", name, "-n", ns]);
        let o = run_bounded(c);
        assert!(
            o.status.success(),
            "kubectl argo rollouts get rollout {name}: {}",
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    /// The first screen `kubectl argo rollouts get rollout NAME -n NS -w` draws within
    /// `seconds`, with `kubeconfig`.
    pub fn plugin_watch_first(
        &self,
        kubeconfig: &Path,
        ns: &str,
        name: &str,
        seconds: u64,
    ) -> String {
        let mut c = Command::new(self.bin.join("kubectl-argo-rollouts"));
        c.arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["get", "rollout", name, "-n", ns, "-w"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = Killed(c.spawn().unwrap());
        let out = drain(child.0.stdout.take());
        let _err = drain(child.0.stderr.take());
        std::thread::sleep(Duration::from_secs(seconds));
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "get -w is still watching after {seconds} s"
        );
        drop(child);
        let all = text(&out.join().unwrap())
            .replace("\x1b[H", "")
            .replace("\x1b[0;0H", "");
        // Each screen starts by clearing the terminal.
        all.split("\x1b[2J")
            .find(|screen| !screen.trim().is_empty())
            .unwrap_or_default()
            .to_owned()
    }
}

impl Recorder {
    /// Stops the recorder as [`Recorder::stop`] does, after taking what the real
    /// `kubectl argo rollouts get rollout NAME` shows of the live cluster; then serves the
    /// recording and asserts that the plugin shows the same rollout from it, with `get` and
    /// with `get -w`. Lines of the kinds in `unrecorded` (which `record` does not record) are
    /// taken out of the live view, and with them the tree's drawing, which they change.
    pub fn stop_and_compare_with_serve(
        self,
        cluster: &Cluster,
        name: &str,
        unrecorded: &[&str],
    ) -> String {
        let ns = self.namespace.clone();
        let view = |s: &str| {
            let c = comparable(s);
            if unrecorded.is_empty() {
                return c;
            }
            c.lines()
                .filter(|l| !unrecorded.iter().any(|k| l.contains(&format!(" {k} "))))
                .map(|l| l.trim_start_matches(|ch| "│├└─ ".contains(ch)))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let live = view(&cluster.plugin_get(&cluster.kubeconfig, &ns, name));
        let path = self.path.clone();
        let err = self.stop(cluster);
        let served = crate::common::serve(&path, &[]);
        let replayed = view(&cluster.plugin_get(&served.kubeconfig, &ns, name));
        assert_eq!(replayed, live, "the plugin's view of the served recording");
        let watched = view(&cluster.plugin_watch_first(&served.kubeconfig, &ns, name, 4));
        assert_eq!(watched, live, "the plugin's first screen of get -w");
        err
    }
}
