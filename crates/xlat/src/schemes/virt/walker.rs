//! The 2D nested walk (Gandhi et al. Fig 2): the guest's radix table walked for a
//! guest-virtual address, each of its entries (and the final guest-physical address) located
//! in host memory by a host-dimension translation: the VMM segment, a cached nested
//! translation, or a walk of the nested page table. With 4-level tables on both sides and
//! nothing cached, that is 5 host walks of 4 references plus 4 guest references: 24.

use crate::addr::{translate, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::mem::MemKind;
use crate::mmu::tlb::Tlb;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{TlbLevel, WalkEnv};
use crate::pt::direct::{DirectSegment, SegmentCheck, SegmentStats};
use crate::pt::host::{compose, HostTable};
use crate::pt::radix::RadixPageTable;
use crate::schemes::radix::RadixWalker;
use serde::Serialize;

/// Cycles of one base-bound check of a direct segment: Gandhi §IX-A's estimate (1 cycle a
/// check; Table II: a VMM Direct walk makes 5, a Guest Direct walk 1).
pub const BASE_BOUND_CHECK_CYCLES: u64 = 1;

/// The address-space id nested (gPA → hPA) translations carry in a TLB: the VM's, apart from
/// every guest process's.
pub const NESTED_ASID: u16 = u16::MAX;

/// Host-dimension translations of one MMU.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct NestedStats {
    /// gPA → hPA translations the walks needed (guest table pages and data pages).
    pub translations: u64,
    /// Of those, resolved by the VMM segment (no reference).
    pub segment: u64,
    /// Resolved by a cached nested translation (nested TLB, or the L2 TLB it shares).
    pub tlb_hits: u64,
    /// Resolved by a walk of the nested page table.
    pub walks: u64,
}

/// Where cached nested translations live.
pub enum NestedTlb {
    /// Nowhere: every host translation outside the segment walks.
    None,
    /// In the L2 TLB, beside ordinary translations (x86; Gandhi et al. Table VI).
    SharedL2,
    /// In a nested TLB of their own.
    Own(Tlb),
}

/// The host dimension: the nested page table's PWCs and the cached nested translations.
pub struct HostPath {
    walker: RadixWalker,
    tlb: NestedTlb,
    pub stats: NestedStats,
    /// Checks of guest-physical addresses against the VMM segment.
    pub vmm_segment: SegmentStats,
}

impl HostPath {
    pub fn new(walker: RadixWalker, tlb: NestedTlb) -> HostPath {
        HostPath {
            walker,
            tlb,
            stats: NestedStats::default(),
            vmm_segment: SegmentStats::default(),
        }
    }

    /// The host page holding guest-physical `gpa`, appending the references it takes to
    /// `plan` (none for a segment or a TLB hit); `None` if the VMM has not mapped it.
    pub fn translate(
        &mut self,
        gpa: PhysAddr,
        host: &HostTable,
        l2tlb: &mut TlbLevel,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        self.stats.translations += 1;
        if let Some(ds) = &host.segment {
            plan.fixed_cycles += BASE_BOUND_CHECK_CYCLES;
            let check = ds.check(gpa.0);
            self.vmm_segment.count(check);
            if check == SegmentCheck::Hit {
                self.stats.segment += 1;
                return Some(segment_page(ds, gpa.0));
            }
        }
        let key = VirtAddr(gpa.0);
        let cached = match &mut self.tlb {
            NestedTlb::None => None,
            NestedTlb::SharedL2 => {
                plan.fixed_cycles += l2tlb.latency();
                l2tlb.lookup(key, NESTED_ASID)
            }
            NestedTlb::Own(t) => {
                plan.fixed_cycles += t.latency();
                t.lookup(key, NESTED_ASID)
            }
        };
        if cached.is_some() {
            self.stats.tlb_hits += 1;
            return cached;
        }
        self.stats.walks += 1;
        let Some((pfn, size)) = self.walker.walk_into(
            key,
            NESTED_ASID,
            &host.table,
            &host.store,
            plan,
            MemKind::npt_level,
            |at, _| Some(at),
        ) else {
            // An EPT violation: the VMM backs the page, and the walk is made again.
            plan.host_fault = Some(gpa);
            return None;
        };
        match &mut self.tlb {
            NestedTlb::None => {}
            NestedTlb::SharedL2 => l2tlb.fill(key, NESTED_ASID, pfn, size),
            NestedTlb::Own(t) => t.insert_absent(key, NESTED_ASID, pfn, size),
        }
        Some((pfn, size))
    }

