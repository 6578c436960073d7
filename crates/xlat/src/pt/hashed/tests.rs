//! Whole-table tests: every mapping stays findable through the stored bytes across inserts,
//! deletes and every kind of resize, for ECPT and ME-HPT configurations; the paper's numbers
//! (Table II) and contiguity claims; clean allocation failure under fragmentation.

use super::*;
use crate::addr::{PageSize, Pfn, Vpn};
use crate::mem::physmem::BuddyAllocator;
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext};
use crate::rng::Rng;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A process's hashed page table with its memory and the ground truth.
struct Rig {
    buddy: BuddyAllocator,
    store: PtStore,
    pt: HashedPageTable,
    truth: BTreeMap<(usize, u64), Pfn>,
    next_pfn: u64,
}

impl Rig {
    fn new(cfg: &HashedConfig, kind: HptKind, mem_bytes: u64) -> Rig {
        Rig {
            buddy: BuddyAllocator::new(mem_bytes / 4096),
            store: PtStore::new(),
            pt: HashedPageTable::new(cfg, kind, 42).unwrap(),
            truth: BTreeMap::new(),
            // Data frames are not allocated from the buddy (only table memory is), so they
            // can be any numbers.
            next_pfn: 1 << 30,
        }
    }

    fn map(&mut self, vpn: Vpn, size: PageSize) -> crate::error::Result<()> {
        let vpn = vpn.align_down(size);
        let pfn = Pfn(self.next_pfn);
        self.next_pfn += size.base_pages();
        let mut ctx = PtContext {
            store: &mut self.store,
            buddy: &mut self.buddy,
        };
        self.pt.map(&mut ctx, vpn, pfn, size)?;
        self.truth.insert((size.index(), vpn.0), pfn);
        Ok(())
    }

    fn unmap(&mut self, vpn: Vpn, size: PageSize) {
        let vpn = vpn.align_down(size);
        let mut ctx = PtContext {
            store: &mut self.store,
            buddy: &mut self.buddy,
        };
        let got = self.pt.unmap(&mut ctx, vpn, size);
        assert_eq!(
            got,
            self.truth.remove(&(size.index(), vpn.0)),
            "unmap {vpn:?} {size}"
        );
    }

    /// Every mapped page translates through the stored lines, the tables pass their audit,
    /// and the buddy allocator's used frames are exactly the table memory.
    fn check(&self) {
        for (&(s, v), &pfn) in &self.truth {
            let size = PageSize::ALL[s];
            // Any base page inside the page translates to it.
            let inner = Vpn(v + size.base_pages() / 2);
            assert_eq!(
                self.pt.translate(&self.store, inner),
                Some((pfn, size)),
                "{v:#x} {size}"
            );
        }
        let lines = self.pt.audit(&self.store).unwrap_or_else(|e| panic!("{e}"));
        let clusters: std::collections::BTreeSet<(usize, u64)> = self
            .truth
            .keys()
            .map(|&(s, v)| (s, (v >> PageSize::ALL[s].order()) / 8))
            .collect();
        assert_eq!(lines, clusters.len() as u64, "one line per mapped cluster");
        let used = (self.buddy.total_frames() - self.buddy.free_frames()) * 4096;
        assert_eq!(
            used,
            self.pt.bytes(),
            "buddy-allocated bytes equal table bytes"
        );
        assert_eq!(self.store.frames() * 4096, self.pt.bytes(), "stored frames");
    }
}

fn small(kind: HptKind) -> HashedConfig {
    let mut c = HashedConfig {
        initial_lines: 8,
        ..HashedConfig::default()
    };
    if kind == HptKind::Mehpt {
        // Tiny chunks and L2P subtables so that transitions and stealing happen early.
        c.mehpt.chunk_sizes = vec![4096, 16384, 65536, 1 << 20];
        c.mehpt.l2p_entries = 2;
    }
    c
}

