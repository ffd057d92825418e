//! End-to-end tests across crates live in `tests/*.rs` of this package: every committed
//! recording analyzed and snapshotted, recordings checked against the simulator that made them,
//! and the analyzer's memory checked against the number of records.
