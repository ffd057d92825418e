//! The writer thread: records arrive over a bounded channel, get their seq, and are written with
//! a gzip member closed at every flush interval and at each list end.
//!
//! In flight-recorder mode ([`crate::Rotation`]) the writer also starts a new file when the
//! rotation clock passes a boundary. It does so between two messages, so every record goes to
//! exactly one file: the watch streams never stop, nothing is lost or written twice. The old
//! file is closed with its trailer at the rotation time; the new one begins with a list of every
//! kind and namespace recorded, made from the writer's own view of the objects (each as last
//! written), so every file stands alone. A rotation waits until every watch has written its
//! first list and no list is half written, so a file's leading lists are never partial.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rf_format::{Header, Kind, Op, Record, Timestamp, Writer};
use tokio::sync::mpsc;

use crate::clock::Clock;
use crate::error::{Error, Result};

/// The note in the header of every file after the first of a rotating recording.
pub(crate) const SNAPSHOT_NOTE: &str = "leading-lists";

/// A record before the writer numbers it.
#[derive(Debug)]
pub(crate) struct Draft {
    pub observed_at: Timestamp,
    pub kind: Kind,
    pub op: Op,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// Shared with the watcher's and the writer's views of the object.
    pub object: Arc<[u8]>,
}

/// Counters the writer keeps, read by the status line.
#[derive(Debug, Default)]
pub struct Written {
    /// Records written.
    pub records: AtomicU64,
    /// Compressed bytes written.
    pub bytes: AtomicU64,
    /// Files started.
    pub files: AtomicU64,
}

/// Counts compressed bytes on their way to the file.
pub(crate) struct Counting<W> {
    inner: W,
    written: Arc<Written>,
}

impl<W> Counting<W> {
    fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Sees every record as it is written, in file order, and the close: how `record --live`
/// analyzes while recording, with the same records `analyze` will read from the file.
///
/// In flight-recorder mode it sees one history: the first file's header, every record the
/// watches deliver, and the last close; the leading lists a rotation writes from the writer's
/// own view are not repeated to it.
pub trait Tap: Send {
    /// The recording begins with this header.
    fn begin(&mut self, _header: &Header) {}
    /// A record was written.
    fn record(&mut self, record: &Record);
    /// The recording was closed cleanly at `closed_at`.
    fn closed(&mut self, closed_at: Timestamp);
    /// Time passed with nothing (more) to write: it is `now`. Sent about every tick of the
    /// recorder's loop, so that what waits for time to pass (a grace period, a window that
    /// closes) is decided when it passes, not at the next record.
    fn tick(&mut self, _now: Timestamp) {}
}

/// What the writer thread is sent.
// Nearly every message is a record: boxing it would cost an allocation per record.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Message {
    /// A record to write.
    Record(Draft),
    /// Records to write, in order (records that arrived together).
    Records(Vec<Draft>),
    /// Close the current gzip member (sent every flush interval).
    Flush,
    /// Nothing to write: lets a rotation that is due happen while the cluster is quiet.
    Tick,
    /// Stop without the trailer: the recording is not complete.
    Abort,
}

/// Where the files of a recording go: one writer, or a directory of rotated files.
pub(crate) trait Destination: Send + 'static {
    /// A file being written.
    type Out: Write + Send + 'static;
    /// Opens the file that starts at `at`.
    fn open(&mut self, at: Timestamp) -> Result<Self::Out>;
    /// The file was closed with its trailer: make it final.
    fn finished(&mut self, out: Self::Out) -> Result<()>;
    /// Recording stopped without a trailer (the file is not complete); the writer is dropped.
    fn abandoned(&mut self) -> Result<()>;
    /// How often to start a new file; `None`: never.
    fn every(&self) -> Option<Duration>;
}

/// One writer, for the whole recording.
pub(crate) struct Single<W>(pub Option<W>);

