//! Unit tests of Utopia's parts: the TAR and SF contents a table writes, DRRIP placement and
//! eviction, and the RestSeg walk's filter, caches and timing. Whole-system tests are in
//! `crates/xlat/tests/utopia.rs`.

use super::placement::RestSegPlacement;
use super::restseg::{Layout, RestSeg};
use super::rsw::RestSegWalker;
use super::table::{Migration, UtopiaTable};
use super::{RestSegConfig, UtopiaConfig};
use crate::addr::{PageSize, Pfn, Vpn};
use crate::mem::physmem::BuddyAllocator;
use crate::mem::{Hierarchy, Level};
use crate::os::FramePolicy;
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext};
use crate::rng::Rng;
use crate::SimConfig;

const MEMORY: u64 = 1 << 30;

/// One 4 KiB RestSeg of `sets` sets × 8 ways in 1 GiB.
fn layout(sets: u64) -> Layout {
    let cfg = UtopiaConfig {
        restsegs: vec![RestSegConfig {
            bytes: sets * 8 * 4096,
            page: PageSize::Size4K,
            ways: 8,
        }],
        ..UtopiaConfig::default()
    };
    Layout::new(&cfg, MEMORY, 48).unwrap()
}

/// The 4 KiB VPN of the `i`-th page that hashes to `set` of `seg`.
fn vpn_in(seg: &RestSeg, set: u64, i: u64) -> Vpn {
    Vpn(0x1_0000_0000 + set + i * seg.sets)
}

struct Os {
    buddy: BuddyAllocator,
    store: PtStore,
}

impl Os {
    fn new() -> Os {
        Os {
            buddy: BuddyAllocator::new(MEMORY / 4096),
            store: PtStore::new(),
        }
    }

    fn ctx(&mut self) -> PtContext<'_> {
        PtContext {
            store: &mut self.store,
            buddy: &mut self.buddy,
        }
    }
}

#[test]
fn a_table_keeps_tags_in_the_tar_and_counts_in_the_sf() {
    let l = layout(64);
    let seg = l.segs[0];
    let mut os = Os::new();
    let mut t = UtopiaTable::new(&mut os.ctx(), &l, 4, None).unwrap();
    let ps = t.segs[0];
    // Three pages in set 5 (ways 0, 3, 7), one in set 6.
    let pages = [(5, 0, 0), (5, 1, 3), (5, 2, 7), (6, 0, 0)];
    for &(set, i, way) in &pages {
        let vpn = vpn_in(&seg, set, i);
        t.map(&mut os.ctx(), vpn, seg.slot_pfn(set, way), PageSize::Size4K)
            .unwrap();
    }
    assert_eq!(ps.sf_count(&os.store, 5), 3);
    assert_eq!(ps.sf_count(&os.store, 6), 1);
    assert_eq!(ps.sf_count(&os.store, 7), 0);
    for &(set, i, way) in &pages {
        let vpn = vpn_in(&seg, set, i);
        let (_, tag) = seg.index(vpn);
        assert_eq!(ps.find(&os.store, set, tag), Some(way));
        let (_, pfn) = t.restseg_lookup(&os.store, vpn).unwrap();
        assert_eq!(pfn, seg.slot_pfn(set, way));
    }
    // The FlexSeg's radix table holds none of them.
    assert!(t
        .radix
        .lookup(&os.store, vpn_in(&seg, 5, 0).addr())
        .is_none());
    // A page of the set that is not there: the SF says "maybe", the TAR says no.
    assert!(t.restseg_lookup(&os.store, vpn_in(&seg, 5, 9)).is_none());
    // Unmapping clears the tag and lowers the count.
    let gone = t.unmap(&mut os.ctx(), vpn_in(&seg, 5, 1), PageSize::Size4K);
    assert_eq!(gone, Some(seg.slot_pfn(5, 3)));
    assert_eq!(ps.sf_count(&os.store, 5), 2);
    // A frame outside the RestSeg goes to the radix table.
    let flex = Pfn(4096);
    let v = Vpn(0x2_0000_0000);
    t.map(&mut os.ctx(), v, flex, PageSize::Size4K).unwrap();
    assert_eq!(
        t.radix.lookup(&os.store, v.addr()),
        Some((flex, PageSize::Size4K))
    );
    // TAR and SF sizes: 64 sets × 8 ways × 8-byte tags (48 - 12 - 6 = 30 bits + 8 = 38
    // bits, rounded to 8 bytes), and 64 × 4-bit counters (log2(8) = 3 bits, rounded to 4).
    assert_eq!((seg.tar_bytes(), seg.sf_bytes()), (64 * 8 * 8, 32));
}

