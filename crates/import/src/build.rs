//! Assembling records from any source into an [`Imported`] recording.

use std::collections::BTreeMap;

use rf_format::{Header, Kind, Op, Record, Redaction, Source, Timestamp};
use serde_json::Value;

use crate::input::Diagnostic;

/// An imported recording: write it with [`rf_format::Writer`] and `finish_at(closed_at)`.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The header: the importer as the tool, `import:kubectl-watch` or `import:audit-log` as the
    /// context, the namespaces and kinds seen, notes on what the times mean.
    pub header: Header,
    /// The records, `seq` from 1, in time order.
    pub records: Vec<Record>,
    /// The last record's time.
    pub closed_at: Timestamp,
    /// What was skipped, and why.
    pub warnings: Vec<Diagnostic>,
}

/// A record before ordering.
pub(crate) struct Pending {
    pub at: Timestamp,
    /// Orders records of equal time (after which input order decides).
    pub tiebreak: u64,
    pub record: Record,
}

/// Collects records from every input and orders them.
#[derive(Default)]
pub(crate) struct Builder {
    pending: Vec<Pending>,
}

impl Builder {
    /// Adds a record of an object (redacted) or a gap; `seq` is set when finishing.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        at: Timestamp,
        tiebreak: u64,
        kind: Kind,
        op: Op,
        meta: &ObjectMeta,
        actor: Option<String>,
        object: Option<&Value>,
    ) {
        let object = object
            .map(|v| {
                let bytes = serde_json::to_vec(v).unwrap_or_default();
                rf_recorder::redact_object(&bytes).unwrap_or(bytes)
            })
            .unwrap_or_default();
        self.pending.push(Pending {
            at,
            tiebreak,
            record: Record {
                seq: 0,
                observed_at: at,
                kind,
                op,
                namespace: meta.namespace.clone(),
                name: meta.name.clone(),
                uid: meta.uid.clone(),
                resource_version: meta.resource_version.clone(),
                actor,
                object,
            },
        });
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Makes approximate times agree with the resourceVersion order: a write with a higher
    /// numeric resourceVersion (a cluster-wide counter) happened after every write with a lower
    /// one, so its time is at least theirs. Each time stays a lower bound of the true one; a
    /// `DELETED` event, whose object carries only the times of earlier writes, is placed after
    /// what happened before it. Records without a numeric resourceVersion keep their time.
    pub fn raise_times_in_resource_version_order(&mut self) {
        let mut by_rv: Vec<(u64, usize)> = self
            .pending
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                p.record
                    .resource_version
                    .parse::<u64>()
                    .ok()
                    .map(|rv| (rv, i))
            })
            .collect();
        by_rv.sort_unstable();
        let mut latest: Option<Timestamp> = None;
        for (_, i) in by_rv {
            let p = &mut self.pending[i];
            if let Some(t) = latest.filter(|t| *t > p.at) {
                p.at = t;
                p.record.observed_at = t;
            }
            latest = Some(latest.map_or(p.at, |l| l.max(p.at)));
        }
    }

    /// Orders the records by time (stable), numbers them and writes the header.
    pub fn finish(
        mut self,
        context: &str,
        notes: &[(&str, &str)],
        warnings: Vec<Diagnostic>,
    ) -> Imported {
        self.pending.sort_by_key(|p| (p.at, p.tiebreak));
        let mut namespaces = Vec::new();
        let mut kinds = Vec::new();
        let records: Vec<Record> = self
            .pending
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let mut r = p.record;
                r.seq = i as u64 + 1;
                if !r.namespace.is_empty() && !namespaces.contains(&r.namespace) {
                    namespaces.push(r.namespace.clone());
                }
                if !kinds.contains(&r.kind) {
                    kinds.push(r.kind.clone());
                }
                r
            })
            .collect();
        namespaces.sort();
        kinds.sort();
        let started_at = records.first().map_or(Timestamp(0), |r| r.observed_at);
        let closed_at = records.last().map_or(started_at, |r| r.observed_at);
        let mut header = Header::new(
            concat!("rollout-forensics ", env!("CARGO_PKG_VERSION")),
            started_at,
            Source {
                context: Some(context.to_owned()),
                server: None,
                namespaces,
                label_selector: None,
                kinds,
            },
        );
        header.redaction = Redaction::EnvValueDigests;
        header.notes = notes
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>();
        Imported {
            header,
            records,
            closed_at,
            warnings,
        }
    }
}

/// The identity fields of an object.
#[derive(Clone, Debug, Default)]
pub(crate) struct ObjectMeta {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

impl ObjectMeta {
    pub fn of(object: &Value) -> ObjectMeta {
        let m = &object["metadata"];
        let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
        ObjectMeta {
            namespace: s("namespace"),
            name: s("name"),
            uid: s("uid"),
            resource_version: s("resourceVersion"),
        }
    }
}

/// Why an object is not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotRecorded {
    /// No apiVersion or kind.
    Unnamed,
    /// A kind the recorder records, in a version it does not read.
    Version { api_version: String, kind: String },
    /// A kind rollout-forensics does not read (an AnalysisRun, a ConfigMap, another CRD).
    Unread { api_version: String, kind: String },
}

impl std::fmt::Display for NotRecorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRecorded::Unnamed => f.write_str("object without apiVersion or kind"),
            NotRecorded::Version { api_version, kind } => {
                write!(f, "unknown apiVersion {api_version:?} for kind {kind:?}")
            }
            NotRecorded::Unread { api_version, kind } => write!(
                f,
                "kind {kind:?} ({api_version}) is not one rollout-forensics reads"
            ),
        }
    }
}

/// The kind of an object when it is one the recorder records (one the analyzer reads, or one
/// of [`rf_format::api::WELL_KNOWN`] in a version the table names), or why not.
pub(crate) fn recorded_kind(object: &Value) -> Result<Kind, NotRecorded> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        return Err(NotRecorded::Unnamed);
    }
    let k = Kind::from_api(api_version, kind);
    let well_known = rf_format::api::well_known(&k).is_some_and(|names| {
        matches!(&k, Kind::Other { version, .. } if names.versions.contains(&version.as_str()))
    });
    if k.reads_version(api_version) || well_known {
        return Ok(k);
    }
    // A kind the recorder records (in another version), or not one at all.
    let known = k.known_index().is_some() || rf_format::api::well_known(&k).is_some();
    let (api_version, kind) = (api_version.to_owned(), kind.to_owned());
    Err(if known {
        NotRecorded::Version { api_version, kind }
    } else {
        NotRecorded::Unread { api_version, kind }
    })
}

/// Parses an RFC 3339 time as Kubernetes writes it.
pub(crate) fn parse_time(s: &str) -> Option<Timestamp> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()?
        .timestamp_nanos_opt()
        .map(Timestamp)
}

/// The objects an import listed, parsed (for the importers' tests).
#[cfg(test)]
pub(crate) fn listed(imported: &Imported) -> Vec<Value> {
    imported
        .records
        .iter()
        .filter(|r| r.op == Op::Listed)
        .map(|r| serde_json::from_slice(&r.object).unwrap_or_default())
        .collect()
}
