//! One list-and-watch loop per resource and namespace: list, watch from the list's version,
//! resume a closed or broken watch from the last version seen (nothing is lost), and relist when
//! the server says the version is gone (410): then a Gap record says so, and the relist writes
//! every object as Listed and every vanished one as Deleted{inferred}.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::io::{AsyncBufReadExt, AsyncReadExt};
use kube::Client;
use kube::core::Request;
use kube::core::params::{ListParams, WatchParams};
use rf_format::{Op, Timestamp};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::clock::now;
use crate::error::{Error, Result};
use crate::redact::redact_tree;
use crate::resource::Resource;
use crate::scan::scan;
use crate::sink::{Draft, Message};

/// The longest watch line accepted: the format's frame limit.
const MAX_LINE: u64 = rf_format::MAX_FRAME_LEN as u64;

/// What one loop watches.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub resource: Resource,
    pub namespace: Option<String>,
    pub selector: Option<String>,
}

impl Target {
    fn scope(&self) -> String {
        match &self.namespace {
            Some(ns) => format!(" in namespace {ns}"),
            None => " in all namespaces".to_owned(),
        }
    }
}

/// Timing and limits of the loops.
#[derive(Clone, Debug)]
pub(crate) struct Tuning {
    pub watch_timeout: Duration,
    pub idle_timeout: Duration,
    pub backoff_max: Duration,
    pub page_size: u32,
    pub redact: bool,
}

/// Live counters shared with the status line.
#[derive(Debug, Default)]
pub struct Stats {
    /// Watch events and listed objects per kind.
    pub per_kind: Mutex<BTreeMap<String, u64>>,
    /// Gaps recorded.
    pub gaps: std::sync::atomic::AtomicU64,
    /// Watches resumed after closing or breaking (no history lost).
    pub resumes: std::sync::atomic::AtomicU64,
}

