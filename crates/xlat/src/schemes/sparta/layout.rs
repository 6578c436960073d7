//! Where SPARTA's partitions and their page tables are: the partition function of the
//! virtual address, each partition's slice of physical memory, and the inverted hashed table
//! at the start of each slice (§4.2, §5).

use super::SpartaConfig;
use crate::addr::{PageSize, PhysAddr, VirtAddr, Vpn, BASE_PAGE_SHIFT};
use crate::error::{Error, Result};

/// Bytes of one table entry: a tag word and a frame word.
pub const ENTRY_BYTES: u64 = 16;
/// Entries in one bucket, one 64-byte line: a walk reads a bucket with one reference.
pub const BUCKET_ENTRIES: u64 = 4;
const BUCKET_BYTES: u64 = ENTRY_BYTES * BUCKET_ENTRIES;

/// The partitions of a system, computed once from `[schemes.sparta]` and the memory size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub partitions: u64,
    /// Lowest virtual-address bit of the partition index.
    pub shift: u32,
    /// 4 KiB frames of each partition (physical memory / partitions).
    pub part_frames: u64,
    /// Buckets of each partition's table.
    pub buckets: u64,
    /// Frames each partition's table takes, at the start of the partition.
    pub table_frames: u64,
    /// Most buckets an insertion or a walk probes, from the key's home bucket on.
    pub probe_limit: u32,
}

impl Layout {
    pub fn new(cfg: &SpartaConfig, physmem_bytes: u64) -> Result<Layout> {
        let frames = physmem_bytes >> BASE_PAGE_SHIFT;
        let partitions = u64::from(cfg.partitions);
        let part_frames = frames / partitions;
        // Partitions are whole 2 MiB blocks, so that a huge page can live in one.
        if !frames.is_multiple_of(partitions) || !part_frames.is_multiple_of(512) {
            return Err(Error::config(
                "schemes.sparta.partitions",
                format!(
                    "{partitions} partitions do not split os.physmem.bytes = {physmem_bytes} \
                     into equal whole 2 MiB slices"
                ),
            ));
        }
        let buckets = part_frames * u64::from(cfg.table_slots_per_frame) / BUCKET_ENTRIES;
        let table_frames = (buckets * BUCKET_BYTES).div_ceil(4096);
        if buckets == 0 || table_frames >= part_frames / 2 {
            return Err(Error::config(
                "schemes.sparta.table_slots_per_frame",
                format!(
                    "a table of {buckets} buckets does not fit in half a partition of \
                     {part_frames} frames"
                ),
            ));
        }
        Ok(Layout {
            partitions,
            shift: cfg.shift,
            part_frames,
            buckets,
            table_frames,
            probe_limit: cfg.probe_limit,
        })
    }

    /// The partition of virtual address `va` (the paper's MEM_SET_INDEX_HASH, Algorithm 1):
    /// `partitions` consecutive bits of the address from bit `shift` up.
    #[inline]
    pub fn partition_of(&self, va: VirtAddr) -> u64 {
        (va.0 >> self.shift) & (self.partitions - 1)
    }

    /// `va` with its partition bits taken out (the bits above them moved down): what a
    /// partition's memory-side TLB is indexed and tagged by. Its own partition's addresses
    /// all share those bits, so indexing by them would leave all but a fraction of the TLB's
    /// sets unused; without them, the addresses of one partition stay distinct.
    #[inline]
    pub fn squeeze(&self, va: VirtAddr) -> VirtAddr {
        let bits = self.partitions.trailing_zeros();
        let low = va.0 & ((1u64 << self.shift) - 1);
        VirtAddr(((va.0 >> (self.shift + bits)) << self.shift) | low)
    }

    /// The partition of the 4 KiB page `vpn`.
    #[inline]
    pub fn partition_of_vpn(&self, vpn: Vpn) -> u64 {
        self.partition_of(VirtAddr(vpn.0 << BASE_PAGE_SHIFT))
    }

    /// Whether every 4 KiB page of a `size` page is in one partition (a 2 MiB page is only if
    /// the partition bits are above bit 21, or there is one partition).
    pub fn holds_whole(&self, size: PageSize) -> bool {
        self.partitions == 1 || self.shift >= size.shift()
    }

    /// Frames `[lo, hi)` of partition `p`.
    #[inline]
    pub fn frames(&self, p: u64) -> (u64, u64) {
        (p * self.part_frames, (p + 1) * self.part_frames)
    }

    /// The partition holding frame `pfn`.
    #[inline]
    pub fn partition_of_frame(&self, pfn: u64) -> u64 {
        pfn / self.part_frames
    }

    /// The first byte of partition `p`'s table (and of the partition).
    #[inline]
    pub fn table_base(&self, p: u64) -> PhysAddr {
        PhysAddr(self.frames(p).0 << BASE_PAGE_SHIFT)
    }

    /// The line of bucket `b` of partition `p`'s table.
    #[inline]
    pub fn bucket_addr(&self, p: u64, b: u64) -> PhysAddr {
        PhysAddr(self.table_base(p).0 + (b % self.buckets) * BUCKET_BYTES)
    }

    /// The home bucket of the `size` page numbered `vpn_at_size` (its number at its size) of
    /// address space `asid`.
    #[inline]
    pub fn home(&self, asid: u16, vpn_at_size: u64, size: PageSize) -> u64 {
        // splitmix64's finaliser over the key, then onto the buckets by multiply-high.
        let mut h = vpn_at_size ^ (u64::from(asid) << 46) ^ ((size.index() as u64) << 62);
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
        ((u128::from(h) * u128::from(self.buckets)) >> 64) as u64
    }
}
