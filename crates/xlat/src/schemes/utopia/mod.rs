//! `utopia`: hybrid restrictive and flexible address mapping (Kanellopoulos et al., Utopia,
//! §4-§6; docs/schemes/utopia.md).
//!
//! * **Memory** ([`restseg`]): at boot the OS takes restrictive segments (RestSegs) out of
//!   physical memory: set-associative memory of one page size each (Table 1: one 512 MB,
//!   16-way RestSeg of 4 KiB pages and one of 2 MiB pages). The rest is the FlexSeg, managed
//!   by the buddy allocator and mapped by the radix table as on the baseline.
//! * **OS** ([`placement`]): page-fault-based allocation (§5.5): every fault of a page size a
//!   RestSeg holds takes a way of the set the VPN hashes to; a full set evicts a page chosen
//!   by DRRIP to the FlexSeg (remapped, copied through the memory hierarchy, shot down).
//! * **Tables** ([`table`]): per process, a radix table for FlexSeg pages and, per RestSeg, a
//!   tag array (TAR) and a set filter (SF) in simulated memory.
//! * **MMU** ([`rsw`]): the RestSeg walk runs beside the L2 TLB through 2 KB SF and TAR
//!   caches; a hit supplies the frame, a miss lets the radix walk (with its PWCs) start.
//!
//! * **Migration** (§5.5): walks of FlexSeg pages are counted in their PTEs (frequency and
//!   DRAM cost); a page past both thresholds moves into its RestSeg after the access. Every
//!   `decay_interval` FlexSeg walks the OS halves the counters of the next 256 MiB of PTEs
//!   (an aging pass).
//!
//! * **Restrictive-only** (`flexseg = false`, §3 Fig 6): no FlexSeg; a full set's victim is
//!   paged out to swap (`[os.swap]`).

pub mod placement;
pub mod restseg;
pub mod rsw;
pub mod table;
#[cfg(test)]
mod tests;

use super::radix::RadixWalker;
use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, SizeSet, VirtAddr, Vpn};
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mem::Hierarchy;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, PageTables, StageHit, WalkEnv};
use crate::os::FramePolicy;
use crate::pt::PtContext;
use crate::rng::{self, Rng};
use placement::RestSegPlacement;
use restseg::Layout;
use rsw::RestSegWalker;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use table::UtopiaTable;

/// One RestSeg of `[schemes.utopia]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestSegConfig {
    /// Bytes of memory: a power of two of at least `ways` pages.
    pub bytes: u64,
    /// Page size of every slot: `4K` or `2M`.
    pub page: PageSize,
    /// Associativity: a power of two, with one set's tags fitting a 64-byte line.
    pub ways: u64,
}

/// Where the slots of a RestSeg lie in its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotOrder {
    /// §5.2's `base + set × ways + way`: a set's ways are adjacent frames.
    SetMajor,
    /// `base + way × sets + set`: each way is a contiguous region. The default: with
    /// set-major order a process's consecutive pages lie `ways` frames apart and share 1/ways
    /// of the sets of a physically indexed L2 or LLC, which the paper's results do not show
    /// (docs/schemes/utopia.md, "Slot order").
    #[default]
    WayMajor,
}

