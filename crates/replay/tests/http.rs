//! The replay server over real HTTP on loopback, with a minimal client written here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rf_format::{Header, Kind, Op, Reader, Record, Source, Timestamp};
use rf_replay::{Background, Faults, Options, Pace, Timeline};
use serde_json::Value;

const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../recordings/rerender-race.rfr"
);
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const RS: &str = "/apis/apps/v1/namespaces/payments/replicasets";
/// The list resourceVersion of the recording's initial lists.
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

/// Reads the status line and headers; returns the status and whether the body is chunked, or
/// its length.
fn head(r: &mut BufReader<TcpStream>) -> (u16, bool, Option<usize>) {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let (mut chunked, mut len) = (false, None);
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "transfer-encoding" => chunked = v.trim().eq_ignore_ascii_case("chunked"),
            "content-length" => len = Some(v.trim().parse().unwrap()),
            _ => {}
        }
    }
    (status, chunked, len)
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

/// The recorded ReplicaSet events after the initial lists: (type, name, resourceVersion).
fn recorded_rs_events() -> Vec<(String, String, String)> {
    records()
        .into_iter()
        .filter(|r| r.kind == Kind::ReplicaSet && matches!(r.op, Op::Added | Op::Modified))
        .map(|r| {
            let ty = if r.op == Op::Added {
                "ADDED"
            } else {
                "MODIFIED"
            };
            (ty.to_owned(), r.name, r.resource_version)
        })
        .collect()
}

/// The recorded final bytes of each ReplicaSet.
fn recorded_final_rs() -> BTreeMap<String, Vec<u8>> {
    records()
        .into_iter()
        .filter(|r| r.kind == Kind::ReplicaSet && r.op.has_object())
        .map(|r| (r.name, r.object))
        .collect()
}

#[test]
fn discovery_names_every_recorded_kind_with_read_verbs_only() {
    let s = serve(Pace::Max);
    let a = s.local_addr();
    let v = get(a, "/version").json();
    assert_eq!(v["major"], "1");
    assert!(v["gitVersion"].as_str().unwrap().starts_with("v1."));
    assert_eq!(get(a, "/api").json()["versions"][0], "v1");
    let core = get(a, "/api/v1").json();
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["events", "namespaces"]);
    let groups = get(a, "/apis").json();
    let gs: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["preferredVersion"]["groupVersion"].as_str().unwrap())
        .collect();
    assert_eq!(gs, ["apps/v1", "argoproj.io/v1alpha1"]);
    let apps = get(a, "/apis/apps/v1").json();
    assert_eq!(apps["resources"][0]["name"], "replicasets");
    assert_eq!(apps["resources"][0]["shortNames"][0], "rs");
    assert_eq!(apps["resources"][0]["namespaced"], true);
    assert_eq!(
        apps["resources"][0]["verbs"],
        serde_json::json!(["get", "list", "watch"])
    );
    let argo = get(a, "/apis/argoproj.io/v1alpha1").json();
    assert_eq!(argo["resources"][0]["name"], "rollouts");
    assert_eq!(argo["resources"][0]["shortNames"][0], "ro");
    assert_eq!(get(a, "/apis/argoproj.io").json()["kind"], "APIGroup");
    assert_eq!(get(a, "/apis/discovery.k8s.io/v1").status, 404);
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
    assert_eq!(list["metadata"]["resourceVersion"], "48213092");
    let want = recorded_final_rs();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), want.len());
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
    assert_eq!(rows.len(), 4);
    let new = rows
        .iter()
        .find(|r| r["cells"][0] == "checkout-api-5dcb79859c")
        .unwrap();
    // Created at +36 s, served at +6 min: 5m24s, whatever the wall clock says.
    assert_eq!(new["cells"][4], "5m24s");
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
    assert_eq!(ev["rows"].as_array().unwrap().len(), 11);
}

