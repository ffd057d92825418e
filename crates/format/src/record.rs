//! The values a recording holds: one [`Header`], then [`Record`]s.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A point in time: nanoseconds since the Unix epoch, UTC.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// From whole seconds since the epoch.
    pub const fn from_unix_seconds(secs: i64) -> Self {
        Timestamp(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the epoch.
    pub const fn as_unix_nanos(self) -> i64 {
        self.0
    }

    /// This time plus `nanos` nanoseconds (saturating).
    #[must_use]
    pub const fn plus_nanos(self, nanos: i64) -> Self {
        Timestamp(self.0.saturating_add(nanos))
    }
}

/// The kind of a recorded object.
///
/// The kinds the analyzer reads have their own variant; anything else is kept as [`Kind::Other`]
/// with its group, version and kind, so a recording never loses what it was given.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// `argoproj.io/v1alpha1` Rollout.
    Rollout,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `v1` Service.
    Service,
    /// `discovery.k8s.io/v1` EndpointSlice.
    EndpointSlice,
    /// `v1` Pod.
    Pod,
    /// `argoproj.io/v1alpha1` Application (Argo CD).
    Application,
    /// `v1` Event (core events; `events.k8s.io/v1` events are recorded as this kind too).
    Event,
    /// Any other resource, by group, version and kind.
    Other {
        /// API group, empty for the core group.
        group: String,
        /// API version within the group.
        version: String,
        /// Kind, as in the object's `kind` field.
        kind: String,
    },
}

impl Kind {
    /// Every kind with its own variant, in the order the recorder lists them.
    pub const KNOWN: [Kind; 7] = [
        Kind::Rollout,
        Kind::ReplicaSet,
        Kind::Service,
        Kind::EndpointSlice,
        Kind::Pod,
        Kind::Application,
        Kind::Event,
    ];

    /// The kind's index in [`Kind::KNOWN`]; `None` for [`Kind::Other`].
    pub fn known_index(&self) -> Option<usize> {
        Some(match self {
            Kind::Rollout => 0,
            Kind::ReplicaSet => 1,
            Kind::Service => 2,
            Kind::EndpointSlice => 3,
            Kind::Pod => 4,
            Kind::Application => 5,
            Kind::Event => 6,
            Kind::Other { .. } => return None,
        })
    }

    /// The kind's name as in an object's `kind` field.
    pub fn name(&self) -> &str {
        match self {
            Kind::Rollout => "Rollout",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::Service => "Service",
            Kind::EndpointSlice => "EndpointSlice",
            Kind::Pod => "Pod",
            Kind::Application => "Application",
            Kind::Event => "Event",
            Kind::Other { kind, .. } => kind,
        }
    }

    /// The `apiVersion` objects of this kind carry (`group/version`, or `version` for core).
    pub fn api_version(&self) -> String {
        match self {
            Kind::Rollout | Kind::Application => "argoproj.io/v1alpha1".to_owned(),
            Kind::ReplicaSet => "apps/v1".to_owned(),
            Kind::EndpointSlice => "discovery.k8s.io/v1".to_owned(),
            Kind::Service | Kind::Pod | Kind::Event => "v1".to_owned(),
            Kind::Other { group, version, .. } if group.is_empty() => version.clone(),
            Kind::Other { group, version, .. } => format!("{group}/{version}"),
        }
    }

    /// True when objects of this kind in `api_version` are read as this kind: the current
    /// version, and the older ones whose fields the analyzer reads are the same
    /// (`extensions/v1beta1` and `apps/v1beta2` ReplicaSets, `discovery.k8s.io/v1beta1`
    /// EndpointSlices, `events.k8s.io/v1` Events).
    pub fn reads_version(&self, api_version: &str) -> bool {
        match self {
            Kind::ReplicaSet => matches!(
                api_version,
                "apps/v1" | "apps/v1beta2" | "extensions/v1beta1"
            ),
            Kind::EndpointSlice => {
                matches!(
                    api_version,
                    "discovery.k8s.io/v1" | "discovery.k8s.io/v1beta1"
                )
            }
            Kind::Event => matches!(api_version, "v1" | "events.k8s.io/v1"),
            Kind::Other { .. } => false,
            k => k.api_version() == api_version,
        }
    }

