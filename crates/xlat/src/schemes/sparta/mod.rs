//! `sparta`: SPARTA, split and partitioned translation for accelerators (Picorel et al.,
//! docs/schemes/sparta.md).
//!
//! * **Partitions** ([`layout`]): physical memory is split into `partitions` equal slices (a
//!   socket's memory, a channel's, or finer); a virtual page's partition is a field of its
//!   virtual address (§4.2), and the OS gives it a frame anywhere in that slice
//!   (Algorithm 1, [`frames`]).
//! * **Page tables** ([`table`]): an inverted hashed table per partition, at the start of its
//!   slice, holding the partition's pages (§5): a walk reads one 64-byte bucket, in the
//!   partition's own memory.
//! * **MMU**: the accelerator's own TLB is `[mmu.l1tlb]` (tiny or absent); past it, the
//!   request goes to its partition by virtual address, where the partition's memory-side TLB
//!   (shared by every core, `[schemes.sparta] tlb`) translates it, and on a miss the
//!   partition's controller walks its table straight from DRAM, crossing no network
//!   (`WalkPlan::controller`). The data read then follows through the cache hierarchy and
//!   the topology: the trip to the partition is paid once, by the data, as Fig 3c/3d draws it.

pub mod frames;
pub mod layout;
pub mod table;
#[cfg(test)]
mod tests;

use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr, Vpn};
use crate::assoc::Replacement;
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::dram::Dram;
use crate::mem::physmem::BuddyAllocator;
use crate::mem::topology::Topology;
use crate::mem::Hierarchy;
use crate::mmu::config::TlbConfig;
use crate::mmu::tlb::{Tlb, TlbStats};
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, PageTables, StageHit, WalkEnv};
use crate::os::FramePolicy;
use crate::pt::store::PtStore;
use crate::pt::PtContext;
use layout::Layout;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use table::SpartaTable;

/// `[schemes.sparta]`: the partitions, their memory-side TLBs and their tables.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpartaConfig {
    /// Memory partitions (a power of two, 1 to 1024): 8 on the eight-socket machine is a
    /// partition per socket (SPARTA-8), 32 a partition per channel (SPARTA-32).
    pub partitions: u32,
    /// Lowest virtual-address bit of the partition index: the partition of `va` is
    /// `(va >> shift) % partitions`. 12 spreads consecutive 4 KiB pages over the partitions;
    /// 2 MiB pages need 21 or more (a huge page lies in one partition).
    pub shift: u32,
    /// Each partition's memory-side TLB (§4.2): entries, ways, latency in cycles. Fig 4-5:
    /// 128 entries, 4-way.
    pub tlb: TlbConfig,
    /// Entries of each partition's inverted table per frame of the partition: 4 is the
    /// prototype's load factor of 1/4 (§7.4).
    pub table_slots_per_frame: u32,
    /// Most 64-byte buckets an insertion or a walk probes (1 to 8): a full bucket sends an
    /// insertion to the next.
    pub probe_limit: u32,
}

impl Default for SpartaConfig {
    fn default() -> Self {
        SpartaConfig {
            partitions: 8,
            shift: 12,
            tlb: TlbConfig {
                entries: 128,
                ways: 4,
                latency: 1,
                replacement: Replacement::Lru,
                page_sizes: vec![PageSize::Size4K, PageSize::Size2M],
            },
            table_slots_per_frame: 4,
            probe_limit: 4,
        }
    }
}

/// Most partitions.
pub const MAX_PARTITIONS: u32 = 1024;

