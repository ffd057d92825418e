//! The replay server over real HTTP on loopback, with a minimal client written here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rf_format::{Header, Kind, Op, Reader, Record, Source, Timestamp};
use rf_serve::{Background, Faults, Options, Pace, Timeline, human_duration};
use serde_json::Value;

const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../recordings/rerender-race.rfr"
);
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const RS: &str = "/apis/apps/v1/namespaces/payments/replicasets";
/// The list resourceVersion of the recording's initial lists (checked against the recording by
/// `base_rv_is_the_recorded_initial_lists_version`).
const BASE_RV: u64 = 48212991;

fn records() -> Vec<Record> {
    let mut r = Reader::new(std::fs::File::open(RECORDING).unwrap()).unwrap();
    (&mut r).map(Result::unwrap).collect()
}

fn timeline() -> Arc<Timeline> {
    Arc::new(Timeline::read(std::fs::File::open(RECORDING).unwrap()).unwrap())
}

fn serve(pace: Pace) -> Background {
    serve_with(timeline(), pace, Faults::default())
}

fn serve_with(tl: Arc<Timeline>, pace: Pace, faults: Faults) -> Background {
    Background::start(
        tl,
        Options {
            pace,
            faults,
            bookmark_interval: Duration::from_millis(200),
            ..Options::default()
        },
    )
    .unwrap()
}

fn end_of(tl: &Timeline) -> Pace {
    Pace::At(tl.end())
}

struct Response {
    status: u16,
    body: Vec<u8>,
}

impl Response {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

fn connect(addr: SocketAddr, method: &str, path: &str, accept: &str) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    BufReader::new(s)
}

/// A response's status line and the headers these tests read.
struct Head {
    status: u16,
    chunked: bool,
    len: Option<usize>,
    warning: Option<String>,
}

/// Reads the status line and headers.
fn read_head(r: &mut BufReader<TcpStream>) -> Head {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut h = Head {
        status,
        chunked: false,
        len: None,
        warning: None,
    };
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "transfer-encoding" => h.chunked = v.trim().eq_ignore_ascii_case("chunked"),
            "content-length" => h.len = Some(v.trim().parse().unwrap()),
            "warning" => h.warning = Some(v.trim().to_owned()),
            _ => {}
        }
    }
    h
}

/// Reads the status line and headers; returns the status and whether the body is chunked, or
/// its length.
fn head(r: &mut BufReader<TcpStream>) -> (u16, bool, Option<usize>) {
    let h = read_head(r);
    (h.status, h.chunked, h.len)
}

/// The next chunk of a chunked body; `None` at its end.
fn chunk(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let size = usize::from_str_radix(line.trim(), 16).unwrap();
    let mut data = vec![0; size];
    r.read_exact(&mut data)?;
    let mut crlf = [0; 2];
    r.read_exact(&mut crlf)?;
    Ok((size > 0).then_some(data))
}

fn request_with(addr: SocketAddr, method: &str, path: &str, accept: &str) -> Response {
    let mut r = connect(addr, method, path, accept);
    let (status, chunked, len) = head(&mut r);
    let mut body = Vec::new();
    if chunked {
        while let Some(c) = chunk(&mut r).unwrap() {
            body.extend_from_slice(&c);
        }
    } else if let Some(n) = len {
        body.resize(n, 0);
        r.read_exact(&mut body).unwrap();
    } else {
        r.read_to_end(&mut body).unwrap();
    }
    Response { status, body }
}

fn get(addr: SocketAddr, path: &str) -> Response {
    request_with(addr, "GET", path, "application/json")
}

/// A watch: its lines as they arrive, until the stream ends or `wait` passes.
struct Watched {
    status: u16,
    lines: Vec<Value>,
    ended: bool,
    elapsed: Duration,
}

impl Watched {
    fn types(&self) -> Vec<&str> {
        self.lines
            .iter()
            .map(|l| l["type"].as_str().unwrap())
            .collect()
    }

    fn events(&self) -> Vec<(&str, &str, &str)> {
        self.lines
            .iter()
            .filter(|l| l["type"] != "BOOKMARK")
            .map(|l| {
                (
                    l["type"].as_str().unwrap(),
                    l["object"]["metadata"]["name"].as_str().unwrap(),
                    l["object"]["metadata"]["resourceVersion"].as_str().unwrap(),
                )
            })
            .collect()
    }
}

fn watch(addr: SocketAddr, path: &str, wait: Duration) -> Watched {
    let started = Instant::now();
    let mut r = connect(addr, "GET", path, "application/json");
    r.get_ref().set_read_timeout(Some(wait)).unwrap();
    let (status, chunked, _) = head(&mut r);
    assert!(chunked, "a watch is streamed");
    let mut buf = Vec::new();
    let mut ended = false;
    while let Some(left) = wait.checked_sub(started.elapsed()) {
        r.get_ref()
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match chunk(&mut r) {
            Ok(Some(c)) => buf.extend_from_slice(&c),
            Ok(None) => {
                ended = true;
                break;
            }
            Err(_) => break,
        }
    }
    let lines = buf
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    Watched {
        status,
        lines,
        ended,
        elapsed: started.elapsed(),
    }
}

/// A recorded ReplicaSet event as a watch from the base must serve it: (type, name,
/// resourceVersion), with when it was observed.
fn rs_event(r: &Record) -> Option<((String, String, String), Timestamp)> {
    let ty = match r.op {
        Op::Added => "ADDED",
        Op::Modified => "MODIFIED",
        Op::Deleted { inferred: false } => "DELETED",
        _ => return None,
    };
    let event = (ty.to_owned(), r.name.clone(), r.resource_version.clone());
    Some((event, r.observed_at))
}