    /// The kind of an object from its `apiVersion` and `kind` fields. Any version of a group
    /// is the kind (`discovery.k8s.io/v1beta1` EndpointSlices, `apps/v1beta2` ReplicaSets), and
    /// so is a ReplicaSet of the old `extensions` group: older clusters serve them in shapes
    /// the current versions keep.
    pub fn from_api(api_version: &str, kind: &str) -> Kind {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        match (group, kind) {
            ("argoproj.io", "Rollout") => Kind::Rollout,
            ("argoproj.io", "Application") => Kind::Application,
            ("apps" | "extensions", "ReplicaSet") => Kind::ReplicaSet,
            ("discovery.k8s.io", "EndpointSlice") => Kind::EndpointSlice,
            ("", "Service") => Kind::Service,
            ("", "Pod") => Kind::Pod,
            ("", "Event") | ("events.k8s.io", "Event") => Kind::Event,
            _ => Kind::Other {
                group: group.to_owned(),
                version: version.to_owned(),
                kind: kind.to_owned(),
            },
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a record says happened.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// A watch ADDED event.
    Added,
    /// A watch MODIFIED event.
    Modified,
    /// A watch DELETED event (`inferred: false`), or an object absent from a relist that was
    /// present before it (`inferred: true`): deleted at some time during the gap.
    Deleted {
        /// True when no DELETED event was seen and the deletion was inferred from a relist.
        inferred: bool,
    },
    /// A (re)list of `kind` in `namespace` (empty: all namespaces) begins.
    ListBegin,
    /// An object seen in a (re)list.
    Listed,
    /// The (re)list ends; the record's `resource_version` is the list's.
    ListEnd,
    /// The recorder's view of `kind` in `namespace` has a hole: the watch broke, the server
    /// answered 410 Gone, or the recorder restarted. Events in the hole are unknown.
    Gap {
        /// Why, in words.
        reason: String,
    },
}

impl Op {
    /// Every op's [`name`](Self::name), by [`index`](Self::index).
    pub const NAMES: [&'static str; 8] = [
        "added",
        "modified",
        "deleted",
        "deleted-inferred",
        "list-begin",
        "listed",
        "list-end",
        "gap",
    ];

    /// The op's place in [`Op::NAMES`]: for counting ops in an array, as
    /// [`Kind::known_index`] does kinds.
    pub fn index(&self) -> usize {
        match self {
            Op::Added => 0,
            Op::Modified => 1,
            Op::Deleted { inferred: false } => 2,
            Op::Deleted { inferred: true } => 3,
            Op::ListBegin => 4,
            Op::Listed => 5,
            Op::ListEnd => 6,
            Op::Gap { .. } => 7,
        }
    }

    /// A short lowercase name: `added`, `modified`, `deleted`, `deleted-inferred`, `list-begin`,
    /// `listed`, `list-end`, `gap`.
    pub fn name(&self) -> &'static str {
        Self::NAMES[self.index()]
    }

    /// True for the ops that carry an object.
    pub fn has_object(&self) -> bool {
        matches!(
            self,
            Op::Added | Op::Modified | Op::Deleted { .. } | Op::Listed
        )
    }
}

/// One observed change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Position in the recording, strictly increasing from 1.
    pub seq: u64,
    /// When the recorder received it (for imports: when the source says it happened).
    pub observed_at: Timestamp,
    /// The object's kind.
    pub kind: Kind,
    /// What happened.
    pub op: Op,
    /// Namespace; empty for cluster-scoped objects and all-namespace list markers.
    pub namespace: String,
    /// Object name; empty for list markers and gaps.
    pub name: String,
    /// `metadata.uid`; empty when not known.
    pub uid: String,
    /// `metadata.resourceVersion` (for list markers: the list's).
    pub resource_version: String,
    /// Who made the change, when the source knows it (an audit log's user, say).
    pub actor: Option<String>,
    /// The object as the API server sent it, as JSON; empty for markers and gaps.
    #[serde(with = "serde_bytes")]
    pub object: Vec<u8>,
}

impl Record {
    /// A record to read into ([`crate::Reader::read_into`]): no kind, op or time worth reading,
    /// every string and the object empty.
    pub fn blank() -> Record {
        Record {
            seq: 0,
            observed_at: Timestamp(0),
            kind: Kind::Event,
            op: Op::Added,
            namespace: String::new(),
            name: String::new(),
            uid: String::new(),
            resource_version: String::new(),
            actor: None,
            object: Vec::new(),
        }
    }

    /// Writes the record's kind, namespace and name into `key` (cleared first) as one byte
    /// string: each part length-prefixed, so that no two objects share one. A reused buffer
    /// makes it a key for tables of objects without an allocation per lookup.
    pub fn identity_into(&self, key: &mut Vec<u8>) {
        key.clear();
        match &self.kind {
            Kind::Other {
                group,
                version,
                kind,
            } => {
                key.push(u8::MAX);
                push_part(key, group);
                push_part(key, version);
                push_part(key, kind);
            }
            known => key.push(known.known_index().unwrap_or(0) as u8),
        }
        push_object_key(key, &self.namespace, &self.name);
    }
}

/// Appends an object's namespace and name to `key`, each length-prefixed so that no two objects
/// share one: the end of [`Record::identity_into`], for tables of one kind's objects.
pub fn push_object_key(key: &mut Vec<u8>, namespace: &str, name: &str) {
    push_part(key, namespace);
    push_part(key, name);
}

