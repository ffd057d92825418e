//! The member index: where each gzip member of a closed recording ends, so that a reader of a
//! file can inflate a member whole (docs/format.md, "Member index").
//!
//! A clean [`finish`](crate::Writer::finish) appends two gzip members with no content after the
//! recording's last member, which every gzip reader reads as nothing:
//!
//! - the *index member*: its header's extra field (FEXTRA) holds a subfield `RI` with the
//!   compressed length of every member before it, in order, and a CRC-32 of them;
//! - the *locator*: a 30-byte member whose extra field holds a subfield `RL` with the index
//!   member's length, so that a reader finds the index from the end of the file.
//!
//! The index is a hint: a reader checks every member it names as it inflates it (header, CRC-32
//! and length) and reads the rest of the file member by member, as without an index, the
//! moment one does not check.

use std::io::{self, Read, Seek, SeekFrom};

use flate2::Crc;

use crate::MAX_FRAME_LEN;

/// A gzip header with FEXTRA set (mtime 0, XFL 0, OS unknown), before its XLEN.
const HEAD: [u8; 10] = [0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff];
/// An empty deflate stream (an empty final block with fixed codes), then the CRC-32 and ISIZE
/// of no bytes.
const EMPTY_BODY: [u8; 10] = [0x03, 0x00, 0, 0, 0, 0, 0, 0, 0, 0];
/// The subfield ids of the index and of the locator.
const INDEX_ID: [u8; 2] = *b"RI";
const LOCATOR_ID: [u8; 2] = *b"RL";
/// The locator's length: header, XLEN, subfield id and length, a `u32`, the empty body.
pub(crate) const LOCATOR_LEN: usize = HEAD.len() + 2 + 4 + 4 + EMPTY_BODY.len();
/// The most members an index lists: its subfield (a count, the lengths, a CRC-32) must fit the
/// 65,535 bytes of an extra field, with the subfield's own 4. At 8 MiB a member, 128 GiB of
/// records; a longer recording is written without an index.
pub(crate) const MAX_MEMBERS: usize = (u16::MAX as usize - 4 - 8) / 4;
/// The longest member an index may name, compressed or not: the writer closes a member after
/// the frame that reaches [`Writer::MEMBER_LIMIT`](crate::Writer::MEMBER_LIMIT), and the last
/// one also holds the end marker and the trailer frame. Deflate adds at most 5 bytes per 64 KiB
/// to incompressible input. A longer one is not inflated whole (no allocation follows from an
/// unchecked length).
pub(crate) const MAX_MEMBER: u64 =
    crate::Writer::<io::Sink>::MEMBER_LIMIT + 2 * (MAX_FRAME_LEN as u64 + 4) + (1 << 20);

/// The compressed lengths of the members written so far, for the index.
#[derive(Debug, Default)]
pub(crate) struct Lengths {
    lengths: Vec<u32>,
    /// A member too long for the index, or too many: no index is written.
    overflow: bool,
}

impl Lengths {
    /// A member of `len` compressed bytes was closed.
    pub fn push(&mut self, len: u64) {
        match u32::try_from(len) {
            Ok(len) if !self.overflow && self.lengths.len() < MAX_MEMBERS => {
                self.lengths.push(len);
            }
            _ => {
                self.overflow = true;
                self.lengths = Vec::new();
            }
        }
    }

    /// The index member and the locator, to follow the last member; `None` when the recording
    /// has too many members to index.
    pub fn members(&self) -> Option<Vec<u8>> {
        if self.overflow {
            return None;
        }
        let mut payload = Vec::with_capacity(8 + 4 * self.lengths.len());
        payload.extend_from_slice(&(self.lengths.len() as u32).to_le_bytes());
        for len in &self.lengths {
            payload.extend_from_slice(&len.to_le_bytes());
        }
        let mut crc = Crc::new();
        crc.update(&payload);
        payload.extend_from_slice(&crc.sum().to_le_bytes());
        let mut out = Vec::with_capacity(payload.len() + 64);
        member(&mut out, INDEX_ID, &payload)?;
        let index_len = u32::try_from(out.len()).ok()?;
        member(&mut out, LOCATOR_ID, &index_len.to_le_bytes())?;
        Some(out)
    }
}

