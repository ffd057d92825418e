//! Named inputs, read whole (plain or gzip), and positions in them as line numbers.

use std::fmt;
use std::io::{BufRead, Read};

use flate2::bufread::MultiGzDecoder;

use crate::error::{Error, Result};

/// The most an input may hold once decompressed: 2 GiB.
pub const MAX_INPUT_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// One source to import: a name for diagnostics (a path, or `-` for stdin) and its bytes.
pub struct Input {
    /// How diagnostics name it.
    pub name: String,
    /// Its contents, plain or gzip (detected by the magic bytes `1f 8b`).
    pub reader: Box<dyn BufRead>,
}

impl Input {
    /// An input named `name` reading from `reader`.
    pub fn new(name: impl Into<String>, reader: impl BufRead + 'static) -> Self {
        Input {
            name: name.into(),
            reader: Box::new(reader),
        }
    }
}

impl fmt::Debug for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Input")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A problem with one place in one input that did not stop the import: the place was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The input's name.
    pub source: String,
    /// 1-based line; 0 when it concerns the whole input.
    pub line: u64,
    /// What was wrong and what was done about it.
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn new(source: &str, line: u64, message: impl Into<String>) -> Self {
        Diagnostic {
            source: source.to_owned(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.source, self.message)
        } else {
            write!(f, "{}:{}: {}", self.source, self.line, self.message)
        }
    }
}

/// An input's decompressed bytes and the offsets of its line starts.
pub(crate) struct Text {
    pub name: String,
    pub bytes: Vec<u8>,
    line_starts: Vec<usize>,
}

impl Text {
    /// Reads `input` whole. A gzip input cut short keeps what decompressed before the cut and
    /// adds a warning; an empty input is an error.
    pub fn read(input: Input, warnings: &mut Vec<Diagnostic>) -> Result<Text> {
        let Input { name, mut reader } = input;
        let head = reader.fill_buf().map_err(|source| Error::Io {
            input: name.clone(),
            source,
        })?;
        let gzip = head.starts_with(&[0x1f, 0x8b]);
        let mut bytes = Vec::new();
        let result = if gzip {
            MultiGzDecoder::new(reader)
                .take(MAX_INPUT_BYTES + 1)
                .read_to_end(&mut bytes)
        } else {
            reader.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)
        };
        if bytes.len() as u64 > MAX_INPUT_BYTES {
            return Err(Error::TooLarge {
                input: name,
                limit: MAX_INPUT_BYTES,
            });
        }
        if let Err(e) = result {
            if !gzip {
                return Err(Error::Io {
                    input: name,
                    source: e,
                });
            }
            // Keep whole lines only: the last one may be cut.
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            bytes.truncate(keep);
            let line = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            warnings.push(Diagnostic::new(
                &name,
                line + 1,
                format!(
                    "gzip stream is truncated or corrupt ({e}); the {line} complete lines before it were read"
                ),
            ));
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(Error::Empty { input: name });
        }
        let mut line_starts = vec![0];
        line_starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Ok(Text {
            name,
            bytes,
            line_starts,
        })
    }

    /// The 1-based line of byte `offset`.
    pub fn line_of(&self, offset: usize) -> u64 {
        self.line_starts.partition_point(|&s| s <= offset) as u64
    }

    /// The byte offset where 1-based `line` starts (the end of the input past the last line).
    pub fn line_start(&self, line: u64) -> usize {
        usize::try_from(line.saturating_sub(1))
            .ok()
            .and_then(|i| self.line_starts.get(i).copied())
            .unwrap_or(self.bytes.len())
    }

    /// The lines, numbered from 1, without their line ends.
    pub fn lines(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.bytes
            .split(|&b| b == b'\n')
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.strip_suffix(b"\r").unwrap_or(l)))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn gzip_is_detected_by_its_magic_bytes() {
        let mut warnings = Vec::new();
        let text = Text::read(
            Input::new("a.gz", std::io::Cursor::new(gzip(b"{}\n{}\n"))),
            &mut warnings,
        )
        .unwrap();
        assert_eq!(text.bytes, b"{}\n{}\n");
        assert!(warnings.is_empty());
    }

    #[test]
    fn a_truncated_gzip_keeps_the_complete_lines_and_warns() {
        let mut data = Vec::new();
        for i in 0..2000 {
            data.extend_from_slice(format!("{{\"n\": {i}, \"pad\": \"{i:x}{i:o}\"}}\n").as_bytes());
        }
        let gz = gzip(&data);
        let cut = gz[..gz.len() / 2].to_vec();
        let mut warnings = Vec::new();
        let text =
            Text::read(Input::new("a.gz", std::io::Cursor::new(cut)), &mut warnings).unwrap();
        assert!(!text.bytes.is_empty() && text.bytes.ends_with(b"\n"));
        assert!(data.starts_with(&text.bytes));
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].message.contains("truncated"), "{}", warnings[0]);
    }

    #[test]
    fn an_empty_input_is_an_error_naming_it() {
        let err = Text::read(Input::new("empty.json", &b"  \n"[..]), &mut Vec::new())
            .err()
            .unwrap();
        assert_eq!(err.to_string(), "empty.json: the input is empty");
    }

    #[test]
    fn lines_and_offsets_agree() {
        let text = Text::read(Input::new("x", &b"a\nbc\n\nd"[..]), &mut Vec::new()).unwrap();
        assert_eq!(text.line_of(0), 1);
        assert_eq!(text.line_of(2), 2);
        assert_eq!(text.line_of(5), 3);
        assert_eq!(text.line_of(6), 4);
        assert_eq!(text.line_start(2), 2);
        assert_eq!(text.lines().count(), 4);
    }
}
