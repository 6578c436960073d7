//! Page-table organisations. Each keeps its entries as bytes in simulated physical memory
//! ([`store::PtStore`]) at frames allocated from the OS's buddy allocator, so walks read real
//! entries at real physical addresses and their cache/DRAM behaviour is that of real memory.

pub mod hashed;
pub mod radix;
pub mod store;

use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::Result;
use crate::os::physmem::BuddyAllocator;
use std::any::Any;

/// What a page-table organisation needs from the OS to change itself.
pub struct PtContext<'a> {
    pub store: &'a mut store::PtStore,
    pub buddy: &'a mut BuddyAllocator,
}

impl PtContext<'_> {
    /// A zeroed 4 KiB frame for page-table use.
    pub fn alloc_table_frame(&mut self) -> Result<Pfn> {
        let pfn = self.buddy.alloc(0).ok_or_else(|| {
            crate::Error::OutOfMemory(
                "no free frame for a page-table page (raise os.physmem.bytes)".into(),
            )
        })?;
        self.store.zero_frame(pfn);
        Ok(pfn)
    }
}

/// Which page-table organisation every process of a run gets (chosen by the scheme registry,
/// [`crate::mmu::scheme::organisation`]).
#[derive(Clone, Debug)]
pub enum Organisation {
    /// x86-64 radix tree of `levels` levels.
    Radix { levels: u32 },
    /// Elastic cuckoo hashed page tables, ECPT or ME-HPT.
    Hashed {
        cfg: hashed::HashedConfig,
        kind: hashed::HptKind,
    },
}

impl Organisation {
    /// A new, empty page table for process `pid`.
    pub fn new_table(
        &self,
        ctx: &mut PtContext,
        pid: u16,
        seed: u64,
    ) -> Result<Box<dyn PageTable>> {
        Ok(match self {
            Organisation::Radix { levels } => Box::new(radix::RadixPageTable::new(ctx, *levels)?),
            Organisation::Hashed { cfg, kind } => Box::new(hashed::HashedPageTable::new(
                cfg,
                *kind,
                seed ^ (pid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            )?),
        })
    }
}

/// A per-process page table. The OS calls `map`/`unmap`; the scheme's walker reads the table
/// through its concrete type (`as_any`), since walking is where organisations differ most.
pub trait PageTable: Send {
    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()>;
    /// Remove the mapping of the `size` page at `vpn`; returns the frame it mapped.
    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Option<Pfn>;
    /// Bytes of physical memory the table occupies.
    fn bytes(&self) -> u64;
    /// Cycles the OS spent allocating (and zeroing) the table's memory since the last call; the
    /// fault that caused them pays them. Radix tables allocate single frames, whose cost is
    /// part of the minor-fault cost.
    fn take_alloc_cycles(&mut self) -> u64 {
        0
    }
    /// The organisation's own statistics (the `pt` subtree of the run's stats), if any.
    fn stats(&self) -> Option<serde_json::Value> {
        None
    }
    fn as_any(&self) -> &dyn Any;
}