impl<W: Write + Send + 'static> Destination for Single<W> {
    type Out = W;

    fn open(&mut self, _at: Timestamp) -> Result<W> {
        self.0
            .take()
            .ok_or(Error::Write(rf_format::Error::Poisoned))
    }

    fn finished(&mut self, mut out: W) -> Result<()> {
        out.flush().map_err(|e| {
            Error::Write(rf_format::Error::Io {
                offset: 0,
                source: e,
            })
        })
    }

    fn abandoned(&mut self) -> Result<()> {
        Ok(())
    }

    fn every(&self) -> Option<Duration> {
        None
    }
}

/// What a recorded watch is: a kind, in one namespace or all.
pub(crate) type TargetKey = (Kind, Option<String>);

/// An object as last written.
#[derive(Debug, Clone)]
struct Seen {
    uid: String,
    rv: String,
    object: Arc<[u8]>,
}

/// The writer's view of one watch's objects.
#[derive(Debug)]
struct TargetView {
    kind: Kind,
    namespace: Option<String>,
    /// A list was completed (its `ListEnd` written).
    listed: bool,
    /// A `ListBegin` was written and its `ListEnd` not yet.
    open: bool,
    /// The last resourceVersion written for this watch.
    rv: String,
    objects: BTreeMap<(String, String), Seen>,
}

/// The objects as last written, per watch: what a new file's leading lists hold.
#[derive(Debug)]
struct View {
    targets: Vec<TargetView>,
}

impl View {
    fn new(targets: &[TargetKey]) -> Self {
        View {
            targets: targets
                .iter()
                .map(|(kind, namespace)| TargetView {
                    kind: kind.clone(),
                    namespace: namespace.clone(),
                    listed: false,
                    open: false,
                    rv: String::new(),
                    objects: BTreeMap::new(),
                })
                .collect(),
        }
    }

    fn target(&mut self, kind: &Kind, namespace: &str) -> Option<&mut TargetView> {
        self.targets
            .iter_mut()
            .find(|t| t.kind == *kind && t.namespace.as_deref().is_none_or(|ns| ns == namespace))
    }

    fn apply(&mut self, d: &Draft) {
        let Some(t) = self.target(&d.kind, &d.namespace) else {
            return;
        };
        let key = || (d.namespace.clone(), d.name.clone());
        match &d.op {
            Op::ListBegin => t.open = true,
            Op::ListEnd => {
                t.open = false;
                t.listed = true;
            }
            Op::Gap { .. } => {}
            Op::Added | Op::Modified | Op::Listed => {
                t.objects.insert(
                    key(),
                    Seen {
                        uid: d.uid.clone(),
                        rv: d.resource_version.clone(),
                        object: Arc::clone(&d.object),
                    },
                );
            }
            Op::Deleted { .. } => {
                t.objects.remove(&key());
            }
        }
        if !d.resource_version.is_empty() {
            t.rv.clone_from(&d.resource_version);
        }
    }

    /// Every watch has listed, and no list is half written.
    fn ready(&self) -> bool {
        self.targets.iter().all(|t| t.listed && !t.open)
    }

    /// The leading lists of a new file: per watch, `ListBegin`, `Listed` for every object as
    /// last written, `ListEnd` at the last resourceVersion written.
    fn snapshot(&self, at: Timestamp) -> Vec<Draft> {
        let mut drafts = Vec::new();
        for t in &self.targets {
            let marker = |op: Op, rv: &str| Draft {
                observed_at: at,
                kind: t.kind.clone(),
                op,
                namespace: t.namespace.clone().unwrap_or_default(),
                name: String::new(),
                uid: String::new(),
                resource_version: rv.to_owned(),
                object: Arc::from(Vec::new()),
            };
            drafts.push(marker(Op::ListBegin, ""));
            for ((namespace, name), seen) in &t.objects {
                drafts.push(Draft {
                    observed_at: at,
                    kind: t.kind.clone(),
                    op: Op::Listed,
                    namespace: namespace.clone(),
                    name: name.clone(),
                    uid: seen.uid.clone(),
                    resource_version: seen.rv.clone(),
                    object: Arc::clone(&seen.object),
                });
            }
            drafts.push(marker(Op::ListEnd, &t.rv));
        }
        drafts
    }
}

