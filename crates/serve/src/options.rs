//! How a recording is served: which moment, how fast, and which faults to inject.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use rf_format::Timestamp;

/// How the served "now" moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// The state at this time, forever. Watches send the events up to it, then idle.
    At(Timestamp),
    /// "Now" starts at the end of the recording's initial lists and advances with wall time
    /// times this factor (1.0: real time). Watches wait for each event's moment.
    Speed(f64),
    /// As fast as clients read: watches send every later event at once. Each resource and
    /// namespace scope (all namespaces, or one) has its own cursor, starting at the base, that
    /// moves to the last event any of its watches has sent; lists without a resourceVersion are
    /// served at that cursor.
    Max,
}

/// Faults to inject, for testing clients. Zero means off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// End each watch stream after this many events.
    pub close_watch_every: u64,
    /// Answer every M-th watch request (counted over the whole server) with a single
    /// `ERROR` event holding a 410 Expired Status.
    pub gone_every: u64,
    /// After this many events, a watch stream stops sending anything (no bookmarks either)
    /// until its timeout or its client goes away.
    pub stall_after: u64,
}

/// Everything a [`crate::Server`] needs besides the recording.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where to listen. Default: `127.0.0.1:0` (loopback, any free port).
    pub listen: SocketAddr,
    /// How "now" moves. Default: [`Pace::Max`].
    pub pace: Pace,
    /// Faults to inject. Default: none.
    pub faults: Faults,
    /// How often an idle watch that asked for bookmarks gets one. Default: 1 s.
    pub bookmark_interval: Duration,
    /// How long a watch lasts without `timeoutSeconds`. Default: 30 minutes.
    pub default_watch_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            pace: Pace::Max,
            faults: Faults::default(),
            bookmark_interval: Duration::from_secs(1),
            default_watch_timeout: Duration::from_secs(30 * 60),
        }
    }
}
