//! `virt`: a guest running on a VMM (Gandhi et al., "Efficient Memory Virtualization", §II-A,
//! §III, Fig 2): the guest OS's radix tables map guest-virtual to guest-physical memory, the
//! VMM's nested page table maps guest-physical to host-physical memory, and a TLB miss walks
//! both (the 2D walk). Guest and host page sizes are chosen independently: the guest's by the
//! OS's `thp`/`hugetlb_1g`, the host's by `schemes.virt.host_page`. docs/schemes/virt.md.

pub mod walker;

use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr};
use crate::assoc::Replacement;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mmu::config::TlbConfig;
use crate::mmu::tlb::Tlb;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, WalkEnv};
use crate::os::vmm::{GuestLayout, Vmm, VmmConfig};
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
            host_pwc: pwc.clone(),
            nested_in_l2tlb: true,
            nested_tlb: TlbConfig {
                entries: 0,
                ..pwc
            },
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
        if self.relocate_io_gap && !self.io_gap {
            return Err(Error::config(
                format!("{path}.relocate_io_gap"),
                "there is no I/O gap to relocate (io_gap = false)",
            ));
        }
        self.host_pwc.validate(&format!("{path}.host_pwc"))?;
        self.nested_tlb.validate(&format!("{path}.nested_tlb"))
    }

    /// The VMM of a guest with `guest_bytes` of memory.
    pub fn vmm(&self, guest_bytes: u64) -> VmmConfig {
        let host_bytes = if self.host_bytes > 0 {
            self.host_bytes
        } else {
            let layout = GuestLayout::of(guest_bytes, self.io_gap, self.relocate_io_gap);
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

/// The MMU parts of a virtualized core: the guest's page-walk caches and the host path.
pub struct NestedWalker {
    guest: RadixWalker,
    host: HostPath,
}

impl MmuScheme for NestedWalker {
    type Table = RadixPageTable;
    type Shared = ();

    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, RadixPageTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        walker::walk_2d(&mut self.guest, &mut self.host, va, asid, env, plan)
    }

    /// A guest shootdown changes guest mappings only: the guest PWCs go, the nested
    /// translations and host PWCs stay (the VMM never remaps a backed page here).
    fn flush(&mut self) {
        self.guest.flush();
    }

    fn reset_stats(&mut self) {
        self.guest.reset_stats();
        self.host.reset_stats();
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        let mut s = BTreeMap::from([
            ("pwc", stats_value(&self.guest.pwc_snapshot())),
            ("host_pwc", stats_value(&self.host.walker().pwc_snapshot())),
            ("nested", stats_value(&self.host.stats)),
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
    type Mmu = NestedWalker;

    fn mmu(ctx: &BuildCtx) -> Result<NestedWalker> {
        Ok(NestedWalker {
            guest: ctx.sections.radix.walker(),
            host: ctx.sections.virt.host_path(),
        })
    }

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        ctx.sections.radix.new_table(pt)
    }

    fn vmm(ctx: &BuildCtx) -> Result<Option<Vmm>> {
        let cfg = ctx.sections.virt.vmm(ctx.physmem_bytes);
        Vmm::new(&cfg, ctx.physmem_bytes, ctx.seed).map(Some)
    }
}

#[cfg(test)]
mod tests;