#[test]
fn selectors_filter_lists_and_bad_parameters_are_named_in_a_400() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let a = s.local_addr();
    let count = |q: &str| {
        get(a, &format!("{RS}?{q}")).json()["items"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count("labelSelector=app%3Dcheckout-api"), 4);
    assert_eq!(
        count("labelSelector=rollouts-pod-template-hash+in+(5dcb79859c,7f6c69bf49)"),
        2
    );
    assert_eq!(count("labelSelector=app!%3Dcheckout-api"), 0);
    assert_eq!(
        count("fieldSelector=metadata.name%3Dcheckout-api-5dcb79859c"),
        1
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
    let mut names = Vec::new();
    let mut path = format!("{RS}?limit=3");
    let mut pages = 0;
    loop {
        let page = get(a, &path).json();
        pages += 1;
        assert_eq!(page["metadata"]["resourceVersion"], "48213092");
        for i in page["items"].as_array().unwrap() {
            names.push(i["metadata"]["name"].as_str().unwrap().to_owned());
        }
        match page["metadata"]["continue"].as_str() {
            Some(c) => {
                assert_eq!(page["metadata"]["remainingItemCount"], 1);
                path = format!("{RS}?limit=3&continue={c}");
            }
            None => break,
        }
    }
    assert_eq!(pages, 2);
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert_eq!(names.len(), 4);
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
    for method in ["POST", "PUT", "PATCH", "DELETE"] {
        let r = request_with(
            s.local_addr(),
            method,
            &format!("{RS}/checkout-api-5dcb79859c"),
            "application/json",
        );
        assert_eq!(r.status, 405, "{method}");
        let st = r.json();
        assert_eq!(st["reason"], "MethodNotAllowed");
        assert_eq!(st["code"], 405);
        assert_eq!(st["details"]["kind"], "replicasets");
    }
}

#[test]
fn lists_at_a_resource_version_follow_the_api_semantics() {
    let tl = timeline();
    let s = serve_with(tl.clone(), end_of(&tl), Faults::default());
    let a = s.local_addr();
    let rv = |q: &str| get(a, &format!("{RS}?{q}")).json()["metadata"]["resourceVersion"].clone();
    assert_eq!(rv("resourceVersion=0"), "48213092");
    assert_eq!(rv("resourceVersion=48213000"), "48213092");
    // Exact: the state as it was, a history a live server would long have compacted.
    let exact = get(
        a,
        &format!("{RS}?resourceVersion={BASE_RV}&resourceVersionMatch=Exact"),
    )
    .json();
    assert_eq!(exact["metadata"]["resourceVersion"], BASE_RV.to_string());
    assert_eq!(exact["items"].as_array().unwrap().len(), 2);
    let r = get(
        a,
        &format!("{RS}?resourceVersion=5&resourceVersionMatch=Exact"),
    );
    assert_eq!(r.status, 410);
    assert_eq!(r.json()["reason"], "Expired");
    // From the future: the state at the end will never get there.
    for q in [
        "resourceVersion=99999999",
        "resourceVersion=99999999&resourceVersionMatch=Exact",
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
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
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
    assert_eq!(got, recorded_rs_events());
    let types = w.types();
    assert_eq!(types.last(), Some(&"BOOKMARK"));
    let bookmark = w
        .lines
        .iter()
        .rev()
        .find(|l| l["type"] == "BOOKMARK")
        .unwrap();
    assert_eq!(
        bookmark["object"]["metadata"]["resourceVersion"],
        "48213092"
    );
    // The watch moved the cursor: a new list is the state it reached.
    assert_eq!(get(a, RS).json()["metadata"]["resourceVersion"], "48213092");
    // Resuming from the middle sends only what follows.
    let w = watch(
        a,
        &format!("{RS}?watch=1&resourceVersion=48213031&timeoutSeconds=1"),
        Duration::from_secs(10),
    );
    let rvs: Vec<&str> = w.events().iter().map(|e| e.2).collect();
    assert_eq!(
        rvs,
        [
            "48213053", "48213065", "48213077", "48213084", "48213085", "48213092"
        ]
    );
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
    assert_eq!(w.types(), ["ADDED"; 4]);
    // The streaming-list form ends its initial events with an annotated bookmark.
    let w = watch(
        s.local_addr(),
        &format!(
            "{RS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
        ),
        Duration::from_secs(10),
    );
    assert_eq!(
        &w.types()[..5],
        ["ADDED", "ADDED", "ADDED", "ADDED", "BOOKMARK"]
    );
    assert_eq!(
        w.lines[4]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

#[test]
fn at_a_fixed_moment_a_watch_sends_events_up_to_it_then_idles() {
    let tl = timeline();
    // +10 s: render 1's ReplicaSet exists and is scaling; render 2 is 25 s away.
    let at = tl.start().plus_nanos(10_000_000_000);
    let s = serve_with(tl, Pace::At(at), Faults::default());
    let w = watch(
        s.local_addr(),
        &format!("{RS}?watch=1&resourceVersion={BASE_RV}&timeoutSeconds=1"),
        Duration::from_secs(10),
    );
    assert!(w.ended);
    let names: Vec<&str> = w.events().iter().map(|e| e.1).collect();
    assert_eq!(names.len(), 6, "{names:?}");
    assert!(!names.contains(&"checkout-api-5dcb79859c"));
    let list = get(s.local_addr(), RS).json();
    assert_eq!(list["items"].as_array().unwrap().len(), 3);
}

#[test]
fn at_a_speed_events_arrive_in_recorded_time() {
    // Events span +5 s .. +42 s of the recording: 0.5 s .. 4.2 s at 10x.
    let s = serve(Pace::Speed(10.0));
    let a = s.local_addr();
    let list = get(a, RS).json();
    assert_eq!(list["metadata"]["resourceVersion"], BASE_RV.to_string());
    let started = Instant::now();
    let w = watch(
        a,
        &format!("{RS}?watch=1&resourceVersion={BASE_RV}&timeoutSeconds=8"),
        Duration::from_secs(6),
    );
    assert!(
        !w.ended,
        "the stream lasts until its timeout: {:?} {:?}",
        w.elapsed,
        w.types()
    );
    assert!(started.elapsed() >= Duration::from_secs(4));
    assert_eq!(w.events().len(), recorded_rs_events().len());
    assert_eq!(get(a, RS).json()["metadata"]["resourceVersion"], "48213092");
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
    assert_eq!(
        w.types(),
        ["ADDED", "MODIFIED"],
        "no bookmarks while stalled"
    );
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
