//! `pom-tlb`: the radix baseline with a Part-of-Memory TLB (Ryoo et al., ISCA'17) as an L3 TLB,
//! Utopia's POM-TLB comparator (Table 1: "64K-entry L3 Software TLB, 8-way"; §7, §8.2).
//!
//! After an L2 TLB miss the MMU reads the POM-TLB set of the address through the cache
//! hierarchy (its lines are cached in L2 and the LLC like data, the paper's point); a hit
//! supplies the translation and no page walk is done, a miss goes on to the radix walk, whose
//! result is then written into the POM-TLB. The array lives in a physical block the scheme
//! takes from the buddy allocator at boot ([`array`] describes the layout and the lookup), and
//! is one for the whole system: on several cores, every core's MMU probes and fills the same
//! array (the scheme's shared part), so one core's walk serves another's miss.
//!
//! The paging path is the radix scheme's: its table and its walker with the split PWCs, both
//! configured in `[schemes.radix]`. `[schemes.pom_tlb]` configures the array.

pub mod array;

use super::radix::RadixWalker;
use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr, Vpn, BASE_PAGE_BYTES};
use crate::assoc::Replacement;
use crate::config::{pow2, ways, HostUses};
use crate::error::{Error, Result};
use crate::mem::hierarchy::WalkerEntry;
use crate::mem::physmem::{BuddyAllocator, MAX_ORDER};
use crate::mem::Hierarchy;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, StageHit, WalkEnv};
use crate::pt::radix::RadixPageTable;
use crate::pt::store::PtStore;
use crate::pt::PtContext;
use array::{Geometry, PomTlbArray};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Largest entry a set may hold: one line, so an entry is read with a single access.
const MAX_ENTRY_BYTES: u64 = 64;
/// Smallest entry: the 8 bytes of a frame number alone (the paper's entries are 16 bytes:
/// tag, ASID, frame and attributes).
const MIN_ENTRY_BYTES: u64 = 8;

/// `[schemes.pom_tlb]`: the POM-TLB array. Keys left out take these defaults.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PomTlbConfig {
    /// Entries of the array (a power of two).
    pub entries: u64,
    /// Ways per set (a power of two, at most `entries`).
    pub ways: u64,
    /// Bytes one entry takes in DRAM (a power of two, 8 to 64).
    pub entry_bytes: u64,
    /// Replacement policy. Utopia gives the POM-TLB DRRIP; xlat's arrays offer LRU and SRRIP,
    /// and SRRIP is the policy DRRIP uses for most sets.
    pub replacement: Replacement,
    /// Cache level the POM-TLB's reads and writes enter the hierarchy at: `l2` (the paper
    /// caches POM-TLB entries in the L2 and L3 caches, not in L1D), `l1d` or `llc`.
    pub enter_at: WalkerEntry,
}

impl Default for PomTlbConfig {
    /// Utopia Table 1: 64K entries, 8-way; 16-byte entries as in Ryoo et al.: 1 MiB, two lines
    /// per set.
    fn default() -> Self {
        PomTlbConfig {
            entries: 65536,
            ways: 8,
            entry_bytes: 16,
            replacement: Replacement::Srrip,
            enter_at: WalkerEntry::L2,
        }
    }
}