/// The recorded ReplicaSet events after the initial lists: (type, name, resourceVersion).
fn recorded_rs_events() -> Vec<(String, String, String)> {
    recorded_rs_events_until(None)
}

/// The recorded ReplicaSet events observed at or before `until` (all of them: `None`).
fn recorded_rs_events_until(until: Option<Timestamp>) -> Vec<(String, String, String)> {
    records()
        .iter()
        .filter(|r| r.kind == Kind::ReplicaSet)
        .filter_map(rs_event)
        .filter(|(_, at)| until.is_none_or(|t| *at <= t))
        .map(|(e, _)| e)
        .collect()
}

/// The recorded objects of `kind` at `until` (the end: `None`), by namespace and name: the
/// latest recorded bytes of every object not deleted since.
fn recorded_objects_at(
    kind: &Kind,
    until: Option<Timestamp>,
) -> BTreeMap<(String, String), Vec<u8>> {
    let mut out = BTreeMap::new();
    for r in records() {
        if r.kind != *kind || until.is_some_and(|t| r.observed_at > t) {
            continue;
        }
        let key = (r.namespace, r.name);
        match r.op {
            Op::Deleted { .. } => {
                out.remove(&key);
            }
            op if op.has_object() => {
                out.insert(key, r.object);
            }
            _ => {}
        }
    }
    out
}

/// The recorded ReplicaSets at `until` (the end: `None`), by name.
fn recorded_rs_at(until: Option<Timestamp>) -> BTreeMap<String, Vec<u8>> {
    recorded_objects_at(&Kind::ReplicaSet, until)
        .into_iter()
        .map(|((_, name), bytes)| (name, bytes))
        .collect()
}

/// The recorded final bytes of each ReplicaSet that still exists at the end.
fn recorded_final_rs() -> BTreeMap<String, Vec<u8>> {
    recorded_rs_at(None)
}

/// The names of the ReplicaSets of the recording's initial list.
fn recorded_initial_rs() -> Vec<String> {
    let records = records();
    let end = records
        .iter()
        .position(|r| r.kind == Kind::ReplicaSet && r.op == Op::ListEnd)
        .expect("an initial list of ReplicaSets");
    let mut names: Vec<String> = records[..end]
        .iter()
        .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Listed)
        .map(|r| r.name.clone())
        .collect();
    names.sort();
    names
}

/// The ReplicaSet list's resourceVersion at the end: the highest recorded for the kind.
fn final_rs_rv() -> String {
    records()
        .iter()
        .filter(|r| r.kind == Kind::ReplicaSet)
        .filter_map(|r| r.resource_version.parse::<u64>().ok())
        .max()
        .expect("recorded ReplicaSet versions")
        .to_string()
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

/// The recorded final state of the (only) Rollout.
fn final_rollout() -> Value {
    let rollouts = recorded_objects_at(&Kind::Rollout, None);
    assert_eq!(rollouts.len(), 1, "one Rollout");
    parse(rollouts.values().next().unwrap())
}

/// The pod-template hash of a ReplicaSet's recorded JSON.
fn pod_hash(rs: &Value) -> &str {
    rs["metadata"]["labels"]["rollouts-pod-template-hash"]
        .as_str()
        .unwrap()
}

/// The name of the final ReplicaSet the Rollout's final status names in `field`
/// (`currentPodHash`, `stableRS`).
fn rs_named_by_status(field: &str) -> String {
    let rollout = final_rollout();
    let hash = rollout["status"][field].as_str().unwrap();
    let names: Vec<String> = recorded_final_rs()
        .into_iter()
        .filter(|(_, b)| pod_hash(&parse(b)) == hash)
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names.len(), 1, "one ReplicaSet of hash {hash}: {names:?}");
    names.into_iter().next().unwrap()
}

/// The newest render's ReplicaSet: the one the Rollout's status names as current.
fn current_rs() -> String {
    rs_named_by_status("currentPodHash")
}

