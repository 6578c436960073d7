//! `mosaic`: Mosaic pages (Gosakan et al., ASPLOS'23; docs/schemes/mosaic.md).
//!
//! * **Memory** ([`iceberg`], [`frames`]): a pool of physical memory managed as an iceberg
//!   hash table; each 4 KiB page takes one of `h = f + d·b` frames its (ASID, VPN) hashes to
//!   ([`tabulation`]: the tabulation hash with probing of Fig 4), so its frame is named by a
//!   compressed physical frame number (CPFN) of about log2(h) bits. The rest of memory stays
//!   with the buddy allocator (page tables, other allocations).
//! * **Tables** ([`table`]): a radix tree whose leaf PTEs hold CPFNs; a mosaic page's `arity`
//!   PTEs are its table of contents (Fig 5).
//! * **MMU** ([`tlb`]): the mosaic TLB, each entry a mosaic page's ToC, looked up beside the
//!   L2 TLB level (which the presets leave empty, as Table 1a has one TLB); a miss walks the
//!   radix tree to the leaf and reads the whole ToC, which fills the entry.
//!
//! `mosaic-vanilla` is the comparator: the same TLB geometry with ordinary one-page entries,
//! over an ordinary radix table and the buddy allocator.

pub mod frames;
pub mod iceberg;
pub mod table;
pub mod tabulation;
#[cfg(test)]
mod tests;
pub mod tlb;

use super::radix::RadixWalker;
use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr, Vpn};
use crate::assoc::Replacement;
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mem::{Hierarchy, MemKind};
use crate::mmu::config::TlbConfig;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, PageTables, StageHit, WalkEnv};
use crate::os::FramePolicy;
use crate::pt::radix::RadixPageTable;
use crate::pt::store::PtStore;
use crate::pt::PtContext;
use crate::rng::{self, Rng};
use frames::IcebergFrames;
use iceberg::{Geometry, IcebergMap, IcebergTable};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use table::MosaicTable;
use tlb::{MosaicTlb, SideTlbStats, VanillaTlb, MAX_ARITY};

/// Share of physical memory left to the buddy allocator when `pool_bytes = 0`: page tables
/// of 4 KiB mappings take 1/512 of what they map, and fragmentation pins land here too.
pub const BUDDY_SHARE: u64 = 32;

/// `[schemes.mosaic]`: the TLB and the iceberg pool.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MosaicConfig {
    /// CPFNs per TLB entry: base pages per mosaic page, a power of two in 1..=64 (§4.1
    /// sweeps 4 to 64; 4 is the default, the ToC of 28 bits fitting an x86 entry's PFN).
    pub arity: u32,
    /// The TLB (Table 1a: 1024 entries, associativity varied from direct-mapped to fully
    /// associative), holding 4 KiB pages. `mosaic-vanilla` builds its TLB from it too.
    pub tlb: TlbConfig,
    /// f: frames of a bucket's front yard (§2.3: 56).
    pub front_yard_frames: u32,
    /// b: frames of a bucket's backyard (§2.3: 8).
    pub backyard_frames: u32,
    /// d: backyard buckets a page may choose from (§2.3: 6).
    pub backyard_choices: u32,
    /// Bytes of physical memory managed as the iceberg pool, at the top of memory, in whole
    /// buckets of `f + b` frames; the rest stays with the buddy allocator. 0: all of memory
    /// but 1/32 (room for page tables).
    #[serde(default)]
    pub pool_bytes: u64,
}

impl Default for MosaicConfig {
    /// §2.3 and §3.1: f = 56, b = 8, d = 6 (h = 104, 7-bit CPFNs).
    fn default() -> Self {
        MosaicConfig {
            arity: 4,
            // Fully associative LRU, as gem5's x86 TLB is; Table 1a gives no latency.
            tlb: TlbConfig {
                entries: 1024,
                ways: 1024,
                latency: 1,
                replacement: Replacement::Lru,
                page_sizes: vec![PageSize::Size4K],
            },
            front_yard_frames: 56,
            backyard_frames: 8,
            backyard_choices: 6,
            pool_bytes: 0,
        }
    }
}

