//! The OS side of the RestSegs (Utopia §5.5-§5.6): page-fault-based allocation into the set
//! a page hashes to, the global TAR that says which page of which process holds each slot,
//! DRRIP replacement inside a set, and eviction of the victim to the FlexSeg.
//!
//! The frame policy reserves the RestSegs at boot (before fragmentation, as the OS creates
//! them "during boot time"), then answers every fault of a page size some RestSeg holds with a
//! slot of that page's set. A full set evicts a victim chosen by DRRIP: the victim gets a
//! FlexSeg frame from the buddy allocator, and the OS moves it there ([`Eviction`]: remap,
//! copy, shootdown) right after it mapped the new page. Sizes no RestSeg holds (1 GiB pages)
//! and faults while the buddy allocator has no frame for a victim go to the FlexSeg directly.
//!
//! Restrictive-only (`schemes.utopia.flexseg = false`, Utopia §3's Fig 6 system): there is no
//! FlexSeg, so every page of a size some RestSeg holds takes a slot of its set, and a full
//! set's DRRIP victim is paged out to the backing store ([`PageOut`]) instead of moving.
//!
//! DRRIP (Jaleel et al., ISCA'10) as Utopia Table 1 names it: 2-bit re-reference prediction
//! values per slot; a victim is a way predicted re-referenced in the distant future (RRPV 3),
//! ageing the set until one is; set dueling between SRRIP (insert at RRPV 2) and BRRIP (insert
//! at 3, at 2 once in 32) over 32 leader sets each, by a 10-bit PSEL counter. Reuse reaches
//! the policy the way a radix walk's accessed bit reaches Linux: a RestSeg walk that
//! resolves a translation sets the accessed bit among the TAR entry's metadata bits (§5.3),
//! and the OS reads it as a re-reference, promoting the slot to RRPV 0 (RRIP's hit
//! priority). The write of the bit is not charged, as the radix walker's accessed-bit writes
//! are not. Translations that hit in a TLB do not reach the TAR, so, as with PTE accessed
//! bits, the OS sees the reuse of pages the TLBs do not hold.

use super::restseg::{Layout, RestSeg};
use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::os::{Eviction, FramePolicy, PageOut};
use crate::rng::Rng;
use serde::Serialize;

const RRPV_MAX: u8 = 3;
const RRPV_LONG: u8 = 2;
const PSEL_BITS: u32 = 10;
/// Leader sets per policy (or every other set, in segments with fewer than 64 sets).
const LEADERS: u64 = 32;
/// BRRIP inserts at RRPV 2 once in this many insertions.
const BRRIP_LONG_ONE_IN: u64 = 32;

/// Counters of one RestSeg.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RestSegStats {
    /// Pages placed in a free slot of their set.
    pub allocations: u64,
    /// Pages placed by evicting another page of the set to the FlexSeg.
    pub evictions: u64,
    /// Faults of this segment's page size that went to the FlexSeg (no frame for a victim).
    pub to_flexseg: u64,
    /// Pages placed by evicting another page of the set to the backing store
    /// (restrictive-only: no FlexSeg).
    #[serde(skip_serializing_if = "is_zero")]
    pub paged_out: u64,
    /// Slots holding a page now.
    pub used: u64,
    pub slots: u64,
    /// How many translations RestSeg walks resolved for each page that left a slot
    /// (evicted to the FlexSeg, paged out, unmapped) since warm-up, by how the page came in.
    pub reuse: Reuse,
}

/// Pages that left a RestSeg slot, by the translations RestSeg walks resolved for them while
/// they held it (Utopia Fig 20), separately for pages the PTE-based migration brought in
/// (`promote`) and pages placed at their page fault.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Reuse {
    pub migrated: ReuseBuckets,
    pub faulted: ReuseBuckets,
}

/// Fig 20's buckets of RestSeg-walk translations per residency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReuseBuckets {
    #[serde(rename = "0")]
    pub none: u64,
    #[serde(rename = "1-5")]
    pub few: u64,
    #[serde(rename = "6-20")]
    pub some: u64,
    #[serde(rename = ">20")]
    pub many: u64,
}

impl ReuseBuckets {
    fn add(&mut self, hits: u32) {
        match hits {
            0 => self.none += 1,
            1..=5 => self.few += 1,
            6..=20 => self.some += 1,
            _ => self.many += 1,
        }
    }
}

/// How a page came into its slot.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Fault,
    Migration,
}

/// Host bytes [`SegState`] keeps per slot: its owner, RRPV, translation count and origin.
pub const SLOT_HOST_BYTES: u64 = (std::mem::size_of::<Option<(u16, Vpn)>>()
    + std::mem::size_of::<u8>()
    + std::mem::size_of::<u32>()
    + std::mem::size_of::<bool>()) as u64;

