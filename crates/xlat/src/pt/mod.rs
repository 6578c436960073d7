//! Page-table organisations. Each keeps its entries as bytes in simulated physical memory
//! ([`store::PtStore`]) at frames allocated from the buddy allocator of physical memory, so walks read real
//! entries at real physical addresses and their cache/DRAM behaviour is that of real memory.

pub mod direct;
pub mod hashed;
pub mod host;
pub mod radix;
pub mod store;

use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;

/// What a page-table organisation needs from the OS to change itself.
pub struct PtContext<'a> {
    pub store: &'a mut store::PtStore,
    pub buddy: &'a mut BuddyAllocator,
}

impl PtContext<'_> {
    /// A zeroed 4 KiB frame for page-table use.
    pub fn alloc_table_frame(&mut self) -> Result<Pfn> {
        let pfn = self.buddy.alloc(0).ok_or_else(no_table_frame)?;
        self.store.zero_frame(pfn);
        Ok(pfn)
    }

    /// A 4 KiB frame the table occupies without keeping contents in it (ChampSim's placement
    /// of radix entries: walks reference it, the entries' values are kept elsewhere).
    pub fn alloc_placement_frame(&mut self) -> Result<Pfn> {
        self.buddy.alloc(0).ok_or_else(no_table_frame)
    }
}

/// The error of a page-table page that finds physical memory full.
fn no_table_frame() -> Error {
    Error::OutOfMemory("no free frame for a page-table page (raise os.physmem.bytes)".into())
}

/// A per-process page table, the OS side of an organisation. The OS calls `map`/`unmap`; the
/// scheme's walker reads the table through its concrete type (the walker's associated
/// `Table`), since walking is where organisations differ most.
pub trait PageTable: Send {
    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()>;
    /// Remove the mapping of the `size` page at `vpn`; returns the frame it mapped.
    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Option<Pfn>;
    /// Bytes of physical memory the table occupies.
    fn bytes(&self) -> u64;
    /// Page-table pages the table has, as a fault penalty per new page-table page counts
    /// them (`os.pt_page_fault_cycles`): by default its bytes in 4 KiB pages.
    fn table_pages(&self) -> u64 {
        self.bytes() / 4096
    }
    /// The mapping of `va` read from the table's contents with no timing, the way a walk
    /// would find it: `Some(None)` if unmapped, `None` if the organisation offers no such
    /// read (a walk-penalty fault then takes the mapping the OS just made).
    fn read_mapping(
        &self,
        _store: &store::PtStore,
        _va: crate::addr::VirtAddr,
    ) -> Option<Option<(Pfn, PageSize)>> {
        None
    }
    /// The entries the last `map` made at addresses of their own, with their levels, top
    /// level first: ChampSim's placement (`schemes.radix.placement = "champsim"`), where a
    /// walk that finds an entry missing makes it and reads it at its new frame. Empty for
    /// every other organisation, whose failed walks read where the entry will be.
    fn entries_made(&self) -> &[(crate::addr::PhysAddr, u32)] {
        &[]
    }
    /// Cycles the OS spent allocating (and zeroing) the table's memory since the last call; the
    /// fault that caused them pays them. Radix tables allocate single frames, whose cost is
    /// part of the minor-fault cost.
    fn take_alloc_cycles(&mut self) -> u64 {
        0
    }
    /// Cycles the OS spent moving entries within the table (a hashed table's rehashes while
    /// it resizes, its cuckoo re-insertions) since the last call; the fault that caused them
    /// pays them. Radix tables never move entries.
    fn take_rehash_cycles(&mut self) -> u64 {
        0
    }
    /// The organisation's own statistics (the `pt` subtree of the run's stats), if any.
    fn stats(&self) -> Option<serde_json::Value> {
        None
    }
    /// A page walk of the TLB-missing page at `vpn` read `dram_refs` of its references from
    /// DRAM: count it where the organisation keeps such counters (Utopia's PTE-based
    /// migration, in the PTE's unused bits) and say whether the page has become costly
    /// enough to move into the frame policy's own memory. Most organisations keep none.
    fn note_walk(&mut self, _ctx: &mut PtContext, _vpn: Vpn, _dram_refs: u32) -> bool {
        false
    }
    /// What the OS's scans of the table's entries did since the last call (Utopia's aging
    /// pass over its migration counters), added to `scan`: the system runs the lines they
    /// read and wrote through the memory hierarchy. Most organisations are never scanned.
    fn take_scan(&mut self, _scan: &mut TableScan) {}
    /// A walk of `va` is coming: have the host cache the entries it will read that it likely
    /// does not hold, in the step `what` of [`store::PtStore::prefetch`] (a hint for the host
    /// only: nothing simulated changes). Most organisations give none.
    fn prefetch(
        &self,
        _store: &store::PtStore,
        _va: crate::addr::VirtAddr,
        _what: store::Prefetch,
    ) {
    }
    /// Width of the virtual addresses the table translates (57 for a 5-level radix tree).
    fn va_bits(&self) -> u32 {
        48
    }
    /// Fault injection, the self-test of `--verify` (`sim.verify_inject_after`): rewrite the
    /// entries in `store` that a walk (or the organisation's own side path) reads to translate
    /// the `size` page at `vpn` (aligned to `size`), so that they name another frame
    /// ([`misdirected`]) or the page's entry another slot. Returns whether the table mapped the
    /// page (nothing is written otherwise). Every organisation implements it, so that a
    /// researcher can check that `--verify` catches a wrong translation of a new scheme.
    fn corrupt(&self, store: &mut store::PtStore, vpn: Vpn, size: PageSize) -> bool;
}

/// The work of OS scans over a page table's entries (Utopia's aging of the migration
/// counters in its PTEs): how many passes, how many entries they changed, and each table page
/// they read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableScan {
    pub passes: u64,
    pub entries: u64,
    pub pages: Vec<ScannedPage>,
}

/// A table page a scan read, line by line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScannedPage {
    pub frame: Pfn,
    /// Its level in a radix table (1: leaf PTEs), which tags its lines in the caches.
    pub level: u32,
    /// The 64-byte lines the scan read (bit `i`: line `i`), and those it wrote back after
    /// reading them.
    pub read: u64,
    pub written: u64,
}

impl TableScan {
    /// Move everything of `other` here, leaving it empty (its buffer keeps its capacity).
    pub fn append(&mut self, other: &mut TableScan) {
        self.passes += std::mem::take(&mut other.passes);
        self.entries += std::mem::take(&mut other.entries);
        self.pages.append(&mut other.pages);
    }

    pub fn is_empty(&self) -> bool {
        self.passes == 0
    }
}

/// The frame a corrupted entry (see [`PageTable::corrupt`]) names instead of `pfn`, the first
/// frame of a `size` page: the page two pages of its size further on.
pub fn misdirected(pfn: Pfn, size: PageSize) -> Pfn {
    Pfn(pfn.0 + 2 * size.base_pages())
}
