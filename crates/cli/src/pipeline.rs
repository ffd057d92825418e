//! Reading a recording on several cores: one thread inflates and decodes records in batches,
//! worker threads parse their objects ([`Prepared::of`]) (on two cores, the reading thread and
//! the caller's thread share that work), and the caller's thread receives them in file order
//! for the analyzer, whose replay must stay sequential. Channels are bounded, so memory stays a
//! few batches whatever the file's size.
//!
//! The caller's thread is the critical path, so it frees nothing it can hand back: each batch of
//! records, once replayed, returns to the reading thread, which reads the next records into
//! their buffers (no allocation there, and no costly freeing across threads here).

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use rf_analyzer::Prepared;
use rf_format::{Reader, Record};

/// Records per batch: large enough that channel traffic is negligible, small enough that the
/// first findings of a live reader are not held back long.
const BATCH: usize = 64;

/// Batches in flight per stage.
const DEPTH: usize = 2;

/// How reading ended.
#[derive(Debug)]
pub struct Ended<R: Read> {
    /// The reader, for its end, trailer and count.
    pub reader: Reader<R>,
    /// The error that ended reading, if any (every record before it was delivered).
    pub error: Option<rf_format::Error>,
}

type Batch = (u64, Vec<Record>);
/// A batch, its records parsed (`None`: left to the caller's thread).
type PreparedBatch = (u64, Vec<Record>, Option<Vec<Prepared>>);

/// Replayed batches waiting to be refilled: more than are ever in flight, so that handing one
/// back never blocks (a full queue drops it instead).
const RECYCLED: usize = 32;

/// Parser threads to use beside the reading thread.
fn workers(cores: usize) -> usize {
    cores.saturating_sub(1).clamp(1, 8)
}

/// Reads every record of `reader`, parsed, in order, handing each to `each` until it returns
/// false.
pub fn for_each<R: Read + Send>(
    reader: Reader<R>,
    each: impl FnMut(&Record, Prepared) -> bool,
) -> Ended<R> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    on_cores(cores, reader, each)
}

