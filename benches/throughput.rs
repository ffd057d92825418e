//! Throughput of encoding, decoding and analyzing a simulated recording of many rollouts.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rf_analyzer::{Analyzer, Options};
use rf_format::Reader;
use rf_scenarios::{ScaleConfig, scale};

fn bench(c: &mut Criterion) {
    let recording = scale(&ScaleConfig {
        rollouts: 20,
        events: 20_000,
        seed: 1,
        applications: false,
        ..ScaleConfig::default()
    });
    let bytes = recording.write_to(Vec::new()).unwrap();
    let raw: u64 = recording
        .records
        .iter()
        .map(|r| r.object.len() as u64)
        .sum();
    let n = recording.records.len() as u64;
    eprintln!(
        "input: {n} records, {} bytes compressed, {raw} bytes of object JSON",
        bytes.len()
    );

    let mut g = c.benchmark_group("format");
    g.throughput(Throughput::Elements(n));
    g.bench_function("encode", |b| {
        b.iter(|| black_box(recording.write_to(Vec::with_capacity(bytes.len())).unwrap()))
    });
    g.bench_function("decode", |b| {
        b.iter(|| {
            let reader = Reader::new(bytes.as_slice()).unwrap();
            black_box(reader.filter(|r| r.is_ok()).count())
        })
    });
    g.finish();

    let mut g = c.benchmark_group("analyze");
    g.throughput(Throughput::Elements(n));
    g.bench_function("decode+analyze", |b| b.iter(|| black_box(analyze(&bytes))));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("decode+analyze per compressed byte", |b| {
        b.iter(|| black_box(analyze(&bytes)))
    });
    g.finish();
}

/// Decodes and analyzes a whole recording; returns the number of findings.
fn analyze(bytes: &[u8]) -> usize {
    let mut reader = Reader::new(bytes).unwrap();
    let mut a = Analyzer::new(Options::default());
    a.begin_file("bench", reader.format_version(), &reader.header().clone());
    for r in &mut reader {
        let r = r.unwrap();
        a.push(&r, rf_analyzer::Prepared::of(&r), &mut rf_analyzer::Discard);
    }
    a.finish().findings.len()
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
