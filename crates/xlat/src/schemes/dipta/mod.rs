//! `dipta`: set-associative virtual memory with a hardware page table and way prediction
//! (DIPTA, Picorel et al., PACT'17), idealised as SPARTA's comparison assumes (SPARTA §7.7:
//! "an idealized DRAM-based DIPTA that does not incur any DRAM overhead").
//!
//! * **Placement**: physical memory is `sets` sets of `ways` consecutive frames; the 4 KiB
//!   page `vpn` may live only in set `vpn % sets`, in any of its ways (a frame policy over the
//!   buddy allocator: a way is taken if its frame is free). A full set refuses: the OS reports
//!   the conflict (or pages out, with swapping). Huge pages are refused (base pages only).
//! * **Hardware page table**: each process's table holds the way of each of its pages
//!   ([`DiptaTable`]); idealised, reading it costs no memory reference and no cycle.
//! * **Way prediction**: the request goes to its set's memory by virtual address; a way
//!   predictor (a tagless table of last ways, indexed by the page number, shared by every
//!   core) picks the way whose data is read at once. Right, translation is free; wrong, the
//!   controller has read the wrong frame's line in vain before the right one (a DRAM read at
//!   the controller). The predictor learns the right way either way.

#[cfg(test)]
mod tests;

use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr, Vpn, BASE_PAGE_SHIFT};
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mem::{Hierarchy, MemKind};
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, PageTables, StageHit, WalkEnv};
use crate::os::FramePolicy;
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[schemes.dipta]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiptaConfig {
    /// Frames a page may choose from (SPARTA §7.7: 4 ways suffice for one program, a
    /// multi-programmed mix needs 16), 1 to 64.
    pub ways: u32,
    /// Entries of the way predictor (a power of two).
    pub predictor_entries: u32,
    /// Cycles of a way-predictor lookup.
    pub predictor_latency: u32,
}

impl Default for DiptaConfig {
    fn default() -> Self {
        DiptaConfig {
            ways: 4,
            predictor_entries: 65536,
            predictor_latency: 1,
        }
    }
}

impl DiptaConfig {
    pub fn is_default(&self) -> bool {
        *self == DiptaConfig::default()
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        if !(1..=64).contains(&self.ways) {
            return Err(Error::config(
                format!("{path}.ways"),
                format!("must be 1 to 64, got {}", self.ways),
            ));
        }
        crate::config::pow2(
            format!("{path}.predictor_entries"),
            "predictor entries",
            self.predictor_entries.into(),
        )?;
        crate::config::nonzero(
            format!("{path}.predictor_latency"),
            self.predictor_latency.into(),
        )
    }

    /// The way predictor, once.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        uses.once(
            format!("{path}.predictor_entries"),
            self.predictor_entries.into(),
            "way-predictor entries",
            1,
        );
    }
}

/// Sets and ways of a system's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub sets: u64,
    pub ways: u64,
}

impl Geometry {
    pub fn new(cfg: &DiptaConfig, physmem_bytes: u64) -> Result<Geometry> {
        let ways = u64::from(cfg.ways);
        let sets = (physmem_bytes >> BASE_PAGE_SHIFT) / ways;
        if sets == 0 {
            return Err(Error::config(
                "schemes.dipta.ways",
                format!("{ways} ways need at least that many frames of os.physmem.bytes"),
            ));
        }
        Ok(Geometry { sets, ways })
    }

    #[inline]
    pub fn set_of(&self, vpn: Vpn) -> u64 {
        vpn.0 % self.sets
    }

    /// The frame of way `way` of `vpn`'s set.
    #[inline]
    pub fn frame(&self, vpn: Vpn, way: u64) -> Pfn {
        Pfn(self.set_of(vpn) * self.ways + way)
    }
}

/// The frame policy: a free way of the page's set.
pub struct SetFrames {
    geo: Geometry,
    conflicts: u64,
    last_refusal: Option<u64>,
}