/// The configurations the properties run on: ECPT and ME-HPT with each technique off in turn.
fn configs() -> Vec<(&'static str, HashedConfig, HptKind)> {
    let m = |f: &dyn Fn(&mut HashedConfig)| {
        let mut c = small(HptKind::Mehpt);
        f(&mut c);
        c
    };
    vec![
        ("ecpt", small(HptKind::Ecpt), HptKind::Ecpt),
        (
            "ecpt-city-4way",
            {
                let mut c = small(HptKind::Ecpt);
                c.ways = 4;
                c.hash = hash::HashKind::City;
                c
            },
            HptKind::Ecpt,
        ),
        ("mehpt", m(&|_| {}), HptKind::Mehpt),
        (
            "mehpt-out-of-place",
            m(&|c| c.mehpt.in_place = false),
            HptKind::Mehpt,
        ),
        (
            "mehpt-all-ways",
            m(&|c| c.mehpt.per_way = false),
            HptKind::Mehpt,
        ),
        (
            "mehpt-no-stealing",
            m(&|c| c.mehpt.stealing = false),
            HptKind::Mehpt,
        ),
        (
            "mehpt-tight-cuckoo",
            m(&|c| {
                c.max_reinsertions = 2;
                c.upsize = 0.9;
                c.downsize = 0.3;
            }),
            HptKind::Mehpt,
        ),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    /// Map `count` consecutive pages of a size starting at page `start` of a 64 GiB window.
    Map { size: usize, start: u64, count: u64 },
    /// Unmap the mapped pages of a size in `[start, start+count)`.
    Unmap { size: usize, start: u64, count: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..3, 0u64..4096, 1u64..300).prop_map(|(size, start, count)| Op::Map { size, start, count }),
        2 => (0usize..3, 0u64..4096, 1u64..600).prop_map(|(size, start, count)| Op::Unmap { size, start, count }),
    ]
}

/// Page `i` of `size` in the test's window; the 4K and 2M pages stay below 64 GiB and the
/// 1G pages above it, so mappings of different sizes never overlap.
fn page(size: usize, i: u64) -> Vpn {
    let s = PageSize::ALL[size];
    match s {
        PageSize::Size1G => Vpn((64 + i % 64) << 18),
        PageSize::Size2M => Vpn((i % 4096) << 9).align_down(s),
        // Spread 4K pages over several 2M regions, clustered as programs are.
        PageSize::Size4K => Vpn(((i * 7) % 16384) + (1 << 22)),
    }
}

fn run_ops(cfg: &HashedConfig, kind: HptKind, ops: &[Op]) -> Rig {
    let mut rig = Rig::new(cfg, kind, 1 << 30);
    for op in ops {
        match *op {
            Op::Map { size, start, count } => {
                for i in start..start + count {
                    let vpn = page(size, i);
                    let s = PageSize::ALL[size];
                    if !rig.truth.contains_key(&(size, vpn.align_down(s).0)) {
                        rig.map(vpn, s).unwrap();
                    }
                }
            }
            Op::Unmap { size, start, count } => {
                let s = PageSize::ALL[size];
                for i in start..start + count {
                    let vpn = page(size, i).align_down(s);
                    if rig.truth.contains_key(&(size, vpn.0)) {
                        rig.unmap(vpn, s);
                    }
                }
            }
        }
        rig.check();
    }
    rig
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn every_mapping_stays_findable(ops in prop::collection::vec(op(), 1..40)) {
        for (name, cfg, kind) in configs() {
            let rig = run_ops(&cfg, kind, &ops);
            let s = rig.pt.stats();
            prop_assert!(s.total.peak_bytes >= s.total.current_bytes, "{name}");
            // The organisation's bytes: the hashed tables plus the CWTs' frames.
            prop_assert_eq!(s.total.current_bytes + s.total.cwt_bytes, rig.pt.bytes(), "{}", name);
        }
    }
}

