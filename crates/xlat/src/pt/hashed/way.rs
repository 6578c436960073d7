//! One way of an elastic cuckoo table: where its lines live (one contiguous block, or chunks
//! behind the L2P table), its current hash function and size, and, during a resize, the old
//! generation with its rehashing pointer `P_i` (ME-HPT §II-B, §IV-C).

use super::cost::CostModel;
use super::entry::LINE_BYTES;
use super::hash::WayHash;
use super::l2p::L2pTable;
use super::stats::SizeStats;
use crate::addr::{PageSize, Pfn, PhysAddr, BASE_PAGE_BYTES};
use crate::error::{Error, Result};
use crate::pt::PtContext;

/// Where a way's lines live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    /// One contiguous buddy block of `2^order` frames (ECPT).
    Block { base: Pfn, order: u32 },
    /// Chunks of `chunk_bytes`, pointed to by logical entries `first..first+count` of the
    /// way's L2P subtable (ME-HPT §IV-A).
    Chunks {
        chunk_bytes: u64,
        first: usize,
        count: usize,
    },
}

impl Storage {
    pub fn bytes(&self) -> u64 {
        match *self {
            Storage::Block { order, .. } => BASE_PAGE_BYTES << order,
            Storage::Chunks {
                chunk_bytes, count, ..
            } => chunk_bytes * count as u64,
        }
    }

    /// Physical address of logical line `index`: base + offset for a block; for chunks the
    /// MMU's shift (chunk number), L2P read, and mask (offset in the chunk).
    #[inline]
    pub fn line_addr(&self, l2p: &L2pTable, way: usize, size: PageSize, index: u64) -> PhysAddr {
        match *self {
            Storage::Block { base, .. } => PhysAddr(base.addr().0 + index * LINE_BYTES),
            Storage::Chunks {
                chunk_bytes, first, ..
            } => {
                let per_chunk = chunk_bytes / LINE_BYTES;
                let chunk = l2p
                    .entry(way, size, first + (index / per_chunk) as usize)
                    .expect("line index beyond the way's chunks");
                PhysAddr(chunk.addr().0 + (index % per_chunk) * LINE_BYTES)
            }
        }
    }
}

/// One generation of a way's indexing: its hash function and `2^bits` lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gen {
    pub hash: WayHash,
    pub bits: u32,
}

impl Gen {
    pub fn lines(&self) -> u64 {
        1 << self.bits
    }
    #[inline]
    pub fn key(&self, cluster: u64) -> u64 {
        self.hash.key(cluster, self.bits)
    }
}

/// A resize in progress: the old generation and its rehashing pointer.
#[derive(Clone, Debug)]
pub struct Resize {
    pub old: Gen,
    /// The old table's own storage (out of place); `None` when resizing in place, where old
    /// and new share the way's storage.
    pub old_storage: Option<Storage>,
    /// `P_i`: old keys below it are migrated, the rest are live in the old table.
    pub pointer: u64,
    pub upsize: bool,
}

/// Which table a cluster's line is in for this way, and its key there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Old(u64),
    New(u64),
}

#[derive(Clone, Debug)]
pub struct Way {
    /// The current (during a resize: the new) generation.
    pub gen: Gen,
    pub storage: Storage,
    pub resize: Option<Resize>,
    /// Lines stored in this way (old and new tables together): the OS's per-way counter.
    pub occupancy: u64,
    /// How many hash functions this way has used (a new one per out-of-place resize).
    pub functions: usize,
    /// Whether the way may be downsized: false after a forced upsize (taken at low occupancy,
    /// which can leave the way below the downsize threshold) until its occupancy has risen
    /// above that threshold again, so that forced upsizes and downsizes do not alternate.
    pub downsize_armed: bool,
}

impl Way {
    /// Lines of the current generation (the size this way is, or is becoming).
    pub fn lines(&self) -> u64 {
        self.gen.lines()
    }

    /// Where `cluster` belongs: compare its old key with `P_i` (§II-B, §IV-C).
    #[inline]
    pub fn locate(&self, cluster: u64) -> Slot {
        if let Some(r) = &self.resize {
            let k = r.old.key(cluster);
            if k >= r.pointer {
                return Slot::Old(k);
            }
        }
        Slot::New(self.gen.key(cluster))
    }

    #[inline]
    pub fn slot_addr(&self, slot: Slot, l2p: &L2pTable, way: usize, size: PageSize) -> PhysAddr {
        match slot {
            Slot::Old(k) => match self.resize.as_ref().and_then(|r| r.old_storage.as_ref()) {
                Some(old) => old.line_addr(l2p, way, size, k),
                None => self.storage.line_addr(l2p, way, size, k),
            },
            Slot::New(k) => self.storage.line_addr(l2p, way, size, k),
        }
    }