#[test]
fn a_full_sets_counter_saturates_and_stays_nonzero_until_the_set_empties() {
    // 2 ways: one-bit counters, which a full set saturates.
    let cfg = UtopiaConfig {
        restsegs: vec![RestSegConfig {
            bytes: 4 * 2 * 4096,
            page: PageSize::Size4K,
            ways: 2,
        }],
        ..UtopiaConfig::default()
    };
    let l = Layout::new(&cfg, MEMORY, 48).unwrap();
    let seg = l.segs[0];
    assert_eq!(seg.sf_bits, 1);
    let mut os = Os::new();
    let mut t = UtopiaTable::new(&mut os.ctx(), &l, 4, None).unwrap();
    for way in 0..2 {
        t.map(
            &mut os.ctx(),
            vpn_in(&seg, 1, way),
            seg.slot_pfn(1, way),
            PageSize::Size4K,
        )
        .unwrap();
    }
    assert_eq!(t.segs[0].sf_count(&os.store, 1), 1);
    t.unmap(&mut os.ctx(), vpn_in(&seg, 1, 0), PageSize::Size4K);
    assert_eq!(t.segs[0].sf_count(&os.store, 1), 1, "one page left");
    t.unmap(&mut os.ctx(), vpn_in(&seg, 1, 1), PageSize::Size4K);
    assert_eq!(t.segs[0].sf_count(&os.store, 1), 0);
}

#[test]
fn placement_fills_a_set_then_evicts_by_drrip_to_a_flexseg_frame() {
    let l = layout(64);
    let seg = l.segs[0];
    let mut buddy = BuddyAllocator::new(MEMORY / 4096);
    let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4));
    p.reserve(&mut buddy).unwrap();
    let free = buddy.free_frames();
    assert_eq!(free, MEMORY / 4096 - seg.slots());
    // Eight pages of set 9 take its eight ways, without eviction or buddy frames.
    let mut slots = Vec::new();
    for i in 0..8 {
        let pfn = p
            .frame(&mut buddy, 1, vpn_in(&seg, 9, i), PageSize::Size4K)
            .unwrap();
        assert_eq!(seg.slot_of(pfn).map(|(s, _)| s), Some(9));
        slots.push(pfn);
    }
    slots.sort();
    slots.dedup();
    assert_eq!(slots.len(), 8);
    assert!(p.take_evictions().is_empty());
    assert_eq!(buddy.free_frames(), free);
    // The ninth evicts one of them to a FlexSeg frame and takes its slot.
    let pfn = p
        .frame(&mut buddy, 2, vpn_in(&seg, 9, 8), PageSize::Size4K)
        .unwrap();
    let ev = p.take_evictions();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].from, pfn, "the new page takes the victim's slot");
    assert_eq!(ev[0].pid, 1);
    assert!(
        l.slot_of(ev[0].to).is_none(),
        "the victim goes to the FlexSeg"
    );
    assert_eq!(buddy.free_frames(), free - 1);
    // Freeing a RestSeg page frees its slot, not a buddy block.
    p.free(&mut buddy, pfn, PageSize::Size4K);
    assert_eq!(buddy.free_frames(), free - 1);
    let again = p
        .frame(&mut buddy, 2, vpn_in(&seg, 9, 10), PageSize::Size4K)
        .unwrap();
    assert_eq!(again, pfn);
    assert!(p.take_evictions().is_empty());
    // Sizes no RestSeg holds come from the buddy allocator.
    let huge = p
        .frame(&mut buddy, 1, Vpn(0x4000_0000), PageSize::Size2M)
        .unwrap();
    assert!(l.slot_of(huge).is_none());
}