    pub fn reset_stats(&mut self) {
        self.stats = NestedStats::default();
        self.vmm_segment = SegmentStats::default();
        self.walker.reset_stats();
        if let NestedTlb::Own(t) = &mut self.tlb {
            t.reset_stats();
        }
    }

    pub fn walker(&self) -> &RadixWalker {
        &self.walker
    }

    pub fn own_tlb(&self) -> Option<&Tlb> {
        match &self.tlb {
            NestedTlb::Own(t) => Some(t),
            _ => None,
        }
    }
}

/// The page a TLB entry for a segment translation of `a` maps: the largest aligned on both
/// sides and wholly inside the segment, or 4 KiB if pages escape it (a larger entry could
/// cover one).
pub fn segment_page(ds: &DirectSegment, a: u64) -> (Pfn, PageSize) {
    let seg = &ds.regs;
    let to = seg.apply(a);
    let size = PageSize::ALL
        .into_iter()
        .rev()
        .find(|s| {
            let base = a & !s.mask();
            ds.filter.entries() == 0
                && (seg.to.wrapping_sub(seg.base)) & s.mask() == 0
                && seg.contains(base)
                && seg.contains(base + s.mask())
        })
        .unwrap_or(PageSize::Size4K);
    (Pfn((to & !size.mask()) >> 12), size)
}

/// The 4 KiB page the process's direct segment maps `va` to, counting the check in `stats`;
/// `None` where paging must translate it. Its TLB entry is of 4 KiB: the paper's prototype
/// maps segments with 4 KiB pages (§VI-B) and Table I inserts "an L1 TLB entry" without a
/// size; a larger entry (the segment is contiguous) would hide L1 TLB misses the paper's
/// counters saw.
pub fn guest_segment_page(
    segment: Option<&DirectSegment>,
    va: VirtAddr,
    stats: &mut SegmentStats,
) -> Option<(Pfn, PageSize)> {
    let ds = segment?;
    let check = ds.check(va.0);
    stats.count(check);
    (check == SegmentCheck::Hit).then(|| (Pfn(ds.apply(va.0) >> 12), PageSize::Size4K))
}

/// Dual Direct (Table I, "Both"): `va` inside the guest segment and its guest-physical
/// address inside the VMM segment, both let through by their escape filters, translate by
/// two additions with no walk: the host page and its size.
pub fn dual_direct(
    segment: Option<&DirectSegment>,
    host: Option<&HostTable>,
    va: VirtAddr,
) -> Option<(Pfn, PageSize)> {
    let (ds, vds) = (segment?, host?.segment.as_ref()?);
    if ds.check(va.0) != SegmentCheck::Hit {
        return None;
    }
    let gpa = ds.apply(va.0);
    let g = (Pfn(gpa >> 12), PageSize::Size4K);
    if vds.check(gpa) != SegmentCheck::Hit {
        return None;
    }
    Some(compose(va, g, segment_page(vds, gpa)))
}

/// A guest walk of `va` through `env.table` in two dimensions: returns the host page holding
/// `va`'s data, at the smaller of the guest's and the host's page sizes. With a guest
/// segment mapping `va` (Guest Direct mode, Table I "Guest segment only"), the first
/// dimension is one addition and only the data's host translation remains.
pub fn walk_2d(
    guest: &mut RadixWalker,
    guest_segment: &mut SegmentStats,
    host_path: &mut HostPath,
    va: VirtAddr,
    asid: u16,
    env: &mut WalkEnv<'_, RadixPageTable>,
    plan: &mut WalkPlan,
) -> Option<(Pfn, PageSize)> {
    plan.clear();
    let host = env
        .host
        .expect("a virtualized scheme runs on a VMM (Scheme::vmm)");
    let l2tlb = &mut *env.l2tlb;
    if env.segment.is_some() {
        plan.fixed_cycles += BASE_BOUND_CHECK_CYCLES;
    }
    let g = match guest_segment_page(env.segment, va, guest_segment) {
        Some(g) => g,
        None => guest.walk_into(
            va,
            asid,
            env.table,
            env.store,
            plan,
            MemKind::pt_level,
            |gpa, plan| {
                let page = host_path.translate(gpa, host, l2tlb, plan)?;
                Some(translate(VirtAddr(gpa.0), page.0, page.1))
            },
        )?,
    };
    let gpa = translate(va, g.0, g.1);
    let h = host_path.translate(gpa, host, l2tlb, plan)?;
    Some(compose(va, g, h))
}
