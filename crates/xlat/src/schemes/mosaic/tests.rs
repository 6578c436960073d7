//! The iceberg pool: CPFN layout, placement, decode against the allocator's truth, and the
//! utilisation of the first associativity conflict.

use super::frames::{aligned_blocks, IcebergFrames};
use super::iceberg::{Geometry, IcebergMap, IcebergTable, Slot};
use super::MosaicConfig;
use crate::addr::{PageSize, Pfn, Vpn};
use crate::mem::physmem::BuddyAllocator;
use crate::os::FramePolicy;
use crate::rng::Rng;
use proptest::prelude::*;
use std::collections::HashMap;

fn paper() -> Geometry {
    Geometry::new(56, 8, 6).unwrap()
}

/// A pool of `buckets` buckets of the paper's geometry from frame `base`.
fn table(buckets: u64, base: u64, seed: u64) -> IcebergTable {
    IcebergTable::new(IcebergMap::new(
        paper(),
        Pfn(base),
        buckets,
        &mut Rng::new(seed, 77),
    ))
}

#[test]
fn the_papers_geometry_gives_7_bit_cpfns_and_h_104() {
    let g = paper();
    assert_eq!(g.cpfn_bits(), 7);
    assert_eq!(g.associativity(), 104);
    assert_eq!(g.unmapped(), 0x7f);
    assert_eq!(g.decode(0x7f), None);
    // §3.1's layout: a leading 0 and a 6-bit front slot, or a leading 1, a 3-bit choice and
    // a 3-bit backyard slot.
    assert_eq!(g.encode(Slot::Front(55)), 55);
    assert_eq!(g.encode(Slot::Back { choice: 5, slot: 7 }), 0b1_101_111);
    let mut codes = Vec::new();
    for s in 0..56 {
        codes.push(Slot::Front(s));
    }
    for choice in 0..6 {
        for slot in 0..8 {
            codes.push(Slot::Back { choice, slot });
        }
    }
    for slot in &codes {
        assert_eq!(g.decode(g.encode(*slot)), Some(*slot));
    }
    // Every one of the 128 codes decodes to one of the 104 slots or to nothing.
    let valid = (0..=255u8).filter(|&c| g.decode(c).is_some()).count();
    assert_eq!(valid, 104);
}

#[test]
fn the_cpfn_width_follows_f_b_d_and_keeps_all_ones_free() {
    // d and b full powers of two: one more bit, so all ones is not a backyard code.
    let g = Geometry::new(56, 8, 8).unwrap();
    assert_eq!(g.cpfn_bits(), 8);
    assert_eq!(g.decode(g.unmapped()), None);
    let g = Geometry::new(24, 4, 3).unwrap();
    assert_eq!((g.cpfn_bits(), g.associativity()), (6, 36));
    for (f, b, d, key) in [
        (200, 8, 6, "front_yard_frames"),
        (56, 8, 40, "backyard_choices"),
        (56, 64, 6, "backyard_frames"),
        (0, 8, 6, "front_yard_frames"),
        (56, 8, 0, "backyard_choices"),
    ] {
        let cfg = MosaicConfig {
            front_yard_frames: f,
            backyard_frames: b,
            backyard_choices: d,
            ..MosaicConfig::default()
        };
        let e = cfg.validate("schemes.mosaic").unwrap_err().to_string();
        assert!(
            e.contains(&format!("schemes.mosaic.{key}")),
            "{f} {b} {d}: {e}"
        );
    }
}