/// A fixed heavy sequence that exercises every resize kind for every configuration.
#[test]
fn grow_shrink_regrow_exercises_every_resize() {
    let ops = [
        Op::Map {
            size: 0,
            start: 0,
            count: 16384,
        },
        Op::Map {
            size: 1,
            start: 0,
            count: 256,
        },
        Op::Map {
            size: 2,
            start: 0,
            count: 64,
        },
        Op::Unmap {
            size: 0,
            start: 0,
            count: 16300,
        },
        Op::Unmap {
            size: 1,
            start: 0,
            count: 250,
        },
        Op::Map {
            size: 0,
            start: 0,
            count: 50,
        },
        Op::Map {
            size: 1,
            start: 0,
            count: 20,
        },
        Op::Map {
            size: 0,
            start: 0,
            count: 16384,
        },
    ];
    for (name, cfg, kind) in configs() {
        let rig = run_ops(&cfg, kind, &ops);
        let s = rig.pt.stats();
        assert!(
            s.total.upsizes > 0 && s.total.downsizes > 0,
            "{name}: {:?}",
            s.total
        );
        if kind == HptKind::Mehpt {
            assert!(
                s.total.chunk_transitions > 0,
                "{name}: no chunk-size change"
            );
            assert!(s.total.l2p_entries_peak > 0);
        } else {
            assert_eq!(s.total.l2p_entries_peak, 0);
        }
        if name == "mehpt" {
            // 4K took the middle of the L2P array while the 1G table was unused... or 1G
            // came first; either way more than one subtable's worth was in use at the peak.
            assert!(s.total.l2p_entries_peak as usize > cfg.mehpt.l2p_entries);
        }
    }
}

#[test]
fn translate_probe_and_cwt_agree() {
    let cfg = small(HptKind::Mehpt);
    let mut rig = Rig::new(&cfg, HptKind::Mehpt, 1 << 30);
    for i in 0..3000 {
        rig.map(Vpn(0x10_0000 + i), PageSize::Size4K).unwrap();
    }
    rig.map(Vpn(0x20_0000), PageSize::Size2M).unwrap();
    rig.map(Vpn(1 << 18), PageSize::Size1G).unwrap();
    rig.check();
    let mut out = [ProbeLine::default(); 8];
    for v in [0x10_0000u64, 0x10_0bb7] {
        let n = rig
            .pt
            .probe_lines(&rig.store, PageSize::Size4K, Vpn(v), &mut out);
        assert_eq!(n, 3);
        assert_eq!(
            out[..n].iter().filter(|p| p.hit).count(),
            1,
            "exactly one way holds it"
        );
        // The walker's L2P path gives the same line as the probe when not resizing.
        let t = rig.pt.table(PageSize::Size4K).unwrap();
        for p in &out[..n] {
            let way = &t.ways()[p.way];
            if way.resize.is_none() {
                let k = way.gen.key(entry::cluster_of(Vpn(v), PageSize::Size4K));
                assert_eq!(rig.pt.l2p_lookup(p.way, PageSize::Size4K, k), Some(p.addr));
            }
        }
    }
    let n = rig
        .pt
        .probe_lines(&rig.store, PageSize::Size2M, Vpn(0x30_0000), &mut out);
    assert_eq!(out[..n].iter().filter(|p| p.hit).count(), 0);
    let cwt = rig.pt.cwt();
    assert!(cwt.sizes_in_2m(Vpn(0x10_0000)).contains(PageSize::Size4K));
    assert!(cwt.sizes_in_2m(Vpn(0x20_0000)).contains(PageSize::Size2M));
    assert!(cwt.sizes_in_1g(Vpn(1 << 18)).contains(PageSize::Size1G));
    assert!(cwt.sizes_in_2m(Vpn(0x30_0000)).is_empty());
    let total = rig.pt.stats().total.alloc_cycles;
    assert!(total > 0);
    assert_eq!(rig.pt.take_alloc_cycles(), total);
    assert_eq!(rig.pt.take_alloc_cycles(), 0);
    let json = serde_json::to_value(rig.pt.stats()).unwrap();
    assert!(json["4k"]["reinsertions"].is_array() && json["total"]["peak_bytes"].is_u64());
}

