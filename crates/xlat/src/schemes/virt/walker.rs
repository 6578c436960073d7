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
use crate::pt::host::{compose, HostTable, Segment};
use crate::pt::radix::RadixPageTable;
use crate::schemes::radix::RadixWalker;
use serde::Serialize;

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
}

impl HostPath {
    pub fn new(walker: RadixWalker, tlb: NestedTlb) -> HostPath {
        HostPath {
            walker,
            tlb,
            stats: NestedStats::default(),
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
        if let Some(seg) = host.segment.filter(|s| s.contains(gpa.0)) {
            self.stats.segment += 1;
            return Some(segment_page(&seg, gpa.0));
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
        let (pfn, size) = self.walker.walk_into(
            key,
            NESTED_ASID,
            &host.table,
            &host.store,
            plan,
            MemKind::npt_level,
            |at, _| Some(at),
        )?;
        match &mut self.tlb {
            NestedTlb::None => {}
            NestedTlb::SharedL2 => l2tlb.fill(key, NESTED_ASID, pfn, size),
            NestedTlb::Own(t) => t.insert_absent(key, NESTED_ASID, pfn, size),
        }
        Some((pfn, size))
    }

    pub fn reset_stats(&mut self) {
        self.stats = NestedStats::default();
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

/// The largest page a segment maps around `a`: a page of that size aligned on both sides
/// and wholly inside the segment (a TLB entry of it is exact).
pub fn segment_page(seg: &Segment, a: u64) -> (Pfn, PageSize) {
    let to = seg.apply(a);
    let size = PageSize::ALL
        .into_iter()
        .rev()
        .find(|s| {
            let base = a & !s.mask();
            (seg.to.wrapping_sub(seg.base)) & s.mask() == 0
                && seg.contains(base)
                && seg.contains(base + s.mask())
        })
        .unwrap_or(PageSize::Size4K);
    (Pfn((to & !size.mask()) >> 12), size)
}

/// A guest walk of `va` through `env.table` in two dimensions: returns the host page holding
/// `va`'s data, at the smaller of the guest's and the host's page sizes.
pub fn walk_2d(
    guest: &mut RadixWalker,
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
    let g = guest.walk_into(
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
    )?;
    let gpa = translate(va, g.0, g.1);
    let h = host_path.translate(gpa, host, l2tlb, plan)?;
    Some(compose(va, g, h))
}
