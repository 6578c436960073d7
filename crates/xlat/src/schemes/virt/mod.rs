//! `virt`: a guest running on a VMM (Gandhi et al., "Efficient Memory Virtualization", §II-A,
//! §III, Fig 2): the guest OS's radix tables map guest-virtual to guest-physical memory, the
//! VMM's nested page table maps guest-physical to host-physical memory, and a TLB miss walks
//! both (the 2D walk). Guest and host page sizes are chosen independently: the guest's by the
//! OS's `thp`/`hugetlb_1g`, the host's by `schemes.virt.host_page`. docs/schemes/virt.md.

pub mod walker;

use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr, BASE_PAGE_BYTES};
use crate::assoc::Replacement;
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mem::Hierarchy;
use crate::mmu::config::TlbConfig;
use crate::mmu::tlb::Tlb;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, PageTables, StageHit, WalkEnv};
use crate::os::vmm::{GuestLayout, Vmm, VmmConfig};
use crate::pt::direct::SegmentStats;
use crate::pt::radix::RadixPageTable;
use crate::pt::PtContext;
use crate::schemes::radix::RadixWalker;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use walker::{HostPath, NestedTlb};

const GIB: u64 = 1 << 30;

/// `[schemes.virt]`: the VMM and the host dimension of the walk. The guest's table and its
/// page-walk caches are `[schemes.radix]`'s.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VirtConfig {
    /// Bytes of host physical memory; 0 sizes it to the guest's physical address space
    /// (I/O gap included) plus 1 GiB for the nested tables, rounded up to a GiB.
    pub host_bytes: u64,
    /// The page size the VMM backs guest memory with: `"4K"`, `"2M"` or `"1G"`.
    pub host_page: PageSize,
    /// FMFI (at order 9) of host memory when the VM starts (0: unfragmented).
    pub host_fragmentation: f64,
    /// Cycles one EPT violation costs the guest: the exit to the VMM, its fault handling and
    /// the re-entry (an estimate; the paper gives none).
    pub ept_fault_cycles: u64,
    /// Guest-physical memory has the x86-64 I/O gap at 3-4 GiB (§IV).
    pub io_gap: bool,
    /// Relocate the guest's memory below the gap above 4 GiB (all but 256 MiB for its kernel,
    /// §IV, §VI-C), so one VMM segment can map it all.
    pub relocate_io_gap: bool,
    /// The VMM maps guest memory above the I/O gap with a direct segment (VMM Direct and Dual
    /// Direct modes, §III-A/B): host translations inside it take no memory reference.
    pub vmm_segment: bool,
    /// Guest-physical memory past the guest's own that the VMM ballooned out at boot and can
    /// hot-plug for self-ballooning (§IV, §VI-C: the paper extends the KVM slot by the
    /// machine's memory); a multiple of 2 MiB.
    pub balloon_reserve_bytes: u64,
    /// Host pages with hard faults inside the VMM segment (Gandhi §V, Fig 13), placed at
    /// random (`seed`): their guest pages escape the segment through the escape filter.
    pub vmm_bad_pages: u32,
    /// Bits and H3 hashes of each escape filter (§IX-C: 256 bits, 4 hashes).
    pub escape_filter_bits: u32,
    pub escape_filter_hashes: u32,
    /// Shadow paging (scheme `shadow`): cycles of one trap of a guest page-table write (VM exit,
    /// the VMM's shadow update, VM entry; an estimate, the paper gives none).
    pub shadow_exit_cycles: u64,
    /// Page-walk caches of the nested page table (keyed by guest-physical address), one per
    /// non-leaf level; `entries = 0` removes them.
    pub host_pwc: TlbConfig,
    /// Nested (gPA → hPA) translations are cached in the L2 TLB beside ordinary ones, as on
    /// the paper's machine (Table VI: "EPT TLB/NTLB shares the TLB").
    pub nested_in_l2tlb: bool,
    /// A nested TLB of its own for them (`entries = 0`: none). With both off, every host
    /// translation outside a segment walks the nested table.
    pub nested_tlb: TlbConfig,
}

impl Default for VirtConfig {
    fn default() -> Self {
        let pwc = TlbConfig {
            entries: 32,
            ways: 32,
            latency: 2,
            replacement: Replacement::Lru,
            page_sizes: vec![PageSize::Size4K],
        };
        VirtConfig {
            host_bytes: 0,
            host_page: PageSize::Size4K,
            host_fragmentation: 0.0,
            ept_fault_cycles: 5000,
            io_gap: true,
            relocate_io_gap: false,
            vmm_segment: false,
            balloon_reserve_bytes: 0,
            vmm_bad_pages: 0,
            escape_filter_bits: 256,
            escape_filter_hashes: 4,
            shadow_exit_cycles: 3000,
            host_pwc: pwc.clone(),
            nested_in_l2tlb: true,
            nested_tlb: TlbConfig { entries: 0, ..pwc },
        }
    }
}

