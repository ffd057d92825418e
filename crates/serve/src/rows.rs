//! Fixed-size rows appended in order (one per record, or per event of a kind), kept in the
//! server's scratch file in blocks of [`BLOCK`], with only each block's place and first row in
//! memory: what grows with the number of records is on disk, and a row is one `pread` away.

use std::sync::Arc;

use crate::spill::{Holds, Spill};

/// A row's encoding: `SIZE` bytes (at most 64), always the same for the same value.
pub trait Row: Copy {
    /// Its size in bytes.
    const SIZE: usize;
    /// Appends its `SIZE` bytes.
    fn put(&self, out: &mut Vec<u8>);
    /// The row whose `SIZE` bytes are `bytes`.
    fn take(bytes: &[u8]) -> Self;
}

/// Rows per block: a block is written at once, and a search reads one.
const BLOCK: usize = 64;

/// Rows, numbered from 0 in the order pushed.
#[derive(Clone, Debug)]
pub struct Rows<T> {
    spill: Arc<Spill>,
    /// Each full block: where it is, and its first row.
    blocks: Vec<(u64, T)>,
    /// The rows after the last full block.
    last: Vec<T>,
}

impl<T: Row> Rows<T> {
    /// No rows; their blocks go to `spill`.
    pub fn new(spill: Arc<Spill>) -> Rows<T> {
        Rows {
            spill,
            blocks: Vec::new(),
            last: Vec::with_capacity(BLOCK),
        }
    }

    /// Where its blocks are.
    pub fn spill(&self) -> &Arc<Spill> {
        &self.spill
    }

    /// How many rows were pushed.
    pub fn len(&self) -> usize {
        self.blocks.len() * BLOCK + self.last.len()
    }

    /// True before the first row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `row`.
    pub fn push(&mut self, row: T) {
        self.last.push(row);
        if self.last.len() == BLOCK {
            let mut bytes = Vec::with_capacity(BLOCK * T::SIZE);
            for r in &self.last {
                r.put(&mut bytes);
            }
            let at = self.spill.append(&bytes, Holds::Rows);
            self.blocks.push((at, self.last[0]));
            self.last.clear();
        }
    }

    /// Row `i`.
    pub fn get(&self, i: usize) -> Option<T> {
        let (b, j) = (i / BLOCK, i % BLOCK);
        match self.blocks.get(b) {
            Some(&(at, _)) => {
                const { assert!(T::SIZE <= 64, "a row is read into 64 bytes") };
                let mut bytes = [0u8; 64];
                let buf = &mut bytes[..T::SIZE];
                self.spill.must_read_exact(at + (j * T::SIZE) as u64, buf);
                Some(T::take(buf))
            }
            None if b == self.blocks.len() => self.last.get(j).copied(),
            None => None,
        }
    }

    /// Rows `from..to`, all in one block.
    fn range(&self, from: usize, to: usize) -> Vec<T> {
        let b = from / BLOCK;
        match self.blocks.get(b) {
            Some(&(at, _)) => {
                let mut bytes = Vec::with_capacity((to - from) * T::SIZE);
                let at = at + ((from % BLOCK) * T::SIZE) as u64;
                self.spill.must_read(at, (to - from) * T::SIZE, &mut bytes);
                bytes.chunks_exact(T::SIZE).map(T::take).collect()
            }
            None => self.last[from % BLOCK..to - b * BLOCK].to_vec(),
        }
    }

    /// Rows `from..to` (to the end at most), read a block at a time.
    pub fn read(&self, from: usize, to: usize) -> Vec<T> {
        let to = to.min(self.len());
        let mut out = Vec::with_capacity(to.saturating_sub(from));
        let mut at = from;
        while at < to {
            let end = ((at / BLOCK + 1) * BLOCK).min(to);
            out.extend(self.range(at, end));
            at = end;
        }
        out
    }

    /// The first row of block `b` (the last one may be partial).
    fn first(&self, b: usize) -> Option<T> {
        match self.blocks.get(b) {
            Some((_, row)) => Some(*row),
            None => (b == self.blocks.len()).then(|| self.last.first().copied())?,
        }
    }

