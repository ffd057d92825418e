//! The process exit codes, documented in the README.

/// How the process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Nothing at or above `--fail-on`.
    Ok = 0,
    /// Findings at or above `--fail-on`.
    Findings = 1,
    /// A usage or input error (missing file, not a recording, corrupt or truncated input).
    Error = 2,
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}
