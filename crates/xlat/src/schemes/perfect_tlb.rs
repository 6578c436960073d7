//! `perfect-tlb`: the ideal bound (Utopia's P-TLB, §7). Every translation hits in the L1 TLB:
//! the MMU takes it from the OS's ground truth at the L1 latency, caches nothing and never
//! walks. Processes still get radix tables, so faults build them as on the baseline.

use super::radix::RadixConfig;
use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr};
use crate::error::Result;
use crate::mem::physmem::BuddyAllocator;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{MmuScheme, WalkEnv};
use crate::pt::radix::RadixPageTable;
use crate::pt::PtContext;

/// The MMU parts of the bound: none.
pub struct PerfectTlb;

impl MmuScheme for PerfectTlb {
    type Table = RadixPageTable;
    type Shared = ();
    const PERFECT: bool = true;

    fn plan_walk(
        &mut self,
        _: VirtAddr,
        _: u16,
        _: &mut WalkEnv<'_, RadixPageTable>,
        _: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        unreachable!("the MMU never walks for a perfect TLB (MmuScheme::PERFECT)")
    }
}

impl Scheme for PerfectTlb {
    type Mmu = PerfectTlb;

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn mmu(_: &BuildCtx) -> Result<PerfectTlb> {
        Ok(PerfectTlb)
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        RadixConfig::new_table(&ctx.sections.radix, pt)
    }
}