#[test]
fn the_pool_size_is_checked_against_memory() {
    let gib = 1u64 << 30;
    let cfg = MosaicConfig::default();
    // All but 1/32, in whole 64-frame buckets.
    assert_eq!(cfg.buckets(4 * gib).unwrap(), (1 << 20) * 31 / 32 / 64);
    let cfg = MosaicConfig {
        pool_bytes: gib,
        ..MosaicConfig::default()
    };
    assert_eq!(cfg.buckets(4 * gib).unwrap(), (1 << 18) / 64);
    let e = cfg.buckets(gib).unwrap_err().to_string();
    assert!(e.contains("schemes.mosaic.pool_bytes"), "{e}");
    let tiny = MosaicConfig {
        pool_bytes: 4096 * 64 * 5,
        ..MosaicConfig::default()
    };
    let e = tiny.buckets(4 * gib).unwrap_err().to_string();
    assert!(e.contains("at least d = 6"), "{e}");
    let odd = MosaicConfig {
        pool_bytes: 5000,
        ..MosaicConfig::default()
    };
    assert!(odd.validate("schemes.mosaic").is_err());
}

#[test]
fn placement_fills_the_front_yard_first_then_the_least_loaded_backyard() {
    let mut t = table(64, 1000, 1);
    let mut placed = Vec::new();
    // Enough pages that some front yards fill.
    for vpn in 0..3200u64 {
        let (pfn, cpfn) = t.insert(1, vpn).expect("far from full");
        placed.push((vpn, pfn, cpfn));
    }
    assert!(t.counters.backyard > 0 && t.counters.front_yard > 0);
    for &(vpn, pfn, cpfn) in &placed {
        match t.map.geometry.decode(cpfn).unwrap() {
            // A page in a backyard found its front-yard bucket full.
            Slot::Back { .. } => {
                let front = t.map.bucket(1, vpn, 0);
                assert_eq!(t.loads(front).0, 56, "vpn {vpn}");
            }
            Slot::Front(_) => {}
        }
        assert_eq!(t.map.decode(1, vpn, cpfn), Some(pfn));
    }
}

/// Fill a 4 GiB pool (the Linux prototype's) with random keys until the first conflict.
fn first_conflict(seed: u64) -> f64 {
    let mut t = table(1 << 14, 0, seed);
    let mut keys = Rng::new(seed, 1234);
    loop {
        let (asid, vpn) = (keys.below(4) as u16, keys.next_u64() >> 28);
        if t.insert(asid, vpn).is_none() {
            assert_eq!(t.counters.conflicts, 1);
            return t.first_conflict().expect("recorded");
        }
    }
}

#[test]
fn the_first_associativity_conflict_comes_at_about_98_percent() {
    let all: Vec<f64> = (1..=10).map(first_conflict).collect();
    for (seed, u) in all.iter().enumerate() {
        assert!(
            (0.97..=0.99).contains(u),
            "seed {}: first conflict at {u}",
            seed + 1
        );
    }
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    eprintln!("first conflict over 10 seeds: mean {mean:.5}, {all:.5?}");
}

#[test]
fn every_resident_page_decodes_to_the_frame_the_allocator_gave() {
    let mut t = table(1 << 10, 5000, 9);
    let mut keys = Rng::new(9, 1);
    let mut truth = HashMap::new();
    // To 95% utilisation, with frees along the way.
    while t.utilisation() < 0.95 {
        let key = (keys.below(3) as u16, keys.below(1 << 30));
        if truth.contains_key(&key) {
            continue;
        }
        let (pfn, _) = t.insert(key.0, key.1).expect("below the conflict point");
        truth.insert(key, pfn);
        if keys.below(10) == 0 {
            let gone = *truth.keys().next().unwrap();
            assert!(t.remove(truth.remove(&gone).unwrap()));
        }
    }
    for (&(asid, vpn), &pfn) in &truth {
        let cpfn = t
            .map
            .encode(asid, vpn, pfn)
            .expect("one of the page's frames");
        assert_eq!(t.map.decode(asid, vpn, cpfn), Some(pfn));
        assert!(t.is_used(pfn));
    }
    assert_eq!(t.used_frames(), truth.len() as u64);
}