impl PomTlbConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        pow2(format!("{path}.entries"), "entries", self.entries)?;
        ways(format!("{path}.ways"), self.ways)?;
        pow2(format!("{path}.ways"), "ways", self.ways)?;
        if self.ways > self.entries {
            return Err(Error::config(
                format!("{path}.ways"),
                format!("{} ways exceed the {} entries", self.ways, self.entries),
            ));
        }
        pow2(
            format!("{path}.entry_bytes"),
            "entry_bytes",
            self.entry_bytes,
        )?;
        if !(MIN_ENTRY_BYTES..=MAX_ENTRY_BYTES).contains(&self.entry_bytes) {
            return Err(Error::config(
                format!("{path}.entry_bytes"),
                format!(
                    "must be {MIN_ENTRY_BYTES} to {MAX_ENTRY_BYTES} bytes (one line at most), got {}",
                    self.entry_bytes
                ),
            ));
        }
        // The array is one buddy block, so it can be no larger than the largest block.
        let max = BASE_PAGE_BYTES << MAX_ORDER;
        match self.entries.checked_mul(self.entry_bytes) {
            Some(bytes) if bytes <= max => Ok(()),
            _ => Err(Error::config(
                format!("{path}.entries"),
                format!(
                    "{} entries x {} bytes exceed {max} bytes, the largest contiguous block \
                     physical memory hands out",
                    self.entries, self.entry_bytes
                ),
            )),
        }
    }

    /// The array, shared by the cores: its entries are held in host memory as well as laid
    /// out in simulated DRAM.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        let slot = crate::mmu::tlb::TlbArray::<crate::mmu::tlb::PageEntry>::SLOT_BYTES;
        uses.once(format!("{path}.entries"), self.entries, "entries", slot);
    }

    /// The array's shape (valid after `validate`).
    pub fn geometry(&self) -> Geometry {
        Geometry {
            sets: self.entries / self.ways,
            ways: self.ways,
            entry_bytes: self.entry_bytes,
        }
    }

    /// Take the array's block from `buddy`: the smallest buddy block that holds it. Errors
    /// name the key to change when physical memory is too small or too fragmented.
    pub fn reserve(&self, buddy: &mut BuddyAllocator) -> Result<Pfn> {
        let bytes = self.geometry().bytes();
        let physmem = buddy.total_frames() * BASE_PAGE_BYTES;
        if bytes > physmem {
            return Err(Error::config(
                "schemes.pom_tlb.entries",
                format!(
                    "the array ({bytes} bytes: entries x entry_bytes) does not fit in \
                     os.physmem.bytes ({physmem} bytes)"
                ),
            ));
        }
        let order = bytes
            .div_ceil(BASE_PAGE_BYTES)
            .next_power_of_two()
            .trailing_zeros();
        buddy.alloc(order).ok_or_else(|| {
            Error::config(
                "schemes.pom_tlb.entries",
                format!(
                    "no free contiguous block of {} bytes for the array (physical memory is \
                     full or too fragmented: see os.physmem.fragmentation)",
                    BASE_PAGE_BYTES << order
                ),
            )
        })
    }
}

/// The MMU parts of one core of `pom-tlb`: the radix walker. The POM-TLB, the L3 TLB level, is
/// shared: one array in DRAM that every core probes and fills (Ryoo et al. §3).
pub struct PomTlbMmu {
    walker: RadixWalker,
}

impl MmuScheme for PomTlbMmu {
    type Table = RadixPageTable;
    type Shared = PomTlbArray;

    #[inline]
    fn l3_lookup(
        &mut self,
        va: VirtAddr,
        asid: u16,
        now: u64,
        mem: &mut Hierarchy,
        l3: &mut PomTlbArray,
    ) -> (Option<StageHit>, u64) {
        let (hit, latency) = l3.lookup(va, asid, now, mem);
        let hit = hit.map(|(pfn, size)| StageHit { pfn, size, latency });
        (hit, latency)
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

    /// A walk found the translation the POM-TLB missed: write it in.
    fn after_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        pfn: Pfn,
        size: PageSize,
        _table: &RadixPageTable,
        _store: &PtStore,
        now: u64,
        mem: &mut Hierarchy,
        l3: &mut PomTlbArray,
    ) {
        l3.fill(va, asid, pfn, size, now, mem);
    }

    /// The POM-TLB is a TLB: a shootdown drops the page's entry, like the on-chip TLBs'
    /// (the first core told drops it; the others find it gone).
    fn invalidate(&mut self, vpn: Vpn, size: PageSize, asid: u16, l3: &mut PomTlbArray) {
        l3.invalidate(vpn, size, asid);
    }

    /// Walk state only (the PWCs): POM-TLB entries are dropped page by page in `invalidate`.
    fn flush(&mut self) {
        self.walker.flush();
    }

    fn reset_stats(&mut self) {
        self.walker.reset_stats();
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::from([("pwc", stats_value(&self.walker.pwc_snapshot()))])
    }

    fn shared_stats(l3: &PomTlbArray) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::from([("pom_tlb", stats_value(&l3.snapshot()))])
    }

    fn reset_shared_stats(l3: &mut PomTlbArray) {
        l3.reset_stats();
    }
}

/// The radix baseline with a POM-TLB.
pub struct PomTlb;

impl Scheme for PomTlb {
    type Mmu = PomTlbMmu;

    fn mmu(ctx: &BuildCtx) -> Result<PomTlbMmu> {
        Ok(PomTlbMmu {
            walker: ctx.sections.radix.walker(),
        })
    }

    /// The one array of the system, in a block taken from physical memory at boot.
    fn shared(ctx: &BuildCtx, buddy: &mut BuddyAllocator) -> Result<PomTlbArray> {
        let cfg = &ctx.sections.pom_tlb;
        let base = cfg.reserve(buddy)?;
        Ok(PomTlbArray::new(
            cfg.geometry(),
            cfg.replacement,
            base.addr(),
            cfg.enter_at.level(),
        ))
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        ctx.sections.radix.new_table(pt)
    }
}
