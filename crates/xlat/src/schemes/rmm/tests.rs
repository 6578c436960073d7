//! RMM's structures against models: the range-table B-tree against a `BTreeMap`, the ranges
//! against the runs of the mappings, the range TLB's hits, fills and shootdowns.

use super::range_table::{Range, RangeTable};
use super::range_tlb::RangeTlb;
use super::*;
use crate::addr::{PageSize, Pfn, VirtAddr, Vpn};
use crate::mem::physmem::BuddyAllocator;
use crate::mmu::testing::OneTable;
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Page-table memory for a test: 256 MiB.
struct Mem {
    store: PtStore,
    buddy: BuddyAllocator,
}

impl Mem {
    fn new() -> Mem {
        Mem {
            store: PtStore::new(),
            buddy: BuddyAllocator::new(1 << 16),
        }
    }
    fn ctx(&mut self) -> PtContext<'_> {
        PtContext {
            store: &mut self.store,
            buddy: &mut self.buddy,
        }
    }
}

/// The maximal runs of pages consecutive in both spaces: what the range table must hold.
fn runs(pages: &BTreeMap<u64, u64>) -> Vec<Range> {
    let mut out: Vec<Range> = Vec::new();
    for (&vpn, &pfn) in pages {
        let offset = pfn.wrapping_sub(vpn);
        match out.last_mut() {
            Some(r) if r.end == vpn && r.offset == offset => r.end += 1,
            _ => out.push(Range {
                base: vpn,
                end: vpn + 1,
                offset,
            }),
        }
    }
    out
}