/// ME-HPT Table II, computed from the L2P capacity (with stealing, 1G unused) and the line
/// geometry: max way = 64 x chunk; mapping space of 3 ways with 4 KiB and 2 MiB pages.
#[test]
fn table_ii_from_the_structures() {
    let cfg = HashedConfig::default();
    let l2p = l2p::L2pTable::new(cfg.ways, cfg.mehpt.l2p_entries, true);
    let expect = [
        (8u64 << 10, 512u64 << 10, 768u64 << 20, 384u64 << 30),
        (1 << 20, 64 << 20, 96 << 30, 48 << 40),
        (8 << 20, 512 << 20, 768 << 30, 384 << 40),
        (64 << 20, 4 << 30, 6 << 40, 3 << 50),
    ];
    for (chunk, way, map_4k, map_2m) in expect {
        let max_way = l2p.capacity(0, PageSize::Size4K) as u64 * chunk;
        assert_eq!(max_way, way);
        let lines = cfg.ways as u64 * max_way / entry::LINE_BYTES;
        let space = |s: PageSize| lines * entry::PTES_PER_LINE * s.bytes();
        assert_eq!(space(PageSize::Size4K), map_4k);
        assert_eq!(space(PageSize::Size2M), map_2m);
    }
}

/// Grow a default ME-HPT until a 4K way leaves 8 KiB chunks: the largest way built from
/// 8 KiB chunks is exactly Table II's 512 KiB, and the next one is built from 1 MiB chunks.
#[test]
fn mehpt_switches_chunk_size_at_table_ii_limit() {
    let cfg = HashedConfig::default();
    let mut rig = Rig::new(&cfg, HptKind::Mehpt, 1 << 30);
    let mut max_small_way = 0;
    let mut v = 0x40_0000u64;
    loop {
        rig.map(Vpn(v), PageSize::Size4K).unwrap();
        v += 1;
        let t = rig.pt.table(PageSize::Size4K).unwrap();
        if t.stats.chunk_transitions > 0 {
            break;
        }
        for w in t.ways() {
            max_small_way = max_small_way.max(w.storage.bytes());
        }
    }
    assert_eq!(max_small_way, 512 << 10);
    let t = rig.pt.table(PageSize::Size4K).unwrap();
    assert!(t.ways().iter().any(|w| matches!(
        w.storage,
        way::Storage::Chunks { chunk_bytes, count: 1, .. } if chunk_bytes == 1 << 20
    )));
    assert_eq!(rig.pt.stats().total.max_contiguous_bytes, 1 << 20);
    rig.check();
}

/// The same number of 4 KiB mappings: ECPT's ways grow as single blocks (4 MiB for ~480K
/// pages, 64 MiB at ~16M pages by the same doubling), ME-HPT never allocates more than one
/// 1 MiB chunk at a time.
#[test]
fn mehpt_contiguity_stays_at_1mib_where_ecpt_grows() {
    let pages = 480_000u64;
    let cfg = HashedConfig::default();
    let mut max = Vec::new();
    for kind in [HptKind::Ecpt, HptKind::Mehpt] {
        let mut rig = Rig::new(&cfg, kind, 1 << 30);
        for v in 0..pages {
            rig.map(Vpn(0x100_0000 + v), PageSize::Size4K).unwrap();
        }
        let s = rig.pt.stats();
        // Growth only: no way is ever downsized (forced upsizes do not ping-pong with
        // downsizes), and most upsizes come from the occupancy threshold, not the cuckoo bound.
        assert!(s.size_4k.downsizes.iter().all(|&d| d == 0), "{kind:?}");
        let ups: u64 = s.size_4k.upsizes.iter().sum();
        let forced_ways = if kind == HptKind::Ecpt { 3 } else { 1 };
        assert!(
            s.size_4k.forced_upsizes * forced_ways * 3 <= ups,
            "{kind:?}: {s:?}"
        );
        assert_eq!(s.size_4k.line_inserts, pages / 8);
        max.push(s.total.max_contiguous_bytes);
    }
    assert_eq!(max, vec![4 << 20, 1 << 20]);
}