/// Appends `s` to `key`, length-prefixed.
fn push_part(key: &mut Vec<u8>, s: &str) {
    key.extend_from_slice(&(s.len() as u64).to_le_bytes());
    key.extend_from_slice(s.as_bytes());
}

/// How values that could hold secrets were treated when recording.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Redaction {
    /// Nothing was redacted (`record --no-redact`).
    Disabled,
    /// Every `env[].value` in pod templates and pods was replaced by `sha256:` and the first 12
    /// hex digits of its SHA-256, so a diff still shows that a value changed.
    EnvValueDigests,
}

/// Where a recording came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// kubeconfig context, or the generator (`rf-scenarios rerender-race`).
    pub context: Option<String>,
    /// The API server's URL.
    pub server: Option<String>,
    /// Namespaces watched; empty: all.
    pub namespaces: Vec<String>,
    /// Label selector applied to every watch.
    pub label_selector: Option<String>,
    /// Kinds watched.
    pub kinds: Vec<Kind>,
}

/// The first frame of every recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The format version the file was written with.
    pub format_version: u32,
    /// The version of the tool that wrote it.
    pub tool_version: String,
    /// When recording began.
    pub started_at: Timestamp,
    /// What was recorded.
    pub source: Source,
    /// How secrets were kept out.
    pub redaction: Redaction,
    /// Free-form notes (`times: approximate` for imports whose source has no receive times).
    pub notes: BTreeMap<String, String>,
}

impl Header {
    /// A header for the current format version.
    pub fn new(tool_version: impl Into<String>, started_at: Timestamp, source: Source) -> Self {
        Header {
            format_version: crate::FORMAT_VERSION,
            tool_version: tool_version.into(),
            started_at,
            source,
            redaction: Redaction::EnvValueDigests,
            notes: BTreeMap::new(),
        }
    }
}

/// The last frame of a cleanly closed recording, right after the zero-length end marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trailer {
    /// When recording stopped: the end of the observed span, which can be well after the last
    /// record (nothing changed in between).
    pub closed_at: Timestamp,
    /// How many records the file holds; a reader checks it.
    pub records: u64,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One op of each variant (both kinds of deletion), for the tests of this crate.
    pub(crate) fn every_op() -> [Op; 8] {
        [
            Op::Added,
            Op::Modified,
            Op::Deleted { inferred: false },
            Op::Deleted { inferred: true },
            Op::ListBegin,
            Op::Listed,
            Op::ListEnd,
            Op::Gap {
                reason: "watch broke".into(),
            },
        ]
    }

    #[test]
    fn every_op_has_its_own_index_and_name() {
        let ops = every_op();
        let indices: std::collections::BTreeSet<usize> = ops.iter().map(Op::index).collect();
        assert_eq!(indices.len(), Op::NAMES.len());
        let names: std::collections::BTreeSet<&str> = ops.iter().map(Op::name).collect();
        assert_eq!(names.len(), Op::NAMES.len());
        assert_eq!(Op::Deleted { inferred: true }.name(), "deleted-inferred");
        assert_eq!(Op::ListEnd.name(), "list-end");
    }

    #[test]
    fn a_known_kind_s_index_is_its_place_in_known() {
        for (i, kind) in Kind::KNOWN.iter().enumerate() {
            assert_eq!(kind.known_index(), Some(i), "{kind:?}");
        }
        let other = Kind::from_api("batch/v1", "Job");
        assert_eq!(other.known_index(), None);
    }

    #[test]
    fn older_versions_of_a_kind_are_that_kind() {
        assert_eq!(
            Kind::from_api("extensions/v1beta1", "ReplicaSet"),
            Kind::ReplicaSet
        );
        assert_eq!(
            Kind::from_api("apps/v1beta2", "ReplicaSet"),
            Kind::ReplicaSet
        );
        assert_eq!(
            Kind::from_api("discovery.k8s.io/v1beta1", "EndpointSlice"),
            Kind::EndpointSlice
        );
        assert!(matches!(
            Kind::from_api("extensions/v1beta1", "Ingress"),
            Kind::Other { .. }
        ));
        for (api, kind) in [
            ("extensions/v1beta1", "ReplicaSet"),
            ("apps/v1", "ReplicaSet"),
            ("discovery.k8s.io/v1beta1", "EndpointSlice"),
            ("argoproj.io/v1alpha1", "Rollout"),
        ] {
            assert!(Kind::from_api(api, kind).reads_version(api), "{api} {kind}");
        }
        assert!(!Kind::ReplicaSet.reads_version("apps/v9"));
        assert!(!Kind::Rollout.reads_version("argoproj.io/v9"));
    }
}
