//! Stopping long-running commands cleanly on SIGINT (Ctrl-C) and SIGTERM.

use anyhow::{Context, Result};

/// Signal handlers installed up front, so a signal that arrives before anyone waits is not lost
/// (and does not kill the process before it closes its files).
#[derive(Debug)]
pub struct Interrupt {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Interrupt {
    /// Installs the handlers; needs a running tokio runtime.
    pub fn install() -> Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Interrupt {
                int: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
                term: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Interrupt {})
    }

    /// Resolves at the first SIGINT or SIGTERM.
    pub async fn wait(mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
        #[cfg(not(unix))]
        {
            let _ = &mut self;
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
