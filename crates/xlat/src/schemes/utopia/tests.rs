//! Unit tests of Utopia's parts: the TAR and SF contents a table writes, DRRIP placement and
//! eviction, and the RestSeg walk's filter, caches and timing. Whole-system tests are in
//! `crates/xlat/tests/utopia.rs`.

use super::placement::RestSegPlacement;
use super::restseg::{Layout, RestSeg};
use super::rsw::RestSegWalker;
use super::table::{Migration, UtopiaTable};
use super::{RestSegConfig, UtopiaConfig};
use crate::addr::{PageSize, Pfn, SizeSet, Vpn};
use crate::mem::physmem::BuddyAllocator;
use crate::mem::{Hierarchy, Level};
use crate::os::FramePolicy;
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext, TableScan};
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
    let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4), true);
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
fn without_allocation_at_fault_only_migration_places_pages() {
    let l = layout(64);
    let seg = l.segs[0];
    let mut buddy = BuddyAllocator::new(MEMORY / 4096);
    let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4), false);
    p.reserve(&mut buddy).unwrap();
    let free = buddy.free_frames();
    // A fault takes a FlexSeg frame though its set is empty...
    let faulted = p
        .frame(&mut buddy, 1, vpn_in(&seg, 9, 0), PageSize::Size4K)
        .unwrap();
    assert!(l.slot_of(faulted).is_none());
    assert_eq!(buddy.free_frames(), free - 1);
    assert!(p.used_slots().iter().all(|&n| n == 0));
    // ...and a migration takes a slot of the page's set.
    let promoted = p
        .promote(&mut buddy, 1, vpn_in(&seg, 9, 0), PageSize::Size4K)
        .unwrap();
    assert_eq!(seg.slot_of(promoted).map(|(s, _)| s), Some(9));
    // Restrictive-only mapping has no FlexSeg to allocate in.
    let err = SimConfig::load(
        "utopia",
        &[
            "schemes.utopia.flexseg=false".into(),
            "schemes.utopia.allocate_at_fault=false".into(),
            "os.swap.enabled=true".into(),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("schemes.utopia.allocate_at_fault"), "{err}");
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
        decay_interval: 0,
        sizes: SizeSet::of(&[PageSize::Size4K]),
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

#[test]
fn the_counters_migrate_only_the_page_sizes_listed() {
    // A layout with a 2 MiB RestSeg beside the 4 KiB one.
    let cfg = UtopiaConfig {
        restsegs: vec![
            RestSegConfig {
                bytes: 64 * 8 * 4096,
                page: PageSize::Size4K,
                ways: 8,
            },
            RestSegConfig {
                bytes: 16 << 21,
                page: PageSize::Size2M,
                ways: 8,
            },
        ],
        ..UtopiaConfig::default()
    };
    let l = Layout::new(&cfg, MEMORY, 48).unwrap();
    let (small, huge) = (Vpn(0x3_0000_0000), Vpn(0x4_0000_0000));
    for (sizes, huge_moves) in [
        (vec![PageSize::Size4K], false),
        (vec![PageSize::Size4K, PageSize::Size2M], true),
    ] {
        let mut os = Os::new();
        let m = Migration {
            walks: 2,
            dram_refs: 2,
            decay_interval: 0,
            sizes: SizeSet::of(&sizes),
        };
        let mut t = UtopiaTable::new(&mut os.ctx(), &l, 4, Some(m)).unwrap();
        t.map(&mut os.ctx(), small, Pfn(8192), PageSize::Size4K)
            .unwrap();
        t.map(&mut os.ctx(), huge, Pfn(1 << 17), PageSize::Size2M)
            .unwrap();
        assert!(!t.note_walk(&mut os.ctx(), small, 1));
        assert!(t.note_walk(&mut os.ctx(), small, 1), "{sizes:?}");
        assert!(!t.note_walk(&mut os.ctx(), huge, 1));
        assert_eq!(t.note_walk(&mut os.ctx(), huge, 1), huge_moves, "{sizes:?}");
        // An unlisted size's PTE keeps its counters at zero.
        let (at, _) = t.radix.leaf(&os.store, huge.addr()).unwrap();
        let counted = (os.store.read(at) >> 52) & 0xf;
        assert_eq!(counted, if huge_moves { 2 } else { 0 });
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
    let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4), true);
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
        let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4), true);
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
    let mut p = RestSegPlacement::new(l.clone(), Rng::new(1, 4), true);
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

