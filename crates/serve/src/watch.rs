//! WATCH: a task per stream pulls events from the shared timeline and pushes lines into a
//! bounded channel the response body drains, so a slow client holds back only its own stream.
//!
//! Lines that are ready together (a backlog under `--speed max`, the initial ADDED events) go
//! out in chunks of up to [`CHUNK_BYTES`]; a stream about to wait for the next event, or to end,
//! sends what it holds first, so no line waits for a later one.

use std::sync::Arc;

use hyper::body::Bytes;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant, sleep_until};

use crate::api::Params;
use crate::body::Rebuilt;
use crate::clock::Scope;
use crate::http::{self, Resp};
use crate::json;
use crate::resource::Resource;
use crate::server::Shared;
use crate::table;
use crate::timeline::{EventType, KindTimeline, Version};

/// Chunks buffered per stream before the task waits for the client.
const BUFFERED_CHUNKS: usize = 8;

/// Lines are gathered into a chunk until it holds this many bytes (a line longer than that is a
/// chunk of its own).
const CHUNK_BYTES: usize = 64 * 1024;

#[derive(Debug)]
enum Start {
    /// Synthetic ADDED events for the state at the cursor, then what follows it.
    Initial,
    /// The events after a resourceVersion.
    After { position: usize, rv: u64 },
}

#[derive(Debug)]
struct Watch {
    scope: Scope,
    params: Params,
    start: Start,
    deadline: Instant,
}

fn error_line(code: u16, reason: &str, message: &str) -> Bytes {
    let mut out = b"{\"type\":\"ERROR\",\"object\":".to_vec();
    out.extend_from_slice(&json::to_vec(&http::status_value(
        code, reason, message, None,
    )));
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// A watch answered with a single ERROR line, as the API server answers a watch from a version
/// it no longer has.
fn gone_stream(message: &str) -> Resp {
    let (tx, rx) = mpsc::channel(1);
    // The channel has room for this one line; the stream ends when `tx` drops.
    let _ = tx.try_send(error_line(410, "Expired", message));
    http::stream(rx)
}

/// Starts a watch of kind `kind_index` (in `namespace`, or all).
pub fn start(shared: &Arc<Shared>, kind_index: usize, namespace: Option<&str>, p: &Params) -> Resp {
    let k = &shared.timeline.kinds()[kind_index];
    let n = shared
        .watches
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let every = shared.options.faults.gone_every;
    if every > 0 && n % every == 0 {
        return gone_stream(&format!(
            "too old resource version (fault injected: every {every} watches are answered 410)"
        ));
    }
    let requested = match p.rv() {
        Ok(rv) => rv,
        Err(e) => return http::bad_request(&e),
    };
    let start = match requested {
        Some(rv) if !p.initial_events => match k.position_for_rv(rv) {
            Ok(position) => Start::After { position, rv },
            Err(old) => {
                return gone_stream(&format!(
                    "too old resource version: {} ({})",
                    old.requested, old.oldest
                ));
            }
        },
        _ => Start::Initial,
    };
    let timeout = p.timeout.unwrap_or(shared.options.default_watch_timeout);
    let w = Watch {
        scope: (kind_index, namespace.map(str::to_owned)),
        params: p.clone(),
        start,
        deadline: Instant::now() + timeout,
    };
    let (tx, rx) = mpsc::channel(BUFFERED_CHUNKS);
    let watch = tokio::spawn(run(shared.clone(), w, tx.clone()));
    // A watch that fails inside the server (a version its scratch file no longer reads) ends
    // with an ERROR event saying so, as the API server ends one it cannot go on with; the
    // stream ends when both senders are dropped.
    tokio::spawn(async move {
        if let Err(e) = watch.await {
            if e.is_panic() {
                let payload = e.into_panic();
                let message = http::panic_message(&*payload);
                let _ = tx.send(error_line(500, "InternalError", message)).await;
            }
        }
    });
    http::stream(rx)
}

/// Appends the watch line of an event to `out`.
fn event_line(
    out: &mut Vec<u8>,
    rebuilt: &mut Rebuilt,
    shared: &Shared,
    k: &KindTimeline,
    ty: &str,
    v: &Version,
    p: &Params,
) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(ty.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    if p.table {
        let meta = json!({"resourceVersion": v.meta.resource_version});
        let now = shared.clock.now(&shared.timeline);
        out.extend_from_slice(&table::table(k.resource(), [v], &meta, p.include, now));
    } else {
        rebuilt.write(&v.json, out);
    }
    out.extend_from_slice(b"}\n");
}

fn bookmark_line(k: &KindTimeline, rv: u64, initial_end: bool) -> Bytes {
    let r = k.resource();
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        if let Some(m) = meta.as_object_mut() {
            m.insert(
                "annotations".into(),
                json!({"k8s.io/initial-events-end": "true"}),
            );
        }
    }
    let object = json!({"kind": r.kind_name(), "apiVersion": r.api_version(), "metadata": meta});
    let mut out = b"{\"type\":\"BOOKMARK\",\"object\":".to_vec();
    out.extend_from_slice(&json::to_vec(&object));
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// The type an event has for this watch's selectors: an object that starts matching is ADDED,
/// one that stops matching is DELETED.
fn event_type(
    w: &Watch,
    ty: EventType,
    object: &Version,
    previous: Option<&Version>,
) -> Option<&'static str> {
    let ns = w.scope.1.as_deref();
    let now = w.params.matches(ns, object);
    // Without a selector the version before (of the same object, in the same namespace)
    // matched as this one does; it is not made then.
    let before = if w.params.selects() {
        previous.is_some_and(|v| w.params.matches(ns, v))
    } else {
        now
    };
    match ty {
        EventType::Added => now.then_some("ADDED"),
        EventType::Modified => match (before, now) {
            (true, true) => Some("MODIFIED"),
            (false, true) => Some("ADDED"),
            (true, false) => Some("DELETED"),
            (false, false) => None,
        },
        EventType::Deleted => (now || before).then_some("DELETED"),
    }
}

