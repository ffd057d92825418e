//! What stops an import.

/// An input that cannot be imported at all. Problems with single lines are
/// [`Diagnostic`](crate::Diagnostic)s instead: the line is skipped and the import goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading an input failed.
    #[error("{input}: failed to read")]
    Io {
        /// The input's name.
        input: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An input holds nothing but whitespace.
    #[error("{input}: the input is empty")]
    Empty {
        /// The input's name.
        input: String,
    },
    /// An input is larger than the import reads.
    #[error("{input}: larger than the {limit} bytes an import reads")]
    TooLarge {
        /// The input's name.
        input: String,
        /// The limit, in decompressed bytes.
        limit: u64,
    },
    /// An input does not look like the format asked for: nothing in it could be used.
    #[error("{input}:{line}: no usable {format} event in the input ({detail})")]
    NothingUsable {
        /// The input's name.
        input: String,
        /// The first line that was rejected (1-based).
        line: u64,
        /// `kubectl-watch` or `audit-log`.
        format: &'static str,
        /// The first rejection, in words.
        detail: String,
    },
    /// No input was given.
    #[error("no input to import")]
    NoInput,
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