#[test]
fn the_frame_policy_reserves_the_pool_and_places_only_4k_pages() {
    let cfg = MosaicConfig {
        pool_bytes: 64 << 20,
        ..MosaicConfig::default()
    };
    let map = cfg.map(256 << 20, 3).unwrap();
    let (base, frames) = (map.base(), map.frames());
    assert_eq!(base.0 + frames, (256 << 20) / 4096, "at the top of memory");
    let mut policy = IcebergFrames::new(IcebergTable::new(map), "schemes.mosaic.pool_bytes");
    let mut buddy = BuddyAllocator::new((256 << 20) / 4096);
    policy.reserve(&mut buddy).unwrap();
    assert_eq!(buddy.free_frames(), (256 << 20) / 4096 - frames);
    assert!(policy
        .frame(&mut buddy, 1, Vpn(512), PageSize::Size2M)
        .is_none());
    let pfn = policy
        .frame(&mut buddy, 1, Vpn(7), PageSize::Size4K)
        .unwrap();
    assert!(policy.owns(pfn) && pfn.0 >= base.0);
    assert_eq!(policy.table().used_frames(), 1);
    policy.free(&mut buddy, pfn, PageSize::Size4K);
    assert_eq!(policy.table().used_frames(), 0);
    // Page-table frames come from the buddy allocator, below the pool.
    let pt = buddy.alloc(0).unwrap();
    assert!(!policy.owns(pt));
}

#[test]
fn aligned_blocks_tile_a_range() {
    let blocks = aligned_blocks(3, 70);
    assert_eq!(
        blocks,
        vec![
            (Pfn(3), 0),
            (Pfn(4), 2),
            (Pfn(8), 3),
            (Pfn(16), 4),
            (Pfn(32), 5),
            (Pfn(64), 2),
            (Pfn(68), 1)
        ]
    );
}

proptest! {
    /// Any sequence of placements and frees: no frame is given twice, every page decodes to
    /// its frame, and the loads count the frames in use.
    #[test]
    fn no_frame_is_given_twice_and_cpfns_round_trip(
        ops in proptest::collection::vec((0u16..3, 0u64..5000, any::<bool>()), 1..600),
        seed in 0u64..1000,
    ) {
        let mut t = table(8, 64, seed);
        let mut owner: HashMap<Pfn, (u16, u64)> = HashMap::new();
        let mut frame_of: HashMap<(u16, u64), Pfn> = HashMap::new();
        for (asid, vpn, free) in ops {
            if let Some(pfn) = frame_of.get(&(asid, vpn)).copied() {
                if free {
                    prop_assert!(t.remove(pfn));
                    owner.remove(&pfn);
                    frame_of.remove(&(asid, vpn));
                }
                continue;
            }
            if let Some((pfn, cpfn)) = t.insert(asid, vpn) {
                prop_assert!(owner.insert(pfn, (asid, vpn)).is_none(), "{:?} given twice", pfn);
                frame_of.insert((asid, vpn), pfn);
                prop_assert_eq!(t.map.decode(asid, vpn, cpfn), Some(pfn));
                prop_assert!(t.map.geometry.decode(cpfn).is_some());
            }
        }
        prop_assert_eq!(t.used_frames(), owner.len() as u64);
        let loads: u32 = (0..8).map(|b| { let (f, k) = t.loads(b); f + k }).sum();
        prop_assert_eq!(u64::from(loads), t.used_frames());
        for (&(asid, vpn), &pfn) in &frame_of {
            let cpfn = t.map.encode(asid, vpn, pfn).unwrap();
            prop_assert_eq!(t.map.decode(asid, vpn, cpfn), Some(pfn));
        }
    }
}