impl SpartaConfig {
    /// Whether every key has its default.
    pub fn is_default(&self) -> bool {
        let d = SpartaConfig::default();
        (
            self.partitions,
            self.shift,
            self.table_slots_per_frame,
            self.probe_limit,
        ) == (
            d.partitions,
            d.shift,
            d.table_slots_per_frame,
            d.probe_limit,
        ) && self.tlb == d.tlb
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        if !self.partitions.is_power_of_two() || self.partitions > MAX_PARTITIONS {
            return Err(Error::config(
                format!("{path}.partitions"),
                format!(
                    "must be a power of two from 1 to {MAX_PARTITIONS}, got {}",
                    self.partitions
                ),
            ));
        }
        if !(12..=47).contains(&self.shift) {
            return Err(Error::config(
                format!("{path}.shift"),
                format!(
                    "must be 12 to 47 (a page's bits above its offset), got {}",
                    self.shift
                ),
            ));
        }
        if self.tlb.entries == 0 {
            return Err(Error::config(
                format!("{path}.tlb.entries"),
                "a memory-side TLB needs at least one entry",
            ));
        }
        self.tlb.validate(&format!("{path}.tlb"))?;
        if !(1..=64).contains(&self.table_slots_per_frame) {
            return Err(Error::config(
                format!("{path}.table_slots_per_frame"),
                format!("must be 1 to 64, got {}", self.table_slots_per_frame),
            ));
        }
        if !(1..=table::MAX_PROBES as u32).contains(&self.probe_limit) {
            return Err(Error::config(
                format!("{path}.probe_limit"),
                format!(
                    "must be 1 to {}, got {}",
                    table::MAX_PROBES,
                    self.probe_limit
                ),
            ));
        }
        Ok(())
    }

    /// The memory-side TLBs, one per partition.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        uses.once(
            format!("{path}.tlb.entries"),
            u64::from(self.tlb.entries) * u64::from(self.partitions),
            "memory-side TLB entries",
            32,
        );
    }
}

/// The memory-side TLBs of all partitions: shared by every core (§7.3).
pub struct MemorySideTlbs {
    tlbs: Vec<Tlb>,
}

/// The `memory_side_tlb` stats subtree: all partitions' TLBs together, and each.
#[derive(Serialize)]
struct MemorySideStats {
    #[serde(flatten)]
    total: TlbStats,
    by_partition: Vec<TlbStats>,
}

/// SPARTA's MMU parts: the partition function and the walker of the partition tables.
pub struct SpartaMmu {
    layout: Layout,
}

impl MmuScheme for SpartaMmu {
    type Table = SpartaTable;
    type Shared = MemorySideTlbs;

    /// Fig 3d: past the accelerator-side TLB, the data comes back from the partition with
    /// the translation.
    const DATA_WITH_TRANSLATION: bool = true;

    /// The partition's memory-side TLB, at the partition's memory controller.
    fn side_lookup<P: PageTables<Table = SpartaTable>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _l2_hit: bool,
        _now: u64,
        _tables: &P,
        _mem: &mut Hierarchy,
        shared: &mut MemorySideTlbs,
    ) -> (Option<StageHit>, u64) {
        let tlb = &mut shared.tlbs[self.layout.partition_of(va) as usize];
        let latency = tlb.latency();
        let hit = tlb
            .lookup(self.layout.squeeze(va), asid)
            .map(|(pfn, size)| StageHit { pfn, size, latency });
        (hit, latency)
    }

    /// The fault handler maps the page in the partition's table and fills no TLB, so the
    /// re-executed access's memory-side probe is a sure miss: it takes the TLB's latency and
    /// is not counted again (the access counted its miss before the fault).
    fn side_lookup_after_fault<P: PageTables<Table = SpartaTable>>(
        &mut self,
        va: VirtAddr,
        _asid: u16,
        _now: u64,
        _tables: &P,
        _mem: &mut Hierarchy,
        shared: &mut MemorySideTlbs,
    ) -> (Option<StageHit>, u64) {
        let tlb = &shared.tlbs[self.layout.partition_of(va) as usize];
        (None, tlb.latency())
    }

    fn plan_walk(
        &mut self,
        va: VirtAddr,
        _asid: u16,
        env: &mut WalkEnv<'_, SpartaTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        env.table.plan(env.store, va, plan)
    }

    fn after_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        pfn: Pfn,
        size: PageSize,
        _table: &SpartaTable,
        _store: &PtStore,
        _now: u64,
        _mem: &mut Hierarchy,
        shared: &mut MemorySideTlbs,
    ) {
        let l = &self.layout;
        shared.tlbs[l.partition_of(va) as usize].insert(l.squeeze(va), asid, pfn, size);
    }

    fn invalidate(&mut self, vpn: Vpn, size: PageSize, asid: u16, shared: &mut MemorySideTlbs) {
        let l = &self.layout;
        let p = l.partition_of_vpn(vpn) as usize;
        let va = l.squeeze(VirtAddr(vpn.0 << crate::addr::BASE_PAGE_SHIFT));
        shared.tlbs[p].invalidate_page(va.vpn(), size, asid);
    }

    fn shared_stats(shared: &MemorySideTlbs) -> BTreeMap<&'static str, serde_json::Value> {
        let by_partition: Vec<TlbStats> = shared.tlbs.iter().map(Tlb::stats).collect();
        let mut total = TlbStats::default();
        by_partition.iter().for_each(|s| total.add(s));
        BTreeMap::from([(
            "memory_side_tlb",
            stats_value(&MemorySideStats {
                total,
                by_partition,
            }),
        )])
    }

    fn reset_shared_stats(shared: &mut MemorySideTlbs) {
        shared.tlbs.iter_mut().for_each(Tlb::reset_stats);
    }
}

