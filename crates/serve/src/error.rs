//! The crate's error type.

use std::io;
use std::net::SocketAddr;

/// What can go wrong when serving a recording.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The recording could not be read.
    #[error("failed to read the recording")]
    Recording(#[from] rf_format::Error),
    /// The listen address could not be bound.
    #[error("failed to listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The server's runtime or thread could not be started or failed.
    #[error("the server's runtime failed")]
    Runtime(#[source] io::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