/// Appends an empty gzip member whose extra field holds one subfield, `id` with `payload`.
fn member(out: &mut Vec<u8>, id: [u8; 2], payload: &[u8]) -> Option<()> {
    let len = u16::try_from(payload.len()).ok()?;
    let xlen = len.checked_add(4)?;
    out.extend_from_slice(&HEAD);
    out.extend_from_slice(&xlen.to_le_bytes());
    out.extend_from_slice(&id);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&EMPTY_BODY);
    Some(())
}

/// The payload of the member `bytes` is, when it is exactly an empty member with one subfield
/// `id` as [`member`] writes it.
fn payload(bytes: &[u8], id: [u8; 2]) -> Option<&[u8]> {
    let rest = bytes.strip_prefix(&HEAD)?;
    let rest = rest.strip_suffix(&EMPTY_BODY)?;
    let (&[x0, x1, i0, i1, l0, l1], payload) = rest.split_first_chunk::<6>()?;
    let (xlen, len) = (u16::from_le_bytes([x0, x1]), u16::from_le_bytes([l0, l1]));
    (usize::from(xlen) == payload.len() + 4 && usize::from(len) == payload.len() && [i0, i1] == id)
        .then_some(payload)
}

/// Where each member of a closed recording ends: their compressed lengths, in order, from the
/// recording's start. Found by [`MemberIndex::find`]; read with
/// [`Reader::with_index`](crate::Reader::with_index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberIndex {
    pub(crate) lengths: Vec<u32>,
}

impl MemberIndex {
    /// Reads the member index at the end of `file` (a recording from its current position to
    /// its end) and seeks back to where it was. `None` when the file has none, or one that does
    /// not check (a recording not closed cleanly, written by an older build, or damaged at its
    /// end): read it without. An error only when seeking or reading fails.
    pub fn find<F: Read + Seek>(file: &mut F) -> io::Result<Option<MemberIndex>> {
        let start = file.stream_position()?;
        let found = Self::read_at_end(file, start);
        file.seek(SeekFrom::Start(start))?;
        found
    }

    fn read_at_end<F: Read + Seek>(file: &mut F, start: u64) -> io::Result<Option<MemberIndex>> {
        let end = file.seek(SeekFrom::End(0))?;
        let size = end.saturating_sub(start);
        if size < LOCATOR_LEN as u64 {
            return Ok(None);
        }
        let mut locator = [0u8; LOCATOR_LEN];
        file.seek(SeekFrom::Start(end - LOCATOR_LEN as u64))?;
        file.read_exact(&mut locator)?;
        let Some(&[i0, i1, i2, i3]) = payload(&locator, LOCATOR_ID) else {
            return Ok(None);
        };
        let index_len = u64::from(u32::from_le_bytes([i0, i1, i2, i3]));
        // The index member is an extra field's worth of bytes at most.
        if index_len > 65_535 + 32 || index_len + LOCATOR_LEN as u64 > size {
            return Ok(None);
        }
        let members_end = end - LOCATOR_LEN as u64 - index_len;
        let mut index = vec![0u8; index_len as usize];
        file.seek(SeekFrom::Start(members_end))?;
        file.read_exact(&mut index)?;
        let Some(payload) = payload(&index, INDEX_ID) else {
            return Ok(None);
        };
        let Some((listed, sum)) = payload.split_last_chunk::<4>() else {
            return Ok(None);
        };
        let mut crc = Crc::new();
        crc.update(listed);
        let Some((count, lengths)) = listed.split_first_chunk::<4>() else {
            return Ok(None);
        };
        if crc.sum() != u32::from_le_bytes(*sum)
            || lengths.len() != 4 * u32::from_le_bytes(*count) as usize
        {
            return Ok(None);
        }
        let lengths: Vec<u32> = lengths
            .chunks_exact(4)
            .map(|l| u32::from_le_bytes([l[0], l[1], l[2], l[3]]))
            .collect();
        // The members it lists must fill the file up to it, exactly, and each be a member.
        let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        let plausible = lengths
            .iter()
            .all(|&l| (18..=MAX_MEMBER).contains(&u64::from(l)));
        if total != members_end - start || !plausible {
            return Ok(None);
        }
        Ok(Some(MemberIndex { lengths }))
    }

