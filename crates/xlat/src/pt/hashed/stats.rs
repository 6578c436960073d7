//! Statistics of the hashed page tables (serialisable into the run's stats tree): what the
//! ME-HPT evaluation measures (contiguous allocation, table memory, resizes, L2P use,
//! allocation cost) plus what checks the mechanics (re-insertions, entries moved).

use serde::Serialize;

/// Buckets of the re-insertion histogram: 0..15 evictions, and 16 or more.
pub const REINSERTION_BUCKETS: usize = 17;

/// One page size's table.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SizeStats {
    /// New lines inserted (a first PTE of a cluster).
    pub line_inserts: u64,
    /// Lines removed (the last PTE of a cluster unmapped).
    pub line_deletes: u64,
    /// Largest single contiguous block ever allocated.
    pub max_contiguous_bytes: u64,
    pub current_bytes: u64,
    /// Peak bytes, old and new tables together during resizes.
    pub peak_bytes: u64,
    pub upsizes: Vec<u64>,
    pub downsizes: Vec<u64>,
    /// Upsizes forced by hitting the re-insertion bound (included in `upsizes`).
    pub forced_upsizes: u64,
    /// Size of each way at the snapshot.
    pub way_bytes: Vec<u64>,
    /// Live entries rehashed during upsizes, and how many of them changed location (all for
    /// out-of-place, about half for in-place).
    pub upsize_entries_rehashed: u64,
    pub upsize_entries_moved: u64,
    /// Peak L2P entries used by this size's subtables (all ways).
    pub l2p_entries_peak: u64,
    /// Cuckoo evictions per placement (new lines and rehashed lines), 16+ in the last bucket.
    pub reinsertions: [u64; REINSERTION_BUCKETS],
    /// Entries that changed location in any resize (up or down, gradual or a rebuild).
    pub rehash_entries_moved: u64,
    /// Lines evicted by a placement and re-inserted into another way (every eviction).
    pub cuckoo_reinsertions: u64,
    /// OS cycles for those moves (`rehash_cycles_per_entry` each); the OS charges them.
    pub rehash_cycles: u64,
    pub allocations: u64,
    /// Cycles to allocate and zero the blocks (§III cost model); the OS charges them.
    pub alloc_cycles: u64,
    pub chunk_transitions: u64,
    pub failed_allocs: u64,
}

/// The whole process's hashed page table.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HptStats {
    #[serde(rename = "4k")]
    pub size_4k: SizeStats,
    #[serde(rename = "2m")]
    pub size_2m: SizeStats,
    #[serde(rename = "1g")]
    pub size_1g: SizeStats,
    pub total: TotalStats,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct TotalStats {
    /// Bytes of the hashed tables now (the Cuckoo Walk Tables are `cwt_bytes`).
    pub current_bytes: u64,
    pub cwt_bytes: u64,
    pub peak_bytes: u64,
    pub max_contiguous_bytes: u64,
    pub l2p_entries_peak: u64,
    pub alloc_cycles: u64,
    pub rehash_entries_moved: u64,
    pub cuckoo_reinsertions: u64,
    pub rehash_cycles: u64,
    pub failed_allocs: u64,
    pub upsizes: u64,
    pub downsizes: u64,
    pub chunk_transitions: u64,
}
