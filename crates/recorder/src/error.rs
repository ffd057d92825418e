//! Errors of the recorder: each says what failed and how to fix it.

/// What stopped the recorder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API server refused a request for lack of permissions.
    #[error(
        "forbidden: cannot {verb} {resource}{scope}: {message}; grant get, list and watch on it (deploy/rbac.yaml holds the minimal ClusterRole and Role)"
    )]
    Forbidden {
        /// get, list or watch.
        verb: &'static str,
        /// e.g. `rollouts.argoproj.io`.
        resource: String,
        /// ` in namespace payments`, or empty for all namespaces.
        scope: String,
        /// The server's words.
        message: String,
    },
    /// The server does not serve a kind that was asked for.
    #[error("the API server does not serve {resource} ({api_version}){hint}")]
    NotServed {
        /// e.g. `rollouts.argoproj.io`.
        resource: String,
        /// e.g. `argoproj.io/v1alpha1`.
        api_version: String,
        /// How to go on.
        hint: String,
    },
    /// The server could not be reached or answered with an error.
    #[error("cannot talk to the API server at {server}: {detail}")]
    Unreachable {
        /// The server's URL.
        server: String,
        /// What went wrong.
        detail: String,
    },
    /// Writing the recording failed.
    #[error("cannot write the recording")]
    Write(#[source] rf_format::Error),
    /// A file or directory of a rotating recording could not be made, renamed or removed.
    #[error("cannot {action} {}", path.display())]
    Output {
        /// What was being done: `create`, `rename`, `remove`...
        action: &'static str,
        /// On which path.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The writer thread could not start or died.
    #[error("the writer thread failed")]
    Thread(#[source] std::io::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