/// [`for_each`] as it runs on `cores` cores.
fn on_cores<R: Read + Send>(
    cores: usize,
    mut reader: Reader<R>,
    mut each: impl FnMut(&Record, Prepared) -> bool,
) -> Ended<R> {
    if cores == 1 {
        // One core: threads would only take turns.
        let error = loop {
            match reader.next_record() {
                Ok(Some(rec)) => {
                    let p = Prepared::of(&rec);
                    if !each(&rec, p) {
                        break None;
                    }
                }
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        return Ended { reader, error };
    }
    // Batches sent to the caller's thread and not yet received by it.
    let waiting = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = sync_channel::<PreparedBatch>(DEPTH * 2);
        let (recycle_tx, recycle_rx) = sync_channel::<Vec<Record>>(RECYCLED);
        let parsers = workers(cores);
        // Named, so a profile or `top -H` tells the stages apart.
        // One parser beside the reading thread (two cores): no parsing thread, as a third
        // thread would take turns on the two cores (it was 2-8% slower over three alternating
        // runs of 1M records). The reading thread parses a batch while its objects are in its
        // cache when the caller's thread has one waiting; when it has none, the batch goes
        // unparsed and the caller parses it before replaying it, instead of waiting for the
        // reading thread (the slower of the two): 8-15% less wall time over two sets of four
        // alternating runs of 1M records, the same CPU.
        let reading = if parsers == 1 {
            let tx = done_tx.clone();
            let waiting = &waiting;
            std::thread::Builder::new()
                .name("rf-read".into())
                .spawn_scoped(scope, move || {
                    read(reader, &recycle_rx, |index, batch| {
                        let prepared = (waiting.load(Ordering::Relaxed) > 0)
                            .then(|| batch.iter().map(Prepared::of).collect());
                        waiting.fetch_add(1, Ordering::Relaxed);
                        tx.send((index, batch, prepared)).is_ok()
                    })
                })
                .expect("spawning the reading thread")
        } else {
            let (batch_tx, batch_rx) = sync_channel::<Batch>(DEPTH);
            let reading = std::thread::Builder::new()
                .name("rf-read".into())
                .spawn_scoped(scope, move || {
                    read(reader, &recycle_rx, |index, batch| {
                        batch_tx.send((index, batch)).is_ok()
                    })
                })
                .expect("spawning the reading thread");
            let shared: Arc<Mutex<Receiver<Batch>>> = Arc::new(Mutex::new(batch_rx));
            for _ in 0..parsers {
                let rx = Arc::clone(&shared);
                let tx = done_tx.clone();
                std::thread::Builder::new()
                    .name("rf-parse".into())
                    .spawn_scoped(scope, move || parse(&rx, &tx))
                    .expect("spawning a parsing thread");
            }
            reading
        };
        drop(done_tx);
        let mut next = 0u64;
        let mut early: BTreeMap<u64, (Vec<Record>, Option<Vec<Prepared>>)> = BTreeMap::new();
        'recv: while let Ok((index, records, prepared)) = done_rx.recv() {
            waiting.fetch_sub(1, Ordering::Relaxed);
            early.insert(index, (records, prepared));
            while let Some((records, prepared)) = early.remove(&next) {
                next += 1;
                // A batch sent unparsed is parsed here, record by record.
                let mut parsed = prepared.map(Vec::into_iter);
                for rec in &records {
                    let prepared = parsed
                        .as_mut()
                        .and_then(Iterator::next)
                        .unwrap_or_else(|| Prepared::of(rec));
                    if !each(rec, prepared) {
                        break 'recv;
                    }
                }
                // Back to the reading thread, which allocated them; dropped here only when
                // the queue is full.
                let _ = recycle_tx.try_send(records);
            }
        }
        // Stop the stages: with the receiver gone, every send fails and each thread returns.
        drop(done_rx);
        drop(recycle_tx);
        match reading.join() {
            Ok(ended) => ended,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

fn read<R: Read>(
    mut reader: Reader<R>,
    recycled: &Receiver<Vec<Record>>,
    mut send: impl FnMut(u64, Vec<Record>) -> bool,
) -> Ended<R> {
    let mut index = 0u64;
    loop {
        let mut batch = recycled
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let (filled, error) = fill(&mut reader, &mut batch);
        batch.truncate(filled);
        let last = filled < BATCH || error.is_some();
        if !batch.is_empty() && !send(index, batch) {
            return Ended {
                reader,
                error: None,
            };
        }
        index += 1;
        if last {
            return Ended { reader, error };
        }
    }
}

/// Reads up to [`BATCH`] records into `batch`, into the records it already holds first: how
/// many were read, and the error that stopped reading, if any.
fn fill<R: Read>(
    reader: &mut Reader<R>,
    batch: &mut Vec<Record>,
) -> (usize, Option<rf_format::Error>) {
    for n in 0..BATCH {
        let read = match batch.get_mut(n) {
            Some(rec) => reader.read_into(rec),
            None => reader
                .next_record()
                .map(|rec| rec.map(|rec| batch.push(rec)).is_some()),
        };
        match read {
            Ok(true) => {}
            Ok(false) => return (n, None),
            Err(e) => return (n, Some(e)),
        }
    }
    (BATCH, None)
}

fn parse(rx: &Mutex<Receiver<Batch>>, tx: &SyncSender<PreparedBatch>) {
    loop {
        let next = match rx.lock() {
            Ok(guard) => guard.recv(),
            Err(_) => return,
        };
        let Ok((index, batch)) = next else { return };
        let prepared = batch.iter().map(Prepared::of).collect();
        if tx.send((index, batch, Some(prepared))).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(n: u64) -> Vec<u8> {
        let header = rf_format::Header::new("t", rf_format::Timestamp(0), Default::default());
        let mut w = rf_format::Writer::new(Vec::new(), &header).unwrap();
        for seq in 1..=n {
            w.write(&Record {
                seq,
                observed_at: rf_format::Timestamp(seq as i64),
                kind: rf_format::Kind::Pod,
                op: rf_format::Op::Added,
                namespace: "ns".into(),
                name: format!("p{seq}"),
                uid: String::new(),
                resource_version: seq.to_string(),
                actor: None,
                object: br#"{"metadata":{"name":"p"}}"#.to_vec(),
            })
            .unwrap();
        }
        w.finish().unwrap()
    }

    /// One core (no threads), two (the reading thread parses), four (three parsing threads).
    const CORES: [usize; 3] = [1, 2, 4];

    #[test]
    fn records_arrive_in_order_across_batches() {
        for cores in CORES {
            records_arrive_in_order_on(cores);
        }
    }

    fn records_arrive_in_order_on(cores: usize) {
        let bytes = recording(BATCH as u64 * 5 + 7);
        let reader = Reader::new(&bytes[..]).unwrap();
        let mut seen = Vec::new();
        let ended = on_cores(cores, reader, |r, _| {
            // Read into recycled records: nothing of an earlier record may remain.
            assert_eq!(r.name, format!("p{}", r.seq));
            assert_eq!(r.resource_version, r.seq.to_string());
            seen.push(r.seq);
            true
        });
        assert!(ended.error.is_none());
        assert_eq!(seen, (1..=BATCH as u64 * 5 + 7).collect::<Vec<_>>());
        assert_eq!(ended.reader.end(), Some(rf_format::End::Closed));
    }

    #[test]
    fn every_record_arrives_parsed_as_prepared_of_parses_it() {
        // On two cores a batch is parsed by the reading thread when another one is waiting,
        // and by the caller's thread otherwise (always the first batch; with a slow caller,
        // batches pile up and the reading thread parses them): the same views either way.
        for cores in CORES {
            for slow in [false, true] {
                let bytes = recording(BATCH as u64 * 6 + 3);
                let reader = Reader::new(&bytes[..]).unwrap();
                let mut n = 0;
                let ended = on_cores(cores, reader, |r, p| {
                    assert_eq!(format!("{p:?}"), format!("{:?}", Prepared::of(r)));
                    assert!(format!("{p:?}").contains("Pod("), "{p:?}");
                    if slow {
                        std::thread::sleep(std::time::Duration::from_micros(300));
                    }
                    n += 1;
                    true
                });
                assert!(ended.error.is_none());
                assert_eq!(n, BATCH * 6 + 3, "{cores} cores");
            }
        }
    }

    #[test]
    fn stopping_early_ends_every_thread() {
        for cores in CORES {
            let bytes = recording(BATCH as u64 * 20);
            let reader = Reader::new(&bytes[..]).unwrap();
            let mut n = 0;
            let ended = on_cores(cores, reader, |_, _| {
                n += 1;
                n < 100
            });
            assert_eq!(n, 100, "{cores} cores");
            assert!(ended.error.is_none());
        }
    }

    #[test]
    fn an_error_comes_after_every_record_before_it() {
        for cores in CORES {
            let bytes = recording(1000);
            let cut = &bytes[..bytes.len() - 40];
            let reader = Reader::new(cut).unwrap();
            let mut n = 0u64;
            let ended = on_cores(cores, reader, |r, _| {
                n += 1;
                assert_eq!(r.seq, n);
                true
            });
            assert!(
                n > 0 && n < 1000,
                "{n} records before the cut ({cores} cores)"
            );
            assert!(ended.error.is_some(), "a cut gzip member is an error");
        }
    }
}