/// The first rotation boundary after `at`: the next multiple of `every` since the epoch.
fn next_boundary(at: Timestamp, every: Duration) -> i64 {
    let every = i64::try_from(every.as_nanos()).unwrap_or(i64::MAX).max(1);
    at.0.div_euclid(every)
        .saturating_add(1)
        .saturating_mul(every)
}

/// The writer's state, driven one message at a time (by the writer thread, or by a test).
pub(crate) struct Core<D: Destination> {
    dest: D,
    base: Header,
    clock: Box<dyn Clock>,
    tap: Option<Box<dyn Tap>>,
    written: Arc<Written>,
    writer: Option<Writer<Counting<D::Out>>>,
    seq: u64,
    last_at: Timestamp,
    dirty: bool,
    /// When the next file starts (nanoseconds since the epoch), in flight-recorder mode.
    next_rotation: Option<i64>,
    view: Option<View>,
    /// The object buffer of the last record written, reused for the next one.
    object: Vec<u8>,
}

/// What the thread does after a message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Abort,
}

impl<D: Destination> Core<D> {
    /// Opens the first file (header started at `header.started_at`).
    pub(crate) fn new(
        dest: D,
        header: &Header,
        clock: Box<dyn Clock>,
        mut tap: Option<Box<dyn Tap>>,
        targets: &[TargetKey],
    ) -> Result<Self> {
        let view = dest.every().map(|_| View::new(targets));
        let mut core = Core {
            dest,
            base: header.clone(),
            clock,
            tap: None,
            written: Arc::new(Written::default()),
            writer: None,
            seq: 0,
            last_at: Timestamp(i64::MIN),
            dirty: false,
            next_rotation: None,
            view,
            object: Vec::new(),
        };
        core.open(header.started_at)?;
        if let Some(tap) = tap.as_mut() {
            tap.begin(header);
        }
        core.tap = tap;
        Ok(core)
    }

    pub(crate) fn written(&self) -> Arc<Written> {
        Arc::clone(&self.written)
    }

    fn open(&mut self, at: Timestamp) -> Result<()> {
        let out = self.dest.open(at)?;
        let first = self.written.files.load(Ordering::Relaxed) == 0;
        let mut header = self.base.clone();
        header.started_at = at;
        if !first {
            header.notes.insert(
                SNAPSHOT_NOTE.to_owned(),
                "the recorder's view at the rotation (every object as last recorded), not a new list from the API server".to_owned(),
            );
        }
        let counting = Counting {
            inner: out,
            written: Arc::clone(&self.written),
        };
        self.writer = Some(Writer::new(counting, &header).map_err(Error::Write)?);
        self.written.files.fetch_add(1, Ordering::Relaxed);
        self.seq = 0;
        self.dirty = false;
        self.next_rotation = self.dest.every().map(|every| next_boundary(at, every));
        Ok(())
    }

    fn tick(&mut self) {
        if let Some(tap) = self.tap.as_mut() {
            tap.tick(self.clock.now());
        }
    }

    fn writer(&mut self) -> Result<&mut Writer<Counting<D::Out>>> {
        self.writer
            .as_mut()
            .ok_or(Error::Write(rf_format::Error::Poisoned))
    }

    /// Handles one message.
    pub(crate) fn handle(&mut self, message: Message) -> Result<Flow> {
        self.rotate_if_due()?;
        match message {
            Message::Abort => return Ok(Flow::Abort),
            Message::Tick => self.tick(),
            Message::Flush => {
                if self.dirty {
                    self.writer()?.flush().map_err(Error::Write)?;
                    self.dirty = false;
                }
                self.tick();
            }
            Message::Record(d) => self.write(d, false)?,
            Message::Records(ds) => {
                // A rotation may fall between any two of them, as between two messages.
                let mut ds = ds.into_iter();
                if let Some(d) = ds.next() {
                    self.write(d, false)?;
                }
                for d in ds {
                    self.rotate_if_due()?;
                    self.write(d, false)?;
                }
            }
        }
        Ok(Flow::Continue)
    }