/// Every kind the recording holds (the header's and its records'), in [`Kind`] order.
fn recorded_kinds() -> Vec<Kind> {
    let mut r = Reader::new(std::fs::File::open(RECORDING).unwrap()).unwrap();
    let mut kinds = r.header().source.kinds.clone();
    kinds.extend((&mut r).map(|x| x.unwrap().kind));
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The names of a list's items, in order.
fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The status and the `Warning` header of a GET of `path`.
fn warning_of(addr: SocketAddr, path: &str) -> (u16, Option<String>) {
    let h = read_head(&mut connect(addr, "GET", path, "application/json"));
    (h.status, h.warning)
}

/// `kubectl argo rollouts get rollout` waits for lists of AnalysisRuns, Experiments and
/// Deployments before it shows anything. A recording holds none of them: each is answered as
/// an empty list, an empty watch or NotFound, every answer with a Warning that it was not
/// recorded; any other kind the recording lacks is still not served.
#[test]
fn kinds_the_plugin_waits_for_and_no_recording_holds_are_empty_and_say_so() {
    let s = serve(Pace::Max);
    let a = s.local_addr();
    for (path, kind) in [
        ("/apis/argoproj.io/v1alpha1/analysisruns", "AnalysisRunList"),
        (
            "/apis/argoproj.io/v1alpha1/namespaces/payments/experiments",
            "ExperimentList",
        ),
        ("/apis/apps/v1/deployments", "DeploymentList"),
    ] {
        let (status, warning) = warning_of(a, path);
        assert_eq!(status, 200, "{path}");
        let warning = warning.unwrap_or_default();
        assert!(
            warning.starts_with("299 - ") && warning.contains("were not recorded"),
            "{path}: {warning}"
        );
        let list = get(a, path).json();
        assert_eq!(list["kind"], kind);
        assert_eq!(list["items"], serde_json::json!([]), "{path}");
    }
    let (status, warning) = warning_of(
        a,
        "/apis/apps/v1/namespaces/payments/deployments/checkout-api",
    );
    assert_eq!(status, 404);
    assert!(warning.is_some());
    let missing = get(
        a,
        "/apis/apps/v1/namespaces/payments/deployments/checkout-api",
    )
    .json();
    assert!(
        missing["message"]
            .as_str()
            .unwrap()
            .contains("not recorded"),
        "{missing}"
    );
    let w = watch(
        a,
        "/apis/argoproj.io/v1alpha1/analysisruns?watch=true&timeoutSeconds=1",
        Duration::from_secs(5),
    );
    assert_eq!(w.status, 200);
    assert!(w.lines.is_empty(), "{:?}", w.lines);
    assert!(w.ended, "the watch ends at its timeout");
    assert_eq!(get(a, "/apis/apps/v1/statefulsets").status, 404);
    assert_eq!(get(a, "/apis/batch/v1/jobs").status, 404);
}

#[test]
fn base_rv_is_the_recorded_initial_lists_version() {
    let records = records();
    let initial: Vec<&Record> = records
        .iter()
        .take_while(|r| matches!(r.op, Op::ListBegin | Op::Listed | Op::ListEnd))
        .filter(|r| r.op == Op::ListEnd)
        .collect();
    assert!(!initial.is_empty());
    for r in initial {
        assert_eq!(r.resource_version, BASE_RV.to_string(), "{}", r.kind);
    }
}

#[test]
fn discovery_names_every_recorded_kind_with_read_verbs_only() {
    let s = serve(Pace::Max);
    let a = s.local_addr();
    let v = get(a, "/version").json();
    assert_eq!(v["major"], "1");
    assert!(v["gitVersion"].as_str().unwrap().starts_with("v1."));
    assert_eq!(get(a, "/api").json()["versions"][0], "v1");
    // What the recording holds, by group version, in kind order; every kind the recorder
    // knows has the lowercase kind plus `s` as its plural.
    let mut want: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for kind in recorded_kinds() {
        let plural = format!("{}s", kind.name().to_lowercase());
        want.entry(kind.api_version())
            .or_default()
            .push((plural, kind.name().to_owned()));
    }
    assert!(
        want.len() > 1,
        "the recording holds kinds of several groups"
    );
    let groups = get(a, "/apis").json();
    let gs: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["preferredVersion"]["groupVersion"].as_str().unwrap())
        .collect();
    let want_groups: Vec<&str> = want
        .keys()
        .map(String::as_str)
        .filter(|gv| *gv != "v1")
        .collect();
    assert_eq!(gs, want_groups);
    for (gv, resources) in &want {
        let path = if gv == "v1" {
            "/api/v1".to_owned()
        } else {
            format!("/apis/{gv}")
        };
        let list = get(a, &path).json();
        assert_eq!(list["groupVersion"], gv.as_str());
        let served = list["resources"].as_array().unwrap();
        let names: Vec<&str> = served.iter().map(|r| r["name"].as_str().unwrap()).collect();
        let mut want_names: Vec<&str> = resources.iter().map(|(p, _)| p.as_str()).collect();
        if gv == "v1" {
            want_names.push("namespaces");
        }
        // The stand-ins `kubectl argo rollouts get` needs, in a group the recording holds.
        match gv.as_str() {
            "argoproj.io/v1alpha1" => want_names.extend(["analysisruns", "experiments"]),
            "apps/v1" => want_names.push("deployments"),
            _ => {}
        }
        assert_eq!(names, want_names, "{path}");
        for r in served {
            assert_eq!(
                r["verbs"],
                serde_json::json!(["get", "list", "watch"]),
                "{r}"
            );
            assert_eq!(r["namespaced"], r["name"] != "namespaces", "{r}");
        }
        // Each is served: its list answers, of the recorded kind.
        for (plural, kind) in resources {
            let r = get(a, &format!("{path}/{plural}"));
            assert_eq!(r.status, 200, "{path}/{plural}");
            assert_eq!(r.json()["kind"], format!("{kind}List"));
        }
    }
    let apps = get(a, "/apis/apps/v1").json();
    let rs = apps["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "replicasets")
        .unwrap();
    assert_eq!(rs["shortNames"][0], "rs");
    assert_eq!(rs["kind"], "ReplicaSet");
    let argo = get(a, "/apis/argoproj.io/v1alpha1").json();
    let ro = argo["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "rollouts")
        .unwrap();
    assert_eq!(ro["shortNames"][0], "ro");
    assert_eq!(get(a, "/apis/argoproj.io").json()["kind"], "APIGroup");
    // A group the recording does not hold is not served.
    assert!(!want.contains_key("batch/v1"));
    assert_eq!(get(a, "/apis/batch/v1").status, 404);
    assert_eq!(get(a, "/apis/batch").status, 404);
}

#[test]
fn a_list_at_the_end_serves_the_recorded_final_objects_byte_for_byte() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let r = get(s.local_addr(), RS);
    assert_eq!(r.status, 200);
    let list = r.json();
    assert_eq!(list["kind"], "ReplicaSetList");
    assert_eq!(list["apiVersion"], "apps/v1");
    assert_eq!(list["metadata"]["resourceVersion"], final_rs_rv());
    let want = recorded_final_rs();
    assert_eq!(item_names(&list), want.keys().cloned().collect::<Vec<_>>());
    let body = String::from_utf8(r.body.clone()).unwrap();
    for (name, bytes) in &want {
        assert!(
            body.contains(std::str::from_utf8(bytes).unwrap()),
            "{name} is not served byte for byte"
        );
    }
    let all = get(s.local_addr(), "/apis/apps/v1/replicasets").json();
    assert_eq!(all["items"], list["items"]);
    assert_eq!(
        get(s.local_addr(), "/apis/apps/v1/namespaces/other/replicasets").json()["items"],
        serde_json::json!([])
    );
}

#[test]
fn get_returns_one_object_or_a_not_found_status() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let a = s.local_addr();
    let want = recorded_final_rs();
    let (name, bytes) = want.iter().next().unwrap();
    let r = get(a, &format!("{RS}/{name}"));
    assert_eq!(r.status, 200);
    assert_eq!(&r.body, bytes);
    let r = get(a, &format!("{RS}/nope"));
    assert_eq!(r.status, 404);
    let st = r.json();
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["reason"], "NotFound");
    assert_eq!(st["message"], "replicasets.apps \"nope\" not found");
    assert_eq!(
        get(a, "/api/v1/namespaces/payments").json()["kind"],
        "Namespace"
    );
    assert_eq!(get(a, "/api/v1/namespaces/other").status, 404);
    assert_eq!(get(a, "/no/such/path").json()["reason"], "NotFound");
}