impl MosaicConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if !(self.arity.is_power_of_two() && self.arity as usize <= MAX_ARITY) {
            return Err(Error::config(
                format!("{path}.arity"),
                format!(
                    "must be a power of two in 1..={MAX_ARITY} (pages per mosaic page), got {}",
                    self.arity
                ),
            ));
        }
        let tlb = format!("{path}.tlb");
        if self.tlb.entries == 0 {
            return Err(Error::config(
                format!("{tlb}.entries"),
                "must be at least 1: it is the system's TLB",
            ));
        }
        self.tlb.validate(&tlb)?;
        if self.tlb.page_sizes != [PageSize::Size4K] {
            return Err(Error::config(
                format!("{tlb}.page_sizes"),
                "must be [\"4K\"]: mosaic pages are made of 4 KiB base pages",
            ));
        }
        self.geometry(path)?;
        if !self.pool_bytes.is_multiple_of(4096) {
            return Err(Error::config(
                format!("{path}.pool_bytes"),
                format!("must be a multiple of 4096, got {}", self.pool_bytes),
            ));
        }
        Ok(())
    }

    /// The CPFN layout of f, b, d, or an error naming the key that made it too wide.
    pub fn geometry(&self, path: &str) -> Result<Geometry> {
        Geometry::new(
            self.front_yard_frames,
            self.backyard_frames,
            self.backyard_choices,
        )
        .map_err(|(key, msg)| Error::config(format!("{path}.{key}"), msg))
    }

    /// Buckets of the pool in `physmem_bytes` of memory.
    pub fn buckets(&self, physmem_bytes: u64) -> Result<u64> {
        let g = self.geometry("schemes.mosaic")?;
        let frames = physmem_bytes / 4096;
        let pool = match self.pool_bytes {
            0 => frames - frames / BUDDY_SHARE,
            bytes => bytes / 4096,
        };
        let key = "schemes.mosaic.pool_bytes";
        if pool >= frames {
            return Err(Error::config(
                key,
                format!(
                    "{} bytes leave nothing of os.physmem.bytes ({physmem_bytes}) to the buddy \
                     allocator, which page tables need",
                    self.pool_bytes
                ),
            ));
        }
        let buckets = pool / g.bucket_frames();
        if buckets < u64::from(g.choices) {
            return Err(Error::config(
                key,
                format!(
                    "the pool holds {buckets} buckets of {} frames; at least d = {} are needed",
                    g.bucket_frames(),
                    g.choices
                ),
            ));
        }
        Ok(buckets)
    }

    /// The iceberg map of a system of `physmem_bytes` run with `seed`: the pool at the top
    /// of memory, its hash drawn from the seed. Every part that decodes CPFNs builds the same
    /// one.
    pub fn map(&self, physmem_bytes: u64, seed: u64) -> Result<IcebergMap> {
        let g = self.geometry("schemes.mosaic")?;
        let buckets = self.buckets(physmem_bytes)?;
        let base = physmem_bytes / 4096 - buckets * g.bucket_frames();
        let mut rng = Rng::new(seed, rng::stream::MOSAIC_HASH);
        Ok(IcebergMap::new(
            g,
            crate::addr::Pfn(base),
            buckets,
            &mut rng,
        ))
    }

    /// The OS's occupancy of the pool: a bit per frame and two loads per bucket, some 1/50 of
    /// what `os.physmem`'s own frame state takes for the same memory. A pool of all memory
    /// (`pool_bytes = 0`) is bounded by that check; a given size is counted here.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        uses.per_core(
            format!("{path}.tlb.entries"),
            u64::from(self.tlb.entries),
            "entries",
            MosaicTlb::SLOT_BYTES,
        );
        let Ok(g) = self.geometry(path) else { return };
        uses.once(
            format!("{path}.pool_bytes"),
            self.pool_bytes / 4096 / g.bucket_frames(),
            "buckets",
            IcebergTable::host_bytes_per_bucket(&g),
        );
    }
}

/// The ToC lines of a walk past the one holding the walked page's PTE: a ToC of `arity`
/// 8-byte PTEs from `first` spans `arity / 8` lines from arity 8 on, all read in the leaf's
/// step (the walker fetches the whole ToC to fill the entry).
fn push_toc_lines(plan: &mut WalkPlan, first: u64, arity: u64, pte: u64) {
    let step = plan.refs().last().map_or(0, |r| r.step);
    let line = crate::addr::LINE_BYTES;
    let mut at = first & !(line - 1);
    while at < first + 8 * arity {
        if at != pte & !(line - 1) {
            plan.push(crate::addr::PhysAddr(at), MemKind::pt_level(1), step);
        }
        at += line;
    }
}

/// What a TLB beside the x86 arrays answers as the MMU's side stage: a 4 KiB frame it found
/// (the mosaic TLB decodes a CPFN, the vanilla one holds the frame), after its latency either way.
#[inline]
fn tlb_stage(found: Option<Pfn>, latency: u64) -> (Option<StageHit>, u64) {
    let hit = found.map(|pfn| StageHit {
        pfn,
        size: PageSize::Size4K,
        latency,
    });
    (hit, latency)
}

/// The stats of either MMU, under the same keys so that a mosaic run and its vanilla pair
/// compare the same counters.
fn mmu_stats(
    walker: &RadixWalker,
    tlb: &SideTlbStats,
) -> BTreeMap<&'static str, serde_json::Value> {
    BTreeMap::from([
        ("pwc", stats_value(&walker.pwc_snapshot())),
        ("mosaic_tlb", stats_value(tlb)),
    ])
}

/// The MMU parts of Mosaic: the radix walker (to the ToC leaf) and the mosaic TLB.
pub struct MosaicMmu {
    walker: RadixWalker,
    tlb: MosaicTlb,
    /// The ToC the last walk's fill read (no allocation per walk).
    toc: [u8; MAX_ARITY],
}

impl MmuScheme for MosaicMmu {
    type Table = MosaicTable;
    type Shared = ();