impl Stats {
    fn count(&self, kind: &str) {
        if let Ok(mut m) = self.per_kind.lock() {
            match m.get_mut(kind) {
                Some(n) => *n += 1,
                None => {
                    m.insert(kind.to_owned(), 1);
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct MetaOnly {
    #[serde(default)]
    metadata: MetaFields,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct MetaFields {
    name: String,
    namespace: String,
    uid: String,
    resource_version: String,
}

impl From<crate::scan::Identity> for MetaFields {
    fn from(id: crate::scan::Identity) -> Self {
        MetaFields {
            name: id.name,
            namespace: id.namespace,
            uid: id.uid,
            resource_version: id.resource_version,
        }
    }
}

/// The record op of a watch event type that carries an object's change (`None` for bookmarks,
/// errors and anything else).
fn event_op(kind: &[u8]) -> Option<Op> {
    match kind {
        b"ADDED" => Some(Op::Added),
        b"MODIFIED" => Some(Op::Modified),
        b"DELETED" => Some(Op::Deleted { inferred: false }),
        _ => None,
    }
}

/// Splits a watch line of the layout the API server writes, `{"type":"T","object":{...}}`
/// (trailing whitespace allowed), into the event type and the object's bytes, without reading
/// the object. `None` for any other layout.
fn split_event(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    let (kind, rest) = rest.split_at(end);
    if kind.is_empty() || !kind.iter().all(u8::is_ascii_uppercase) {
        return None;
    }
    let rest = rest.strip_prefix(br#"","object":"#)?;
    let object = rest.trim_ascii_end().strip_suffix(b"}")?;
    (object.first() == Some(&b'{') && object.last() == Some(&b'}')).then_some((kind, object))
}

#[derive(Deserialize)]
struct ListPage {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<Box<RawValue>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ListMeta {
    resource_version: String,
    #[serde(rename = "continue")]
    continue_: Option<String>,
}

#[derive(Deserialize)]
struct WatchLine<'a> {
    #[serde(rename = "type", borrow)]
    type_: Cow<'a, str>,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusObject {
    code: u16,
    reason: String,
    message: String,
}

struct Known {
    uid: String,
    rv: String,
    object: Arc<[u8]>,
}

enum WatchEnd {
    /// The server ended the watch (timeout) or the connection closed: resume.
    Closed,
    /// No byte for the idle timeout: the stream stalled; resume.
    Stalled,
    /// The version is gone: relist, with a gap.
    Expired(String),
    /// An error: back off, then resume.
    Failed(String),
}

struct Loop {
    client: Client,
    target: Target,
    tuning: Tuning,
    out: Outbox,
    stats: Arc<Stats>,
    known: HashMap<(String, String), Known>,
}

/// Records on their way to the writer. Records that arrive together (a backlog, a list) go as
/// one message of up to [`BATCH`]: one wake-up of the writer, and of this loop when the channel
/// is full, per batch instead of per record. A loop sends what it holds before it waits for the
/// network, so a record never waits for a later one.
struct Outbox {
    tx: mpsc::Sender<Message>,
    drafts: Vec<Draft>,
}

/// Records per message to the writer, at most.
pub(crate) const BATCH: usize = 64;

impl Outbox {
    fn new(tx: mpsc::Sender<Message>) -> Self {
        Outbox {
            tx,
            drafts: Vec::new(),
        }
    }

    /// Adds a record, sending the batch once it is full; false when the writer is gone (the
    /// recorder is stopping).
    async fn push(&mut self, d: Draft) -> bool {
        if self.drafts.capacity() == 0 {
            self.drafts.reserve_exact(BATCH);
        }
        self.drafts.push(d);
        self.drafts.len() < BATCH || self.flush().await
    }

    /// Sends what it holds; false when the writer is gone.
    async fn flush(&mut self) -> bool {
        match self.drafts.len() {
            0 => true,
            1 => match self.drafts.pop() {
                Some(d) => self.tx.send(Message::Record(d)).await.is_ok(),
                None => true,
            },
            _ => {
                let batch = std::mem::take(&mut self.drafts);
                self.tx.send(Message::Records(batch)).await.is_ok()
            }
        }
    }
}

impl Drop for Outbox {
    /// A loop stopped while holding records it had received (the recorder is stopping): hand
    /// them over if the channel has room.
    fn drop(&mut self) {
        if !self.drafts.is_empty() {
            let batch = std::mem::take(&mut self.drafts);
            let _ = self.tx.try_send(Message::Records(batch));
        }
    }
}

fn classify_start_error(
    e: &kube::Error,
    target: &Target,
    verb: &'static str,
    server: &str,
) -> Error {
    match e {
        kube::Error::Api(s) if s.code == 403 => Error::Forbidden {
            verb,
            resource: target.resource.qualified(),
            scope: target.scope(),
            message: s.message.clone(),
        },
        kube::Error::Api(s) if s.code == 404 => Error::NotServed {
            resource: target.resource.qualified(),
            api_version: target.resource.api_version(),
            hint: format!(": {}", s.message),
        },
        other => Error::Unreachable {
            server: server.to_owned(),
            detail: other.to_string(),
        },
    }
}

/// Runs the loop until the writer goes away. Errors only when the first list fails.
pub(crate) async fn run(
    client: Client,
    target: Target,
    tuning: Tuning,
    tx: mpsc::Sender<Message>,
    stats: Arc<Stats>,
    server: String,
) -> Result<()> {
    let mut l = Loop {
        client,
        target,
        tuning,
        out: Outbox::new(tx),
        stats,
        known: HashMap::new(),
    };
    let mut backoff = Backoff::new(l.tuning.backoff_max);
    let mut first = true;
    let mut gap: Option<String> = None;
    loop {
        if !l.out.flush().await {
            return Ok(());
        }
        let page = match l.list().await {
            Ok(page) => page,
            Err(e) if first => return Err(classify_start_error(&e, &l.target, "list", &server)),
            Err(e) => {
                gap.get_or_insert_with(|| {
                    format!(
                        "relist of {}{} failed: {e}",
                        l.target.resource.qualified(),
                        l.target.scope()
                    )
                });
                tokio::time::sleep(backoff.next()).await;
                continue;
            }
        };
        if let Some(reason) = gap.take() {
            if !l.emit_gap(reason, &page.metadata.resource_version).await {
                return Ok(());
            }
        }
        let mut rv = page.metadata.resource_version.clone();
        if !l.emit_list(page).await {
            return Ok(());
        }
        first = false;
        backoff.reset();
        loop {
            match l.watch(&mut rv).await {
                None => return Ok(()),
                Some(WatchEnd::Closed | WatchEnd::Stalled) => {
                    l.stats
                        .resumes
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    backoff.reset();
                }
                Some(WatchEnd::Failed(reason)) => {
                    l.stats
                        .resumes
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    // Resuming from `rv` loses nothing; if the version is gone by then, the
                    // next watch says so (410) and the loop relists with a gap.
                    let _ = reason;
                    if !l.out.flush().await {
                        return Ok(());
                    }
                    tokio::time::sleep(backoff.next()).await;
                }
                Some(WatchEnd::Expired(reason)) => {
                    gap = Some(reason);
                    break;
                }
            }
        }
    }
}

impl Loop {
    fn path(&self) -> String {
        self.target
            .resource
            .url_path(self.target.namespace.as_deref())
    }

    async fn list(&self) -> std::result::Result<ListPage, kube::Error> {
        let mut all = ListPage {
            metadata: ListMeta::default(),
            items: Vec::new(),
        };
        let mut restarts = 0;
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(self.tuning.page_size);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            if let Some(sel) = &self.target.selector {
                lp = lp.labels(sel);
            }
            let req = Request::new(self.path())
                .list(&lp)
                .map_err(kube::Error::BuildRequest)?;
            let page: ListPage = match self.client.request(req).await {
                Ok(p) => p,
                // The continue token expired mid-list: start the list again.
                Err(kube::Error::Api(s)) if s.code == 410 && token.is_some() && restarts < 3 => {
                    restarts += 1;
                    token = None;
                    all.items.clear();
                    continue;
                }
                Err(e) => return Err(e),
            };
            if token.is_none() {
                all.metadata.resource_version = page.metadata.resource_version;
            }
            all.items.extend(page.items);
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => token = Some(next),
                None => return Ok(all),
            }
        }
    }

    fn draft(&self, op: Op, meta: &MetaFields, object: Arc<[u8]>, at: Timestamp) -> Draft {
        Draft {
            observed_at: at,
            kind: self.target.resource.kind.clone(),
            op,
            namespace: meta.namespace.clone(),
            name: meta.name.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            object,
        }
    }

    fn marker(&self, op: Op, rv: &str) -> Draft {
        Draft {
            observed_at: now(),
            kind: self.target.resource.kind.clone(),
            op,
            namespace: self.target.namespace.clone().unwrap_or_default(),
            name: String::new(),
            uid: String::new(),
            resource_version: rv.to_owned(),
            object: Arc::from(Vec::new()),
        }
    }

    async fn emit_gap(&mut self, reason: String, rv: &str) -> bool {
        self.stats
            .gaps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let gap = self.marker(Op::Gap { reason }, rv);
        self.out.push(gap).await
    }

    /// What [`prepare`](Self::prepare) gives when the scanner follows the object: `None`
    /// otherwise.
    fn scanned(&self, bytes: &[u8]) -> Option<(MetaFields, Arc<[u8]>)> {
        let scanned = scan(bytes, self.tuning.redact)?;
        let object = scanned.redacted.map_or_else(|| Arc::from(bytes), Arc::from);
        Some((MetaFields::from(scanned.identity), object))
    }

    /// The object's identity and the bytes to record (redacted unless told otherwise), in one
    /// pass over the bytes; a parser reads what that pass does not follow.
    fn prepare(&self, bytes: &[u8]) -> (MetaFields, Arc<[u8]>) {
        if let Some(prepared) = self.scanned(bytes) {
            return prepared;
        }
        let meta = serde_json::from_slice::<MetaOnly>(bytes)
            .map(|m| m.metadata)
            .unwrap_or_default();
        let object: Arc<[u8]> = if self.tuning.redact {
            redact_tree(bytes).map_or_else(|| Arc::from(bytes), Arc::from)
        } else {
            Arc::from(bytes)
        };
        (meta, object)
    }

    async fn emit_list(&mut self, page: ListPage) -> bool {
        let kind = self.target.resource.kind.name().to_owned();
        let begin = self.marker(Op::ListBegin, "");
        if !self.out.push(begin).await {
            return false;
        }
        let at = now();
        let mut seen = HashMap::with_capacity(page.items.len());
        for raw in &page.items {
            let (meta, object) = self.prepare(raw.get().as_bytes());
            let key = (meta.namespace.clone(), meta.name.clone());
            self.stats.count(&kind);
            let listed = self.draft(Op::Listed, &meta, object.clone(), at);
            if !self.out.push(listed).await {
                return false;
            }
            seen.insert(key, ());
            self.remember(meta, object);
        }
        let mut vanished: Vec<(String, String)> = self
            .known
            .keys()
            .filter(|k| !seen.contains_key(*k))
            .cloned()
            .collect();
        vanished.sort();
        for key in vanished {
            if let Some(k) = self.known.remove(&key) {
                let meta = MetaFields {
                    namespace: key.0,
                    name: key.1,
                    uid: k.uid,
                    resource_version: k.rv,
                };
                let deleted = self.draft(Op::Deleted { inferred: true }, &meta, k.object, at);
                if !self.out.push(deleted).await {
                    return false;
                }
            }
        }
        let end = self.marker(Op::ListEnd, &page.metadata.resource_version);
        self.out.push(end).await && self.out.flush().await
    }

    /// One watch request. `None` when the writer is gone.
    async fn watch(&mut self, rv: &mut String) -> Option<WatchEnd> {
        if !self.out.flush().await {
            return None;
        }
        let mut wp = WatchParams::default().timeout(
            u32::try_from(self.tuning.watch_timeout.as_secs())
                .unwrap_or(290)
                .max(1),
        );
        if let Some(sel) = &self.target.selector {
            wp = wp.labels(sel);
        }
        let mut req = match Request::new(self.path()).watch(&wp, rv) {
            Ok(r) => r,
            Err(e) => return Some(WatchEnd::Failed(e.to_string())),
        };
        // One gzip member per event is not decoded by the client: ask for plain bytes.
        if let Ok(identity) = "identity".parse() {
            req.headers_mut().insert("accept-encoding", identity);
        }
        let stream = match self.client.request_stream(req).await {
            Ok(s) => s,
            Err(kube::Error::Api(s)) if s.code == 410 => {
                return Some(WatchEnd::Expired(self.expired_reason(rv, &s.message)));
            }
            Err(e) => return Some(WatchEnd::Failed(e.to_string())),
        };
        let mut stream = Box::pin(stream);
        let kind = self.target.resource.kind.name().to_owned();
        let mut line = Vec::with_capacity(8192);
        loop {
            line.clear();
            // A line already received is read at once; before waiting for the next one, the
            // records gathered go to the writer. A line cut short by the wait goes on where it
            // stopped.
            let read = match (&mut stream)
                .take(MAX_LINE)
                .read_until(b'\n', &mut line)
                .now_or_never()
            {
                Some(read) => Ok(read),
                None => {
                    if !self.out.flush().await {
                        return None;
                    }
                    let left = MAX_LINE.saturating_sub(line.len() as u64);
                    tokio::time::timeout(
                        self.tuning.idle_timeout,
                        (&mut stream).take(left).read_until(b'\n', &mut line),
                    )
                    .await
                }
            };
            match read {
                Err(_) => return Some(WatchEnd::Stalled),
                Ok(Err(e)) => return Some(WatchEnd::Failed(e.to_string())),
                Ok(Ok(0)) if line.is_empty() => return Some(WatchEnd::Closed),
                Ok(Ok(_)) => {}
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // Most lines are an event of an object, in the layout the API server writes: split
            // them without a parse and let the scanner read the object (as far as its identity
            // and its secrets need; the analyzer checks every object it reads). Anything else,
            // or an object the scanner does not follow, goes through serde.
            let at = now();
            let fast = split_event(&line).and_then(|(kind, bytes)| {
                let op = event_op(kind)?;
                let (meta, object) = self.scanned(bytes)?;
                Some((op, meta, object))
            });
            let (op, meta, object) = if let Some(fast) = fast {
                fast
            } else {
                let Ok(event) = serde_json::from_slice::<WatchLine<'_>>(&line) else {
                    return Some(WatchEnd::Failed(format!(
                        "unreadable watch line of {} bytes",
                        line.len()
                    )));
                };
                let op = match event.type_.as_ref() {
                    "BOOKMARK" => {
                        if let Ok(m) = serde_json::from_str::<MetaOnly>(event.object.get()) {
                            if !m.metadata.resource_version.is_empty() {
                                *rv = m.metadata.resource_version;
                            }
                        }
                        continue;
                    }
                    "ERROR" => {
                        let status: StatusObject =
                            serde_json::from_str(event.object.get()).unwrap_or_default();
                        if status.code == 410
                            || status.reason == "Expired"
                            || status.reason == "Gone"
                        {
                            return Some(WatchEnd::Expired(
                                self.expired_reason(rv, &status.message),
                            ));
                        }
                        return Some(WatchEnd::Failed(format!(
                            "watch error {} {}: {}",
                            status.code, status.reason, status.message
                        )));
                    }
                    other => match event_op(other.as_bytes()) {
                        Some(op) => op,
                        None => continue,
                    },
                };
                let (meta, object) = self.prepare(event.object.get().as_bytes());
                (op, meta, object)
            };
            if !meta.resource_version.is_empty() {
                rv.clone_from(&meta.resource_version);
            }
            self.stats.count(&kind);
            let draft = if matches!(op, Op::Deleted { .. }) {
                self.known
                    .remove(&(meta.namespace.clone(), meta.name.clone()));
                self.draft(op, &meta, object, at)
            } else {
                let draft = self.draft(op, &meta, object.clone(), at);
                self.remember(meta, object);
                draft
            };
            if !self.out.push(draft).await {
                return None;
            }
        }
    }

    /// Keeps the last state of a live object, for the `Deleted{inferred}` record a relist
    /// writes if it vanishes.
    fn remember(&mut self, meta: MetaFields, object: Arc<[u8]>) {
        self.known.insert(
            (meta.namespace, meta.name),
            Known {
                uid: meta.uid,
                rv: meta.resource_version,
                object,
            },
        );
    }

    fn expired_reason(&self, rv: &str, message: &str) -> String {
        format!(
            "watch of {}{} expired at resourceVersion {rv} (410 Gone: {message})",
            self.target.resource.qualified(),
            self.target.scope()
        )
    }
}

/// Exponential backoff from 250 ms to a maximum.
struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    fn new(max: Duration) -> Self {
        Backoff {
            next: Duration::from_millis(250),
            max,
        }
    }

    fn next(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    fn reset(&mut self) {
        self.next = Duration::from_millis(250);
    }
}

#[cfg(test)]
mod tests {
    use super::split_event;

    #[test]
    fn an_event_line_of_the_api_servers_layout_splits_without_a_parse() {
        let object = br#"{"metadata":{"name":"a"},"data":{"k":"}\"{"}}"#;
        for tail in ["", "\n", "\r\n", "  \n"] {
            let mut line = br#"{"type":"MODIFIED","object":"#.to_vec();
            line.extend_from_slice(object);
            line.push(b'}');
            line.extend_from_slice(tail.as_bytes());
            assert_eq!(
                split_event(&line),
                Some((&b"MODIFIED"[..], &object[..])),
                "{tail:?}"
            );
        }
    }

    #[test]
    fn any_other_layout_is_left_to_serde() {
        for line in [
            r#"{"object":{"metadata":{}},"type":"ADDED"}"#,
            r#"{ "type":"ADDED","object":{}}"#,
            r#"{"type":"ADDED", "object":{}}"#,
            r#"{"type":"","object":{}}"#,
            r#"{"type":"added","object":{}}"#,
            r#"{"type":"ADDED","object":{}"#,
            r#"{"type":"ADDED","object":[]}"#,
            r#"{"type":"ADDED","object":null}"#,
            r#"{"type":"ADDED","object":{}}x"#,
            r#"{"type":"ADD\"ED","object":{}}"#,
            "",
        ] {
            assert_eq!(split_event(line.as_bytes()), None, "{line}");
        }
    }
}