impl VirtConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if !(0.0..=0.95).contains(&self.host_fragmentation) {
            return Err(Error::config(
                format!("{path}.host_fragmentation"),
                format!("must be in 0.0..=0.95, got {}", self.host_fragmentation),
            ));
        }
        if self.host_bytes != 0 && !self.host_bytes.is_multiple_of(GIB) {
            return Err(Error::config(
                format!("{path}.host_bytes"),
                format!("must be 0 or a multiple of 1 GiB, got {}", self.host_bytes),
            ));
        }
        crate::pt::direct::check_escapes(
            (
                &format!("{path}.escape_filter_bits"),
                self.escape_filter_bits,
            ),
            (
                &format!("{path}.escape_filter_hashes"),
                self.escape_filter_hashes,
            ),
            (&format!("{path}.vmm_bad_pages"), self.vmm_bad_pages),
        )?;
        if !self.balloon_reserve_bytes.is_multiple_of(2 << 20) {
            return Err(Error::config(
                format!("{path}.balloon_reserve_bytes"),
                format!(
                    "must be a multiple of 2 MiB, got {}",
                    self.balloon_reserve_bytes
                ),
            ));
        }
        if self.vmm_bad_pages > 0 && !self.vmm_segment {
            return Err(Error::config(
                format!("{path}.vmm_bad_pages"),
                "bad pages escape the VMM segment: set vmm_segment = true",
            ));
        }
        if self.relocate_io_gap && !self.io_gap {
            return Err(Error::config(
                format!("{path}.relocate_io_gap"),
                "there is no I/O gap to relocate (io_gap = false)",
            ));
        }
        self.host_pwc.validate(&format!("{path}.host_pwc"))?;
        self.nested_tlb.validate(&format!("{path}.nested_tlb"))
    }

    /// The nested page table's PWCs (one per non-leaf level) and the nested TLB of each core.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        let levels = (3 * uses.cores(), "one per PWC level and core");
        let slot = RadixWalker::PWC_SLOT_BYTES;
        self.host_pwc
            .host_use(&format!("{path}.host_pwc"), slot, levels, uses);
        let per_core = (uses.cores(), "one per core");
        self.nested_tlb.host_use(
            &format!("{path}.nested_tlb"),
            Tlb::SLOT_BYTES,
            per_core,
            uses,
        );
    }

    /// Whether the VMM's memory is sized to its guest's (`host_bytes = 0`): it then backs
    /// each frame of guest memory with one of its own, and the frame state of the guest's
    /// memory (its `os.physmem.bytes`) is kept twice.
    pub fn backs_guest(&self) -> bool {
        self.host_bytes == 0
    }

    /// The frame state of the VMM's host memory and of the guest's balloon reserve, for a
    /// scheme that runs the OS on a VMM with `guest_bytes` of memory (the frames of the
    /// guest's own memory are `os.physmem.bytes`'s: [`VirtConfig::backs_guest`]).
    pub fn vmm_host_uses(&self, path: &str, guest_bytes: u64, uses: &mut HostUses) {
        let per_frame = crate::os::HOST_BYTES_PER_FRAME;
        let frames = |bytes: u64| bytes / BASE_PAGE_BYTES;
        let (reserve_copies, host) = if self.backs_guest() {
            // The host memory beyond the guest's frames and reserve: the I/O gap, rounding
            // and the 1 GiB for the nested tables.
            let host = self.vmm(guest_bytes, false).host_bytes;
            let beyond = host.saturating_sub(guest_bytes + self.balloon_reserve_bytes);
            ((2, "in the guest's memory and the VMM's"), beyond)
        } else {
            ((1, ""), self.host_bytes)
        };
        let reserve = frames(self.balloon_reserve_bytes);
        let key = format!("{path}.balloon_reserve_bytes");
        uses.add(key, reserve, "4 KiB frames", per_frame, reserve_copies);
        uses.once(
            format!("{path}.host_bytes"),
            frames(host),
            "4 KiB frames",
            per_frame,
        );
    }

    /// The VMM of a guest with `guest_bytes` of memory; `shadow`: it shadows the guest's
    /// tables instead of offering nested paging to the hardware.
    pub fn vmm(&self, guest_bytes: u64, shadow: bool) -> VmmConfig {
        let host_bytes = if self.host_bytes > 0 {
            self.host_bytes
        } else {
            let layout = GuestLayout::of(
                guest_bytes,
                self.io_gap,
                self.relocate_io_gap,
                self.balloon_reserve_bytes,
            );
            (layout.frames * 4096).div_ceil(GIB) * GIB + GIB
        };
        VmmConfig {
            host_bytes,
            host_page: self.host_page,
            host_fragmentation: self.host_fragmentation,
            ept_fault_cycles: self.ept_fault_cycles,
            io_gap: self.io_gap,
            relocate_io_gap: self.relocate_io_gap,
            segment: self.vmm_segment,
            balloon_reserve_bytes: self.balloon_reserve_bytes,
            bad_pages: self.vmm_bad_pages,
            filter_bits: self.escape_filter_bits,
            filter_hashes: self.escape_filter_hashes,
            shadow,
            shadow_exit_cycles: self.shadow_exit_cycles,
        }
    }

    fn host_path(&self) -> HostPath {
        let pwc = Some(&self.host_pwc);
        let tlb = if self.nested_tlb.entries > 0 {
            NestedTlb::Own(Tlb::new(&self.nested_tlb))
        } else if self.nested_in_l2tlb {
            NestedTlb::SharedL2
        } else {
            NestedTlb::None
        };
        HostPath::new(RadixWalker::new([pwc, pwc, pwc, None]), tlb)
    }
}

