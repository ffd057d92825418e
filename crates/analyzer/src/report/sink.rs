//! Where findings go as they are made, as ripgrep's `Sink` takes a searcher's matches: the
//! engine hands each finding a record makes true to the caller's sink, by reference, and keeps
//! its own copy for the report.

use crate::report::finding::{ConditionChange, Finding};

/// Takes the findings the analyzer makes, in the order found.
pub trait FindingSink {
    /// One finding, just made true.
    fn finding(&mut self, finding: &Finding);
    /// A reported condition stopped holding, or holds again (with
    /// [`Options::conditions`](crate::Options::conditions) only).
    fn condition(&mut self, _change: &ConditionChange) {}
}

/// Collects copies: for a caller that shows findings as they come.
impl FindingSink for Vec<Finding> {
    fn finding(&mut self, finding: &Finding) {
        self.push(finding.clone());
    }
}

/// Drops every finding: for a caller that reads findings only in the report (it copies none:
/// on a recording that makes a finding every 50 records, copies were about 1% of the replay).
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

impl FindingSink for Discard {
    fn finding(&mut self, _: &Finding) {}
}