/// The OS's view of one RestSeg: the global TAR (owner of each slot) and DRRIP state.
struct SegState {
    seg: RestSeg,
    /// `owner[set × ways + way]`: the process and 4 KiB VPN of the page in the slot.
    owner: Vec<Option<(u16, Vpn)>>,
    rrpv: Vec<u8>,
    psel: u32,
    stats: RestSegStats,
    /// A measurement beside the owner table, not a modelled structure (neither the TAR nor
    /// the OS keeps it): per slot, the translations RestSeg walks resolved for its page
    /// since the page took the slot, and whether it came in by migration. The system
    /// reports each such translation ([`FramePolicy::side_hit`]).
    hits: Vec<u32>,
    migrated: Vec<bool>,
}

/// Which insertion policy a set follows in set dueling.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Duel {
    SrripLeader,
    BrripLeader,
    Follower,
}

impl SegState {
    fn new(seg: RestSeg) -> SegState {
        let slots = seg.slots() as usize;
        SegState {
            seg,
            owner: vec![None; slots],
            rrpv: vec![RRPV_MAX; slots],
            hits: vec![0; slots],
            migrated: vec![false; slots],
            psel: 1 << (PSEL_BITS - 1),
            stats: RestSegStats {
                slots: slots as u64,
                ..Default::default()
            },
        }
    }

    fn duel(&self, set: u64) -> Duel {
        let stride = (self.seg.sets / LEADERS).max(2);
        match set % stride {
            0 => Duel::SrripLeader,
            1 => Duel::BrripLeader,
            _ => Duel::Follower,
        }
    }

    /// The RRPV a page inserted into `set` starts with; a fill of a leader set is a miss of
    /// its policy, which moves PSEL towards the other one.
    fn insertion_rrpv(&mut self, set: u64, rng: &mut Rng) -> u8 {
        let max = (1 << PSEL_BITS) - 1;
        let duel = self.duel(set);
        match duel {
            Duel::SrripLeader => self.psel = (self.psel + 1).min(max),
            Duel::BrripLeader => self.psel = self.psel.saturating_sub(1),
            Duel::Follower => {}
        }
        let srrip = match duel {
            Duel::SrripLeader => true,
            Duel::BrripLeader => false,
            Duel::Follower => self.psel < (1 << (PSEL_BITS - 1)),
        };
        if srrip || rng.below(BRRIP_LONG_ONE_IN) == 0 {
            RRPV_LONG
        } else {
            RRPV_MAX
        }
    }

    /// The page in `slot` leaves it: its reuse goes into the histogram of its origin.
    fn leave(&mut self, slot: usize) {
        let reuse = &mut self.stats.reuse;
        let buckets = if self.migrated[slot] {
            &mut reuse.migrated
        } else {
            &mut reuse.faulted
        };
        buckets.add(self.hits[slot]);
    }

