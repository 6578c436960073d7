//! Hashed page tables: Elastic Cuckoo Page Tables (ECPT, Skarlatos et al. ASPLOS'20, as
//! ME-HPT §II-B describes them) and Memory-Efficient HPTs (ME-HPT, Stojkovic et al., §IV-V),
//! as page-table organisations of the engine. Both are one code base: an
//! [`elastic::ElasticTable`] per page size, parameterised by its storage (contiguous block per
//! way, or chunks behind the [`l2p::L2pTable`]) and its resize policies (out of place or in
//! place, all ways or per way).
//!
//! Every entry is a 64-byte line in simulated memory ([`entry`]): 8 PTEs of consecutive pages
//! plus a 96-bit tag spread over their upper bits. Lookups read the lines back from the
//! [`PtStore`](crate::pt::store::PtStore); the host keeps only what the OS would (occupancy
//! counters, rehash pointers, hash generations, chunk sizes, the L2P contents).
//!
//! # API for the walker
//!
//! The walker (`schemes::hashed`) reads [`HashedPageTable`] as its scheme's table type and
//! uses:
//!
//! * [`HashedPageTable::probe_lines`]`(store, size, vpn, &mut [ProbeLine])`: the W lines a
//!   hardware walk of the `size` table probes in parallel for `vpn`, one per way, each in the
//!   old or new table of that way as the rehashing pointer `P_i` decides (§II-B), with the
//!   physical address (what to send to the caches) and whether the line read from memory
//!   holds the translation. Returns how many entries it wrote (W, or 0 if the process has no
//!   table of that size).
//! * [`HashedPageTable::translate`]`(store, vpn)`: the functional translation over the three
//!   page sizes, from the stored bytes.
//! * [`HashedPageTable::l2p_lookup`]`(way, size, index)`: the physical address of logical
//!   line `index` of a way (ME-HPT: shift, L2P read, mask, §IV-A; ECPT: base + offset). The
//!   L2P itself is [`HashedPageTable::l2p`] (entries used, for context-switch costs).
//! * [`HashedPageTable::cwt`]: the Cuckoo Walk Table contents, the page sizes present in each
//!   2 MiB and each 1 GiB region ([`cwt::Cwt::sizes_in_2m`], [`cwt::Cwt::sizes_in_1g`]) and
//!   the ways holding their lines, which the Cuckoo Walk Caches cache to skip tables and ways
//!   (a walk whose CWCs miss probes every way and reads the entry off its critical path).
//! * [`HashedPageTable::take_alloc_cycles`]: cycles spent allocating and zeroing table memory
//!   since the last call (§III cost of contiguity), for the OS to charge to the fault.
//! * [`HashedPageTable::stats`]: [`stats::HptStats`] (serde), per page size and totals.
//!
//! Not here (the lead's part): the walker's timing, the CWCs, wiring into the OS and MMU.

pub mod config;
pub mod cost;
pub mod cwt;
pub mod elastic;
pub mod entry;
pub mod hash;
pub mod l2p;
pub mod limits;
pub mod stats;
pub mod table;
pub mod way;

pub use config::{HashedConfig, HptKind, MehptConfig};
pub use elastic::ProbeLine;
pub use table::HashedPageTable;

#[cfg(test)]
mod tests;