/// With no free 64 KiB block left, ECPT cannot upsize past 16 KiB ways and fails with a clear
/// error, keeping every mapping it had; ME-HPT maps the same pages from small chunks.
#[test]
fn ecpt_fails_cleanly_on_fragmented_memory() {
    let cfg = HashedConfig::default();
    let mut results = Vec::new();
    for kind in [HptKind::Ecpt, HptKind::Mehpt] {
        let mut rig = Rig::new(&cfg, kind, 64 << 20);
        let mut rng = Rng::new(1, 1);
        // Pin one frame in every 32 KiB block: no free block of order 3 or more remains.
        rig.buddy.fragment(1.0, 3, &mut rng);
        assert!(!rig.buddy.has_free_block(3));
        let pinned = rig.buddy.total_frames() - rig.buddy.free_frames();
        let mut err = None;
        for v in 0..20_000u64 {
            if let Err(e) = rig.map(Vpn(v), PageSize::Size4K) {
                err = Some(e.to_string());
                // The run stops here; whether the failed page got in does not matter, but
                // everything mapped before it must still be there.
                rig.truth.remove(&(0, v));
                break;
            }
        }
        for (&(_, v), &pfn) in &rig.truth {
            assert_eq!(
                rig.pt.translate(&rig.store, Vpn(v)),
                Some((pfn, PageSize::Size4K))
            );
        }
        let used = rig.buddy.total_frames() - rig.buddy.free_frames() - pinned;
        assert_eq!(used * 4096, rig.pt.bytes());
        results.push((err, rig.pt.stats().total.failed_allocs));
    }
    let (ecpt_err, ecpt_failed) = &results[0];
    let msg = ecpt_err.as_ref().expect("ECPT must fail");
    assert!(
        msg.contains("ECPT 4K way")
            && msg.contains("no free contiguous 32 KiB block (order 3)")
            && msg.contains("FMFI"),
        "{msg}"
    );
    assert_eq!(*ecpt_failed, 1);
    assert_eq!(results[1], (None, 0), "ME-HPT fits in 8 KiB chunks");
}

/// Each ME-HPT technique, added in turn on 200K 4 KiB pages (City hashes, so that no forced
/// upsize blurs the comparison): chunks cut the largest block and the allocation cycles, in-place
/// resizing removes the old+new peak, per-way resizing never needs more memory.
#[test]
fn techniques_reduce_contiguity_peak_memory_and_allocation_cost() {
    type Setup = Box<dyn Fn(&mut HashedConfig)>;
    let variants: Vec<(HptKind, Setup)> = vec![
        (HptKind::Ecpt, Box::new(|_| {})),
        (
            HptKind::Mehpt,
            Box::new(|c| {
                c.mehpt.in_place = false;
                c.mehpt.per_way = false;
            }),
        ),
        (HptKind::Mehpt, Box::new(|c| c.mehpt.per_way = false)),
        (HptKind::Mehpt, Box::new(|_| {})),
    ];
    let mut s = Vec::new();
    for (kind, setup) in variants {
        let mut cfg = HashedConfig {
            hash: hash::HashKind::City,
            ..HashedConfig::default()
        };
        setup(&mut cfg);
        let mut rig = Rig::new(&cfg, kind, 1 << 30);
        for v in 0..200_000 {
            rig.map(Vpn(0x100_0000 + v * 3), PageSize::Size4K).unwrap();
        }
        assert_eq!(rig.pt.stats().size_4k.forced_upsizes, 0);
        s.push(rig.pt.stats().total);
    }
    let (ecpt, chunks, in_place, per_way) = (&s[0], &s[1], &s[2], &s[3]);
    assert_eq!(ecpt.max_contiguous_bytes, 4 << 20);
    assert!(s[1..].iter().all(|t| t.max_contiguous_bytes == 1 << 20));
    assert_eq!(
        chunks.peak_bytes, ecpt.peak_bytes,
        "chunks alone keep the sizes"
    );
    assert!(chunks.alloc_cycles < ecpt.alloc_cycles);
    assert!(in_place.peak_bytes < chunks.peak_bytes);
    assert!(in_place.alloc_cycles < chunks.alloc_cycles);
    assert!(per_way.peak_bytes <= in_place.peak_bytes);
    assert!(per_way.alloc_cycles <= in_place.alloc_cycles);
}