/// `[schemes.utopia]`: the RestSegs and the MMU's SF and TAR caches. The FlexSeg's paging
/// path (radix levels, PWCs) is `[schemes.radix]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UtopiaConfig {
    /// The RestSegs, placed at the top of physical memory (an empty list is Radix).
    pub restsegs: Vec<RestSegConfig>,
    /// Where the slots lie in each RestSeg's memory (`way-major`, the default, or
    /// `set-major`, §5.2's formula).
    #[serde(default)]
    pub slot_order: SlotOrder,
    /// Bytes of the SF cache and of the TAR cache (Table 1: 2 KB each).
    pub sf_cache_bytes: u64,
    pub tar_cache_bytes: u64,
    /// Cycles of an SF or TAR cache access (Table 1: 2).
    pub cache_latency: u32,
    /// PTE-based migration (§5.5): a FlexSeg page moves into its RestSeg once its walks
    /// number at least `migrate_walks` (the PTE's access-frequency counter, 4 bits: 1..=15)
    /// and their DRAM references at least `migrate_dram_refs` (the cost counter, 5 bits:
    /// 0..=31). The paper gives no values; the defaults are the counters' maxima (15 and 31):
    /// lower thresholds migrate pages that the next migration into their set evicts again
    /// (docs/schemes/utopia.md, "Migration thresholds"). 0 walks turns it off.
    #[serde(default = "default_migrate_walks")]
    pub migrate_walks: u32,
    #[serde(default = "default_migrate_dram_refs")]
    pub migrate_dram_refs: u32,
    /// The page sizes whose FlexSeg pages the counters migrate (default 4 KiB only). A page
    /// of 2 MiB costs 512 times a 4 KiB page's copy and its walks save no more per walk, so
    /// thresholds that pay for a 4 KiB copy do not pay for it; 2 MiB pages enter their
    /// RestSeg at their fault (docs/schemes/utopia.md, "Huge pages"). The paper does not
    /// distinguish sizes.
    #[serde(default = "default_migrate_page_sizes")]
    pub migrate_page_sizes: Vec<PageSize>,
    /// Decay of those counters: after every `decay_interval` FlexSeg walks of a process (a
    /// performance counter of completed walks interrupting the OS on overflow), the OS reads
    /// the next 128 leaf page-table pages of the process (256 MiB of 4 KiB mappings, in
    /// address order, wrapping around) and halves both counters of their PTEs, writing the
    /// changed lines back, so a page migrates only while its walks are frequent, not once it
    /// has been walked 15 times in all. 0: no decay (the counters only grow until the page
    /// moves). The paper gives no decay; see docs/schemes/utopia.md, "Migration thresholds",
    /// for the default.
    #[serde(default = "default_decay_interval")]
    pub decay_interval: u64,
    /// Whether memory outside the RestSegs is a FlexSeg for data (true, Utopia). False is
    /// restrictive-only mapping (§3, Fig 6): data lives only in the RestSegs, a full set's
    /// victim is paged out (needs `os.swap.enabled`), and memory outside them holds only the
    /// kernel's page tables, TARs and SFs.
    #[serde(default = "default_flexseg")]
    pub flexseg: bool,
    /// Page-fault-based allocation (§5.5): a faulting page takes a slot of its RestSeg's set
    /// (true, Utopia). False: faults allocate in the FlexSeg, and pages enter the RestSegs
    /// only by PTE-based migration (Fig 19's fill from empty then waits on the counters).
    /// Needs `flexseg`.
    #[serde(default = "default_allocate_at_fault")]
    pub allocate_at_fault: bool,
}

fn default_allocate_at_fault() -> bool {
    true
}

fn default_flexseg() -> bool {
    true
}

fn default_migrate_walks() -> u32 {
    15
}

fn default_migrate_dram_refs() -> u32 {
    31
}

fn default_migrate_page_sizes() -> Vec<PageSize> {
    vec![PageSize::Size4K]
}

/// The decay interval, in FlexSeg walks of a process: 4 walks per page of a pass's window
/// (65,536 pages), so that under uniform access the counters settle near 8, half the
/// threshold (docs/schemes/utopia.md, "Migration thresholds").
pub const DEFAULT_DECAY_INTERVAL: u64 = 262_144;

/// The shortest decay interval (walks): each pass reads some 8,200 page-table lines.
pub const MIN_DECAY_INTERVAL: u64 = 1024;

fn default_decay_interval() -> u64 {
    DEFAULT_DECAY_INTERVAL
}

