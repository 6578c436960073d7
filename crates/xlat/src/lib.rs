//! xlat: a fast, unified simulator of virtual-memory address translation.
//!
//! The crate is the engine; `crates/xlat-python` wraps it for Python. See `DESIGN.md` for the
//! architecture: a `Record` flows from a trace or workload through the core model into the MMU of
//! the configured scheme, whose walks read page tables living in simulated physical memory
//! through the same cache hierarchy and DRAM as data.

pub mod addr;
pub mod assoc;
pub mod config;
pub mod core;
pub mod error;
pub mod mem;
pub mod mmu;
pub mod os;
pub mod pt;
pub mod rng;
pub mod run;
pub mod sim;
pub mod stats;
pub mod trace;
pub mod workload;

pub use config::SimConfig;
pub use error::{Error, Result};
pub use sim::{Simulation, Stats};