/// The MMU parts of a virtualized core: the guest's page-walk caches, the host path, and
/// the segment checks of the paper's modes.
pub struct NestedWalker {
    guest: RadixWalker,
    host: HostPath,
    /// Walks' checks of the guest segment (Guest Direct).
    guest_segment: SegmentStats,
    /// L1 TLB misses Dual Direct translated by its two segments.
    dual_direct_hits: u64,
}

impl NestedWalker {
    pub fn new(guest: RadixWalker, host: HostPath) -> NestedWalker {
        NestedWalker {
            guest,
            host,
            guest_segment: SegmentStats::default(),
            dual_direct_hits: 0,
        }
    }
}

/// Cycles of a segment translation beside the L2 TLB: its base-bound checks, made in
/// parallel (Dual Direct's two comparators, Table II: 1 check), and the addition.
const SEGMENT_CYCLES: u64 = walker::BASE_BOUND_CHECK_CYCLES;

/// What a side path of segment registers answers: the page a segment translated, if any.
fn segment_hit(page: Option<(Pfn, PageSize)>) -> (Option<StageHit>, u64) {
    match page {
        Some((pfn, size)) => {
            let hit = StageHit {
                pfn,
                size,
                latency: SEGMENT_CYCLES,
            };
            (Some(hit), SEGMENT_CYCLES)
        }
        None => (None, 0),
    }
}

impl MmuScheme for NestedWalker {
    type Table = RadixPageTable;
    type Shared = ();

    /// Dual Direct: on an L1 TLB miss, the two segments translate the address if both map it.
    fn side_lookup<P: PageTables<Table = RadixPageTable>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _l2_hit: bool,
        _now: u64,
        tables: &P,
        _mem: &mut Hierarchy,
        _shared: &mut (),
    ) -> (Option<StageHit>, u64) {
        let page = walker::dual_direct(tables.segment(asid), tables.host(), va);
        self.dual_direct_hits += page.is_some() as u64;
        segment_hit(page)
    }

    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, RadixPageTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        walker::walk_2d(
            &mut self.guest,
            &mut self.guest_segment,
            &mut self.host,
            va,
            asid,
            env,
            plan,
        )
    }

    /// A guest shootdown changes guest mappings only: the guest PWCs go, the nested
    /// translations and host PWCs stay (the VMM never remaps a backed page here).
    fn flush(&mut self) {
        self.guest.flush();
    }

    fn reset_stats(&mut self) {
        self.guest.reset_stats();
        self.host.reset_stats();
        self.guest_segment = SegmentStats::default();
        self.dual_direct_hits = 0;
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        let mut s = BTreeMap::from([
            ("pwc", stats_value(&self.guest.pwc_snapshot())),
            ("host_pwc", stats_value(&self.host.walker().pwc_snapshot())),
            ("nested", stats_value(&self.host.stats)),
            ("vmm_segment", stats_value(&self.host.vmm_segment)),
            ("guest_segment", stats_value(&self.guest_segment)),
            ("dual_direct_hits", self.dual_direct_hits.into()),
        ]);
        if let Some(t) = self.host.own_tlb() {
            s.insert("nested_tlb", stats_value(&t.stats()));
        }
        s
    }
}

