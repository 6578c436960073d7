//! The page table of a SPARTA system: in each partition, an inverted hashed table of the
//! pages that partition holds, in the partition's own memory (§5, "Inverted page table
//! design": one table per NUMA node, as IBM Power's hashed page tables). All processes share
//! the tables; an entry is tagged with its address space. A table has `table_slots_per_frame`
//! entries per frame of its partition (4: load factor 1/4 with 4 KiB pages), four 16-byte
//! entries to a 64-byte bucket, so a walk reads one line: its home bucket. A full bucket sends
//! an insertion on to the next (linear probing), and a walk follows it only past full buckets.
//!
//! Every process's [`SpartaTable`] reads and writes the same entries in simulated memory: the
//! tables are their bytes, not a host-side map.

use super::layout::{Layout, BUCKET_ENTRIES, ENTRY_BYTES};
use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr, Vpn};
use crate::error::{Error, Result};
use crate::mem::MemKind;
use crate::mmu::walk::WalkPlan;
use crate::pt::store::PtStore;
use crate::pt::{misdirected, PageTable, PtContext};

const VALID: u64 = 1 << 63;
/// A removed entry: free for an insertion, but a walk goes on past it, as past a used one.
const TOMB: u64 = 1 << 62;
const VPN_BITS: u32 = 44;

/// The tag word of the entry of the `size` page numbered `vpn_at_size` of `asid`.
fn tag(asid: u16, vpn_at_size: u64, size: PageSize) -> u64 {
    VALID | ((size.index() as u64) << 60) | (u64::from(asid) << VPN_BITS) | vpn_at_size
}

/// Where a key's entry is, or the buckets a search for it read.
struct Search {
    /// Lines read, in order.
    lines: [PhysAddr; MAX_PROBES],
    len: usize,
    /// The entry's address, if found.
    found: Option<PhysAddr>,
}

/// Most buckets a search may read (`schemes.sparta.probe_limit` is at most this).
pub const MAX_PROBES: usize = 8;

/// One process's view of the partitions' tables.
pub struct SpartaTable {
    layout: Layout,
    asid: u16,
    /// Pages mapped, by size index: a walk probes only the sizes the process has.
    mapped: [u64; 3],
    /// Buckets insertions read beyond the home bucket (full buckets passed).
    overflows: u64,
}

