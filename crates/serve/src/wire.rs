//! How the server writes numbers and strings into its scratch file, and reads them back:
//! little-endian, a string as its `u32` length and its bytes.

/// Appends `v`.
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v`.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `s`, length first.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

/// Reads what the `put_` functions wrote, from the front; `None` past the end.
pub struct Take<'a>(pub &'a [u8]);

impl<'a> Take<'a> {
    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    /// The next `u32`.
    pub fn u32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next `u64`.
    pub fn u64(&mut self) -> Option<u64> {
        let mut x = [0u8; 8];
        x.copy_from_slice(self.bytes(8)?);
        Some(u64::from_le_bytes(x))
    }

    /// The next string.
    pub fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.u32()?).ok()?;
        std::str::from_utf8(self.bytes(n)?).ok()
    }

    /// True when everything was read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