#[test]
fn table_responses_have_kubectl_columns_and_ages_to_the_served_moment() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let t = request_with(s.local_addr(), "GET", RS, TABLE).json();
    assert_eq!(t["kind"], "Table");
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["priority"] == 0)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Desired", "Current", "Ready", "Age"]);
    let rows = t["rows"].as_array().unwrap();
    let want = recorded_final_rs();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["cells"][0].as_str().unwrap())
        .collect();
    assert_eq!(names, want.keys().map(String::as_str).collect::<Vec<_>>());
    let current = current_rs();
    let new = rows.iter().find(|r| r["cells"][0] == current).unwrap();
    // Aged from its creation to the served moment (the recording's end), whatever the wall
    // clock says.
    let created = parse(&want[&current])["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = chrono::DateTime::parse_from_rfc3339(&created)
        .unwrap()
        .timestamp_nanos_opt()
        .unwrap();
    let age = tl.end().as_unix_nanos() - created;
    assert!(age > 60_000_000_000, "old enough to tell from a zero age");
    assert_eq!(new["cells"][4], human_duration(age));
    assert_eq!(new["object"]["kind"], "PartialObjectMetadata");
    let t = request_with(
        s.local_addr(),
        "GET",
        "/apis/argoproj.io/v1alpha1/rollouts?includeObject=Object",
        TABLE,
    )
    .json();
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        cols,
        [
            "Name",
            "Desired",
            "Current",
            "Up-to-date",
            "Available",
            "Age"
        ]
    );
    assert_eq!(t["rows"][0]["object"]["kind"], "Rollout");
    let ev = request_with(s.local_addr(), "GET", "/api/v1/events", TABLE).json();
    assert_eq!(ev["columnDefinitions"][0]["name"], "Last Seen");
    let events = recorded_objects_at(&Kind::Event, None);
    assert!(!events.is_empty());
    assert_eq!(ev["rows"].as_array().unwrap().len(), events.len());
}

#[test]
fn selectors_filter_lists_and_bad_parameters_are_named_in_a_400() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let a = s.local_addr();
    let names = |q: &str| {
        let r = get(a, &format!("{RS}?{q}"));
        assert_eq!(r.status, 200, "{q}");
        item_names(&r.json())
    };
    let count = |q: &str| names(q).len();
    // Expected: the recorded final ReplicaSets, filtered here by their recorded labels.
    let rs: Vec<(String, Value)> = recorded_final_rs()
        .into_iter()
        .map(|(n, b)| (n, parse(&b)))
        .collect();
    let with = |keep: &dyn Fn(&Value) -> bool| -> Vec<String> {
        rs.iter()
            .filter(|(_, v)| keep(v))
            .map(|(n, _)| n.clone())
            .collect()
    };
    let app = with(&|v| v["metadata"]["labels"]["app"] == "checkout-api");
    assert!(!app.is_empty());
    assert_eq!(names("labelSelector=app%3Dcheckout-api"), app);
    assert_eq!(
        count("labelSelector=app!%3Dcheckout-api"),
        rs.len() - app.len()
    );
    // The hashes the Rollout's status names: a proper subset of the ReplicaSets.
    let rollout = final_rollout();
    let hashes = [
        rollout["status"]["stableRS"].as_str().unwrap(),
        rollout["status"]["currentPodHash"].as_str().unwrap(),
    ];
    let named = with(&|v| hashes.contains(&pod_hash(v)));
    assert!(!named.is_empty() && named.len() < rs.len(), "{named:?}");
    assert_eq!(
        names(&format!(
            "labelSelector=rollouts-pod-template-hash+in+({},{})",
            hashes[0], hashes[1]
        )),
        named
    );
    let current = current_rs();
    assert_eq!(
        names(&format!("fieldSelector=metadata.name%3D{current}")),
        [current]
    );
    assert_eq!(count("fieldSelector=metadata.namespace!%3Dpayments"), 0);
    for (q, param) in [
        ("labelSelector=a+in+x", "labelSelector"),
        ("fieldSelector=status.phase%3DRunning", "fieldSelector"),
        ("limit=-1", "limit"),
        ("resourceVersion=abc", "resourceVersion"),
        ("watch=maybe", "watch"),
        ("timeoutSeconds=soon&watch=1", "timeoutSeconds"),
        ("continue=zz", "continue"),
        ("resourceVersionMatch=Exact", "resourceVersionMatch"),
    ] {
        let r = get(a, &format!("{RS}?{q}"));
        assert_eq!(r.status, 400, "{q}");
        let st = r.json();
        assert_eq!(st["reason"], "BadRequest");
        assert!(st["message"].as_str().unwrap().contains(param), "{q}: {st}");
    }
}