    #[inline]
    fn side_lookup<P: PageTables<Table = MosaicTable>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _l2_hit: bool,
        _now: u64,
        _tables: &P,
        _mem: &mut Hierarchy,
        _: &mut (),
    ) -> (Option<StageHit>, u64) {
        tlb_stage(self.tlb.lookup(va, asid), self.tlb.latency)
    }

    /// The radix walk to the leaf, whose PTE gives the page's CPFN, and the rest of its ToC
    /// read in the same step; the CPFN decodes to the frame.
    #[inline]
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, MosaicTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        let table = env.table;
        let (cpfn, size) = self.walker.plan(va, asid, &table.radix, env.store, plan)?;
        let arity = self.tlb.arity() as u64;
        if arity > 8 {
            let pte = plan.refs().last().map_or(0, |r| r.addr.0);
            let first = pte - 8 * (va.vpn().0 % arity);
            push_toc_lines(plan, first, arity, pte);
        }
        Some((table.decode(va.vpn(), cpfn.0)?, size))
    }

    /// The walk read the whole ToC: it fills the entry.
    fn after_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _pfn: Pfn,
        _size: PageSize,
        table: &MosaicTable,
        store: &PtStore,
        _now: u64,
        _mem: &mut Hierarchy,
        _: &mut (),
    ) {
        let arity = self.tlb.arity();
        if table.toc(store, va, &mut self.toc[..arity]).is_some() {
            self.tlb.fill(va.vpn(), asid, &self.toc[..arity]);
        }
    }

    /// Mosaic maps 4 KiB pages only (its table refuses others), so a shootdown is of one.
    fn invalidate(&mut self, vpn: Vpn, size: PageSize, asid: u16, _: &mut ()) {
        debug_assert_eq!(size, PageSize::Size4K);
        self.tlb.invalidate(vpn, asid);
    }

    fn flush(&mut self) {
        self.walker.flush();
    }

    fn reset_stats(&mut self) {
        self.walker.reset_stats();
        self.tlb.stats = Default::default();
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        mmu_stats(&self.walker, &self.tlb.stats)
    }
}

/// Mosaic.
pub struct Mosaic;

impl Scheme for Mosaic {
    type Mmu = MosaicMmu;

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn mmu(ctx: &BuildCtx) -> Result<MosaicMmu> {
        let cfg = &ctx.sections.mosaic;
        Ok(MosaicMmu {
            walker: ctx.sections.radix.walker(),
            tlb: MosaicTlb::new(&cfg.tlb, cfg.arity, cfg.map(ctx.physmem_bytes, ctx.seed)?),
            toc: [0; MAX_ARITY],
        })
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, pid: u16) -> Result<TableOf<Self>> {
        let map = ctx.sections.mosaic.map(ctx.physmem_bytes, ctx.seed)?;
        MosaicTable::new(pt, ctx.sections.radix.levels, map, pid)
    }

    fn frames(ctx: &BuildCtx) -> Result<Box<dyn FramePolicy>> {
        let map = ctx.sections.mosaic.map(ctx.physmem_bytes, ctx.seed)?;
        Ok(Box::new(IcebergFrames::new(
            IcebergTable::new(map),
            "schemes.mosaic.pool_bytes",
        )))
    }
}

/// The MMU parts of the vanilla comparator: the radix walker and a TLB of one-page entries.
pub struct VanillaMmu {
    walker: RadixWalker,
    tlb: VanillaTlb,
}

impl MmuScheme for VanillaMmu {
    type Table = RadixPageTable;
    type Shared = ();

    #[inline]
    fn side_lookup<P: PageTables<Table = RadixPageTable>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _l2_hit: bool,
        _now: u64,
        _tables: &P,
        _mem: &mut Hierarchy,
        _: &mut (),
    ) -> (Option<StageHit>, u64) {
        tlb_stage(self.tlb.lookup(va, asid), self.tlb.latency)
    }

    #[inline]
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, RadixPageTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        self.walker.plan(va, asid, env.table, env.store, plan)
    }

    fn after_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        pfn: Pfn,
        size: PageSize,
        _table: &RadixPageTable,
        _store: &PtStore,
        _now: u64,
        _mem: &mut Hierarchy,
        _: &mut (),
    ) {
        let piece = Pfn(pfn.0 + ((va.0 & size.mask()) >> 12));
        self.tlb.fill(va.vpn(), asid, piece);
    }

    fn invalidate(&mut self, vpn: Vpn, size: PageSize, asid: u16, _: &mut ()) {
        self.tlb.invalidate(vpn, size.base_pages(), asid);
    }

    fn flush(&mut self) {
        self.walker.flush();
    }

    fn reset_stats(&mut self) {
        self.walker.reset_stats();
        self.tlb.stats = Default::default();
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        mmu_stats(&self.walker, &self.tlb.stats)
    }
}

/// The vanilla comparator of Mosaic's Fig 6.
pub struct MosaicVanilla;

impl Scheme for MosaicVanilla {
    type Mmu = VanillaMmu;

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn mmu(ctx: &BuildCtx) -> Result<VanillaMmu> {
        Ok(VanillaMmu {
            walker: ctx.sections.radix.walker(),
            tlb: VanillaTlb::new(&ctx.sections.mosaic.tlb),
        })
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        ctx.sections.radix.new_table(pt)
    }
}