#[test]
fn the_table_holds_cpfns_that_decode_to_the_allocators_frames() {
    use super::table::MosaicTable;
    use crate::addr::VirtAddr;
    use crate::pt::store::PtStore;
    use crate::pt::{PageTable, PtContext};
    let cfg = MosaicConfig {
        pool_bytes: 64 << 20,
        ..MosaicConfig::default()
    };
    let mut alloc = IcebergTable::new(cfg.map(256 << 20, 5).unwrap());
    let mut store = PtStore::new();
    let mut buddy = BuddyAllocator::new((256 << 20) / 4096);
    let mut ctx = PtContext {
        store: &mut store,
        buddy: &mut buddy,
    };
    let mut table = MosaicTable::new(&mut ctx, 4, cfg.map(256 << 20, 5).unwrap(), 2).unwrap();
    let base = 0x7_f000_0000_u64; // a VPN
    let mut truth = HashMap::new();
    // Pages 0..600 of a region, every third one left unmapped.
    for i in (0..600u64).filter(|i| i % 3 != 1) {
        let (pfn, _) = alloc.insert(2, base + i).unwrap();
        table
            .map(&mut ctx, Vpn(base + i), pfn, PageSize::Size4K)
            .unwrap();
        truth.insert(base + i, pfn);
    }
    let unmapped = table.iceberg().geometry.unmapped();
    let mut toc = [0u8; 8];
    for i in (0..600u64).filter(|i| i % 3 != 1) {
        let va = Vpn(base + i).addr();
        let first = table.toc(ctx.store, va, &mut toc).unwrap();
        assert_eq!(first.0 % 64, 0, "an 8-page ToC is one aligned line");
        for (j, &cpfn) in toc.iter().enumerate() {
            let vpn = (base + i) / 8 * 8 + j as u64;
            match truth.get(&vpn) {
                Some(&pfn) => assert_eq!(table.iceberg().decode(2, vpn, cpfn), Some(pfn)),
                None => assert_eq!(cpfn, unmapped, "page {vpn:#x}"),
            }
        }
        assert_eq!(
            table.read_mapping(ctx.store, va),
            Some(Some((truth[&(base + i)], PageSize::Size4K)))
        );
    }
    // A page of another address space's frame is refused.
    let other = alloc.insert(3, base + 1).unwrap().0;
    assert!(table
        .map(&mut ctx, Vpn(base + 1), other, PageSize::Size4K)
        .is_err_and(|e| e.to_string().contains("is not one of the 104 frames")));
    // Unmapping gives the frame back; corruption names another frame of the page's.
    assert_eq!(
        table.unmap(&mut ctx, Vpn(base + 3), PageSize::Size4K),
        Some(truth[&(base + 3)])
    );
    assert!(table.corrupt(ctx.store, Vpn(base), PageSize::Size4K));
    let wrong = table
        .read_mapping(ctx.store, VirtAddr(base << 12))
        .unwrap()
        .unwrap()
        .0;
    assert_ne!(wrong, truth[&base]);
    assert!(table.iceberg().encode(2, base, wrong).is_some());
}

#[test]
fn pages_of_a_lightly_used_pool_spread_over_the_slots() {
    // 2,000 pages in 16,384 buckets: most buckets get one page. Their frames' low six bits
    // (the slot, and the bits a physically indexed cache's set index reads) must not all be
    // the first slots, or every cache would see them in a few sets.
    let mut t = table(1 << 14, 0, 4);
    let mut per_slot = [0u32; 64];
    for vpn in 0..2000u64 {
        let (pfn, _) = t.insert(1, 0x40000 + vpn).unwrap();
        per_slot[(pfn.0 % 64) as usize] += 1;
    }
    let used = per_slot[..56].iter().filter(|&&n| n > 0).count();
    assert_eq!(used, 56, "every front-yard slot in use: {per_slot:?}");
    let most = *per_slot.iter().max().unwrap();
    assert!(most < 2000 / 56 * 2, "no slot crowded: {per_slot:?}");
}

