//! The process exit codes, documented in the README.

/// How the process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Nothing at or above `--fail-on`.
    Ok,
    /// Findings at or above `--fail-on`.
    Findings,
    /// A usage or input error (missing file, not a recording, corrupt or truncated input).
    Error,
    /// A command's own outcome code (`wait`: 3 timeout, 4 aborted, 5 degraded, 6 churn).
    Code(u8),
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(match e {
            Exit::Ok => 0,
            Exit::Findings => 1,
            Exit::Error => 2,
            Exit::Code(c) => c,
        })
    }
}