#[test]
fn the_rsw_filters_empty_sets_and_caches_sf_and_tar_lines() {
    let cfg = SimConfig::load("utopia", &[]).unwrap();
    let l = layout(64);
    let seg = l.segs[0];
    let mut os = Os::new();
    let mut t = UtopiaTable::new(&mut os.ctx(), &l, 4, None).unwrap();
    let vpn = vpn_in(&seg, 3, 0);
    t.map(&mut os.ctx(), vpn, seg.slot_pfn(3, 2), PageSize::Size4K)
        .unwrap();
    let mut mem = Hierarchy::new(&cfg.cache, &cfg.dram, cfg.core.frequency_ghz, 1);
    let mut rsw = RestSegWalker::new(l.clone(), 2048, 2048, 2, Level::L1d);
    // First walk: SF and TAR lines miss their caches and come from memory.
    let (hit, cold) = rsw.walk(vpn, 0, &t, &os.store, 1000, &mut mem);
    let hit = hit.expect("the page is in the RestSeg");
    assert_eq!((hit.pfn, hit.size), (seg.slot_pfn(3, 2), PageSize::Size4K));
    assert!(cold > 2, "{cold}");
    // Again: both lines hit their 2-cycle caches.
    let (_, warm) = rsw.walk(vpn, 0, &t, &os.store, 100_000, &mut mem);
    assert_eq!(warm, 2);
    // A page of an empty set: the SF (its line cached) says no; no TAR read.
    let refs = rsw.stats().refs;
    let (miss, lat) = rsw.walk(vpn_in(&seg, 4, 0), 0, &t, &os.store, 200_000, &mut mem);
    assert!(miss.is_none());
    assert_eq!(lat, 2);
    assert_eq!(rsw.stats().sf_filtered, 1);
    assert_eq!(rsw.stats().refs, refs);
    // A shootdown of the page drops its lines: the next walk reads them again.
    rsw.invalidate(vpn, PageSize::Size4K, 0);
    let (_, after) = rsw.walk(vpn, 0, &t, &os.store, 300_000, &mut mem);
    assert!(after > 2, "{after}");
    let s = rsw.stats();
    assert_eq!((s.walks, s.hits, s.tag_misses), (4, 3, 0));
    assert_eq!(rsw.tar_cache().hits, 1);
}

#[test]
fn walks_count_in_the_ptes_unused_bits_until_the_page_is_costly() {
    let l = layout(64);
    let mut os = Os::new();
    let m = Migration {
        walks: 3,
        dram_refs: 5,
    };
    let mut t = UtopiaTable::new(&mut os.ctx(), &l, 4, Some(m)).unwrap();
    let (vpn, flex) = (Vpn(0x3_0000_0000), Pfn(8192));
    t.map(&mut os.ctx(), vpn, flex, PageSize::Size4K).unwrap();
    // Walks with 2, 2 and 0 DRAM references: three walks but a cost of 4, not yet.
    assert!(!t.note_walk(&mut os.ctx(), vpn, 2));
    assert!(!t.note_walk(&mut os.ctx(), vpn, 2));
    assert!(!t.note_walk(&mut os.ctx(), vpn, 0));
    // The counters live in the PTE, which still maps the same frame.
    let (at, _) = t.radix.leaf(&os.store, vpn.addr()).unwrap();
    let pte = os.store.read(at);
    assert_eq!(((pte >> 52) & 0xf, (pte >> 56) & 0x1f), (3, 4));
    assert_eq!(
        t.radix.lookup(&os.store, vpn.addr()),
        Some((flex, PageSize::Size4K))
    );
    assert!(t.note_walk(&mut os.ctx(), vpn, 1));
    // A page size no RestSeg holds never migrates.
    let huge = Vpn(0x4_0000_0000);
    t.map(&mut os.ctx(), huge, Pfn(1 << 17), PageSize::Size2M)
        .unwrap();
    for _ in 0..20 {
        assert!(!t.note_walk(&mut os.ctx(), huge, 9));
    }
}

/// The `reuse` histograms of segment 0 of `p`'s stats: `(migrated, faulted)`, each as
/// `[0, 1-5, 6-20, >20]`.
fn reuse(p: &RestSegPlacement) -> ([u64; 4], [u64; 4]) {
    let s = p.stats().unwrap();
    let r = &s["restsegs"][0]["stats"]["reuse"];
    let b = |o: &serde_json::Value| ["0", "1-5", "6-20", ">20"].map(|k| o[k].as_u64().unwrap());
    (b(&r["migrated"]), b(&r["faulted"]))
}