/// Utilisation at the first conflict of a 16,384-bucket pool of geometry (f, b, d), filled
/// with random keys, averaged over three seeds.
fn first_conflict_of(f: u32, b: u32, d: u32) -> f64 {
    let g = Geometry::new(f, b, d).unwrap();
    let mean: f64 = (1..=3u64)
        .map(|seed| {
            let map = IcebergMap::new(g, Pfn(0), 1 << 14, &mut Rng::new(seed, 77));
            let mut t = IcebergTable::new(map);
            let mut keys = Rng::new(seed, 1234);
            while t.insert(1, keys.next_u64() >> 28).is_some() {}
            t.first_conflict().unwrap()
        })
        .sum::<f64>()
        / 3.0;
    mean
}

#[test]
fn the_first_conflict_comes_later_with_more_choices_and_a_bigger_front_yard() {
    // More backyard choices balance the backyard better (power of d choices) ...
    let by_d: Vec<f64> = [1, 2, 6]
        .iter()
        .map(|&d| first_conflict_of(56, 8, d))
        .collect();
    eprintln!("first conflict by d = 1, 2, 6: {by_d:.4?}");
    assert!(by_d.windows(2).all(|w| w[0] < w[1]), "{by_d:?}");
    // ... and a front yard that is a larger share of its bucket leaves less of memory to the
    // backyards: the paper's 56 + 8 conflicts later than 24 + 8. (Past that the gain
    // flattens: 120 + 8 measures 97.55 % against 97.49 %, within the seeds' spread.)
    let by_f: Vec<f64> = [24, 56]
        .iter()
        .map(|&f| first_conflict_of(f, 8, 6))
        .collect();
    eprintln!("first conflict by f = 24, 56: {by_f:.4?}");
    assert!(by_f[0] + 0.005 < by_f[1], "{by_f:?}");
    // Without a backyard to absorb a full front yard's overflow, the paper's associativity
    // of 104 would be worth far less: d = 1 conflicts well below 97%.
    assert!(by_d[0] < 0.97 && by_d[2] > 0.97, "{by_d:?}");
}

#[test]
fn the_vanilla_tlb_drops_a_huge_pages_pieces_in_one_pass() {
    use super::tlb::VanillaTlb;
    use crate::addr::VirtAddr;
    let cfg = MosaicConfig::default().tlb;
    let mut tlb = VanillaTlb::new(&cfg);
    for vpn in [512u64, 513, 1000, 1024] {
        tlb.fill(Vpn(vpn), 1, Pfn(vpn + 7));
    }
    tlb.fill(Vpn(513), 2, Pfn(9));
    // The 2 MiB page at VPN 512 covers 512..1024 of ASID 1 only.
    tlb.invalidate(Vpn(512), 512, 1);
    assert_eq!(tlb.stats.invalidations, 3);
    let hit = |tlb: &mut VanillaTlb, vpn: u64, asid| tlb.lookup(VirtAddr(vpn << 12), asid);
    assert_eq!(hit(&mut tlb, 1024, 1), Some(Pfn(1031)));
    assert_eq!(hit(&mut tlb, 513, 2), Some(Pfn(9)));
    assert_eq!(hit(&mut tlb, 513, 1), None);
}

/// Horizon LRU driven as the OS drives it: a reference to a resident page stamps it; one to
/// a page not resident faults it in (the insertion, at the clock of the reference before) and
/// the pages the insertion evicted leave memory; then the reference stamps it.
struct HorizonRig {
    t: IcebergTable,
    now: u64,
    /// Resident pages (live and ghost) and their frames.
    resident: HashMap<u64, Pfn>,
    /// Every page's last access time.
    last: HashMap<u64, u64>,
    /// Pages evicted, in order, and how many were ghosts.
    evicted: Vec<u64>,
    ghost_outs: u64,
    faults: u64,
    revivals: u64,
}

impl HorizonRig {
    fn new(mut t: IcebergTable) -> HorizonRig {
        t.enable_horizon();
        HorizonRig {
            t,
            now: 0,
            resident: HashMap::new(),
            last: HashMap::new(),
            evicted: Vec::new(),
            ghost_outs: 0,
            faults: 0,
            revivals: 0,
        }
    }

