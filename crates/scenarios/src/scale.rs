//! Large recordings for benchmarks: many rollouts going through releases, some of them racing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use rf_format::{Op, Reader, Record, Timestamp, Writer};

use crate::hash::SplitMix;
use crate::recording::Recording;
use crate::sim::Sim;
use crate::spec::{SimConfig, TemplateChange, config_checksum};

/// What [`scale`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleConfig {
    /// Rollouts, [`per_namespace`](Self::per_namespace) to a namespace.
    pub rollouts: usize,
    /// Records to make in all (the result has at least this many, and at most one release
    /// cycle of one rollout more).
    pub events: usize,
    /// Varies which releases race, abort or run clean.
    pub seed: u64,
    /// Each rollout managed by an Argo CD Application (namespace `argocd`, named after it),
    /// syncing each release and following its health, as the recorder records them.
    pub applications: bool,
    /// Pods of each rollout (`spec.replicas`).
    pub replicas: u32,
    /// Rollouts that share a namespace (and so its Services, EndpointSlices and pods): 1 gives
    /// each its own, as a team per namespace; many gives one namespace the size of a cluster's.
    pub per_namespace: usize,
}

impl Default for ScaleConfig {
    fn default() -> Self {
        ScaleConfig {
            rollouts: 20,
            events: 100_000,
            seed: 1,
            applications: false,
            replicas: SimConfig::default().replicas,
            per_namespace: 1,
        }
    }
}

fn paused(sim: &Sim) -> bool {
    sim.phase() == "Paused"
}

fn healthy(sim: &Sim) -> bool {
    sim.phase() == "Healthy"
}

/// One release of `sim`: clean (most), a re-render race, or an abort, chosen by `roll`.
fn release(sim: &mut Sim, version: u64, roll: u64) {
    let image = format!("registry.example.com/bench/app:2.{version}.0");
    let checksum = config_checksum(&format!("v{version}"));
    sim.render(
        TemplateChange::new()
            .with_image(image.clone())
            .with_annotation("checksum/config", checksum),
    );
    match roll % 10 {
        // The re-render race: a second render with another checksum 30 s later.
        0 | 1 => {
            sim.run_for(30);
            sim.render(TemplateChange::new().with_image(image).with_annotation(
                "checksum/config",
                config_checksum(&format!("v{version}-lag")),
            ));
            sim.run_until(600, paused);
            sim.promote();
        }
        // An abort at the pause, then the release again.
        2 => {
            sim.run_until(600, paused);
            sim.abort();
            sim.run_for(60);
            sim.render(TemplateChange::new().with_annotation("retry", version.to_string()));
            sim.run_until(600, paused);
            sim.promote();
        }
        _ => {
            sim.run_until(600, paused);
            sim.run_for(u32::try_from(roll % 120).unwrap_or(0));
            sim.promote();
        }
    }
    sim.run_until(900, healthy);
    sim.run_for(u32::try_from(roll % 300).unwrap_or(0));
}

/// A recording of `config.rollouts` rollouts, each releasing again and again until the
/// recording holds `config.events` records, merged in time order. Deterministic for a seed.
/// The recorder's initial lists come first, per rollout's namespace; resourceVersions are
/// each rollout's own (as if every namespace were a cluster of its own).
///
/// Holds every record decoded: for benchmarks and tests. [`write_scale`] writes the same
/// recording with memory that does not grow with its records.
pub fn scale(config: &ScaleConfig) -> Recording {
    let parts = Parts::generate(config).expect("writing and reading in memory cannot fail");
    let mut records = Vec::new();
    parts
        .merge(|r| {
            records.push(r.clone());
            Ok(())
        })
        .expect("reading in memory cannot fail");
    Recording {
        records,
        ..parts.recording
    }
}