    /// The way of `set` DRRIP evicts: the first at RRPV 3, ageing the set until one is.
    fn victim(&mut self, set: u64) -> u64 {
        let ways = self.seg.ways as usize;
        let first = set as usize * ways;
        let rrpv = &mut self.rrpv[first..first + ways];
        loop {
            if let Some(w) = rrpv.iter().position(|&r| r == RRPV_MAX) {
                return w as u64;
            }
            rrpv.iter_mut().for_each(|r| *r += 1);
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The frame policy of a Utopia system.
pub struct RestSegPlacement {
    layout: Layout,
    segs: Vec<SegState>,
    evictions: Vec<Eviction>,
    /// Whether a FlexSeg exists: victims move there, and sizes no RestSeg holds go there.
    flexseg: bool,
    /// Whether a faulting page takes a RestSeg slot (else only migration places pages).
    allocate_at_fault: bool,
    page_outs: Vec<PageOut>,
    rng: Rng,
}

impl RestSegPlacement {
    /// `allocate_at_fault`: faulting pages take RestSeg slots (§5.5), or only migration
    /// places pages there.
    pub fn new(layout: Layout, rng: Rng, allocate_at_fault: bool) -> RestSegPlacement {
        RestSegPlacement {
            segs: layout.segs.iter().map(|&s| SegState::new(s)).collect(),
            layout,
            evictions: Vec::new(),
            flexseg: true,
            allocate_at_fault,
            page_outs: Vec::new(),
            rng,
        }
    }

    /// Restrictive-only: no FlexSeg. A full set's victim is paged out, and a page of a size
    /// no RestSeg holds gets no frame (a huge page then falls back to 4 KiB).
    pub fn restrictive_only(mut self) -> RestSegPlacement {
        self.flexseg = false;
        self
    }

    /// Place the `size` page at `vpn` of `pid` in the first RestSeg of that page size: a
    /// free way of its set, or the DRRIP victim's (queued for eviction). `None` if no RestSeg
    /// holds that size, or the set is full and there is no FlexSeg frame for the victim.
    fn place(
        &mut self,
        buddy: &mut BuddyAllocator,
        pid: u16,
        vpn: Vpn,
        size: PageSize,
        origin: Origin,
    ) -> Option<Pfn> {
        let state = self.segs.iter_mut().find(|s| s.seg.page == size)?;
        let seg = state.seg;
        let (set, _) = seg.index(vpn);
        let first = (set * seg.ways) as usize;
        let ways = &state.owner[first..first + seg.ways as usize];
        let way = match ways.iter().position(Option::is_none) {
            Some(w) => {
                state.stats.allocations += 1;
                state.stats.used += 1;
                w as u64
            }
            None if !self.flexseg => {
                let w = state.victim(set);
                let (owner, victim) = state.owner[first + w as usize].expect("a full set");
                self.page_outs.push(PageOut {
                    pid: owner,
                    vpn: victim,
                    size,
                    ghost: false,
                });
                state.stats.paged_out += 1;
                state.leave(first + w as usize);
                w
            }
            None => {
                let Some(flex) = buddy.alloc(size.order()) else {
                    state.stats.to_flexseg += 1;
                    return None;
                };
                let w = state.victim(set);
                let (owner, victim) = state.owner[first + w as usize].expect("a full set");
                self.evictions.push(Eviction {
                    pid: owner,
                    vpn: victim,
                    size,
                    from: seg.slot_pfn(set, w),
                    to: flex,
                });
                state.stats.evictions += 1;
                state.leave(first + w as usize);
                w
            }
        };
        let slot = first + way as usize;
        state.owner[slot] = Some((pid, vpn));
        state.hits[slot] = 0;
        state.migrated[slot] = origin == Origin::Migration;
        state.rrpv[slot] = state.insertion_rrpv(set, &mut self.rng);
        Some(seg.slot_pfn(set, way))
    }
}

impl FramePolicy for RestSegPlacement {
    fn reserve(&mut self, buddy: &mut BuddyAllocator) -> Result<()> {
        for (pfn, order) in self.layout.blocks() {
            if !buddy.alloc_at(pfn, order) {
                return Err(Error::config(
                    "schemes.utopia.restsegs",
                    format!(
                        "the RestSeg block at frame {pfn:?} (order {order}) is not free at boot"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn frame(
        &mut self,
        buddy: &mut BuddyAllocator,
        pid: u16,
        vpn: Vpn,
        size: PageSize,
    ) -> Option<Pfn> {
        let placed = if self.allocate_at_fault {
            self.place(buddy, pid, vpn, size, Origin::Fault)
        } else {
            None
        };
        if self.flexseg {
            placed.or_else(|| buddy.alloc(size.order()))
        } else {
            placed
        }
    }

    /// PTE-based migration (§5.5): the page takes a slot of its set like a faulting page.
    fn promote(
        &mut self,
        buddy: &mut BuddyAllocator,
        pid: u16,
        vpn: Vpn,
        size: PageSize,
    ) -> Option<Pfn> {
        self.place(buddy, pid, vpn, size, Origin::Migration)
    }

    /// A RestSeg slot is free again when its page is unmapped; FlexSeg frames go back to the
    /// buddy allocator.
    fn free(&mut self, buddy: &mut BuddyAllocator, pfn: Pfn, size: PageSize) {
        let Some((seg, set, way)) = self.layout.slot_of(pfn) else {
            buddy.free(pfn, size.order());
            return;
        };
        let state = &mut self.segs[seg.id];
        let slot = (set * seg.ways + way) as usize;
        if state.owner[slot].take().is_some() {
            state.leave(slot);
            state.stats.used -= 1;
            state.rrpv[slot] = RRPV_MAX;
        }
    }

    fn take_evictions(&mut self) -> Vec<Eviction> {
        std::mem::take(&mut self.evictions)
    }

    fn take_page_outs(&mut self) -> Vec<PageOut> {
        std::mem::take(&mut self.page_outs)
    }

    /// A RestSeg walk resolved the translation of the page in slot `pfn`: its TAR entry's
    /// accessed bit promotes the slot in DRRIP, and the page's reuse count grows.
    #[inline]
    fn side_hit(&mut self, pfn: Pfn) {
        if let Some((seg, set, way)) = self.layout.slot_of(pfn) {
            let state = &mut self.segs[seg.id];
            let slot = (set * seg.ways + way) as usize;
            state.rrpv[slot] = 0;
            state.hits[slot] = state.hits[slot].saturating_add(1);
        }
    }

    fn used_slots(&self) -> Vec<u64> {
        self.segs.iter().map(|s| s.stats.used).collect()
    }

    fn owns(&self, pfn: Pfn) -> bool {
        self.layout.slot_of(pfn).is_some()
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let segs: Vec<_> = self
            .segs
            .iter()
            .map(|s| {
                serde_json::json!({
                    "page": s.seg.page.name(),
                    "sets": s.seg.sets,
                    "ways": s.seg.ways,
                    "stats": s.stats,
                })
            })
            .collect();
        Some(serde_json::json!({ "restsegs": segs }))
    }

    /// The histograms of reuse restart; the per-slot counts do not, so a page that leaves
    /// after warm-up counts every RestSeg-walk translation of its residency, warm-up's too.
    fn reset_stats(&mut self) {
        for s in &mut self.segs {
            s.stats = RestSegStats {
                used: s.stats.used,
                slots: s.stats.slots,
                ..Default::default()
            };
        }
    }
}