/// A virtualized system: guest radix tables over the VMM's nested page table.
pub struct Virt;

impl Scheme for Virt {
    const VIRTUALIZED: bool = true;

    type Mmu = NestedWalker;

    fn mmu(ctx: &BuildCtx) -> Result<NestedWalker> {
        Ok(NestedWalker::new(
            ctx.sections.radix.walker(),
            ctx.sections.virt.host_path(),
        ))
    }

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        ctx.sections.radix.new_table(pt)
    }

    fn vmm(ctx: &BuildCtx) -> Result<Option<Vmm>> {
        let cfg = ctx.sections.virt.vmm(ctx.physmem_bytes, false);
        Vmm::new(&cfg, ctx.physmem_bytes, ctx.seed).map(Some)
    }
}

#[cfg(test)]
mod tests;

/// The MMU parts of unvirtualized Direct Segment mode (Gandhi §III-D; Basu et al. ISCA'13):
/// the radix walker, and the segment registers checked beside the L2 TLB.
pub struct SegmentedRadix {
    radix: RadixWalker,
    segment: SegmentStats,
}

impl MmuScheme for SegmentedRadix {
    type Table = RadixPageTable;
    type Shared = ();

    /// On an L1 TLB miss, the process's segment translates the addresses it maps (§III-D:
    /// "in parallel with the L2 TLB ... and introduces a L1 TLB entry").
    fn side_lookup<P: PageTables<Table = RadixPageTable>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _l2_hit: bool,
        _now: u64,
        tables: &P,
        _mem: &mut Hierarchy,
        _shared: &mut (),
    ) -> (Option<StageHit>, u64) {
        segment_hit(walker::guest_segment_page(
            tables.segment(asid),
            va,
            &mut self.segment,
        ))
    }

    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, RadixPageTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        self.radix.plan(va, asid, env.table, env.store, plan)
    }

    fn flush(&mut self) {
        self.radix.flush();
    }

    fn reset_stats(&mut self) {
        self.radix.reset_stats();
        self.segment = SegmentStats::default();
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::from([
            ("pwc", stats_value(&self.radix.pwc_snapshot())),
            ("segment", stats_value(&self.segment)),
        ])
    }
}

/// Unvirtualized direct segments: radix paging plus a segment for each process's primary
/// region (`os.direct_segment`).
pub struct DirectSegments;

impl Scheme for DirectSegments {
    type Mmu = SegmentedRadix;

    fn mmu(ctx: &BuildCtx) -> Result<SegmentedRadix> {
        Ok(SegmentedRadix {
            radix: ctx.sections.radix.walker(),
            segment: SegmentStats::default(),
        })
    }

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        ctx.sections.radix.new_table(pt)
    }
}

/// The MMU parts of shadow paging (§II-A, §IX-D): the hardware walks the VMM's shadow table
/// of the process (gVA → hPA) in one dimension, with the radix walker and its PWCs.
pub struct ShadowWalker {
    radix: RadixWalker,
}

impl MmuScheme for ShadowWalker {
    type Table = RadixPageTable;
    type Shared = ();

    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, RadixPageTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        let host = env.host.expect("shadow paging runs on a VMM (Scheme::vmm)");
        let shadow = &host.shadows[asid as usize];
        self.radix.plan(va, asid, shadow, &host.store, plan)
    }

    fn flush(&mut self) {
        self.radix.flush();
    }

    fn reset_stats(&mut self) {
        self.radix.reset_stats();
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::from([("pwc", stats_value(&self.radix.pwc_snapshot()))])
    }
}

/// Shadow paging: a guest on a VMM that keeps shadow tables and traps the guest's page-table
/// writes (the comparator of Gandhi et al. §IX-D).
pub struct Shadow;

impl Scheme for Shadow {
    const VIRTUALIZED: bool = true;

    type Mmu = ShadowWalker;

    fn mmu(ctx: &BuildCtx) -> Result<ShadowWalker> {
        Ok(ShadowWalker {
            radix: ctx.sections.radix.walker(),
        })
    }

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        ctx.sections.radix.new_table(pt)
    }

    fn vmm(ctx: &BuildCtx) -> Result<Option<Vmm>> {
        let cfg = ctx.sections.virt.vmm(ctx.physmem_bytes, true);
        Vmm::new(&cfg, ctx.physmem_bytes, ctx.seed).map(Some)
    }
}