#[test]
fn limit_and_continue_page_through_one_consistent_state() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let a = s.local_addr();
    let want: Vec<String> = recorded_final_rs().into_keys().collect();
    assert!(want.len() >= 2, "enough ReplicaSets for two pages");
    // Every page full but the last, which holds one.
    let limit = want.len() - 1;
    let final_rv = final_rs_rv();
    let mut names = Vec::new();
    let mut path = format!("{RS}?limit={limit}");
    let mut pages = 0;
    loop {
        let page = get(a, &path).json();
        pages += 1;
        assert_eq!(page["metadata"]["resourceVersion"], final_rv);
        names.extend(item_names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(c) => {
                assert_eq!(item_names(&page).len(), limit);
                assert_eq!(
                    page["metadata"]["remainingItemCount"],
                    want.len() - names.len()
                );
                path = format!("{RS}?limit={limit}&continue={c}");
            }
            None => break,
        }
    }
    assert_eq!(pages, 2);
    // In key order, each once, all of them.
    assert_eq!(names, want);
    // A token from before the oldest served state is gone.
    let old: String = "replicasets\n0\n1\npayments\na"
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let r = get(a, &format!("{RS}?continue={old}"));
    assert_eq!(r.status, 410);
    assert_eq!(r.json()["reason"], "Expired");
}

#[test]
fn every_write_verb_is_refused_with_405() {
    let s = serve(Pace::Max);
    let name = current_rs();
    for method in ["POST", "PUT", "PATCH", "DELETE"] {
        let r = request_with(
            s.local_addr(),
            method,
            &format!("{RS}/{name}"),
            "application/json",
        );
        assert_eq!(r.status, 405, "{method}");
        let st = r.json();
        assert_eq!(st["reason"], "MethodNotAllowed");
        assert_eq!(st["code"], 405);
        assert_eq!(st["details"]["kind"], "replicasets");
        assert_eq!(st["details"]["name"], name.as_str());
    }
}

#[test]
fn lists_at_a_resource_version_follow_the_api_semantics() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let a = s.local_addr();
    let rv = |q: &str| get(a, &format!("{RS}?{q}")).json()["metadata"]["resourceVersion"].clone();
    let final_rv: u64 = final_rs_rv().parse().unwrap();
    assert!(final_rv > BASE_RV + 1);
    // Not older than: any version up to the current one gets the current state.
    assert_eq!(rv("resourceVersion=0"), final_rv.to_string());
    let between = (BASE_RV + final_rv) / 2;
    assert_eq!(
        rv(&format!("resourceVersion={between}")),
        final_rv.to_string()
    );
    assert_eq!(
        rv(&format!("resourceVersion={final_rv}")),
        final_rv.to_string()
    );
    // Exact: the state as it was, a history a live server would long have compacted.
    let exact = get(
        a,
        &format!("{RS}?resourceVersion={BASE_RV}&resourceVersionMatch=Exact"),
    )
    .json();
    assert_eq!(exact["metadata"]["resourceVersion"], BASE_RV.to_string());
    assert_eq!(item_names(&exact), recorded_initial_rs());
    for old in [BASE_RV - 1, 5] {
        let r = get(
            a,
            &format!("{RS}?resourceVersion={old}&resourceVersionMatch=Exact"),
        );
        assert_eq!(r.status, 410, "{old}");
        assert_eq!(r.json()["reason"], "Expired");
    }
    // From the future: the state at the end will never get there.
    let future = final_rv + 1;
    for q in [
        format!("resourceVersion={future}"),
        format!("resourceVersion={future}&resourceVersionMatch=Exact"),
    ] {
        let r = get(a, &format!("{RS}?{q}"));
        assert_eq!(r.status, 504, "{q}");
        assert!(r.json()["message"].as_str().unwrap().contains("Too large"));
    }
}

#[test]
fn a_watch_from_the_list_version_streams_every_later_event_in_order_then_bookmarks() {
    let s = serve(Pace::Max);
    let a = s.local_addr();
    let list = get(a, RS).json();
    assert_eq!(list["metadata"]["resourceVersion"], BASE_RV.to_string());
    assert_eq!(item_names(&list), recorded_initial_rs());
    let w = watch(
        a,
        &format!(
            "{RS}?watch=1&resourceVersion={BASE_RV}&allowWatchBookmarks=true&timeoutSeconds=1"
        ),
        Duration::from_secs(10),
    );
    assert_eq!(w.status, 200);
    assert!(w.ended, "timeoutSeconds ends the stream");
    assert!(w.elapsed >= Duration::from_millis(900), "{:?}", w.elapsed);
    assert!(w.elapsed < Duration::from_secs(5), "{:?}", w.elapsed);
    let got: Vec<(String, String, String)> = w
        .events()
        .iter()
        .map(|(t, n, rv)| ((*t).to_owned(), (*n).to_owned(), (*rv).to_owned()))
        .collect();
    let want = recorded_rs_events();
    assert_eq!(got, want);
    let final_rv = final_rs_rv();
    let types = w.types();
    assert_eq!(types.last(), Some(&"BOOKMARK"));
    let bookmark = w
        .lines
        .iter()
        .rev()
        .find(|l| l["type"] == "BOOKMARK")
        .unwrap();
    assert_eq!(bookmark["object"]["metadata"]["resourceVersion"], final_rv);
    // The watch moved the cursor: a new list is the state it reached.
    assert_eq!(get(a, RS).json()["metadata"]["resourceVersion"], final_rv);
    // Resuming from the middle sends only what follows.
    let mid = want.len() / 2;
    let from = &want[mid].2;
    let w = watch(
        a,
        &format!("{RS}?watch=1&resourceVersion={from}&timeoutSeconds=1"),
        Duration::from_secs(10),
    );
    let rvs: Vec<&str> = w.events().iter().map(|e| e.2).collect();
    let after: Vec<&str> = want[mid + 1..].iter().map(|e| e.2.as_str()).collect();
    assert!(!after.is_empty());
    assert_eq!(rvs, after);
}

