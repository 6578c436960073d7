//! xlat: a fast, unified simulator of virtual-memory address translation.
//!
//! The crate is the engine; `crates/xlat-python` wraps it for Python. See `DESIGN.md` for the
//! architecture: a `Record` flows from a trace or workload through the core model into the MMU of
//! the configured scheme, whose walks read page tables living in simulated physical memory
//! through the same cache hierarchy and DRAM as data.

pub mod addr;
pub mod assoc;
pub mod error;
pub mod mem;
pub mod os;
pub mod rng;
pub mod trace;

pub use error::{Error, Result};