#[derive(Clone, Debug)]
enum Op {
    /// Map `len` pages from `start` to frames `start + offset`.
    Map {
        start: u64,
        len: u64,
        offset: u64,
    },
    Unmap {
        start: u64,
        len: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    // Few distinct offsets, so that maps often continue or join ranges; some random ones.
    let offset = prop_oneof![Just(1000u64), Just(5000u64), 0u64..100_000];
    prop_oneof![
        3 => (0u64..400, 1u64..12, offset)
            .prop_map(|(start, len, offset)| Op::Map { start, len, offset }),
        1 => (0u64..400, 1u64..30).prop_map(|(start, len)| Op::Unmap { start, len }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// After any sequence of maps and unmaps, the table holds exactly the runs of the
    /// mappings, its B-tree invariants hold, and a lookup of any page finds its run.
    #[test]
    fn range_table_holds_exactly_the_runs_of_the_mappings(
        node_entries in prop_oneof![Just(3u32), Just(5), Just(127)],
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let mut mem = Mem::new();
        let mut table = RangeTable::new(&mut mem.ctx(), node_entries).unwrap();
        let mut model: BTreeMap<u64, u64> = BTreeMap::new();
        for op in &ops {
            match *op {
                Op::Map { start, len, offset } => {
                    table.add(&mut mem.ctx(), start, start + len, offset).unwrap();
                    for v in start..start + len {
                        model.insert(v, v + offset);
                    }
                }
                Op::Unmap { start, len } => {
                    table.remove(&mut mem.ctx(), start, start + len).unwrap();
                    for v in start..start + len {
                        model.remove(&v);
                    }
                }
            }
            prop_assert_eq!(table.check(&mem.store), runs(&model));
        }
        for v in 0..450 {
            let got = table.lookup(&mem.store, v).map(|r| r.frame(v).0);
            prop_assert_eq!(got, model.get(&v).copied(), "page {}", v);
        }
        // Node frames are page-table frames of the buddy allocator: all accounted for.
        prop_assert_eq!(mem.store.frames(), table.stats().nodes);
    }

    /// The B-tree alone: inserting and deleting disjoint, never-adjacent ranges (no joins),
    /// so every insert adds an entry and every delete removes one, against a BTreeMap.
    #[test]
    fn btree_inserts_splits_and_deletes_like_a_btreemap(
        node_entries in prop_oneof![Just(3u32), Just(5), Just(7)],
        keys in prop::collection::vec(0u64..2000, 1..300),
        deletes in prop::collection::vec(any::<prop::sample::Index>(), 0..300),
    ) {
        let mut mem = Mem::new();
        let mut table = RangeTable::new(&mut mem.ctx(), node_entries).unwrap();
        let mut model: BTreeMap<u64, Range> = BTreeMap::new();
        for &k in &keys {
            // Page 3k, one page long, each with its own offset: never joinable.
            let r = Range { base: 3 * k, end: 3 * k + 1, offset: 7 * k + 1 };
            table.add(&mut mem.ctx(), r.base, r.end, r.offset).unwrap();
            model.insert(r.base, r);
        }
        prop_assert_eq!(table.check(&mem.store), model.values().copied().collect::<Vec<_>>());
        let max_depth = table.stats().depth;
        for d in &deletes {
            if model.is_empty() {
                break;
            }
            let base = *model.keys().nth(d.index(model.len())).unwrap();
            table.remove(&mut mem.ctx(), base, base + 1).unwrap();
            model.remove(&base);
            prop_assert_eq!(table.check(&mem.store), model.values().copied().collect::<Vec<_>>());
            prop_assert_eq!(table.lookup(&mem.store, base), None);
        }
        prop_assert!(table.stats().depth <= max_depth);
        prop_assert_eq!(mem.store.frames(), table.stats().nodes);
    }

    /// The table of an RMM process: after random maps and unmaps of 4 KiB and 2 MiB pages,
    /// every page inside a range translates by its offset to the frame the radix table maps,
    /// and every mapped page lies in exactly one range.
    #[test]
    fn ranges_agree_with_the_radix_table(
        ops in prop::collection::vec(
            (any::<bool>(), any::<bool>(), 0u64..24, prop_oneof![Just(0u64), Just(1), 0u64..64]),
            1..80,
        ),
    ) {
        let mut mem = Mem::new();
        let mut pt = RmmTable::new(&mut mem.ctx(), 4, 3).unwrap();
        // Ground truth: 4 KiB page -> frame. Pages live in 2 MiB slots 0..24 (1 of 4 huge).
        let mut truth: BTreeMap<u64, u64> = BTreeMap::new();
        let mut huge: BTreeMap<u64, u64> = BTreeMap::new();
        for (map, big, slot, delta) in ops {
            let base2m = 0x1000 + slot * 512;
            if big && slot % 4 == 0 {
                if map && !huge.contains_key(&base2m) && !truth.contains_key(&base2m) {
                    // 2 MiB frame: aligned, right after the previous slot's frames or not.
                    let pfn = (0x4_0000 + (slot + delta) * 512) & !511;
                    pt.map(&mut mem.ctx(), Vpn(base2m), Pfn(pfn), PageSize::Size2M).unwrap();
                    huge.insert(base2m, pfn);
                    for i in 0..512 {
                        truth.insert(base2m + i, pfn + i);
                    }
                } else if !map && huge.remove(&base2m).is_some() {
                    pt.unmap(&mut mem.ctx(), Vpn(base2m), PageSize::Size2M).unwrap();
                    for i in 0..512 {
                        truth.remove(&(base2m + i));
                    }
                }
            } else if slot % 4 != 0 {
                // 4 KiB pages at the start of a non-huge slot: a frame continuing the page
                // before (delta 0), one off, or anywhere.
                let vpn = base2m + delta;
                if map && !truth.contains_key(&vpn) {
                    let pfn = match delta {
                        0 => truth.get(&(vpn - 1)).map_or(0x9000 + vpn, |p| p + 1),
                        _ => 0x9000 + vpn + (delta % 3) * 64,
                    };
                    pt.map(&mut mem.ctx(), Vpn(vpn), Pfn(pfn), PageSize::Size4K).unwrap();
                    truth.insert(vpn, pfn);
                } else if !map && truth.remove(&vpn).is_some() {
                    pt.unmap(&mut mem.ctx(), Vpn(vpn), PageSize::Size4K).unwrap();
                }
            }
            let ranges = pt.ranges.check(&mem.store);
            prop_assert_eq!(&ranges, &runs(&truth));
            for r in &ranges {
                for v in [r.base, (r.base + r.end) / 2, r.end - 1] {
                    let (pfn, size) = pt.radix.lookup(&mem.store, Vpn(v).addr()).unwrap();
                    let radix = pfn.0 + (((v << 12) & size.mask()) >> 12);
                    prop_assert_eq!(r.frame(v).0, radix, "page {:#x}", v);
                }
            }
            let covered: u64 = ranges.iter().map(Range::pages).sum();
            prop_assert_eq!(covered, truth.len() as u64);
        }
    }
}

#[test]
fn offsets_below_the_virtual_address_round_trip_through_memory() {
    let mut mem = Mem::new();
    let mut table = RangeTable::new(&mut mem.ctx(), 127).unwrap();
    // VA 0x7f00_0000_0000 on frame 5: a large negative offset.
    let vpn = 0x7f00_0000_0000u64 >> 12;
    table
        .add(&mut mem.ctx(), vpn, vpn + 4, 5u64.wrapping_sub(vpn))
        .unwrap();
    let r = table.lookup(&mem.store, vpn + 3).unwrap();
    assert_eq!(r.frame(vpn + 3), Pfn(8));
}

#[test]
fn a_range_walk_reads_lines_of_each_node_from_root_to_leaf() {
    let mut mem = Mem::new();
    let mut table = RangeTable::new(&mut mem.ctx(), 3).unwrap();
    for k in 0..100u64 {
        table
            .add(&mut mem.ctx(), 4 * k, 4 * k + 2, 1000 + k)
            .unwrap();
    }
    let depth = table.stats().depth;
    assert!(depth >= 4, "100 ranges in nodes of 3 make a deep tree");
    let mut lines = Vec::new();
    let r = table.walk(&mem.store, 4 * 57 + 1, &mut lines).unwrap();
    assert_eq!(r.frame(4 * 57 + 1), Pfn(4 * 57 + 1 + 1057));
    // At least one line per node on the path (the root holds no entry of a deep leaf) and
    // each line once; all are node lines, 64-byte aligned.
    assert!(
        lines.len() >= 2 && lines.len() as u32 <= 2 * depth,
        "{lines:?}"
    );
    assert!(lines.iter().all(|l| l.0 % 64 == 0));
    let mut uniq = lines.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), lines.len());
    // A page in no range: the walk reads to a leaf and finds nothing.
    lines.clear();
    assert_eq!(table.walk(&mem.store, 4 * 57 + 3, &mut lines), None);
    assert!(lines.len() as u32 >= depth);
}

#[test]
fn node_entries_out_of_bounds_is_a_config_error() {
    let mut mem = Mem::new();
    for bad in [0, 1, 2, 4, 129] {
        let err = RangeTable::new(&mut mem.ctx(), bad).err().unwrap();
        assert!(
            err.to_string().contains("schemes.rmm.node_entries"),
            "{err}"
        );
    }
    let cfg = RmmConfig {
        range_tlb_entries: 0,
        ..Default::default()
    };
    let err = cfg.validate("schemes.rmm").unwrap_err();
    assert!(
        err.to_string().contains("schemes.rmm.range_tlb_entries"),
        "{err}"
    );
}

fn range(base: u64, end: u64, offset: u64) -> Range {
    Range { base, end, offset }
}

#[test]
fn range_tlb_hit_returns_the_frame_at_the_offset() {
    let mut tlb = RangeTlb::new(4);
    tlb.insert(1, range(100, 200, 5000), 10);
    assert_eq!(
        tlb.lookup(150, 1, 5),
        None,
        "not arrived before its walk ends"
    );
    let r = tlb.lookup(150, 1, 10).unwrap();
    assert_eq!(r.frame(150), Pfn(5150));
    assert_eq!(tlb.lookup(200, 1, 20), None, "limit is exclusive");
    assert_eq!(tlb.lookup(150, 2, 20), None, "another address space");
    assert_eq!((tlb.stats.hits, tlb.stats.misses), (1, 3));
}

#[test]
fn range_tlb_evicts_least_recently_used_and_replaces_grown_ranges() {
    let mut tlb = RangeTlb::new(2);
    tlb.insert(0, range(0, 10, 1), 0);
    tlb.insert(0, range(20, 30, 1), 0);
    tlb.lookup(5, 0, 0); // [0, 10) is now the most recent
    tlb.insert(0, range(40, 50, 1), 0);
    assert!(tlb.lookup(5, 0, 0).is_some());
    assert!(tlb.lookup(25, 0, 0).is_none(), "LRU victim");
    assert_eq!(tlb.stats.evictions, 1);
    // The range [0, 10) grew to [0, 16): the old view is replaced, not duplicated.
    tlb.insert(0, range(0, 16, 1), 0);
    assert_eq!(tlb.len(), 2);
    assert_eq!(tlb.lookup(12, 0, 0).unwrap().end, 16);
}

#[test]
fn range_tlb_refill_keeps_the_earlier_arrival() {
    let mut tlb = RangeTlb::new(2);
    tlb.insert(0, range(0, 10, 1), 100);
    tlb.insert(0, range(0, 10, 1), 900); // a queued walk ending later
    assert!(tlb.lookup(3, 0, 150).is_some());
}

/// An RMM MMU and hierarchy built from the `rmm` preset.
fn rmm_parts() -> (RmmMmu, Hierarchy) {
    let cfg = crate::SimConfig::load("rmm", &[]).unwrap();
    let ctx = BuildCtx {
        sections: &cfg.schemes,
        mmu: &cfg.mmu,
        seed: 1,
        physmem_bytes: cfg.os.physmem.bytes,
        dram: &cfg.dram,
        topology: &cfg.topology,
    };
    let mem = Hierarchy::new(&cfg.cache, &cfg.dram, cfg.core.frequency_ghz, 1);
    (RmmMmu::new(&ctx), mem)
}

#[test]
fn shootdown_drops_exactly_the_ranges_overlapping_the_page() {
    let (mut mmu, mut hier) = rmm_parts();
    let mut mem = Mem::new();
    let mut pt = RmmTable::new(&mut mem.ctx(), 4, 127).unwrap();
    // Two ranges of pid 3 ([0x100, 0x140) and [0x200, 0x240)) and the first one of pid 4.
    pt.map(&mut mem.ctx(), Vpn(0x100), Pfn(0x5000), PageSize::Size4K)
        .unwrap();
    for i in 1..0x40 {
        pt.map(
            &mut mem.ctx(),
            Vpn(0x100 + i),
            Pfn(0x5000 + i),
            PageSize::Size4K,
        )
        .unwrap();
        pt.map(
            &mut mem.ctx(),
            Vpn(0x200 + i),
            Pfn(0x7000 + i),
            PageSize::Size4K,
        )
        .unwrap();
    }
    pt.map(&mut mem.ctx(), Vpn(0x200), Pfn(0x7000), PageSize::Size4K)
        .unwrap();
    assert_eq!(pt.ranges.stats().ranges, 2);
    for (va, asid) in [(0x100, 3), (0x200, 3), (0x100, 4)] {
        let va = Vpn(va).addr();
        let (pfn, size) = pt.radix.lookup(&mem.store, va).unwrap();
        mmu.after_walk(va, asid, pfn, size, &pt, &mem.store, 0, &mut hier, &mut ());
    }
    assert_eq!(mmu.range_tlb().len(), 3);
    let tables = OneTable {
        table: &pt,
        store: &mem.store,
    };
    let side = |mmu: &mut RmmMmu, hier: &mut Hierarchy, page: u64, asid: u16| {
        let (hit, latency) = mmu.side_lookup(
            VirtAddr(page << 12),
            asid,
            false,
            10_000,
            &tables,
            hier,
            &mut (),
        );
        assert_eq!(latency, 12, "a range TLB lookup, hit or miss");
        hit
    };
    let hit = side(&mut mmu, &mut hier, 0x120, 3).unwrap();
    assert_eq!((hit.pfn, hit.size), (Pfn(0x5020), PageSize::Size4K));
    // Shoot down one page of pid 3's first range.
    mmu.invalidate(Vpn(0x130), PageSize::Size4K, 3, &mut ());
    assert_eq!(mmu.range_tlb().len(), 2);
    assert!(side(&mut mmu, &mut hier, 0x120, 3).is_none());
    assert!(side(&mut mmu, &mut hier, 0x220, 3).is_some());
    assert!(side(&mut mmu, &mut hier, 0x120, 4).is_some());
    // A 2 MiB shootdown covering the second range drops it too; flush keeps the rest.
    mmu.invalidate(Vpn(0x200), PageSize::Size2M, 3, &mut ());
    mmu.flush();
    assert_eq!(mmu.range_tlb().len(), 1);
    let stats = mmu.stats();
    assert_eq!(stats["range_walk"]["walks"], 3);
    assert_eq!(stats["range_tlb"]["invalidations"], 2);
}
