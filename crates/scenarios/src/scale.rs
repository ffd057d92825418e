//! Large recordings for benchmarks: many rollouts going through releases, some of them racing.

use rf_format::{Op, Record, Timestamp};

use crate::hash::SplitMix;
use crate::recording::Recording;
use crate::sim::Sim;
use crate::spec::{SimConfig, TemplateChange, config_checksum};

/// What [`scale`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleConfig {
    /// Rollouts, each in its own namespace.
    pub rollouts: usize,
    /// Records to make in all (the result has at least this many, and at most one release
    /// cycle of one rollout more).
    pub events: usize,
    /// Varies which releases race, abort or run clean.
    pub seed: u64,
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
pub fn scale(config: &ScaleConfig) -> Recording {
    let rollouts = config.rollouts.max(1);
    let per_rollout = config.events.div_ceil(rollouts);
    let mut mix = SplitMix::new(config.seed);
    let mut parts: Vec<Vec<Record>> = Vec::with_capacity(rollouts);
    let mut closed_at = Timestamp(0);
    let mut kinds = Vec::new();
    for i in 0..rollouts {
        let name = format!("svc-{i:04}");
        let mut sim = Sim::new(SimConfig {
            namespace: format!("team-{i:04}"),
            rollout: name.clone(),
            app: name.clone(),
            // Pods churn with every release, as in a cluster; Events expire after an hour.
            services: vec![crate::spec::ServiceConfig::new(&name).with_selector("app", &name)],
            event_ttl: Some(3600),
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
        parts.push(rec.records);
    }
    let mut records: Vec<Record> = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    // Initial lists first (a recorder lists before it watches), then events in time order.
    let is_list = |r: &Record| matches!(r.op, Op::ListBegin | Op::Listed | Op::ListEnd);
    for part in &parts {
        records.extend(part.iter().take_while(|r| is_list(r)).cloned());
    }
    let mut events: Vec<(Timestamp, usize, u64, &Record)> = parts
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            p.iter()
                .skip_while(|r| is_list(r))
                .map(move |r| (r.observed_at, i, r.seq, r))
        })
        .collect();
    events.sort_by_key(|(t, i, seq, _)| (*t, *i, *seq));
    records.extend(events.into_iter().map(|(.., r)| r.clone()));
    // One recorder lists every rollout's objects one after the other: the parts' lists, each
    // stamped from the start, are set back in time order (a few milliseconds at most).
    let mut last = Timestamp(i64::MIN);
    for (n, r) in records.iter_mut().enumerate() {
        r.seq = n as u64 + 1;
        r.observed_at = r.observed_at.max(last);
        last = r.observed_at;
    }
    let mut rec = Recording::new(
        "scale",
        Vec::new(),
        kinds.clone(),
        (
            crate::spec::SIMULATION_START.as_unix_nanos() / 1_000_000_000,
            closed_at.as_unix_nanos() / 1_000_000_000,
        ),
        records,
    );
    rec.header.source.namespaces.clear();
    rec.header.source.kinds = kinds;
    rec.header.notes.insert(
        "scale".to_owned(),
        format!(
            "rollouts={} events={} seed={}",
            config.rollouts, config.events, config.seed
        ),
    );
    rec
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
    fn pods_churn_and_events_expire_an_hour_after_they_were_last_seen() {
        let a = scale(&ScaleConfig {
            rollouts: 2,
            events: 30_000,
            seed: 1,
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
