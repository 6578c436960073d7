//! What a memory block holds. Every access and every cached block is tagged, so the stats can
//! split hits, misses and cache occupancy between data and each kind of translation metadata.

use serde::Serialize;

/// Kind of a memory access / cached block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize)]
pub struct MemKind(pub u8);

/// Number of distinct kinds (size of per-kind stat arrays).
pub const KINDS: usize = 16;

const NAMES: [&str; KINDS] = [
    "data", "pt1", "pt2", "pt3", "pt4", "pt5", "hpt", "cwt", "pomtlb", "range", "tar", "sf",
    "npt1", "npt2", "npt3", "npt4",
];

impl MemKind {
    pub const DATA: MemKind = MemKind(0);
    /// A line of a hashed page table (ECPT / ME-HPT).
    pub const HPT: MemKind = MemKind(6);
    /// An entry of a Cuckoo Walk Table.
    pub const CWT: MemKind = MemKind(7);
    /// A line of a POM-TLB set: an L3 TLB whose entries live in DRAM and are cached like data.
    pub const POMTLB: MemKind = MemKind(8);
    /// A node of an RMM range table (a B-tree of range translations), read by the range-table
    /// walker in the background after a page walk.
    pub const RANGE: MemKind = MemKind(9);
    /// A line of a Utopia tag array (TAR): the tags of a RestSeg set, read by the RestSeg walk.
    pub const TAR: MemKind = MemKind(10);
    /// A line of a Utopia set filter (SF): per-set page counters of a RestSeg.
    pub const SF: MemKind = MemKind(11);

    /// An entry of the radix page table at `level` (1 = PT … 4 = PML4, 5 = PML5).
    pub const fn pt_level(level: u32) -> MemKind {
        MemKind(level as u8)
    }

    /// An entry of a VMM's nested page table (gPA → hPA, 4 levels) at `level`, read by the
    /// host dimension of a 2D walk.
    pub const fn npt_level(level: u32) -> MemKind {
        MemKind(11 + level as u8)
    }

    pub fn is_translation(self) -> bool {
        self.0 != 0
    }

    pub fn name(self) -> &'static str {
        NAMES[self.0 as usize]
    }

    pub fn index(self) -> usize {
        self.0 as usize
    }

    pub fn all() -> impl Iterator<Item = MemKind> {
        (0..KINDS as u8).map(MemKind)
    }
}