struct Stream {
    shared: Arc<Shared>,
    tx: mpsc::Sender<Bytes>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    deadline: Instant,
    sent: u64,
    /// Lines not yet handed to the body.
    chunk: Vec<u8>,
}

enum After {
    Go,
    Close,
    Stall,
}

impl Stream {
    fn new(shared: &Arc<Shared>, tx: mpsc::Sender<Bytes>, deadline: Instant) -> Stream {
        Stream {
            shutdown: shared.shutdown.clone(),
            shared: shared.clone(),
            tx,
            deadline,
            sent: 0,
            chunk: Vec::new(),
        }
    }

    /// Sends the lines gathered so far; false when the client is gone, the server stops or the
    /// time is up.
    async fn flush(&mut self) -> bool {
        if self.chunk.is_empty() {
            return true;
        }
        let chunk = Bytes::from(std::mem::take(&mut self.chunk));
        tokio::select! {
            r = self.tx.send(chunk) => r.is_ok(),
            _ = self.shutdown.changed() => false,
            () = sleep_until(self.deadline) => false,
        }
    }

    /// Sends one line now, after the lines gathered before it.
    async fn send(&mut self, line: &[u8]) -> bool {
        self.chunk.extend_from_slice(line);
        self.flush().await
    }

    /// Gathers an event's line (written by `line`), sends the chunk once it is full, and applies
    /// the faults (sending what was gathered before closing or stalling).
    async fn send_event(&mut self, line: impl FnOnce(&mut Vec<u8>)) -> After {
        if self.chunk.capacity() == 0 {
            self.chunk.reserve(CHUNK_BYTES + CHUNK_BYTES / 8);
        }
        line(&mut self.chunk);
        if self.chunk.len() >= CHUNK_BYTES && !self.flush().await {
            return After::Close;
        }
        self.sent += 1;
        let f = self.shared.options.faults;
        let close = f.close_watch_every > 0 && self.sent >= f.close_watch_every;
        let stall = f.stall_after > 0 && self.sent >= f.stall_after;
        if (close || stall) && !self.flush().await {
            return After::Close;
        }
        if close {
            return After::Close;
        }
        if stall {
            return After::Stall;
        }
        After::Go
    }

    /// Sends what was gathered, then waits until `until`; false when the stream should end
    /// instead.
    async fn wait(&mut self, until: Instant) -> bool {
        if !self.flush().await {
            return false;
        }
        tokio::select! {
            () = sleep_until(until) => Instant::now() < self.deadline,
            () = self.tx.closed() => false,
            _ = self.shutdown.changed() => false,
        }
    }

    async fn stall(&mut self) {
        let deadline = self.deadline;
        self.wait(deadline).await;
    }
}