impl Default for UtopiaConfig {
    /// Utopia Table 1.
    fn default() -> Self {
        let seg = |page| RestSegConfig {
            bytes: 512 << 20,
            page,
            ways: 16,
        };
        UtopiaConfig {
            restsegs: vec![seg(PageSize::Size4K), seg(PageSize::Size2M)],
            slot_order: SlotOrder::WayMajor,
            sf_cache_bytes: 2048,
            tar_cache_bytes: 2048,
            cache_latency: 2,
            migrate_walks: default_migrate_walks(),
            migrate_dram_refs: default_migrate_dram_refs(),
            migrate_page_sizes: default_migrate_page_sizes(),
            decay_interval: default_decay_interval(),
            flexseg: true,
            allocate_at_fault: true,
        }
    }
}

impl UtopiaConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        for (key, bytes) in [
            ("sf_cache_bytes", self.sf_cache_bytes),
            ("tar_cache_bytes", self.tar_cache_bytes),
        ] {
            if bytes < 64 || !bytes.is_multiple_of(64) || bytes > 16 << 20 {
                return Err(Error::config(
                    format!("{path}.{key}"),
                    format!("must be a multiple of 64 bytes in 64..=16 MiB, got {bytes}"),
                ));
            }
        }
        use table::{COST_MAX, FREQUENCY_MAX};
        for (key, value, max, bits) in [
            ("migrate_walks", self.migrate_walks, FREQUENCY_MAX, 4),
            ("migrate_dram_refs", self.migrate_dram_refs, COST_MAX, 5),
        ] {
            if u64::from(value) > max {
                return Err(Error::config(
                    format!("{path}.{key}"),
                    format!("must be in 0..={max} (a {bits}-bit PTE counter), got {value}"),
                ));
            }
        }
        let decay = self.decay_interval;
        if decay != 0 && decay < MIN_DECAY_INTERVAL {
            return Err(Error::config(
                format!("{path}.decay_interval"),
                format!(
                    "must be 0 (no decay) or at least {MIN_DECAY_INTERVAL} walks, got {decay}: \
                     each aging pass reads some 8,200 page-table lines"
                ),
            ));
        }
        let mut sizes: Vec<PageSize> = self.restsegs.iter().map(|r| r.page).collect();
        sizes.sort_by_key(|s| s.index());
        sizes.dedup();
        if sizes.len() != self.restsegs.len() {
            return Err(Error::config(
                format!("{path}.restsegs"),
                "at most one RestSeg per page size (a page may live in one set of one segment)"
                    .to_string(),
            ));
        }
        if !self.flexseg && !self.restsegs.iter().any(|r| r.page == PageSize::Size4K) {
            return Err(Error::config(
                format!("{path}.flexseg"),
                format!(
                    "false (restrictive-only) needs a RestSeg of 4K pages in {path}.restsegs: \
                     every page must have a set"
                ),
            ));
        }
        if !self.flexseg && !self.allocate_at_fault {
            return Err(Error::config(
                format!("{path}.allocate_at_fault"),
                format!(
                    "false (faults allocate in the FlexSeg) needs {path}.flexseg = true: \
                     restrictive-only mapping has no FlexSeg to allocate in"
                ),
            ));
        }
        Ok(())
    }

    /// The SF and TAR caches of each core; the OS's state of each RestSeg slot, and each
    /// process's TAR and SF, which live in (host-held) table memory.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        for (key, bytes) in [
            ("sf_cache_bytes", self.sf_cache_bytes),
            ("tar_cache_bytes", self.tar_cache_bytes),
        ] {
            let lines = bytes / crate::addr::LINE_BYTES;
            uses.per_core(
                format!("{path}.{key}"),
                lines,
                "lines",
                rsw::MetaCache::SLOT_BYTES,
            );
        }
        let per_slot =
            placement::SLOT_HOST_BYTES + uses.processes() * restseg::MAX_TAR_SF_BYTES_PER_SLOT;
        for (i, seg) in self.restsegs.iter().enumerate() {
            let slots = seg.bytes / seg.page.bytes();
            uses.once(
                format!("{path}.restsegs[{i}].bytes"),
                slots,
                "slots",
                per_slot,
            );
        }
    }
}