/// Writes the recording [`scale`] makes to `w`, byte for byte the file
/// [`Recording::write_to`] writes of it. Each rollout is simulated alone and its records kept
/// as a recording in memory (deltas, compressed: about 160 bytes a record); they are then
/// merged in time order as they are read back. Memory follows the compressed size, not the
/// decoded one (about 3 KB a record, which `scale` holds).
///
/// Returns `w` and the number of records written.
pub fn write_scale<W: Write>(config: &ScaleConfig, w: W) -> rf_format::Result<(W, u64)> {
    let parts = Parts::generate(config)?;
    let mut writer = Writer::new(w, &parts.recording.header)?;
    let mut flushes = crate::recording::Flushes::default();
    let mut n = 0;
    parts.merge(|r| {
        n += 1;
        flushes.write(&mut writer, r)
    })?;
    Ok((writer.finish_at(parts.recording.closed_at)?, n))
}

/// Each rollout's records, as a recording in memory, and the merged recording without its
/// records (its header and when it closed).
struct Parts {
    parts: Vec<Vec<u8>>,
    recording: Recording,
}

impl Parts {
    fn generate(config: &ScaleConfig) -> rf_format::Result<Parts> {
        let rollouts = config.rollouts.max(1);
        let per_rollout = config.events.div_ceil(rollouts);
        let mut mix = SplitMix::new(config.seed);
        let mut parts = Vec::with_capacity(rollouts);
        let mut closed_at = Timestamp(0);
        let mut kinds = Vec::new();
        for i in 0..rollouts {
            let name = format!("svc-{i:04}");
            let mut sim = Sim::new(SimConfig {
                namespace: format!("team-{:04}", i / config.per_namespace.max(1)),
                rollout: name.clone(),
                app: name.clone(),
                replicas: config.replicas.max(1),
                // Pods churn with every release, as in a cluster; Events expire after an hour.
                services: vec![crate::spec::ServiceConfig::new(&name).with_selector("app", &name)],
                event_ttl: Some(3600),
                application: config.applications,
                ..SimConfig::default()
            });
            sim.run_for(u32::try_from(mix.next_u64() % 60).unwrap_or(0));
            let mut version = 0;
            while sim.records_len() < per_rollout {
                version += 1;
                release(&mut sim, version, mix.next_u64());
            }
            let rec = sim.finish(&name);
            closed_at = closed_at.max(rec.closed_at);
            // The kinds the simulated recorder watched: the same for every rollout.
            kinds.clone_from(&rec.header.source.kinds);
            let mut part = Writer::new(Vec::new(), &rec.header)?;
            for r in &rec.records {
                part.write(r)?;
            }
            parts.push(part.finish()?);
        }
        let mut rec = Recording::new(
            "scale",
            Vec::new(),
            kinds.clone(),
            (
                crate::spec::SIMULATION_START.as_unix_nanos() / 1_000_000_000,
                closed_at.as_unix_nanos() / 1_000_000_000,
            ),
            Vec::new(),
        );
        rec.header.source.namespaces.clear();
        rec.header.source.kinds = kinds;
        let mut note = format!(
            "rollouts={} events={} seed={}",
            config.rollouts, config.events, config.seed
        );
        if config.applications {
            note.push_str(" applications");
        }
        if config.replicas != SimConfig::default().replicas {
            note.push_str(&format!(" replicas={}", config.replicas));
        }
        if config.per_namespace > 1 {
            note.push_str(&format!(" per-namespace={}", config.per_namespace));
        }
        rec.header.notes.insert("scale".to_owned(), note);
        Ok(Parts {
            parts,
            recording: rec,
        })
    }