async fn run(shared: Arc<Shared>, w: Watch, tx: mpsc::Sender<Bytes>) {
    let tl = shared.timeline.clone();
    let k = &tl.kinds()[w.scope.0];
    let p = &w.params;
    let interval = shared
        .options
        .bookmark_interval
        .max(Duration::from_millis(10));
    let mut s = Stream::new(&shared, tx, w.deadline);
    // The objects' versions are sent in order: each is rebuilt from the one sent before.
    let mut rebuilt = Rebuilt::default();
    if *s.shutdown.borrow() {
        return;
    }
    let (mut next, mut last_rv) = match w.start {
        Start::After { position, rv } => (k.applied_at(position), rv),
        Start::Initial => {
            let position = shared.clock.position(&tl, &w.scope);
            let ns = w.scope.1.as_deref();
            for (_, v) in k.list(position, None).filter(|(_, v)| p.matches(ns, v)) {
                match s
                    .send_event(|out| event_line(out, &mut rebuilt, &shared, k, "ADDED", &v, p))
                    .await
                {
                    After::Go => {}
                    After::Close => return,
                    After::Stall => return s.stall().await,
                }
            }
            let rv = k.list_rv(position);
            if p.initial_events && !s.send(&bookmark_line(k, rv, true)).await {
                return;
            }
            (k.applied_at(position), rv)
        }
    };
    let mut dirty = true;
    let mut last_bookmark: Option<Instant> = None;
    loop {
        if Instant::now() >= s.deadline {
            break;
        }
        let released = shared.clock.released(&tl);
        // The version before only when a selector may tell it from this one.
        if let Some(e) = k.event_with(next, released, p.selects()) {
            next += 1;
            last_rv = last_rv.max(e.rv);
            dirty = true;
            shared.clock.advance(&w.scope, e.index + 1);
            if let Some(ty) = event_type(&w, e.kind, &e.object, e.previous.as_deref()) {
                match s
                    .send_event(|out| event_line(out, &mut rebuilt, &shared, k, ty, &e.object, p))
                    .await
                {
                    After::Go => {}
                    After::Close => return,
                    After::Stall => return s.stall().await,
                }
            }
            continue;
        }
        // Caught up: a bookmark now and then, until the next event is due or time is up.
        let now = Instant::now();
        if p.bookmarks && (dirty || last_bookmark.is_none_or(|t| now >= t + interval)) {
            let rv = last_rv.max(k.list_rv(released.min(tl.len())));
            if !s.send(&bookmark_line(k, rv, false)).await {
                return;
            }
            dirty = false;
            last_bookmark = Some(Instant::now());
        }
        let mut wake = s.deadline;
        if let (true, Some(t)) = (p.bookmarks, last_bookmark) {
            wake = wake.min(t + interval);
        }
        if let Some(index) = k.event_index(next) {
            if let Some(d) = shared.clock.wait_for(&tl, index) {
                wake = wake.min(Instant::now() + d.max(Duration::from_millis(1)));
            }
        }
        if !s.wait(wake).await {
            break;
        }
    }
    // Past the deadline `flush` gives up at once, so use the channel's room if any.
    let mut last = std::mem::take(&mut s.chunk);
    if p.bookmarks && !s.tx.is_closed() {
        let released = shared.clock.released(&tl);
        let rv = last_rv.max(k.list_rv(released.min(tl.len())));
        last.extend_from_slice(&bookmark_line(k, rv, false));
    }
    if !last.is_empty() {
        let _ = s.tx.try_send(Bytes::from(last));
    }
}

/// A watch of objects that never change: ADDED for each of `initial`, then nothing (bookmarks
/// if asked) until the timeout.
pub fn fixed(
    shared: &Arc<Shared>,
    resource: &Resource,
    initial: Vec<&Version>,
    p: &Params,
) -> Resp {
    let (tx, rx) = mpsc::channel(BUFFERED_CHUNKS);
    let timeout = p.timeout.unwrap_or(shared.options.default_watch_timeout);
    let mut lines = Vec::new();
    for v in initial {
        let mut out = b"{\"type\":\"ADDED\",\"object\":".to_vec();
        if p.table {
            let meta = json!({"resourceVersion": v.meta.resource_version});
            let now = shared.clock.now(&shared.timeline);
            out.extend_from_slice(&table::table(resource, [v], &meta, p.include, now));
        } else {
            out.extend_from_slice(&v.json.bytes());
        }
        out.extend_from_slice(b"}\n");
        lines.push(Bytes::from(out));
    }
    let bookmark = p.bookmarks.then(|| {
        let object = json!({"kind": resource.kind_name(), "apiVersion": resource.api_version(), "metadata": {"resourceVersion": "1"}});
        let mut out = b"{\"type\":\"BOOKMARK\",\"object\":".to_vec();
        out.extend_from_slice(&json::to_vec(&object));
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    });
    let mut s = Stream::new(shared, tx, Instant::now() + timeout);
    let interval = shared
        .options
        .bookmark_interval
        .max(Duration::from_millis(10));
    tokio::spawn(async move {
        for line in lines {
            if !s.send(&line).await {
                return;
            }
        }
        loop {
            if let Some(b) = &bookmark {
                if !s.send(b).await {
                    return;
                }
            }
            let until = if bookmark.is_some() {
                (Instant::now() + interval).min(s.deadline)
            } else {
                s.deadline
            };
            if !s.wait(until).await {
                return;
            }
        }
    });
    http::stream(rx)
}