    fn write(&mut self, d: Draft, snapshot: bool) -> Result<()> {
        self.seq += 1;
        // Several watchers stamp their own receive times: keep the file in order.
        let observed_at = d.observed_at.max(self.last_at);
        self.last_at = observed_at;
        if !snapshot {
            if let Some(view) = self.view.as_mut() {
                view.apply(&d);
            }
        }
        let list_end = d.op == Op::ListEnd;
        let record = Record {
            seq: self.seq,
            observed_at,
            kind: d.kind,
            op: d.op,
            namespace: d.namespace,
            name: d.name,
            uid: d.uid,
            resource_version: d.resource_version,
            actor: None,
            object: {
                let mut object = std::mem::take(&mut self.object);
                object.clear();
                object.extend_from_slice(&d.object);
                object
            },
        };
        let written = self.writer()?.write(&record).map_err(Error::Write);
        if written.is_ok() && !snapshot {
            if let Some(tap) = self.tap.as_mut() {
                tap.record(&record);
            }
        }
        // A buffer that once held a huge object is not kept for every later one.
        if record.object.capacity() <= 1024 * 1024 {
            self.object = record.object;
        }
        written?;
        self.written.records.fetch_add(1, Ordering::Relaxed);
        self.dirty = true;
        if list_end {
            self.writer()?.flush().map_err(Error::Write)?;
            self.dirty = false;
        }
        Ok(())
    }

    fn rotate_if_due(&mut self) -> Result<()> {
        let Some(next) = self.next_rotation else {
            return Ok(());
        };
        let now = self.clock.now();
        if now.0 < next || !self.view.as_ref().is_some_and(View::ready) {
            return Ok(());
        }
        let at = now.max(self.last_at);
        self.close_file(at)?;
        self.open(at)?;
        let drafts = self
            .view
            .as_ref()
            .map(|v| v.snapshot(at))
            .unwrap_or_default();
        for d in drafts {
            self.write(d, true)?;
        }
        Ok(())
    }

    fn close_file(&mut self, at: Timestamp) -> Result<()> {
        let writer = self
            .writer
            .take()
            .ok_or(Error::Write(rf_format::Error::Poisoned))?;
        let out = writer.finish_at(at).map_err(Error::Write)?;
        self.dest.finished(out.into_inner())
    }

    /// Closes the recording cleanly: the trailer says it stopped now.
    pub(crate) fn finish(mut self) -> Result<()> {
        let closed_at = self.clock.now().max(self.last_at);
        self.close_file(closed_at)?;
        if let Some(tap) = self.tap.as_mut() {
            tap.closed(closed_at);
        }
        Ok(())
    }

    /// Stops without the trailer: what was flushed stays readable, as not closed.
    pub(crate) fn abort(mut self) -> Result<()> {
        if let Some(mut writer) = self.writer.take() {
            writer.flush().map_err(Error::Write)?;
        }
        self.dest.abandoned()
    }
}

pub(crate) struct Sink {
    pub tx: mpsc::Sender<Message>,
    pub handle: JoinHandle<Result<()>>,
    pub written: Arc<Written>,
}

/// Starts the writer thread. It ends when every sender is dropped: it then writes the trailer
/// (closed now) and closes the file.
pub(crate) fn start<D: Destination>(
    dest: D,
    header: &Header,
    capacity: usize,
    tap: Option<Box<dyn Tap>>,
    targets: &[TargetKey],
    clock: Box<dyn Clock>,
) -> Result<Sink> {
    let mut core = Core::new(dest, header, clock, tap, targets)?;
    let written = core.written();
    let (tx, mut rx) = mpsc::channel::<Message>(capacity);
    let handle = std::thread::Builder::new()
        .name("rf-writer".to_owned())
        .spawn(move || -> Result<()> {
            while let Some(message) = rx.blocking_recv() {
                if core.handle(message)? == Flow::Abort {
                    return core.abort();
                }
            }
            core.finish()
        })
        .map_err(Error::Thread)?;
    Ok(Sink {
        tx,
        handle,
        written,
    })
}

#[cfg(test)]
mod tests {
    //! Rotation without wall time: a hand-moved clock drives the writer through simulated days.

    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::atomic::AtomicI64;

    use rf_format::{End, Reader, Source};

    use super::*;
    use crate::rotate::{Directory, Rotation, list_files};

