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