#[test]
fn a_watch_from_a_version_older_than_the_base_gets_a_410_error_event() {
    let s = serve(Pace::Max);
    let w = watch(
        s.local_addr(),
        &format!("{RS}?watch=1&resourceVersion={}", BASE_RV - 1),
        Duration::from_secs(10),
    );
    assert_eq!(w.status, 200);
    assert!(w.ended);
    assert_eq!(w.lines.len(), 1);
    let e = &w.lines[0];
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["kind"], "Status");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
}

#[test]
fn a_watch_without_a_version_starts_with_the_state_as_added_events() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let w = watch(
        s.local_addr(),
        &format!("{RS}?watch=true&timeoutSeconds=1"),
        Duration::from_secs(10),
    );
    assert!(w.ended);
    let want: Vec<String> = recorded_final_rs().into_keys().collect();
    let n = want.len();
    assert_eq!(w.types(), vec!["ADDED"; n]);
    let names: Vec<&str> = w.events().iter().map(|e| e.1).collect();
    assert_eq!(names, want);
    // The streaming-list form ends its initial events with an annotated bookmark.
    let w = watch(
        s.local_addr(),
        &format!(
            "{RS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
        ),
        Duration::from_secs(10),
    );
    let mut initial = vec!["ADDED"; n];
    initial.push("BOOKMARK");
    assert_eq!(&w.types()[..=n], initial);
    assert_eq!(
        w.lines[n]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

#[test]
fn at_a_fixed_moment_a_watch_sends_events_up_to_it_then_idles() {
    let tl = timeline();
    // Between the first render's ReplicaSet and the newest render's (the one the Rollout's
    // status names): render 1's exists and is scaling, render 2's does not exist yet.
    let current = current_rs();
    let added: Vec<(String, Timestamp)> = records()
        .into_iter()
        .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Added)
        .map(|r| (r.name, r.observed_at))
        .collect();
    let (first, first_at) = added.first().unwrap().clone();
    let (_, current_at) = added.iter().find(|(n, _)| *n == current).unwrap().clone();
    assert_ne!(first, current, "two renders");
    let at = Timestamp((first_at.as_unix_nanos() + current_at.as_unix_nanos()) / 2);
    let want = recorded_rs_events_until(Some(at));
    assert!(want.len() > 1 && want.len() < recorded_rs_events().len());
    let want_rs: Vec<String> = recorded_rs_at(Some(at)).into_keys().collect();
    assert!(want_rs.contains(&first) && !want_rs.contains(&current));

    let s = serve_with(tl, Pace::At(at), Faults::default());
    let w = watch(
        s.local_addr(),
        &format!("{RS}?watch=1&resourceVersion={BASE_RV}&timeoutSeconds=1"),
        Duration::from_secs(10),
    );
    assert!(w.ended);
    let got: Vec<(String, String, String)> = w
        .events()
        .iter()
        .map(|(t, n, rv)| ((*t).to_owned(), (*n).to_owned(), (*rv).to_owned()))
        .collect();
    assert_eq!(got, want);
    let list = get(s.local_addr(), RS).json();
    assert_eq!(item_names(&list), want_rs);
    assert_eq!(list["metadata"]["resourceVersion"], want.last().unwrap().2);
}

#[test]
fn at_a_speed_events_arrive_in_recorded_time() {
    const SPEED: f64 = 10.0;
    // The last ReplicaSet event comes `span` into the recording: `span / SPEED` here.
    let last = records()
        .iter()
        .filter(|r| r.kind == Kind::ReplicaSet)
        .filter_map(rs_event)
        .map(|(_, at)| at)
        .max()
        .unwrap();
    let tl = timeline();
    let span = Duration::from_nanos((last.as_unix_nanos() - tl.start().as_unix_nanos()) as u64);
    let arrived = span.div_f64(SPEED);
    let wait = arrived + Duration::from_millis(1500);
    let timeout = wait.as_secs() + 3;
    let s = serve_with(tl, Pace::Speed(SPEED), Faults::default());
    let a = s.local_addr();
    let list = get(a, RS).json();
    assert_eq!(list["metadata"]["resourceVersion"], BASE_RV.to_string());
    let started = Instant::now();
    let w = watch(
        a,
        &format!("{RS}?watch=1&resourceVersion={BASE_RV}&timeoutSeconds={timeout}"),
        wait,
    );
    assert!(
        !w.ended,
        "the stream lasts until its timeout: {:?} {:?}",
        w.elapsed,
        w.types()
    );
    assert!(started.elapsed() >= arrived);
    assert_eq!(w.events().len(), recorded_rs_events().len());
    assert_eq!(
        get(a, RS).json()["metadata"]["resourceVersion"],
        final_rs_rv()
    );
}

