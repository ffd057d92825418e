//! What every layer speaks in: where a record sits, short strings, Kubernetes names, time, and
//! the maps the analyzer looks things up in. Nothing here knows a view, a rollout or a finding.

pub(crate) mod by_name;
pub(crate) mod image;
pub(crate) mod time;

use rf_format::Timestamp;

/// The analyzer's hash maps, looked up on every record: std's maps with a faster, still randomly
/// seeded hasher (keys come from recordings, which may be hostile).
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// A string held inline up to 24 bytes: most strings a view reads (names, hashes, phases,
/// reasons, timestamps) are that short, and each was an allocation per record.
pub(crate) type Str = compact_str::CompactString;

/// The label the Argo Rollouts controller puts on every ReplicaSet of a Rollout, on its pod
/// template and on the selectors of the Services it manages; never a difference between
/// templates.
pub const HASH_LABEL: &str = "rollouts-pod-template-hash";

/// The Argo Rollouts controller's revision number of a ReplicaSet (and of a Rollout): the
/// order of its pod templates, bumped when a rollback brings an old one back.
pub(crate) const REVISION_ANNOTATION: &str = "rollout.argoproj.io/revision";

/// Where a record sits: file index, seq, time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct At {
    pub file: u32,
    pub seq: u64,
    pub at: Timestamp,
}

/// A cheap digest to tell whether a template's bytes changed (compared within one run only).
/// foldhash reads 16 bytes a step; FNV-1a, used before, is one dependent multiply per byte,
/// and every ReplicaSet record's template (about 1 KB) is digested.
pub(crate) fn digest(bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x7465_6d70_6c61_7465).hash_one(bytes)
}