    const T0: i64 = 1_773_493_200 * 1_000_000_000; // 2026-03-14T13:00:00Z
    const SEC: i64 = 1_000_000_000;

    #[derive(Clone)]
    struct Hand(Arc<AtomicI64>);

    impl Clock for Hand {
        fn now(&self) -> Timestamp {
            Timestamp(self.0.load(Ordering::SeqCst))
        }
    }

    fn targets() -> Vec<TargetKey> {
        vec![
            (Kind::Rollout, Some("payments".to_owned())),
            (Kind::ReplicaSet, Some("payments".to_owned())),
            (Kind::Event, None),
        ]
    }

    fn object(kind: &Kind, ns: &str, name: &str, rv: u64) -> Vec<u8> {
        format!(
            r#"{{"kind":"{}","metadata":{{"namespace":"{ns}","name":"{name}","uid":"uid-{name}","resourceVersion":"{rv}"}}}}"#,
            kind.name()
        )
        .into_bytes()
    }

    fn draft(at: i64, kind: &Kind, op: Op, ns: &str, name: &str, rv: u64) -> Draft {
        let object = if op.has_object() {
            object(kind, ns, name, rv)
        } else {
            Vec::new()
        };
        Draft {
            observed_at: Timestamp(at),
            kind: kind.clone(),
            op,
            namespace: ns.to_owned(),
            name: name.to_owned(),
            uid: if name.is_empty() {
                String::new()
            } else {
                format!("uid-{name}")
            },
            resource_version: rv.to_string(),
            object: Arc::from(object),
        }
    }

    /// Per object: the resourceVersions of its watch events (Added, Modified, Deleted), in order.
    type Events = BTreeMap<(String, String, String), Vec<String>>;

    struct Run {
        /// What was sent as watch events.
        sent: Events,
        /// The objects live at the end, as last sent: (kind, ns, name) -> rv.
        live: BTreeMap<(String, String, String), String>,
    }

    /// Drives a writer for `hours` simulated hours of watch events (a change every 7 minutes,
    /// objects created and deleted, quiet hours without a record) rotating every hour, and
    /// closes it.
    fn drive(dir: &Path, hours: i64, keep: Option<usize>) -> Run {
        let clock = Hand(Arc::new(AtomicI64::new(T0 + 17 * SEC)));
        let header = Header::new("sink-test", clock.now(), Source::default());
        let dest = Directory::new(Rotation {
            dir: dir.to_owned(),
            every: Duration::from_secs(3600),
            keep,
        })
        .unwrap();
        let mut core = Core::new(dest, &header, Box::new(clock.clone()), None, &targets()).unwrap();
        let mut run = Run {
            sent: Events::new(),
            live: BTreeMap::new(),
        };
        let mut rv = 100u64;
        let send = |core: &mut Core<Directory>, d: Draft, run: &mut Run| {
            if matches!(d.op, Op::Added | Op::Modified | Op::Deleted { .. }) {
                let key = (
                    d.kind.name().to_owned(),
                    d.namespace.clone(),
                    d.name.clone(),
                );
                run.sent
                    .entry(key.clone())
                    .or_default()
                    .push(d.resource_version.clone());
                if matches!(d.op, Op::Deleted { .. }) {
                    run.live.remove(&key);
                } else {
                    run.live.insert(key, d.resource_version.clone());
                }
            }
            assert_eq!(core.handle(Message::Record(d)).unwrap(), Flow::Continue);
        };
        let now = || clock.now().0;
        // The initial lists: one rollout, one ReplicaSet; no events yet.
        let ro = Kind::Rollout;
        let rs = Kind::ReplicaSet;
        let ev = Kind::Event;
        for (kind, ns, name) in [
            (&ro, "payments", "checkout"),
            (&rs, "payments", "checkout-a"),
        ] {
            send(
                &mut core,
                draft(now(), kind, Op::ListBegin, ns, "", 0),
                &mut run,
            );
            rv += 1;
            send(
                &mut core,
                draft(now(), kind, Op::Listed, ns, name, rv),
                &mut run,
            );
            run.live.insert(
                (kind.name().to_owned(), ns.to_owned(), name.to_owned()),
                rv.to_string(),
            );
            send(
                &mut core,
                draft(now(), kind, Op::ListEnd, ns, "", rv),
                &mut run,
            );
        }
        // The event watch's list is still open when the first hour ends: the rotation waits.
        send(
            &mut core,
            draft(now(), &ev, Op::ListBegin, "", "", 0),
            &mut run,
        );
        let mut step = 0i64;
        let end = T0 + hours * 3600 * SEC;
        while clock.now().0 < end {
            step += 1;
            clock.0.fetch_add(7 * 60 * SEC, Ordering::SeqCst);
            if step == 12 {
                // 84 minutes in: the list ends, one rotation late.
                send(
                    &mut core,
                    draft(now(), &ev, Op::ListEnd, "", "", rv),
                    &mut run,
                );
            }
            let hour = (clock.now().0 - T0) / (3600 * SEC);
            if hour % 5 == 3 {
                // A quiet hour: only the flush ticks.
                assert_eq!(core.handle(Message::Tick).unwrap(), Flow::Continue);
                continue;
            }
            rv += 1;
            send(
                &mut core,
                draft(now(), &ro, Op::Modified, "payments", "checkout", rv),
                &mut run,
            );
            if step < 12 {
                // The event watch is still listing.
                continue;
            }
            rv += 1;
            let pod = format!("event-{step}");
            send(
                &mut core,
                draft(now(), &ev, Op::Added, "payments", &pod, rv),
                &mut run,
            );
            if step % 3 == 0 && step > 12 {
                rv += 1;
                let old = format!("event-{}", step - 1);
                send(
                    &mut core,
                    draft(
                        now(),
                        &ev,
                        Op::Deleted { inferred: false },
                        "payments",
                        &old,
                        rv,
                    ),
                    &mut run,
                );
            }
            assert_eq!(core.handle(Message::Flush).unwrap(), Flow::Continue);
        }
        core.finish().unwrap();
        run
    }