/// The frequency and cost counters in the PTE of `vpn` (bits 52-55 and 56-60), read from
/// the table's memory.
fn counters(t: &UtopiaTable, store: &PtStore, vpn: Vpn) -> (u64, u64) {
    let (at, _) = t
        .radix
        .leaf(store, vpn.addr())
        .expect("mapped in the FlexSeg");
    let pte = store.read(at);
    ((pte >> 52) & 0xf, (pte >> 56) & 0x1f)
}

/// A table migrating at 15 walks and 31 DRAM references, aging every `decay` walks, with
/// `pages` 4 KiB FlexSeg pages mapped at consecutive VPNs from 0x3_0000_0000 (frames from
/// 8192): the table and the VPNs.
fn aging_table(os: &mut Os, decay: u64, pages: u64) -> (UtopiaTable, Vec<Vpn>) {
    let m = Migration {
        walks: 15,
        dram_refs: 31,
        decay_interval: decay,
        sizes: SizeSet::of(&[PageSize::Size4K]),
    };
    let mut t = UtopiaTable::new(&mut os.ctx(), &layout(64), 4, Some(m)).unwrap();
    let vpns: Vec<Vpn> = (0..pages).map(|i| Vpn(0x3_0000_0000 + i)).collect();
    for (i, &v) in vpns.iter().enumerate() {
        t.map(&mut os.ctx(), v, Pfn(8192 + i as u64), PageSize::Size4K)
            .unwrap();
    }
    (t, vpns)
}

#[test]
fn an_aging_pass_halves_the_counters_in_the_pte_words_and_reads_the_whole_table() {
    let mut os = Os::new();
    // Decay off: passes only when asked for here.
    let (mut t, vpns) = aging_table(&mut os, 0, 24);
    // Page i walked i times with 3 DRAM references each (the counters saturate at 15, 31).
    for (i, &v) in vpns.iter().enumerate() {
        for _ in 0..i {
            t.note_walk(&mut os.ctx(), v, 3);
        }
    }
    let before: Vec<(u64, u64)> = vpns.iter().map(|&v| counters(&t, &os.store, v)).collect();
    assert_eq!(before[5], (5, 15));
    assert_eq!(before[20], (15, 31));
    let words: Vec<u64> = vpns
        .iter()
        .map(|&v| os.store.read(t.radix.leaf(&os.store, v.addr()).unwrap().0))
        .collect();
    t.age(&mut os.store);
    for (i, &v) in vpns.iter().enumerate() {
        let (f, c) = before[i];
        assert_eq!(counters(&t, &os.store, v), (f / 2, c / 2), "page {i}");
        // Nothing else of the PTE changed: it maps the same frame with the same flags.
        let word = os.store.read(t.radix.leaf(&os.store, v.addr()).unwrap().0);
        assert_eq!(word & !(0x1ff << 52), words[i] & !(0x1ff << 52), "page {i}");
    }
    assert_eq!(
        t.radix.lookup(&os.store, vpns[7].addr()),
        Some((Pfn(8199), PageSize::Size4K))
    );
    // The pass read the one leaf table (PT) whole, and the line of each upper table (PML4,
    // PDPT, PD) on the way to it, and wrote back the PT's lines holding pages walked at
    // least once: PTEs 1-23, lines 0-2.
    let mut scan = TableScan::default();
    t.take_scan(&mut scan);
    assert_eq!((scan.passes, scan.entries), (1, 23));
    assert_eq!(scan.pages.len(), 4);
    let levels: Vec<u32> = scan.pages.iter().map(|p| p.level).collect();
    assert_eq!(levels, [4, 3, 2, 1]);
    let pt = scan.pages[3];
    let (leaf, _) = t.radix.leaf(&os.store, vpns[0].addr()).unwrap();
    assert_eq!(pt.frame, leaf.pfn());
    assert_eq!(pt.read, u64::MAX);
    // The table's 24 PTEs start at index 0 of the PT (0x3_0000_0000 is 2 MiB-aligned).
    assert_eq!(pt.written, 0b111);
    assert!(scan.pages[..3]
        .iter()
        .all(|p| p.read.count_ones() == 1 && p.written == 0));
    // Taken: nothing left.
    let mut again = TableScan::default();
    t.take_scan(&mut again);
    assert!(again.is_empty() && again.pages.is_empty());
    // Passes bring every counter to zero in at most five halvings.
    for _ in 0..5 {
        t.age(&mut os.store);
    }
    assert!(vpns.iter().all(|&v| counters(&t, &os.store, v) == (0, 0)));
}