#[test]
fn faults_close_streams_answer_gone_and_stall() {
    let path = format!("{RS}?watch=1&resourceVersion={BASE_RV}&timeoutSeconds=2");
    let s = serve_with(
        timeline(),
        Pace::Max,
        Faults {
            close_watch_every: 3,
            ..Faults::default()
        },
    );
    let w = watch(s.local_addr(), &path, Duration::from_secs(10));
    assert!(w.ended);
    assert!(
        w.elapsed < Duration::from_secs(1),
        "closed early: {:?}",
        w.elapsed
    );
    assert_eq!(w.events().len(), 3);
    drop(s);

    let s = serve_with(
        timeline(),
        Pace::Max,
        Faults {
            gone_every: 2,
            ..Faults::default()
        },
    );
    let first = watch(s.local_addr(), &path, Duration::from_secs(10));
    assert_eq!(first.events().len(), recorded_rs_events().len());
    let second = watch(s.local_addr(), &path, Duration::from_secs(10));
    assert_eq!(second.types(), ["ERROR"]);
    assert_eq!(second.lines[0]["object"]["code"], 410);
    drop(s);

    let s = serve_with(
        timeline(),
        Pace::Max,
        Faults {
            stall_after: 2,
            ..Faults::default()
        },
    );
    let w = watch(
        s.local_addr(),
        &format!(
            "{RS}?watch=1&resourceVersion={BASE_RV}&timeoutSeconds=1&allowWatchBookmarks=true"
        ),
        Duration::from_secs(10),
    );
    assert!(w.ended);
    let want = recorded_rs_events();
    let first_two: Vec<&str> = want[..2].iter().map(|e| e.0.as_str()).collect();
    assert_eq!(w.types(), first_two, "no bookmarks while stalled");
    assert!(w.elapsed >= Duration::from_millis(900));
}