impl FramePolicy for SetFrames {
    fn frame(
        &mut self,
        buddy: &mut BuddyAllocator,
        _: u16,
        vpn: Vpn,
        size: PageSize,
    ) -> Option<Pfn> {
        self.last_refusal = None;
        if size != PageSize::Size4K {
            return None;
        }
        let found = (0..self.geo.ways)
            .map(|w| self.geo.frame(vpn, w))
            .find(|&pfn| buddy.alloc_at(pfn, 0));
        if found.is_none() {
            self.conflicts += 1;
            self.last_refusal = Some(self.geo.set_of(vpn));
        }
        found
    }

    /// Each page goes to a frame of its own set.
    fn places_each_page(&self) -> bool {
        true
    }

    fn refusal(&self) -> Option<String> {
        let set = self.last_refusal?;
        Some(format!(
            "DIPTA set {set} has all {} ways taken (schemes.dipta.ways)",
            self.geo.ways
        ))
    }

    fn stats(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "set_conflicts": self.conflicts }))
    }
}

/// The hardware page table: for each frame, the tag of the page in it (valid, address space,
/// page number), one word a frame, as DIPTA keeps it beside the data. Idealised, it takes no
/// physical memory and reading it costs nothing: its words are kept in the table store at
/// frame numbers above physical memory, which no access reaches. Every process's
/// `DiptaTable` reads and writes the same words (a set is shared by all address spaces).
pub struct DiptaTable {
    geo: Geometry,
    asid: u16,
    /// Byte address of frame 0's tag.
    base: u64,
}

const VALID: u64 = 1 << 63;

impl DiptaTable {
    fn tag(&self, vpn: Vpn) -> u64 {
        VALID | (u64::from(self.asid) << 44) | vpn.0
    }

    fn tag_addr(&self, pfn: Pfn) -> PhysAddr {
        PhysAddr(self.base + pfn.0 * 8)
    }

    /// The frame of `vpn`, found by comparing the tags of its set's ways.
    fn find(&self, store: &PtStore, vpn: Vpn) -> Option<Pfn> {
        let want = self.tag(vpn);
        (0..self.geo.ways)
            .map(|w| self.geo.frame(vpn, w))
            .find(|&pfn| store.read(self.tag_addr(pfn)) == want)
    }

    /// The frame of `va`'s page, read with no memory reference (the idealisation).
    pub fn lookup(&self, store: &PtStore, va: VirtAddr) -> Option<Pfn> {
        self.find(store, va.vpn())
    }
}

impl PageTable for DiptaTable {
    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        let set = self.geo.set_of(vpn);
        if size != PageSize::Size4K || pfn.0 / self.geo.ways != set {
            return Err(Error::Verify(format!(
                "DIPTA maps page {vpn:?} ({size:?}) of set {set} to frame {pfn:?} of set {}",
                pfn.0 / self.geo.ways
            )));
        }
        let at = self.tag_addr(pfn);
        if !ctx.store.holds(at.pfn()) {
            ctx.store.zero_frame(at.pfn());
        }
        ctx.store.write(at, self.tag(vpn));
        Ok(())
    }

    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, _: PageSize) -> Option<Pfn> {
        let pfn = self.find(ctx.store, vpn)?;
        ctx.store.write(self.tag_addr(pfn), 0);
        Some(pfn)
    }

    /// Idealised: the hardware table takes no memory.
    fn bytes(&self) -> u64 {
        0
    }

    fn table_pages(&self) -> u64 {
        0
    }

    fn read_mapping(&self, store: &PtStore, va: VirtAddr) -> Option<Option<(Pfn, PageSize)>> {
        Some(self.lookup(store, va).map(|p| (p, PageSize::Size4K)))
    }

    /// Move the page's tag to another way of its set (swapping with what is there), so the
    /// table names the wrong frame.
    fn corrupt(&self, store: &mut PtStore, vpn: Vpn, _: PageSize) -> bool {
        let Some(pfn) = self.find(store, vpn) else {
            return false;
        };
        if self.geo.ways < 2 {
            return false;
        }
        let other = self
            .geo
            .frame(vpn, (pfn.0 % self.geo.ways + 1) % self.geo.ways);
        let (a, b) = (self.tag_addr(pfn), self.tag_addr(other));
        if !store.holds(b.pfn()) {
            store.zero_frame(b.pfn());
        }
        let (ta, tb) = (store.read(a), store.read(b));
        store.write(a, tb);
        store.write(b, ta);
        true
    }
}

