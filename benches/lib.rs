//! rf-benches: criterion benchmarks of the format and the analyzer (`benches/throughput.rs`).
//!
//! Run with `cargo bench -p rf-benches`; each bench reports throughput in records and bytes, so
//! results compare across machines as ratios rather than absolute times.