/// §V-A leaves open what happens when the 1G subtable needs an entry after 4K took the middle
/// and 2M uses all of its own: the subtable using most entries moves to a larger chunk size
/// and gives entries back, and the 1G table gets its entry.
#[test]
fn l2p_room_is_made_for_a_late_1g_table() {
    let mut cfg = small(HptKind::Mehpt);
    cfg.mehpt.l2p_entries = 2;
    cfg.mehpt.per_way = false;
    let mut rig = Rig::new(&cfg, HptKind::Mehpt, 1 << 30);
    let l2p_used = |rig: &Rig, s: PageSize| (0..3).map(|w| rig.pt.l2p().used(w, s)).min().unwrap();
    let mut v = 0;
    while l2p_used(&rig, PageSize::Size4K) <= 2 {
        rig.map(Vpn(v), PageSize::Size4K).unwrap();
        v += 1;
    }
    let mut h = 0;
    while l2p_used(&rig, PageSize::Size2M) < 2 {
        rig.map(Vpn((1 << 20) + (h << 9)), PageSize::Size2M)
            .unwrap();
        h += 1;
    }
    assert!((0..3).all(|w| rig.pt.l2p().capacity(w, PageSize::Size1G) == 0));
    let before = rig.pt.stats().size_4k.chunk_transitions;
    rig.map(Vpn(1 << 18), PageSize::Size1G).unwrap();
    assert!(rig.pt.stats().size_4k.chunk_transitions > before);
    assert!((0..3).all(|w| rig.pt.l2p().used(w, PageSize::Size1G) == 1));
    rig.check();
}

/// ME-HPT §I/Table I at full scale: a GUPS-sized process (10M 4 KiB pages, 40 GB) drives
/// ECPT's ways to 64 MiB blocks while ME-HPT builds the same table from 1 MiB chunks. Takes
/// about a minute and 0.5 GB of host memory:
/// `cargo test -p xlat --lib pt::hashed::tests::gups_scale -- --ignored`.
#[test]
#[ignore]
fn gups_scale_contiguity_64mib_vs_1mib() {
    let mut max = Vec::new();
    for kind in [HptKind::Ecpt, HptKind::Mehpt] {
        let mut rig = Rig::new(&HashedConfig::default(), kind, 4 << 30);
        for v in 0..10_000_000u64 {
            rig.map(Vpn(0x100_0000 + v), PageSize::Size4K).unwrap();
        }
        max.push(rig.pt.stats().total.max_contiguous_bytes);
    }
    assert_eq!(max, vec![64 << 20, 1 << 20]);
}

/// Utopia Table 1's ECH resizes by a scaling factor of 10: ways are indexed by a mask of the
/// hash, so each upsize multiplies them by 8, and every mapping stays findable.
#[test]
fn a_scaling_factor_of_10_grows_ecpt_ways_eightfold() {
    let cfg = HashedConfig {
        ways: 4,
        scale: 10,
        downsize: 0.0,
        hash: hash::HashKind::City,
        ..HashedConfig::default()
    };
    let mut rig = Rig::new(&cfg, HptKind::Ecpt, 1 << 30);
    for i in 0..2000u64 {
        rig.map(Vpn(i * 8 * 7919), PageSize::Size4K).unwrap();
    }
    rig.check();
    let s = rig.pt.stats().size_4k;
    let ups = s.upsizes[0];
    assert!(ups >= 1, "the table grew");
    assert!(s.upsizes.iter().all(|&u| u == ups));
    for &b in &s.way_bytes {
        assert_eq!(b, (128 * 64) << (3 * ups), "8x per upsize");
    }
    // ME-HPT's in-place and per-way resizing are defined for doubling only.
    let e = HashedPageTable::new(&cfg, HptKind::Mehpt, 1).err().unwrap();
    assert!(e.to_string().contains("schemes.hashed.table.scale"), "{e}");
}