/// The way predictor, at the memory side, shared by every core.
pub struct WayPredictor {
    last: Vec<u8>,
    latency: u64,
    stats: PredictorStats,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
struct PredictorStats {
    predictions: u64,
    correct: u64,
    wrong: u64,
}

/// DIPTA's MMU part: its geometry (the predictor is shared).
pub struct DiptaMmu {
    geo: Geometry,
}

impl MmuScheme for DiptaMmu {
    type Table = DiptaTable;
    type Shared = WayPredictor;

    /// The predicted way's data is read; a wrong prediction costs that read before the
    /// right way's (the data access that follows).
    fn side_lookup<P: PageTables<Table = DiptaTable>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _l2_hit: bool,
        now: u64,
        tables: &P,
        mem: &mut Hierarchy,
        shared: &mut WayPredictor,
    ) -> (Option<StageHit>, u64) {
        let lat = shared.latency;
        let store = tables.store();
        let Some(pfn) = tables.table(asid).ok().and_then(|t| t.lookup(store, va)) else {
            return (None, lat);
        };
        let vpn = va.vpn();
        let slot = (vpn.0 as usize ^ (vpn.0 >> 20) as usize) & (shared.last.len() - 1);
        let way = pfn.0 % self.geo.ways;
        let predicted = u64::from(shared.last[slot]);
        shared.stats.predictions += 1;
        let mut latency = lat;
        if predicted == way {
            shared.stats.correct += 1;
        } else {
            shared.stats.wrong += 1;
            let wrong = self.geo.frame(vpn, predicted.min(self.geo.ways - 1));
            let line = PhysAddr((wrong.0 << BASE_PAGE_SHIFT) | (va.0 & 0xfc0));
            let channel = mem.dram.decode(line).channel;
            latency += mem.controller_read(channel, line, MemKind::DATA, now + lat);
            shared.last[slot] = way as u8;
        }
        let hit = StageHit {
            pfn,
            size: PageSize::Size4K,
            latency,
        };
        (Some(hit), latency)
    }

    /// Reached only for an unmapped page (the side path answers every mapped one).
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        _asid: u16,
        env: &mut WalkEnv<'_, DiptaTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        plan.clear();
        env.table
            .lookup(env.store, va)
            .map(|p| (p, PageSize::Size4K))
    }

    fn shared_stats(shared: &WayPredictor) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::from([("way_predictor", stats_value(&shared.stats))])
    }

    fn reset_shared_stats(shared: &mut WayPredictor) {
        shared.stats = PredictorStats::default();
    }
}

pub struct Dipta;

impl Scheme for Dipta {
    type Mmu = DiptaMmu;

    fn mmu(ctx: &BuildCtx) -> Result<DiptaMmu> {
        Ok(DiptaMmu {
            geo: Geometry::new(&ctx.sections.dipta, ctx.physmem_bytes)?,
        })
    }

    fn shared(ctx: &BuildCtx, _: &mut BuddyAllocator) -> Result<WayPredictor> {
        let cfg = &ctx.sections.dipta;
        Ok(WayPredictor {
            last: vec![0; cfg.predictor_entries as usize],
            latency: cfg.predictor_latency.into(),
            stats: PredictorStats::default(),
        })
    }

    fn new_table(ctx: &BuildCtx, _: &mut PtContext, pid: u16) -> Result<TableOf<Self>> {
        Ok(DiptaTable {
            geo: Geometry::new(&ctx.sections.dipta, ctx.physmem_bytes)?,
            asid: pid,
            // The first whole frame above physical memory.
            base: ctx.physmem_bytes.div_ceil(4096) * 4096,
        })
    }

    fn frames(ctx: &BuildCtx) -> Result<Box<dyn FramePolicy>> {
        Ok(Box::new(SetFrames {
            geo: Geometry::new(&ctx.sections.dipta, ctx.physmem_bytes)?,
            conflicts: 0,
            last_refusal: None,
        }))
    }
}