/// The scheme.
pub struct Sparta;

impl Sparta {
    fn layout(ctx: &BuildCtx) -> Result<Layout> {
        Layout::new(&ctx.sections.sparta, ctx.physmem_bytes)
    }
}

/// On a machine with a topology, each partition must lie in one memory node: in one
/// channel when there are at least as many partitions as channels, else in one socket.
/// Otherwise a memory-side walk would cross the network the design removes.
fn check_nodes(ctx: &BuildCtx, l: &Layout) -> Result<()> {
    // One partition is all of memory: the partitions switched off, a single memory-side TLB
    // and table (walks then cross the network as an IOMMU's do).
    if ctx.topology.is_flat() || l.partitions == 1 {
        return Ok(());
    }
    let dram = Dram::new(ctx.dram, 1.0);
    let topo = Topology::new(ctx.topology, ctx.dram.channels, 1.0);
    let channels = u64::from(ctx.dram.channels);
    for p in 0..l.partitions {
        let (lo, hi) = l.frames(p);
        let first = dram.decode(crate::addr::PhysAddr(lo << 12)).channel;
        let last = dram.decode(crate::addr::PhysAddr((hi << 12) - 64)).channel;
        let same = if l.partitions >= channels {
            first == last
        } else {
            topo.socket_of_channel(first) == topo.socket_of_channel(last)
                && last - first + 1 == channels / l.partitions.min(channels)
        };
        if !same {
            return Err(Error::config(
                "schemes.sparta.partitions",
                format!(
                    "partition {p} (frames {lo}..{hi}) spans DRAM channels {first} to {last}: \
                     a partition must lie in one channel or one socket, with dram.mapping \
                     starting with `channel` and dram.rows making the DRAM exactly \
                     os.physmem.bytes (the numa-* presets do)"
                ),
            ));
        }
    }
    Ok(())
}

impl Scheme for Sparta {
    type Mmu = SpartaMmu;

    fn mmu(ctx: &BuildCtx) -> Result<SpartaMmu> {
        Ok(SpartaMmu {
            layout: Sparta::layout(ctx)?,
        })
    }

    fn shared(ctx: &BuildCtx, _: &mut BuddyAllocator) -> Result<MemorySideTlbs> {
        let l = Sparta::layout(ctx)?;
        check_nodes(ctx, &l)?;
        Ok(MemorySideTlbs {
            tlbs: (0..l.partitions)
                .map(|_| Tlb::new(&ctx.sections.sparta.tlb))
                .collect(),
        })
    }

    fn new_table(ctx: &BuildCtx, _: &mut PtContext, pid: u16) -> Result<TableOf<Self>> {
        Ok(SpartaTable::new(Sparta::layout(ctx)?, pid))
    }

    fn frames(ctx: &BuildCtx) -> Result<Box<dyn FramePolicy>> {
        Ok(Box::new(frames::PartitionFrames::new(Sparta::layout(ctx)?)))
    }
}
