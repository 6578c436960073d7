//! xlat: a fast, unified simulator of virtual-memory address translation.
//!
//! The crate is the engine; `crates/xlat-python` wraps it for Python. docs/architecture.md
//! describes it: a `Record` flows from a trace or workload through the core model into the MMU
//! of the configured scheme, whose walks read page tables living in simulated physical memory
//! through the same cache hierarchy and DRAM as data.
//!
//! Modules form layers, each importing only those below it (a test checks there is no cycle):
//! `addr`, `assoc`, `rng`, `error`, `config` (the generic loader) at the bottom; `mem`
//! (caches, DRAM, physical memory), `pt` (page-table organisations), `core`, `trace`; then
//! `mmu`, `os` and `profile`; then `schemes`, the registry that assembles systems; then `stats`, `sim`,
//! `workload` and `run` on top.

pub mod addr;
pub mod assoc;
pub mod config;
pub mod core;
pub mod error;
pub mod mem;
pub mod mmu;
pub mod os;
pub mod profile;
pub mod pt;
pub mod rng;
pub mod run;
pub mod schemes;
pub mod sim;
pub mod stats;
pub mod trace;
pub mod workload;

pub use error::{Error, Result};
pub use sim::SimConfig;
pub use sim::{Simulation, Stats};

/// The version of the model's results: the date of the last change that moved any statistic
/// of a run with an unchanged config (a timing fix, a changed default behaviour). It is part of
/// every run's id beside the crate version (`python/xlat/sweep.py`), so a resumed sweep or
/// `xlat reproduce` never counts a run the earlier model made as done, and stored results say
/// which model made them. Change it in the same commit as the change that moves results;
/// `tests/golden_stats.rs` records it and refuses to re-record moved stats under the same one.
///
/// 2026-11-28: DRAM banks keep their booked rows (a request issued earlier but called later is
/// served in the gap before rows booked after it).
pub const MODEL_EPOCH: &str = "2026-11-28";
