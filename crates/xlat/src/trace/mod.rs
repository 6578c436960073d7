//! Memory-reference records and the trace formats that carry them.
//!
//! A `Record` is one memory reference of the simulated program (DESIGN.md §2). Traces are read
//! streaming through the `RecordSource` trait, which built-in workload generators implement too,
//! so the simulator does not care where references come from.

pub mod native;

use crate::addr::VirtAddr;
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// Kind of memory reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[repr(u8)]
pub enum Op {
    #[default]
    Load = 0,
    Store = 1,
    Ifetch = 2,
}

impl Op {
    pub fn from_u8(b: u8) -> Option<Op> {
        match b {
            0 => Some(Op::Load),
            1 => Some(Op::Store),
            2 => Some(Op::Ifetch),
            _ => None,
        }
    }
}

/// One memory reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Record {
    pub vaddr: VirtAddr,
    pub op: Op,
    /// Access size in bytes.
    pub size: u8,
    /// Core that issues the reference (0 on single-core runs).
    pub core: u8,
    /// Process the address belongs to.
    pub pid: u16,
    /// Non-memory instructions executed since the previous record of this core.
    pub instr_delta: u32,
    /// This reference depends on the record `dep` positions earlier (0 = independent): its
    /// address is not known until that one completes (pointer chasing).
    pub dep: u32,
}

/// Anything that yields records in program order: a trace reader or a workload generator.
pub trait RecordSource {
    /// Fill `buf` (cleared first) with up to `buf.capacity()` records; an empty `buf` after the
    /// call means the source is exhausted. Batching keeps dynamic dispatch off the per-record path.
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()>;

    /// Total records if known in advance (for progress bars).
    fn len_hint(&self) -> Option<u64> {
        None
    }
}