    /// Hands `each` the merged records in order: the initial lists first, part after part (a
    /// recorder lists before it watches), then the events of every part in time order (ties:
    /// the earlier part, then the part's order). Records are numbered from 1, and a list
    /// stamped before the record it follows is set at that record's time (one recorder lists
    /// every rollout's objects one after the other: a few milliseconds at most).
    fn merge(
        &self,
        mut each: impl FnMut(&Record) -> rf_format::Result<()>,
    ) -> rf_format::Result<()> {
        let is_list = |r: &Record| matches!(r.op, Op::ListBegin | Op::Listed | Op::ListEnd);
        // Each part's reader and its next record (the one its entry in `heads` stands for).
        let mut parts: Vec<(Reader<&[u8]>, Option<Record>)> = Vec::with_capacity(self.parts.len());
        let mut heads: BinaryHeap<Reverse<(Timestamp, usize, u64)>> = BinaryHeap::new();
        let (mut seq, mut last) = (0u64, Timestamp(i64::MIN));
        let mut emit = |mut r: Record, each: &mut dyn FnMut(&Record) -> rf_format::Result<()>| {
            seq += 1;
            r.seq = seq;
            r.observed_at = r.observed_at.max(last);
            last = r.observed_at;
            each(&r)
        };
        for (i, part) in self.parts.iter().enumerate() {
            let mut reader = Reader::new(part.as_slice())?;
            let mut first = None;
            while let Some(r) = reader.next_record()? {
                if !is_list(&r) {
                    first = Some(r);
                    break;
                }
                emit(r, &mut each)?;
            }
            if let Some(r) = &first {
                heads.push(Reverse((r.observed_at, i, r.seq)));
            }
            parts.push((reader, first));
        }
        while let Some(Reverse((_, i, _))) = heads.pop() {
            let (reader, next) = &mut parts[i];
            let Some(r) = next.take() else { continue };
            if let Some(n) = reader.next_record()? {
                heads.push(Reverse((n.observed_at, i, n.seq)));
                *next = Some(n);
            }
            emit(r, &mut each)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rf_format::Kind;

    use super::*;

    #[test]
    fn scale_makes_at_least_the_asked_events_in_order_and_is_deterministic() {
        let config = ScaleConfig {
            rollouts: 3,
            events: 2_000,
            seed: 7,
            applications: false,
            ..ScaleConfig::default()
        };
        let a = scale(&config);
        assert!(a.records.len() >= 2_000);
        assert!(a.records.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
        assert!(
            a.records
                .windows(2)
                .all(|w| w[0].observed_at <= w[1].observed_at),
            "records in time order, the initial lists too"
        );
        assert_eq!(a.records, scale(&config).records);
        let names: std::collections::BTreeSet<&str> = a
            .records
            .iter()
            .filter(|r| r.kind == Kind::Rollout && r.op.has_object())
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(names.len(), 3);
        assert_ne!(a.records, scale(&ScaleConfig { seed: 8, ..config }).records);
    }

    #[test]
    fn rollouts_can_share_a_namespace_and_have_many_pods() {
        let config = ScaleConfig {
            rollouts: 4,
            events: 4_000,
            replicas: 12,
            per_namespace: 2,
            ..ScaleConfig::default()
        };
        let a = scale(&config);
        assert_eq!(
            a.header.notes["scale"],
            "rollouts=4 events=4000 seed=1 replicas=12 per-namespace=2"
        );
        let mut rollouts_by_ns: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
            std::collections::BTreeMap::new();
        for r in a
            .records
            .iter()
            .filter(|r| r.kind == Kind::Rollout && r.op.has_object())
        {
            rollouts_by_ns
                .entry(r.namespace.as_str())
                .or_default()
                .insert(r.name.as_str());
        }
        let shape: Vec<(&str, Vec<&str>)> = rollouts_by_ns
            .iter()
            .map(|(ns, names)| (*ns, names.iter().copied().collect()))
            .collect();
        assert_eq!(
            shape,
            [
                ("team-0000", vec!["svc-0000", "svc-0001"]),
                ("team-0001", vec!["svc-0002", "svc-0003"])
            ]
        );
        // Each rollout's Service selects only its own pods, of which it runs `replicas`.
        let listed_pods = a
            .records
            .iter()
            .filter(|r| {
                r.kind == Kind::Pod && r.op == Op::Listed && r.name.starts_with("svc-0001-")
            })
            .count();
        assert_eq!(listed_pods, 12);
        let default = scale(&ScaleConfig {
            rollouts: 4,
            events: 4_000,
            ..ScaleConfig::default()
        });
        assert_eq!(
            default.header.notes["scale"],
            "rollouts=4 events=4000 seed=1"
        );
        assert!(
            default
                .records
                .iter()
                .filter(|r| r.kind == Kind::Rollout && r.op.has_object())
                .all(|r| r.namespace == format!("team-{}", &r.name[4..])),
            "one namespace per rollout by default"
        );
    }

    #[test]
    fn write_scale_writes_the_file_of_the_recording_scale_makes() {
        let config = ScaleConfig {
            rollouts: 4,
            events: 6_000,
            seed: 3,
            applications: false,
            ..ScaleConfig::default()
        };
        let whole = scale(&config);
        let (streamed, n) = write_scale(&config, Vec::new()).unwrap();
        assert_eq!(n, whole.records.len() as u64);
        assert_eq!(streamed, whole.write_to(Vec::new()).unwrap());
        // Its header and trailer are the recording's own.
        let mut reader = rf_format::Reader::new(streamed.as_slice()).unwrap();
        assert_eq!(reader.header(), &whole.header);
        assert_eq!(
            reader.header().notes["scale"],
            "rollouts=4 events=6000 seed=3"
        );
        let read: Vec<Record> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(read, whole.records);
        assert_eq!(reader.trailer().map(|t| t.closed_at), Some(whole.closed_at));
    }

    #[test]
    fn with_applications_each_rollout_has_one_that_syncs_its_releases() {
        let config = ScaleConfig {
            rollouts: 3,
            events: 9_000,
            seed: 2,
            applications: true,
            ..ScaleConfig::default()
        };
        let a = scale(&config);
        assert!(a.header.source.kinds.contains(&Kind::Application));
        assert!(a.header.notes["scale"].ends_with(" applications"));
        for i in 0..3 {
            let name = format!("svc-{i:04}");
            let apps: Vec<&Record> = a
                .records
                .iter()
                .filter(|r| r.kind == Kind::Application && r.name == name)
                .collect();
            assert!(apps.iter().all(|r| r.namespace == "argocd"));
            let synced = apps
                .iter()
                .filter(|r| String::from_utf8_lossy(&r.object).contains("\"phase\":\"Succeeded\""))
                .count();
            assert!(
                synced > 3,
                "{name}: {synced} of {} records after a sync",
                apps.len()
            );
        }
        let without = scale(&ScaleConfig {
            applications: false,
            ..config
        });
        assert!(without.records.iter().all(|r| r.kind != Kind::Application));
    }

    #[test]
    fn pods_churn_and_events_expire_an_hour_after_they_were_last_seen() {
        let a = scale(&ScaleConfig {
            rollouts: 2,
            events: 30_000,
            seed: 1,
            applications: false,
            ..ScaleConfig::default()
        });
        let count = |kind: Kind, op: fn(&Op) -> bool| {
            a.records
                .iter()
                .filter(|r| r.kind == kind && op(&r.op))
                .count()
        };
        assert!(
            count(Kind::Pod, |o| *o == Op::Added) > 100,
            "pods are created"
        );
        assert!(
            count(Kind::Pod, |o| matches!(o, Op::Deleted { .. })) > 100,
            "and deleted"
        );
        assert!(count(Kind::EndpointSlice, |o| *o == Op::Modified) > 100);
        let mut last_seen = std::collections::HashMap::new();
        let mut expired = 0;
        for r in a.records.iter().filter(|r| r.kind == Kind::Event) {
            if matches!(r.op, Op::Deleted { .. }) {
                let seen: Timestamp = last_seen
                    .remove(&r.name)
                    .expect("deleted once, after it was seen");
                let after = (r.observed_at.as_unix_nanos() - seen.as_unix_nanos()) / 1_000_000_000;
                assert!(
                    (3599..=3601).contains(&after),
                    "{} deleted {after} s after it was last seen",
                    r.name
                );
                expired += 1;
            } else {
                last_seen.insert(r.name.clone(), r.observed_at);
            }
        }
        assert!(expired > 10, "{expired} events expired");
    }
}