    /// The frames page `vpn` may take: its front-yard slots, then each choice's backyard.
    fn candidates(&self, vpn: u64) -> Vec<Pfn> {
        let g = self.t.map.geometry;
        let front = (0..g.front).map(Slot::Front);
        let back = (0..g.choices)
            .flat_map(|choice| (0..g.back).map(move |slot| Slot::Back { choice, slot }));
        front
            .chain(back)
            .map(|s| self.t.map.frame(0, vpn, s))
            .collect()
    }

    fn reference(&mut self, vpn: u64) {
        if !self.resident.contains_key(&vpn) {
            self.faults += 1;
            let (pfn, cpfn) = self.t.insert(0, vpn).expect("Horizon LRU always places");
            assert_eq!(self.t.map.decode(0, vpn, cpfn), Some(pfn));
            for (asid, out, ghost) in self.t.take_evicted() {
                assert_eq!(asid, 0);
                assert_eq!(
                    self.resident.remove(&out),
                    Some(pfn),
                    "the victim held the frame"
                );
                self.evicted.push(out);
                self.ghost_outs += u64::from(ghost);
            }
            self.resident.insert(vpn, pfn);
        }
        self.now += 1;
        if self.t.touch(self.resident[&vpn], self.now) {
            self.revivals += 1;
        }
        self.last.insert(vpn, self.now);
    }
}

/// Global LRU over a fully associative memory of `frames`: the pages it evicts, in order.
fn reference_lru(stream: &[u64], frames: usize) -> Vec<u64> {
    let mut last: HashMap<u64, usize> = HashMap::new();
    let mut evicted = Vec::new();
    for (now, &vpn) in stream.iter().enumerate() {
        if !last.contains_key(&vpn) && last.len() == frames {
            let (&victim, _) = last.iter().min_by_key(|&(_, &t)| t).unwrap();
            last.remove(&victim);
            evicted.push(victim);
        }
        last.insert(vpn, now);
    }
    evicted
}

/// A skewed random stream over `pages` pages: half the references to a hot eighth.
fn stream(pages: u64, len: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed, 5);
    (0..len)
        .map(|_| match rng.below(2) {
            0 => rng.below(pages / 8),
            _ => rng.below(pages),
        })
        .collect()
}

/// §2.4: with no associativity conflict to perturb it, Horizon LRU is global LRU. In a pool of
/// one bucket every page may take every frame (all hashes name bucket 0), so the only
/// evictions are capacity evictions: they are exactly those of LRU over a fully associative
/// memory of the same 64 frames, and no page is ever a ghost.
#[test]
fn without_conflicts_horizon_lru_evicts_exactly_what_global_lru_does() {
    for seed in 0..5 {
        let refs = stream(200, 20_000, seed);
        let mut rig = HorizonRig::new(table(1, 4096, seed));
        for &vpn in &refs {
            rig.reference(vpn);
        }
        let lru = reference_lru(&refs, 64);
        assert!(lru.len() > 5000, "the stream pages a lot");
        assert_eq!(rig.evicted, lru, "seed {seed}");
        assert_eq!((rig.ghost_outs, rig.revivals), (0, 0));
        assert_eq!(rig.t.used_frames(), 64);
    }
}