    fn read(path: &Path) -> (Header, Vec<Record>, Timestamp) {
        let mut r = Reader::new(std::fs::File::open(path).unwrap()).unwrap();
        let records: Vec<Record> = (&mut r).map(Result::unwrap).collect();
        assert_eq!(r.end(), Some(End::Closed), "{}", path.display());
        let closed_at = r.trailer().unwrap().closed_at;
        (r.header().clone(), records, closed_at)
    }

    type Live = BTreeMap<(String, String, String), String>;

    fn key(r: &Record) -> (String, String, String) {
        (
            r.kind.name().to_owned(),
            r.namespace.clone(),
            r.name.clone(),
        )
    }

    /// Checks every file and returns the union of their watch events, and the live objects at
    /// the end of the last file.
    fn union(files: &[std::path::PathBuf]) -> (Events, Live) {
        let mut events = Events::new();
        let mut live = Live::new();
        let mut prev_closed: Option<Timestamp> = None;
        for (i, path) in files.iter().enumerate() {
            let (header, records, closed_at) = read(path);
            let mut k = 0;
            if let Some(p) = prev_closed {
                assert_eq!(
                    header.started_at, p,
                    "file {i} starts when the previous closed"
                );
                assert!(header.notes.contains_key(SNAPSHOT_NOTE));
                // Standing alone: the file begins with a complete list of every watch, holding
                // the live objects as the previous file left them.
                let mut listed = Live::new();
                let mut lists = 0;
                while lists < targets().len() {
                    let r = &records[k];
                    match r.op {
                        Op::ListBegin => {}
                        Op::ListEnd => lists += 1,
                        Op::Listed => {
                            listed.insert(key(r), r.resource_version.clone());
                        }
                        _ => panic!(
                            "{}: #{} {:?} in the leading lists",
                            path.display(),
                            r.seq,
                            r.op
                        ),
                    }
                    k += 1;
                }
                assert_eq!(
                    listed,
                    live,
                    "{}: leading lists = last state",
                    path.display()
                );
            }
            prev_closed = Some(closed_at);
            for r in &records[k..] {
                match r.op {
                    Op::Added | Op::Modified | Op::Deleted { .. } => {
                        events
                            .entry(key(r))
                            .or_default()
                            .push(r.resource_version.clone());
                        if matches!(r.op, Op::Deleted { .. }) {
                            live.remove(&key(r));
                        } else {
                            live.insert(key(r), r.resource_version.clone());
                        }
                    }
                    Op::Listed => {
                        assert_eq!(i, 0, "only the first file has a list after its start");
                        live.insert(key(r), r.resource_version.clone());
                    }
                    Op::ListEnd | Op::ListBegin => {}
                    Op::Gap { .. } => panic!("no gap expected"),
                }
            }
        }
        (events, live)
    }