#[test]
fn a_pass_ages_the_next_window_of_leaf_tables_and_wraps_around() {
    let mut os = Os::new();
    let (mut t, _) = aging_table(&mut os, 0, 0);
    // One page in each of 200 2 MiB regions: 200 leaf tables, each walked twice.
    let tables = 200u64;
    let page = |k: u64| Vpn(0x3_0000_0000 + k * 512);
    for k in 0..tables {
        t.map(&mut os.ctx(), page(k), Pfn(8192 + k), PageSize::Size4K)
            .unwrap();
        t.note_walk(&mut os.ctx(), page(k), 2);
        t.note_walk(&mut os.ctx(), page(k), 2);
    }
    let window = super::table::AGING_WINDOW_TABLES as u64;
    assert!(window < tables && 2 * window > tables);
    // The first pass ages the first 128 tables in address order.
    t.age(&mut os.store);
    for k in 0..tables {
        let want = if k < window { (1, 2) } else { (2, 4) };
        assert_eq!(counters(&t, &os.store, page(k)), want, "table {k}");
    }
    // The second the other 72, then wraps around to the first 56.
    t.age(&mut os.store);
    for k in 0..tables {
        let want = if k < 2 * window - tables {
            (0, 1)
        } else {
            (1, 2)
        };
        assert_eq!(counters(&t, &os.store, page(k)), want, "table {k}");
    }
    let mut scan = TableScan::default();
    t.take_scan(&mut scan);
    assert_eq!(scan.passes, 2);
    let whole = scan.pages.iter().filter(|p| p.read == u64::MAX).count() as u64;
    assert_eq!(whole, 2 * window);
}

#[test]
fn a_page_hot_before_a_pass_and_cold_after_it_does_not_migrate() {
    // 14 walks of page A (3 DRAM references each: 14, and 31 saturated), then walks of
    // other pages up to the pass at the 32nd walk, then A once more.
    let run = |decay: u64| {
        let mut os = Os::new();
        let (mut t, vpns) = aging_table(&mut os, decay, 32);
        let a = vpns[0];
        for _ in 0..14 {
            assert!(!t.note_walk(&mut os.ctx(), a, 3));
        }
        for &v in &vpns[1..19] {
            assert!(!t.note_walk(&mut os.ctx(), v, 3));
        }
        let (f, c) = counters(&t, &os.store, a);
        (t.note_walk(&mut os.ctx(), a, 3), f, c)
    };
    // Without decay its 15th walk moves it, however long ago the first 14 were.
    assert_eq!(run(0), (true, 14, 31));
    // With a pass every 32 walks, the pass (at the 32nd walk) left it at 7 and 15: one walk
    // more makes 8 and 18, below the thresholds.
    assert_eq!(run(32), (false, 7, 15));
    // A page that stays hot still migrates: 15 walks in a row between two passes.
    let mut os = Os::new();
    let (mut t, vpns) = aging_table(&mut os, 32, 2);
    for k in 1..=15 {
        assert_eq!(t.note_walk(&mut os.ctx(), vpns[1], 3), k == 15, "walk {k}");
    }
}