#[test]
fn reuse_counts_rsw_translations_per_slot_until_the_page_leaves() {
    let l = layout(1);
    let seg = l.segs[0];
    let mut buddy = BuddyAllocator::new(MEMORY / 4096);
    let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4));
    p.reserve(&mut buddy).unwrap();
    assert_eq!(reuse(&p), ([0; 4], [0; 4]), "present, all zero");
    assert_eq!(p.used_slots(), vec![0]);
    // Eight pages migrate into the one set of 8 ways; RestSeg walks then translate them
    // 0, 1, 5, 6, 20, 21, 3 and 40 times.
    let hits = [0, 1, 5, 6, 20, 21, 3, 40];
    let mut pfns = Vec::new();
    for (i, &k) in hits.iter().enumerate() {
        let pfn = p
            .promote(&mut buddy, 1, vpn_in(&seg, 0, i as u64), PageSize::Size4K)
            .unwrap();
        for _ in 0..k {
            p.side_hit(pfn);
        }
        pfns.push(pfn);
    }
    assert_eq!(p.used_slots(), vec![8]);
    // Frames outside every RestSeg are not counted (nor do they panic).
    p.side_hit(Pfn(0));
    // Nothing left yet.
    assert_eq!(reuse(&p), ([0; 4], [0; 4]));
    // The first six are unmapped: each lands in its bucket.
    for &pfn in &pfns[..6] {
        p.free(&mut buddy, pfn, PageSize::Size4K);
    }
    assert_eq!(reuse(&p), ([1, 2, 2, 1], [0; 4]));
    assert_eq!(p.used_slots(), vec![2]);
    // A page faulting into a freed slot starts from 0: its 2 hits, not its predecessor's.
    let faulted = p
        .frame(&mut buddy, 1, vpn_in(&seg, 0, 100), PageSize::Size4K)
        .unwrap();
    p.side_hit(faulted);
    p.side_hit(faulted);
    // Warm-up ends: the histograms restart, the per-slot counts stay.
    p.reset_stats();
    assert_eq!(reuse(&p), ([0; 4], [0; 4]));
    p.side_hit(pfns[7]);
    // Fill the set with faulting pages, then one more: DRRIP evicts one page to the
    // FlexSeg, into the bucket of its whole residency.
    let mut slot_hits: std::collections::HashMap<Pfn, (bool, u32)> = Default::default();
    slot_hits.insert(pfns[6], (true, 3));
    slot_hits.insert(pfns[7], (true, 41));
    slot_hits.insert(faulted, (false, 2));
    let mut i = 200;
    while p.used_slots() != vec![8] {
        let pfn = p
            .frame(&mut buddy, 1, vpn_in(&seg, 0, i), PageSize::Size4K)
            .unwrap();
        slot_hits.insert(pfn, (false, 0));
        i += 1;
    }
    assert!(p.take_evictions().is_empty());
    p.frame(&mut buddy, 1, vpn_in(&seg, 0, i), PageSize::Size4K)
        .unwrap();
    let ev = p.take_evictions();
    assert_eq!(ev.len(), 1);
    let (migrated, k) = slot_hits[&ev[0].from];
    let bucket = match k {
        0 => 0,
        1..=5 => 1,
        6..=20 => 2,
        _ => 3,
    };
    let mut want = ([0; 4], [0; 4]);
    if migrated {
        want.0[bucket] = 1;
    } else {
        want.1[bucket] = 1;
    }
    assert_eq!(reuse(&p), want, "evicted {:?} with {k} hits", ev[0]);
}

#[test]
fn a_migrated_page_hit_k_times_then_evicted_lands_in_its_bucket() {
    for (k, bucket) in [(0, 0), (1, 1), (5, 1), (6, 2), (20, 2), (21, 3)] {
        let l = layout(1);
        let seg = l.segs[0];
        let mut buddy = BuddyAllocator::new(MEMORY / 4096);
        let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4));
        p.reserve(&mut buddy).unwrap();
        // One set, a leader set of SRRIP: every page is inserted at the same RRPV and RestSeg
        // walks translate every page k times (promoting all alike), so the first way, the
        // first page, is the victim.
        let pages: Vec<Pfn> = (0..8)
            .map(|i| {
                p.promote(&mut buddy, 1, vpn_in(&seg, 0, i), PageSize::Size4K)
                    .unwrap()
            })
            .collect();
        let first = pages[0];
        for &pfn in &pages {
            for _ in 0..k {
                p.side_hit(pfn);
            }
        }
        p.promote(&mut buddy, 1, vpn_in(&seg, 0, 8), PageSize::Size4K)
            .unwrap();
        let ev = p.take_evictions();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].from, first, "k = {k}");
        let mut want = [0; 4];
        want[bucket] = 1;
        assert_eq!(reuse(&p), (want, [0; 4]), "k = {k}");
    }
}

#[test]
fn drrip_keeps_the_pages_restseg_walks_translated_and_evicts_one_they_did_not() {
    let l = layout(64);
    let seg = l.segs[0];
    let mut buddy = BuddyAllocator::new(MEMORY / 4096);
    let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4));
    p.reserve(&mut buddy).unwrap();
    // Eight pages fill set 9; RestSeg walks translate all of them but the fifth.
    let pfns: Vec<Pfn> = (0..8)
        .map(|i| {
            p.frame(&mut buddy, 1, vpn_in(&seg, 9, i), PageSize::Size4K)
                .unwrap()
        })
        .collect();
    for (i, &pfn) in pfns.iter().enumerate() {
        if i != 4 {
            p.side_hit(pfn);
        }
    }
    // The ninth page evicts the one without an accessed bit, whatever its insertion RRPV.
    let pfn = p
        .frame(&mut buddy, 1, vpn_in(&seg, 9, 8), PageSize::Size4K)
        .unwrap();
    let ev = p.take_evictions();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].from, pfns[4]);
    assert_eq!(pfn, pfns[4]);
}