    #[test]
    fn a_simulated_day_across_rotations_loses_and_repeats_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let run = drive(dir.path(), 30, None);
        let files = list_files(dir.path()).unwrap();
        // 13:00:17 .. 19:00 the next day: a file per hour started, the first a partial hour.
        assert_eq!(files.len(), 31, "{files:?}");
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names[0], "rf-20260314T130017Z.rfr");
        // The event list was still open at 14:00: the first rotation waited for its end (14:24).
        // Later files start at the first message after each hour (a step is 7 minutes).
        assert_eq!(names[1], "rf-20260314T142417Z.rfr");
        assert_eq!(names[2], "rf-20260314T150617Z.rfr");
        assert!(names.iter().all(|n| !n.ends_with(".partial")));
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, names, "name order is time order");
        let (events, live) = union(&files);
        assert_eq!(events, run.sent, "every watch event once, in order");
        assert_eq!(live, run.live);
        assert!(std::fs::read_dir(dir.path()).unwrap().count() == files.len());
    }

    #[test]
    fn keep_removes_the_oldest_files() {
        let dir = tempfile::tempdir().unwrap();
        let run = drive(dir.path(), 30, Some(24));
        let files = list_files(dir.path()).unwrap();
        assert_eq!(files.len(), 24);
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.last().unwrap(), "rf-20260315T190617Z.rfr");
        assert_eq!(names[0], "rf-20260314T200017Z.rfr");
        // The kept files still chain, and each stands alone; their events are the tail of
        // what was sent.
        let (events, live) = union(&files);
        assert_eq!(live, run.live);
        for (key, rvs) in &events {
            let sent = &run.sent[key];
            assert!(
                sent.ends_with(rvs),
                "{key:?}: {rvs:?} is not a tail of {sent:?}"
            );
        }
    }

    #[test]
    fn the_file_being_written_is_partial_until_closed() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Hand(Arc::new(AtomicI64::new(T0)));
        let header = Header::new("sink-test", clock.now(), Source::default());
        let dest = Directory::new(Rotation {
            dir: dir.path().to_owned(),
            every: Duration::from_secs(60),
            keep: None,
        })
        .unwrap();
        let mut core = Core::new(
            dest,
            &header,
            Box::new(clock.clone()),
            None,
            &targets()[..1],
        )
        .unwrap();
        let names = || {
            let mut n: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names(), ["rf-20260314T130000Z.rfr.partial"]);
        let ro = Kind::Rollout;
        for op in [Op::ListBegin, Op::ListEnd] {
            core.handle(Message::Record(draft(T0, &ro, op, "payments", "", 1)))
                .unwrap();
        }
        clock.0.fetch_add(61 * SEC, Ordering::SeqCst);
        core.handle(Message::Tick).unwrap();
        assert_eq!(
            names(),
            ["rf-20260314T130000Z.rfr", "rf-20260314T130101Z.rfr.partial"]
        );
        core.abort().unwrap();
        // Aborted after a rotation: the history is kept, and reads as not closed.
        assert_eq!(
            names(),
            ["rf-20260314T130000Z.rfr", "rf-20260314T130101Z.rfr"]
        );
        let mut r =
            Reader::new(std::fs::File::open(dir.path().join("rf-20260314T130101Z.rfr")).unwrap())
                .unwrap();
        assert_eq!((&mut r).map(Result::unwrap).count(), 2);
        assert_eq!(r.end(), Some(End::Unclosed));
    }
}