/// With conflicts (a pool of 16 buckets, the paper's f, b, d), Horizon LRU still simulates a
/// global LRU: at every step the live pages are exactly the most recently used ones, every
/// ghost and every page out of memory having been accessed before every live page.
#[test]
fn the_live_pages_are_always_the_most_recently_used() {
    let refs = stream(1400, 30_000, 9);
    let mut rig = HorizonRig::new(table(16, 4096, 3));
    for (i, &vpn) in refs.iter().enumerate() {
        rig.reference(vpn);
        if i % 97 != 0 {
            continue;
        }
        let live = |v: &u64| rig.resident.get(v).is_some_and(|&p| !rig.t.is_ghost(p));
        let oldest_live = rig
            .last
            .iter()
            .filter(|(v, _)| live(v))
            .map(|(_, &t)| t)
            .min();
        let newest_other = rig
            .last
            .iter()
            .filter(|(v, _)| !live(v))
            .map(|(_, &t)| t)
            .max();
        if let (Some(l), Some(o)) = (oldest_live, newest_other) {
            assert!(
                o < l,
                "step {i}: a page accessed at {o} is not live, one at {l} is"
            );
        }
    }
    let conflicts = rig.t.counters.conflicts;
    assert!(
        conflicts > 100 && rig.ghost_outs > 100,
        "{conflicts} {}",
        rig.ghost_outs
    );
    assert!(rig.revivals > 0, "ghosts were touched back");
    // Ghosts let the pool fill past the first conflict.
    let steady = rig.t.steady_state().unwrap();
    let first = rig.t.first_conflict().unwrap();
    assert!(
        steady > first && steady <= 1.0,
        "steady {steady}, first conflict {first}"
    );
}

/// A ghost touched again is live at no cost: no eviction, no change in the frames in use.
#[test]
fn reviving_a_ghost_costs_no_io() {
    let mut rig = HorizonRig::new(table(16, 4096, 1));
    let mut vpn = 0;
    // Fill until a conflict raises the horizon and makes ghosts.
    while rig.t.horizon() == Some(0) {
        rig.reference(vpn);
        vpn += 1;
    }
    let (&ghost, _) = rig
        .resident
        .iter()
        .filter(|(_, &p)| rig.t.is_ghost(p))
        .min_by_key(|(&v, _)| v)
        .expect("the conflict made ghosts");
    let (used, evicted, faults) = (rig.t.used_frames(), rig.evicted.len(), rig.faults);
    rig.reference(ghost);
    assert_eq!(rig.revivals, 1);
    assert_eq!(
        (rig.t.used_frames(), rig.evicted.len(), rig.faults),
        (used, evicted, faults)
    );
    assert!(!rig.t.is_ghost(rig.resident[&ghost]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// No live page is evicted while a free frame or a ghost is among the faulting page's
    /// candidates; a ghost eviction takes a ghost's frame; a live eviction's victim is the
    /// least recently used candidate.
    #[test]
    fn horizon_evicts_a_live_page_only_when_every_candidate_is_live(
        refs in proptest::collection::vec(0u64..900, 1..3000),
        seed in 0u64..1000,
    ) {
        let mut rig = HorizonRig::new(table(8, 4096, seed));
        for vpn in refs {
            if rig.resident.contains_key(&vpn) {
                rig.reference(vpn);
                continue;
            }
            let cands = rig.candidates(vpn);
            let room = cands.iter().any(|&p| !rig.t.is_used(p) || rig.t.is_ghost(p));
            let ghosts: Vec<Pfn> = cands.iter().copied().filter(|&p| rig.t.is_ghost(p)).collect();
            let owner = |p: Pfn| rig.resident.iter().find(|(_, &f)| f == p).map(|(&v, _)| v);
            let oldest = cands
                .iter()
                .filter_map(|&p| owner(p))
                .map(|v| rig.last[&v])
                .min();
            let (outs, ghost_outs) = (rig.evicted.len(), rig.ghost_outs);
            rig.reference(vpn);
            let frame = rig.resident[&vpn];
            prop_assert!(cands.contains(&frame));
            if rig.evicted.len() > outs {
                let victim = *rig.evicted.last().unwrap();
                if rig.ghost_outs > ghost_outs {
                    prop_assert!(ghosts.contains(&frame), "a ghost's frame");
                } else {
                    prop_assert!(!room, "live page {victim} evicted with room among the candidates");
                    prop_assert_eq!(Some(rig.last[&victim]), oldest, "the LRU candidate");
                    prop_assert_eq!(rig.t.horizon(), oldest);
                }
            }
        }
    }
}