    /// Bytes held by this way, old and new tables together.
    pub fn bytes(&self) -> u64 {
        self.storage.bytes()
            + self
                .resize
                .as_ref()
                .and_then(|r| r.old_storage.as_ref())
                .map_or(0, Storage::bytes)
    }

    /// The address of every line slot of the way's storage (new and old tables): what a full
    /// scan of the way's memory visits.
    pub fn all_slots(&self, l2p: &L2pTable, way: usize, size: PageSize) -> Vec<PhysAddr> {
        let mut out = Vec::new();
        let mut scan = |s: &Storage| {
            for i in 0..s.bytes() / LINE_BYTES {
                out.push(s.line_addr(l2p, way, size, i));
            }
        };
        scan(&self.storage);
        if let Some(old) = self.resize.as_ref().and_then(|r| r.old_storage.as_ref()) {
            scan(old);
        }
        out
    }
}

/// Bytes allocated by one process's hashed page tables (all sizes).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcAcct {
    pub bytes: u64,
    pub peak_bytes: u64,
    /// Allocation cycles not yet charged by the OS.
    pub pending_cycles: u64,
    /// Cycles of entry moves (rehashes, cuckoo re-insertions) not yet charged by the OS.
    pub pending_rehash_cycles: u64,
}

/// What a table needs from its surroundings to change its memory.
pub struct Env<'a, 'c> {
    pub ctx: &'a mut PtContext<'c>,
    pub l2p: &'a mut L2pTable,
    pub cost: &'a CostModel,
    pub acct: &'a mut ProcAcct,
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b >> 10),
    }
}

impl Env<'_, '_> {
    /// Allocate and zero one contiguous block of `bytes` (a power of two, at least 4 KiB),
    /// charging the contiguity cost; `what` names the allocation in the error.
    pub fn alloc_block(&mut self, stats: &mut SizeStats, bytes: u64, what: &str) -> Result<Pfn> {
        let bytes = bytes.max(BASE_PAGE_BYTES);
        debug_assert!(bytes.is_power_of_two());
        let order = (bytes / BASE_PAGE_BYTES).trailing_zeros();
        let Some(base) = self.ctx.buddy.alloc_contiguous(order) else {
            stats.failed_allocs += 1;
            return Err(Error::OutOfMemory(format!(
                "{what}: no free contiguous {} block (order {order}), nor one compaction could \
                 empty, at FMFI {:.2}",
                human(bytes),
                self.ctx.buddy.fmfi(order)
            )));
        };
        for f in 0..1u64 << order {
            self.ctx.store.zero_frame(Pfn(base.0 + f));
        }
        stats.allocations += 1;
        let cycles = self.cost.cycles(bytes);
        stats.alloc_cycles += cycles;
        self.acct.pending_cycles += cycles;
        stats.max_contiguous_bytes = stats.max_contiguous_bytes.max(bytes);
        stats.current_bytes += bytes;
        stats.peak_bytes = stats.peak_bytes.max(stats.current_bytes);
        self.acct.bytes += bytes;
        self.acct.peak_bytes = self.acct.peak_bytes.max(self.acct.bytes);
        Ok(base)
    }

    pub fn free_block(&mut self, stats: &mut SizeStats, base: Pfn, bytes: u64) {
        let bytes = bytes.max(BASE_PAGE_BYTES);
        let order = (bytes / BASE_PAGE_BYTES).trailing_zeros();
        for f in 0..1u64 << order {
            self.ctx.store.release_frame(Pfn(base.0 + f));
        }
        self.ctx.buddy.free(base, order);
        stats.current_bytes -= bytes;
        self.acct.bytes -= bytes;
    }

    /// Free a storage: the block, or the chunks (clearing their L2P entries; the caller
    /// shrinks the subtable).
    pub fn free_storage(&mut self, stats: &mut SizeStats, s: &Storage, way: usize, size: PageSize) {
        match *s {
            Storage::Block { base, order } => {
                self.free_block(stats, base, BASE_PAGE_BYTES << order)
            }
            Storage::Chunks {
                chunk_bytes,
                first,
                count,
            } => {
                for k in first..first + count {
                    let chunk = self.l2p.entry(way, size, k).expect("chunk in use");
                    self.free_block(stats, chunk, chunk_bytes);
                    self.l2p.set_entry(way, size, k, None);
                }
            }
        }
    }
}