    /// The first index at or after `from` whose row is not `pred`'s, where `pred` holds for
    /// every row of `from..` up to some index and for none after it (as
    /// [`slice::partition_point`]).
    pub fn partition_point(&self, from: usize, pred: impl Fn(&T) -> bool) -> usize {
        let len = self.len();
        let from = from.min(len);
        let blocks = len.div_ceil(BLOCK);
        // Blocks that start at or after `from`: how many of them start with a row `pred` holds
        // for.
        let b0 = from.div_ceil(BLOCK);
        let (mut lo, mut hi) = (b0, blocks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.first(mid).is_some_and(|r| pred(&r)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        // The answer is in the block before the first that does not (or before `b0`).
        let (start, end) = if lo > b0 {
            ((lo - 1) * BLOCK, (lo * BLOCK).min(len))
        } else {
            (from, (b0 * BLOCK).min(len))
        };
        if start >= end {
            return start;
        }
        start + self.range(start, end).partition_point(|r| pred(r))
    }

    /// Changes rows `from..` in order with `f`, up to the first it fails on (the rows before
    /// that one are changed; that one and those after it may be).
    pub fn update<E>(
        &mut self,
        from: usize,
        mut f: impl FnMut(usize, &mut T) -> Result<(), E>,
    ) -> Result<(), E> {
        let len = self.len();
        let mut at = from.min(len);
        while at < len {
            let b = at / BLOCK;
            let end = ((b + 1) * BLOCK).min(len);
            let mut rows = self.range(at, end);
            let mut result = Ok(());
            for (k, row) in rows.iter_mut().enumerate() {
                result = f(at + k, row);
                if result.is_err() {
                    break;
                }
            }
            match self.blocks.get_mut(b) {
                Some((place, first)) => {
                    let mut bytes = Vec::with_capacity(rows.len() * T::SIZE);
                    for r in &rows {
                        r.put(&mut bytes);
                    }
                    let offset = ((at % BLOCK) * T::SIZE) as u64;
                    if let Err(e) = self.spill.overwrite(*place + offset, &bytes) {
                        panic!("internal error: the server's spill file cannot be written: {e}");
                    }
                    if at % BLOCK == 0 {
                        *first = rows[0];
                    }
                }
                None => self.last[at % BLOCK..].copy_from_slice(&rows),
            }
            result?;
            at = end;
        }
        Ok(())
    }

    /// Bytes of memory per row, about: a block's place and first row over its rows.
    #[cfg(test)]
    fn memory_per_row() -> f64 {
        (8 + std::mem::size_of::<T>()) as f64 / BLOCK as f64
    }
}

impl Row for i64 {
    const SIZE: usize = 8;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn take(bytes: &[u8]) -> i64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[..8]);
        i64::from_le_bytes(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(spill: Arc<Spill>, n: i64) -> Rows<i64> {
        let mut rows = Rows::new(spill);
        for i in 0..n {
            rows.push(i * 3);
        }
        rows
    }

    #[test]
    fn every_row_reads_back_from_a_file_and_from_memory() {
        for spill in [Spill::create().unwrap(), Spill::memory()] {
            let r = rows(Arc::clone(&spill), 1000);
            assert_eq!(r.len(), 1000);
            for i in [0, 1, 63, 64, 65, 959, 960, 999] {
                assert_eq!(r.get(i), Some(i as i64 * 3), "row {i}");
            }
            assert_eq!(r.get(1000), None);
            assert_eq!(r.get(5000), None);
            let all: Vec<i64> = (0..1000).filter_map(|i| r.get(i)).collect();
            assert_eq!(all, (0..1000).map(|i| i * 3).collect::<Vec<_>>());
            assert_eq!(r.read(0, 1000), all);
            assert_eq!(r.read(63, 130), all[63..130]);
            assert_eq!(r.read(990, 5000), all[990..]);
            assert!(r.read(1200, 1300).is_empty());
        }
    }

    #[test]
    fn partition_point_is_the_slice_s_from_any_start() {
        let r = rows(Spill::create().unwrap(), 1000);
        let all: Vec<i64> = (0..1000).map(|i| i * 3).collect();
        for from in [0, 1, 63, 64, 65, 500, 959, 960, 961, 999, 1000, 1200] {
            for x in [
                -1, 0, 1, 3, 190, 191, 192, 193, 1500, 2876, 2877, 2878, 2997, 5000,
            ] {
                let want = from.min(1000) + all[from.min(1000)..].partition_point(|&v| v < x);
                assert_eq!(r.partition_point(from, |&v| v < x), want, "{from} {x}");
            }
        }
        let empty: Rows<i64> = Rows::new(Spill::memory());
        assert_eq!(empty.partition_point(0, |_| true), 0);
    }

    #[test]
    fn update_changes_rows_in_blocks_and_in_memory_up_to_a_failure() {
        let mut r = rows(Spill::create().unwrap(), 200);
        r.update(10, |i, v| {
            *v = -(i as i64);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(r.get(9), Some(27));
        for i in [10, 63, 64, 128, 199] {
            assert_eq!(r.get(i), Some(-(i as i64)));
        }
        // The first rows of blocks are searched: they follow the change.
        assert_eq!(r.partition_point(10, |&v| v > -100), 100);
        let failed = r.update(0, |i, v| {
            if i == 70 {
                return Err(i);
            }
            *v = 1;
            Ok(())
        });
        assert_eq!(failed, Err(70));
        assert_eq!(r.get(69), Some(1));
        assert_eq!(r.get(71), Some(-71));
        assert!(Rows::<i64>::memory_per_row() < 0.3);
    }
}