/// The RestSegs of the system `ctx` describes.
fn layout(ctx: &BuildCtx) -> Result<Layout> {
    let va_bits = if ctx.sections.radix.levels == 5 {
        57
    } else {
        48
    };
    Layout::new(&ctx.sections.utopia, ctx.physmem_bytes, va_bits)
}

/// The MMU parts of Utopia: the FlexSeg's radix walker and the RestSeg walker.
pub struct UtopiaMmu {
    walker: RadixWalker,
    rsw: RestSegWalker,
}

impl MmuScheme for UtopiaMmu {
    type Table = UtopiaTable;
    type Shared = ();
    const NOTES_WALKS: bool = true;
    const NOTES_SIDE_HITS: bool = true;
    const SIDE_HITS_FILL_L2: bool = true;

    #[inline]
    fn side_lookup<P: PageTables<Table = UtopiaTable>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        l2_hit: bool,
        now: u64,
        tables: &P,
        mem: &mut Hierarchy,
        _: &mut (),
    ) -> (Option<StageHit>, u64) {
        if l2_hit {
            self.rsw.abort();
            return (None, 0);
        }
        // A process without a table has no RestSeg pages; the walk reports the error.
        match tables.table(asid) {
            Ok(table) => self
                .rsw
                .walk(va.vpn(), asid, table, tables.store(), now, mem),
            Err(_) => (None, 0),
        }
    }

    #[inline]
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, UtopiaTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        self.walker
            .plan(va, asid, &env.table.radix, env.store, plan)
    }

    fn invalidate(&mut self, vpn: Vpn, size: PageSize, asid: u16, _: &mut ()) {
        self.rsw.invalidate(vpn, size, asid);
    }

    fn flush(&mut self) {
        self.walker.flush();
    }

    fn reset_stats(&mut self) {
        self.walker.reset_stats();
        self.rsw.reset_stats();
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::from([
            ("pwc", stats_value(&self.walker.pwc_snapshot())),
            ("rsw", stats_value(&self.rsw.stats())),
            ("sf_cache", stats_value(&self.rsw.sf_cache())),
            ("tar_cache", stats_value(&self.rsw.tar_cache())),
        ])
    }
}

/// Utopia.
pub struct Utopia;

impl Scheme for Utopia {
    type Mmu = UtopiaMmu;

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn mmu(ctx: &BuildCtx) -> Result<UtopiaMmu> {
        let cfg = &ctx.sections.utopia;
        Ok(UtopiaMmu {
            walker: ctx.sections.radix.walker(),
            rsw: RestSegWalker::new(
                layout(ctx)?,
                cfg.sf_cache_bytes,
                cfg.tar_cache_bytes,
                u64::from(cfg.cache_latency),
                ctx.mmu.walker_entry.level(),
            ),
        })
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        let cfg = &ctx.sections.utopia;
        let migrate = (cfg.migrate_walks > 0).then_some(table::Migration {
            walks: u64::from(cfg.migrate_walks),
            dram_refs: u64::from(cfg.migrate_dram_refs),
            decay_interval: cfg.decay_interval,
            sizes: SizeSet::of(&cfg.migrate_page_sizes),
        });
        UtopiaTable::new(pt, &layout(ctx)?, ctx.sections.radix.levels, migrate)
    }

    fn frames(ctx: &BuildCtx) -> Result<Box<dyn FramePolicy>> {
        let rng = Rng::new(ctx.seed, rng::stream::PLACEMENT);
        let cfg = &ctx.sections.utopia;
        let placement = RestSegPlacement::new(layout(ctx)?, rng, cfg.allocate_at_fault);
        Ok(Box::new(if cfg.flexseg {
            placement
        } else {
            placement.restrictive_only()
        }))
    }
}