    /// The compressed length of each member, from the first.
    pub fn lengths(&self) -> &[u32] {
        &self.lengths
    }

    /// The members listed.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// True when it lists no member.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Cursor;

    use super::*;

    /// `lengths` members of junk, then the index and the locator of them.
    fn file(lengths: &[u64]) -> Vec<u8> {
        let mut index = Lengths::default();
        let mut out = Vec::new();
        for (i, &len) in lengths.iter().enumerate() {
            out.extend((0..len).map(|j| (i as u64 * 31 + j) as u8));
            index.push(len);
        }
        out.extend(index.members().unwrap());
        out
    }

    #[test]
    fn the_index_at_the_end_lists_every_member_before_it() {
        let bytes = file(&[40, 1000, 18, 77]);
        let mut f = Cursor::new(bytes.clone());
        let index = MemberIndex::find(&mut f).unwrap().unwrap();
        assert_eq!(index.lengths, [40, 1000, 18, 77]);
        assert_eq!(f.position(), 0, "back where it was");
        // Read from where the recording starts, within a larger file.
        let mut prefixed = vec![9u8; 5];
        prefixed.extend(&bytes);
        let mut f = Cursor::new(prefixed);
        f.set_position(5);
        assert_eq!(MemberIndex::find(&mut f).unwrap().unwrap().len(), 4);
        assert_eq!(f.position(), 5);
        // Every gzip reader reads the two members as nothing.
        let tail = &bytes[40 + 1000 + 18 + 77..];
        let mut gz = flate2::read::MultiGzDecoder::new(tail);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut gz, &mut got).unwrap();
        assert!(got.is_empty());
    }

    #[test]
    fn an_index_that_does_not_check_is_none() {
        let bytes = file(&[40, 1000, 77]);
        assert!(
            MemberIndex::find(&mut Cursor::new(&bytes))
                .unwrap()
                .is_some()
        );
        // Each byte of the index member and the locator changed: found no more, or (a byte
        // gzip readers ignore, none here) the same.
        let tail = 40 + 1000 + 77;
        for i in tail..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x10;
            let found = MemberIndex::find(&mut Cursor::new(&damaged)).unwrap();
            assert!(found.is_none(), "byte {i} changed, still found: {found:?}");
        }
        // Cut anywhere: no locator at the end.
        for cut in [1, 10, 29, 30, 31, bytes.len() - tail] {
            let cut = &bytes[..bytes.len() - cut];
            assert!(MemberIndex::find(&mut Cursor::new(cut)).unwrap().is_none());
        }
        // One byte more before it: the members no longer fill the file up to the index.
        let mut longer = vec![0u8];
        longer.extend(&bytes);
        assert!(
            MemberIndex::find(&mut Cursor::new(&longer))
                .unwrap()
                .is_none()
        );
        // Too short to hold a locator, or empty.
        assert!(
            MemberIndex::find(&mut Cursor::new(&bytes[..20]))
                .unwrap()
                .is_none()
        );
        assert!(
            MemberIndex::find(&mut Cursor::new(Vec::new()))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn too_many_or_too_long_members_write_no_index() {
        let mut index = Lengths::default();
        for _ in 0..MAX_MEMBERS {
            index.push(100);
        }
        let bytes = index.members().unwrap();
        assert!(bytes.len() <= 65_535 + 64, "{}", bytes.len());
        index.push(100);
        assert!(
            index.members().is_none(),
            "one more than an extra field holds"
        );
        let mut index = Lengths::default();
        index.push(100);
        index.push(u64::from(u32::MAX) + 1);
        index.push(100);
        assert!(index.members().is_none());
    }

    #[test]
    fn implausible_lengths_are_refused() {
        // A member shorter than an empty one, in an index that otherwise checks.
        let bytes = file(&[10, 100]);
        assert!(
            MemberIndex::find(&mut Cursor::new(&bytes))
                .unwrap()
                .is_none()
        );
    }
}
