//! The served "now": a position in the timeline and a time, moved by the [`Pace`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rf_format::Timestamp;
use tokio::time::Instant;

use crate::options::Pace;
use crate::timeline::Timeline;

/// A resource (index into [`Timeline::kinds`]) and a namespace scope (`None`: all).
pub type Scope = (usize, Option<String>);

#[derive(Debug)]
pub struct Clock {
    pace: Pace,
    started: Instant,
    origin: Timestamp,
    at: usize,
    base: usize,
    len: usize,
    cursors: Mutex<HashMap<Scope, usize>>,
    furthest: AtomicUsize,
}

impl Clock {
    pub fn new(timeline: &Timeline, pace: Pace) -> Clock {
        let base = timeline.base_position();
        let at = match pace {
            Pace::At(t) => timeline.position_at(t),
            _ => base,
        };
        Clock {
            pace,
            started: Instant::now(),
            origin: timeline.time_at(base),
            at,
            base,
            len: timeline.len(),
            cursors: Mutex::new(HashMap::new()),
            furthest: AtomicUsize::new(base),
        }
    }

    fn speed_now(&self, timeline: &Timeline, speed: f64) -> Timestamp {
        let elapsed = self.started.elapsed().as_secs_f64() * speed * 1e9;
        let elapsed = if elapsed.is_finite() && elapsed < i64::MAX as f64 {
            elapsed as i64
        } else {
            i64::MAX
        };
        self.origin.plus_nanos(elapsed).min(timeline.end())
    }

    /// The served time, for ages.
    pub fn now(&self, timeline: &Timeline) -> Timestamp {
        match self.pace {
            Pace::At(t) => t,
            Pace::Speed(x) => self.speed_now(timeline, x),
            Pace::Max => {
                let p = self.furthest.load(Ordering::Relaxed);
                if p >= self.len {
                    timeline.end()
                } else {
                    timeline.time_at(p)
                }
            }
        }
    }

    /// Records with an index below this are released to watches.
    pub fn released(&self, timeline: &Timeline) -> usize {
        match self.pace {
            Pace::At(_) => self.at,
            Pace::Speed(x) => timeline.position_at(self.speed_now(timeline, x)),
            Pace::Max => usize::MAX,
        }
    }

    /// The position a list without a resourceVersion is served at, for `scope`.
    pub fn position(&self, timeline: &Timeline, scope: &Scope) -> usize {
        match self.pace {
            Pace::Max => self
                .cursors
                .lock()
                .map(|c| c.get(scope).copied().unwrap_or(self.base))
                .unwrap_or(self.base),
            _ => self.released(timeline).min(self.len).max(self.base),
        }
    }

    /// Under [`Pace::Max`], a watch of `scope` has sent everything before `position`.
    pub fn advance(&self, scope: &Scope, position: usize) {
        if self.pace != Pace::Max {
            return;
        }
        if let Ok(mut c) = self.cursors.lock() {
            match c.get_mut(scope) {
                Some(e) => *e = (*e).max(position),
                None => {
                    c.insert(scope.clone(), self.base.max(position));
                }
            }
        }
        self.furthest.fetch_max(position, Ordering::Relaxed);
    }

    /// How long until record `index` is released, under [`Pace::Speed`]; `None` when it never
    /// will be by waiting (a fixed moment).
    pub fn wait_for(&self, timeline: &Timeline, index: usize) -> Option<Duration> {
        match self.pace {
            Pace::Speed(x) if x > 0.0 => {
                let due = timeline
                    .time_at(index.saturating_add(1))
                    .as_unix_nanos()
                    .saturating_sub(self.origin.as_unix_nanos());
                let due = Duration::from_secs_f64((due.max(0) as f64 / 1e9 / x).min(1e9));
                Some(due.saturating_sub(self.started.elapsed()))
            }
            Pace::Max => Some(Duration::ZERO),
            _ => None,
        }
    }
}