impl SpartaTable {
    pub fn new(layout: Layout, asid: u16) -> SpartaTable {
        SpartaTable {
            layout,
            asid,
            mapped: [0; 3],
            overflows: 0,
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Search partition `p`'s table for the `size` page holding `va`.
    fn search(&self, store: &PtStore, va: VirtAddr, size: PageSize) -> Search {
        let l = &self.layout;
        let p = l.partition_of(va);
        let n = va.0 >> size.shift();
        let want = tag(self.asid, n, size);
        let home = l.home(self.asid, n, size);
        let mut s = Search {
            lines: [PhysAddr(0); MAX_PROBES],
            len: 0,
            found: None,
        };
        for i in 0..u64::from(l.probe_limit) {
            let line = l.bucket_addr(p, home + i);
            s.lines[s.len] = line;
            s.len += 1;
            let words = store.read_line(line);
            let mut free = false;
            for e in 0..BUCKET_ENTRIES as usize {
                let w = words[2 * e];
                if w == want {
                    s.found = Some(PhysAddr(line.0 + e as u64 * ENTRY_BYTES));
                    return s;
                }
                free |= w == 0;
            }
            if free {
                break;
            }
        }
        s
    }

    /// The sizes of page this process has mapped, smallest first (4 KiB while it has none:
    /// a walk reads at least one bucket).
    fn sizes(&self) -> impl Iterator<Item = PageSize> + '_ {
        let none = self.mapped == [0; 3];
        PageSize::ALL
            .into_iter()
            .filter(move |s| self.mapped[s.index()] > 0 || (none && *s == PageSize::Size4K))
    }

    /// The mapping of `va`, as a walk finds it.
    pub fn lookup(&self, store: &PtStore, va: VirtAddr) -> Option<(Pfn, PageSize)> {
        self.sizes().find_map(|size| {
            let at = self.search(store, va, size).found?;
            Some((Pfn(store.read(PhysAddr(at.0 + 8))), size))
        })
    }

    /// Plan the memory-side walk of `va`: for each page size the process has, the buckets from
    /// the home bucket on, the sizes probed in parallel (one reference per walk with one page
    /// size), all read by the controller of the partition's channel.
    pub fn plan(
        &self,
        store: &PtStore,
        va: VirtAddr,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        plan.clear();
        plan.controller = Some(self.layout.table_base(self.layout.partition_of(va)));
        let mut searches: [Option<(Search, PageSize)>; 3] = [None, None, None];
        for (slot, size) in searches.iter_mut().zip(self.sizes()) {
            *slot = Some((self.search(store, va, size), size));
        }
        let mut answer = None;
        for step in 0..MAX_PROBES {
            for (s, size) in searches.iter().flatten() {
                if step < s.len {
                    plan.push(s.lines[step], MemKind::HPT, step as u8);
                    match s.found {
                        Some(at) if step + 1 == s.len && answer.is_none() => {
                            let pfn = Pfn(store.read(PhysAddr(at.0 + 8)));
                            answer = Some((pfn, *size, plan.refs().len() - 1));
                        }
                        _ => {}
                    }
                }
            }
        }
        let (pfn, size, index) = answer?;
        plan.answered_by(index);
        Some((pfn, size))
    }

    /// Pages of each size this process has mapped.
    pub fn mapped(&self) -> [u64; 3] {
        self.mapped
    }
}

impl PageTable for SpartaTable {
    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        let l = self.layout;
        let va = VirtAddr(vpn.0 << crate::addr::BASE_PAGE_SHIFT);
        let p = l.partition_of(va);
        if l.partition_of_frame(pfn.0) != p {
            return Err(Error::Verify(format!(
                "SPARTA maps page {vpn:?} of partition {p} to frame {pfn:?} of partition {}",
                l.partition_of_frame(pfn.0)
            )));
        }
        let n = va.0 >> size.shift();
        let home = l.home(self.asid, n, size);
        for i in 0..u64::from(l.probe_limit) {
            let line = l.bucket_addr(p, home + i);
            if !ctx.store.holds(line.pfn()) {
                // The table's frames were reserved at boot; contents are kept once written.
                ctx.store.zero_frame(line.pfn());
            }
            let words = ctx.store.read_line(line);
            if let Some(e) = (0..BUCKET_ENTRIES as usize).find(|&e| words[2 * e] & VALID == 0) {
                let at = line.0 + e as u64 * ENTRY_BYTES;
                ctx.store.write(PhysAddr(at), tag(self.asid, n, size));
                ctx.store.write(PhysAddr(at + 8), pfn.0);
                self.mapped[size.index()] += 1;
                self.overflows += i;
                return Ok(());
            }
        }
        Err(Error::OutOfMemory(format!(
            "partition {p}'s page table has no free entry within {} buckets of page {vpn:?}'s \
             home (raise schemes.sparta.table_slots_per_frame or probe_limit)",
            l.probe_limit
        )))
    }

    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Option<Pfn> {
        let va = VirtAddr(vpn.0 << crate::addr::BASE_PAGE_SHIFT);
        let at = self.search(ctx.store, va, size).found?;
        let pfn = Pfn(ctx.store.read(PhysAddr(at.0 + 8)));
        ctx.store.write(at, TOMB);
        ctx.store.write(PhysAddr(at.0 + 8), 0);
        self.mapped[size.index()] -= 1;
        Some(pfn)
    }

    /// The entries this process holds (the tables themselves were reserved at boot).
    fn bytes(&self) -> u64 {
        self.mapped.iter().sum::<u64>() * ENTRY_BYTES
    }

    /// No page-table page is allocated at a fault: the tables were reserved at boot.
    fn table_pages(&self) -> u64 {
        0
    }

    fn read_mapping(&self, store: &PtStore, va: VirtAddr) -> Option<Option<(Pfn, PageSize)>> {
        Some(self.lookup(store, va))
    }

    fn stats(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "entries": self.mapped.iter().sum::<u64>(),
            "overflow_probes": self.overflows,
        }))
    }

    fn corrupt(&self, store: &mut PtStore, vpn: Vpn, size: PageSize) -> bool {
        let va = VirtAddr(vpn.0 << crate::addr::BASE_PAGE_SHIFT);
        let Some(at) = self.search(store, va, size).found else {
            return false;
        };
        let frame = PhysAddr(at.0 + 8);
        let pfn = Pfn(store.read(frame));
        store.write(frame, misdirected(pfn, size).0);
        true
    }
}
