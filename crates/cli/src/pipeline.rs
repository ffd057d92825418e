//! Reading a recording on several cores: one thread inflates and decodes records in batches,
//! worker threads parse their objects ([`Prepared::of`]), and the caller's thread receives them
//! in file order for the analyzer, whose replay must stay sequential. Channels are bounded, so
//! memory stays a few batches whatever the file's size.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use rf_analyzer::Prepared;
use rf_format::{Reader, Record};

/// Records per batch: large enough that channel traffic is negligible, small enough that the
/// first findings of a live reader are not held back long.
const BATCH: usize = 128;

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
type PreparedBatch = (u64, Vec<(Record, Prepared)>);

/// Parser threads to use beside the reading thread.
fn workers(cores: usize) -> usize {
    cores.saturating_sub(1).clamp(1, 8)
}

/// Reads every record of `reader`, parsed, in order, handing each to `each` until it returns
/// false.
pub fn for_each<R: Read + Send>(
    mut reader: Reader<R>,
    mut each: impl FnMut(&Record, Prepared) -> bool,
) -> Ended<R> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
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
    std::thread::scope(|scope| {
        let (batch_tx, batch_rx) = sync_channel::<Batch>(DEPTH);
        let (done_tx, done_rx) = sync_channel::<PreparedBatch>(DEPTH * 2);
        // Named, so a profile or `top -H` tells the stages apart.
        let reading = std::thread::Builder::new()
            .name("rf-read".into())
            .spawn_scoped(scope, move || read(reader, &batch_tx))
            .expect("spawning the reading thread");
        let shared: Arc<Mutex<Receiver<Batch>>> = Arc::new(Mutex::new(batch_rx));
        for _ in 0..workers(cores) {
            let rx = Arc::clone(&shared);
            let tx = done_tx.clone();
            std::thread::Builder::new()
                .name("rf-parse".into())
                .spawn_scoped(scope, move || parse(&rx, &tx))
                .expect("spawning a parsing thread");
        }
        drop(done_tx);
        let mut next = 0u64;
        let mut early: BTreeMap<u64, Vec<(Record, Prepared)>> = BTreeMap::new();
        'recv: while let Ok((index, batch)) = done_rx.recv() {
            early.insert(index, batch);
            while let Some(batch) = early.remove(&next) {
                next += 1;
                for (rec, prepared) in batch {
                    if !each(&rec, prepared) {
                        break 'recv;
                    }
                }
            }
        }
        // Stop the stages: with the receiver gone, every send fails and each thread returns.
        drop(done_rx);
        drop(shared);
        match reading.join() {
            Ok(ended) => ended,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

fn read<R: Read>(mut reader: Reader<R>, tx: &SyncSender<Batch>) -> Ended<R> {
    let mut index = 0u64;
    let mut batch = Vec::with_capacity(BATCH);
    let error = loop {
        match reader.next_record() {
            Ok(Some(rec)) => {
                batch.push(rec);
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    if tx.send((index, full)).is_err() {
                        return Ended {
                            reader,
                            error: None,
                        };
                    }
                    index += 1;
                }
            }
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    if !batch.is_empty() {
        let _ = tx.send((index, batch));
    }
    Ended { reader, error }
}

fn parse(rx: &Mutex<Receiver<Batch>>, tx: &SyncSender<PreparedBatch>) {
    loop {
        let next = match rx.lock() {
            Ok(guard) => guard.recv(),
            Err(_) => return,
        };
        let Ok((index, batch)) = next else { return };
        let prepared = batch
            .into_iter()
            .map(|rec| {
                let p = Prepared::of(&rec);
                (rec, p)
            })
            .collect();
        if tx.send((index, prepared)).is_err() {
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

    #[test]
    fn records_arrive_in_order_across_batches() {
        let bytes = recording(BATCH as u64 * 5 + 7);
        let reader = Reader::new(&bytes[..]).unwrap();
        let mut seen = Vec::new();
        let ended = for_each(reader, |r, _| {
            seen.push(r.seq);
            true
        });
        assert!(ended.error.is_none());
        assert_eq!(seen, (1..=BATCH as u64 * 5 + 7).collect::<Vec<_>>());
        assert_eq!(ended.reader.end(), Some(rf_format::End::Closed));
    }

    #[test]
    fn stopping_early_ends_every_thread() {
        let bytes = recording(BATCH as u64 * 20);
        let reader = Reader::new(&bytes[..]).unwrap();
        let mut n = 0;
        let ended = for_each(reader, |_, _| {
            n += 1;
            n < 100
        });
        assert_eq!(n, 100);
        assert!(ended.error.is_none());
    }

    #[test]
    fn an_error_comes_after_every_record_before_it() {
        let bytes = recording(1000);
        let cut = &bytes[..bytes.len() - 40];
        let reader = Reader::new(cut).unwrap();
        let mut n = 0u64;
        let ended = for_each(reader, |r, _| {
            n += 1;
            assert_eq!(r.seq, n);
            true
        });
        assert!(n > 0 && n < 1000, "{n} records before the cut");
        assert!(ended.error.is_some(), "a cut gzip member is an error");
    }
}