fn small_recording(rvs: [&str; 4]) -> Arc<Timeline> {
    let header = Header::new(
        "test",
        Timestamp::from_unix_seconds(1000),
        Source {
            namespaces: vec!["ns".into()],
            kinds: vec![Kind::Pod],
            ..Source::default()
        },
    );
    let pod = |labels: &str, rv: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p","namespace":"ns","resourceVersion":"{rv}","labels":{{{labels}}}}},"spec":{{}}}}"#
        )
        .into_bytes()
    };
    let rec = |seq: u64, op: Op, rv: &str, object: Vec<u8>| Record {
        seq,
        observed_at: Timestamp::from_unix_seconds(1000 + seq as i64),
        kind: Kind::Pod,
        op,
        namespace: "ns".into(),
        name: if object.is_empty() {
            String::new()
        } else {
            "p".into()
        },
        uid: String::new(),
        resource_version: rv.into(),
        actor: None,
        object,
    };
    let records = vec![
        rec(1, Op::ListBegin, rvs[0], vec![]),
        rec(2, Op::ListEnd, rvs[0], vec![]),
        rec(3, Op::Added, rvs[1], pod(r#""app":"web""#, rvs[1])),
        rec(4, Op::Modified, rvs[2], pod(r#""app":"db""#, rvs[2])),
        rec(5, Op::Modified, rvs[3], pod(r#""app":"web""#, rvs[3])),
    ];
    Arc::new(Timeline::new(header, records, None))
}

#[test]
fn a_label_selector_watch_sees_objects_enter_and_leave_it() {
    let s = serve_with(
        small_recording(["10", "11", "12", "13"]),
        Pace::Max,
        Faults::default(),
    );
    let w = watch(
        s.local_addr(),
        "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=10&labelSelector=app%3Dweb&timeoutSeconds=1",
        Duration::from_secs(10),
    );
    assert_eq!(
        w.events(),
        [
            ("ADDED", "p", "11"),
            ("DELETED", "p", "12"),
            ("ADDED", "p", "13")
        ]
    );
}

#[test]
fn recordings_without_usable_versions_are_served_a_counter() {
    let s = serve_with(
        small_recording(["", "x", "y", "z"]),
        Pace::Max,
        Faults::default(),
    );
    let a = s.local_addr();
    let list = get(a, "/api/v1/namespaces/ns/pods").json();
    // Two records applied: the state's version is 3.
    assert_eq!(list["metadata"]["resourceVersion"], "3");
    let w = watch(
        a,
        "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=3&timeoutSeconds=1",
        Duration::from_secs(10),
    );
    assert_eq!(
        w.events(),
        [
            ("ADDED", "p", "4"),
            ("MODIFIED", "p", "5"),
            ("MODIFIED", "p", "6")
        ]
    );
    assert_eq!(w.lines[0]["object"]["metadata"]["labels"]["app"], "web");
}

#[test]
fn stopping_the_server_ends_open_watches() {
    let s = serve(Pace::Max);
    let a = s.local_addr();
    let t = std::thread::spawn(move || {
        watch(
            a,
            &format!("{RS}?watch=1&resourceVersion={BASE_RV}"),
            Duration::from_secs(20),
        )
    });
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    s.stop().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let w = t.join().unwrap();
    assert!(w.elapsed < Duration::from_secs(10), "{:?}", w.elapsed);
    assert_eq!(w.events().len(), recorded_rs_events().len());
}

/// FNV-1a, 64 bits: a digest of a response for the golden file.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What the server answers, for every request a client makes of a served recording: discovery;
/// per kind a list, its pages, its Table, one object, a label and a field selector, lists at the
/// base and mid-recording versions; watches from the base, from mid-recording and from before
/// the base (410). One line per request, with the response's status, length and digest.
fn answers(name: &str, tl: Arc<Timeline>, pace: Pace, tag: &str) -> Vec<String> {
    let server = serve_with(tl.clone(), pace, Faults::default());
    let addr = server.local_addr();
    let mut paths: Vec<(String, &str)> =
        ["/version", "/api", "/api/v1", "/apis", "/api/v1/namespaces"]
            .iter()
            .map(|p| (p.to_string(), "application/json"))
            .collect();
    let mut watches = Vec::new();
    for k in tl.kinds() {
        let r = k.resource();
        let root = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        paths.push((root.clone(), "application/json"));
        let all = format!("{root}/{}", r.plural);
        let listed = get(addr, &all);
        let items = listed.json()["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        paths.push((all.clone(), "application/json"));
        paths.push((all.clone(), TABLE));
        if let Some(first) = items.first() {
            let m = &first["metadata"];
            let (ns, n) = (
                m["namespace"].as_str().unwrap_or(""),
                m["name"].as_str().unwrap(),
            );
            let one = format!("{root}/namespaces/{ns}/{}/{n}", r.plural);
            paths.push((one.clone(), "application/json"));
            paths.push((one, TABLE));
            paths.push((
                format!("{root}/namespaces/{ns}/{}", r.plural),
                "application/json",
            ));
            paths.push((
                format!("{all}?fieldSelector=metadata.name%3D{n}"),
                "application/json",
            ));
            if let Some((key, value)) = m["labels"].as_object().and_then(|l| l.iter().next()) {
                let value = value.as_str().unwrap_or("");
                paths.push((
                    format!("{all}?labelSelector={key}%3D{value}"),
                    "application/json",
                ));
                paths.push((
                    format!("{all}?labelSelector={key}%3D{value}&watch=1&timeoutSeconds=1"),
                    "application/json",
                ));
            }
        }
        let mid = k.list_rv(tl.len() / 2);
        for rv in [k.base_rv().saturating_sub(1), k.base_rv(), mid] {
            paths.push((
                format!("{all}?resourceVersion={rv}&resourceVersionMatch=Exact"),
                "application/json",
            ));
        }
        for rv in [k.base_rv().saturating_sub(1), k.base_rv(), mid] {
            watches.push(format!(
                "{all}?watch=1&resourceVersion={rv}&timeoutSeconds=1"
            ));
        }
        watches.push(format!("{all}?watch=1&timeoutSeconds=1"));
        // Pages of two, following each continue token.
        let mut next = format!("{all}?limit=2");
        for _ in 0..40 {
            paths.push((next.clone(), "application/json"));
            let page = get(addr, &next).json();
            match page["metadata"]["continue"].as_str() {
                Some(token) if !token.is_empty() => {
                    next = format!("{all}?limit=2&continue={token}")
                }
                _ => break,
            }
        }
    }
    for w in &watches {
        paths.push((w.clone(), "application/json"));
        paths.push((w.clone(), TABLE));
    }
    // Each watch lasts its timeout: all at once.
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .iter()
            .map(|(path, accept)| {
                s.spawn(move || {
                    let mut r = request_with(addr, "GET", path, accept);
                    // The one thing that differs between runs: the server's port.
                    let text = String::from_utf8_lossy(&r.body).replace(&addr.to_string(), "ADDR");
                    r.body = text.into_bytes();
                    let kind = if *accept == TABLE { "table" } else { "json" };
                    format!(
                        "{name} {tag} {kind} {path} {} {} {:016x}",
                        r.status,
                        r.body.len(),
                        digest(&r.body)
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Every answer the server gives over the bundled recordings (simulated and from the real
/// controller), at the end and mid-recording, against the answers of the server as it was
/// first written: a change to how versions are kept must not change one byte of what is served.
/// `RF_UPDATE_GOLDEN=1` rewrites the file (only for a change that means to change answers).
#[test]
fn every_answer_over_the_bundled_recordings_is_byte_identical_to_the_golden_file() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../recordings");
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for dir in [root.to_owned(), format!("{root}/real")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "rfr") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 40, "{} recordings", files.len());
    let mut lines = Vec::new();
    // A few recordings at a time: each answer set waits a second for its watches to end.
    for group in files.chunks(8) {
        let answered: Vec<Vec<String>> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .iter()
                .map(|f| {
                    s.spawn(move || {
                        let tl = Arc::new(Timeline::read(std::fs::File::open(f).unwrap()).unwrap());
                        let name = f.strip_prefix(root).unwrap().display().to_string();
                        let mid = tl.time_at(tl.len() / 2);
                        let mut lines = answers(&name, tl.clone(), Pace::At(tl.end()), "end");
                        lines.extend(answers(&name, tl.clone(), Pace::At(mid), "mid"));
                        lines
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        lines.extend(answered.into_iter().flatten());
    }
    let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/answers.golden");
    let text = lines.join("\n") + "\n";
    if std::env::var_os("RF_UPDATE_GOLDEN").is_some() {
        std::fs::write(golden, &text).unwrap();
    }
    let want = std::fs::read_to_string(golden).unwrap();
    let (want, got): (Vec<&str>, Vec<&str>) = (want.lines().collect(), text.lines().collect());
    let differ: Vec<_> = want
        .iter()
        .zip(&got)
        .filter(|(w, g)| w != g)
        .take(10)
        .collect();
    assert!(
        differ.is_empty(),
        "answers differ from the golden file:\n{differ:#?}"
    );
    assert_eq!(want.len(), got.len(), "as many answers as the golden file");
}