#[test]
fn the_pass_comes_every_decay_interval_walks_of_any_page() {
    let mut os = Os::new();
    let (mut t, vpns) = aging_table(&mut os, 10, 3);
    let mut scan = TableScan::default();
    for k in 1..=35u64 {
        t.note_walk(&mut os.ctx(), vpns[(k % 3) as usize], 1);
        t.take_scan(&mut scan);
        assert_eq!(scan.passes, k / 10, "after walk {k}");
    }
    // A walk of a page no RestSeg holds counts too (the performance counter counts walks),
    // but its PTE gets no counters.
    let huge = Vpn(0x4_0000_0000);
    t.map(&mut os.ctx(), huge, Pfn(1 << 17), PageSize::Size2M)
        .unwrap();
    for _ in 0..5 {
        assert!(!t.note_walk(&mut os.ctx(), huge, 9));
    }
    t.take_scan(&mut scan);
    assert_eq!(scan.passes, 4);
    let (at, _) = t.radix.leaf(&os.store, huge.addr()).unwrap();
    assert_eq!(os.store.read(at) >> 52, 0);
}

mod decay_model {
    //! The counters against a model of §5.5's policy with decay: saturating counters per
    //! page, halved on every page after each `decay` walks, a page migrating (and its
    //! counters restarting) once both reach their thresholds.
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn counters_follow_the_model(
            walks in proptest::collection::vec((0u64..12, 0u32..6), 1..600),
            decay in prop_oneof![Just(0u64), 1u64..40],
            thresholds in (1u64..=15, 0u64..=31),
        ) {
            let mut os = Os::new();
            let m = Migration {
                walks: thresholds.0,
                dram_refs: thresholds.1,
                decay_interval: decay,
                sizes: SizeSet::of(&[PageSize::Size4K]),
            };
            let mut t = UtopiaTable::new(&mut os.ctx(), &layout(64), 4, Some(m)).unwrap();
            let vpn = |p: u64| Vpn(0x3_0000_0000 + p * 7);
            let mut next_frame = 8192;
            for p in 0..12 {
                t.map(&mut os.ctx(), vpn(p), Pfn(next_frame), PageSize::Size4K).unwrap();
                next_frame += 1;
            }
            let mut model: HashMap<u64, (u64, u64)> = HashMap::new();
            let mut since = 0;
            for (k, &(p, dram)) in walks.iter().enumerate() {
                let e = model.entry(p).or_default();
                e.0 = (e.0 + 1).min(15);
                e.1 = (e.1 + u64::from(dram)).min(31);
                if decay > 0 {
                    since += 1;
                    if since == decay {
                        since = 0;
                        for c in model.values_mut() {
                            *c = (c.0 / 2, c.1 / 2);
                        }
                    }
                }
                let e = model[&p];
                let want = e.0 >= thresholds.0 && e.1 >= thresholds.1;
                prop_assert_eq!(t.note_walk(&mut os.ctx(), vpn(p), dram), want, "walk {}", k);
                if want {
                    // The OS moves the page, erasing its PTE and counters; it comes back
                    // to the FlexSeg later with fresh ones (as an evicted page would).
                    t.unmap(&mut os.ctx(), vpn(p), PageSize::Size4K);
                    t.map(&mut os.ctx(), vpn(p), Pfn(next_frame), PageSize::Size4K).unwrap();
                    next_frame += 1;
                    model.insert(p, (0, 0));
                }
                for (&q, &c) in &model {
                    prop_assert_eq!(counters(&t, &os.store, vpn(q)), c, "page {} after walk {}", q, k);
                }
            }
        }
    }
}
