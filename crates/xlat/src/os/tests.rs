//! Eager paging: the first fault in a VMA backs all of it with consecutive frames; memory kept
//! contiguous through fragmentation injection. The address-space layouts (`os.layout`).

use super::testing::{config, radix_os};
use super::*;
use crate::pt::radix::RadixPageTable;

fn eager_config(mib: u64, thp: bool, eager: bool, fragmentation: f64) -> OsConfig {
    let mut cfg = config(mib);
    cfg.minor_fault_cycles = 100;
    if thp {
        cfg.thp = ThpPolicy::Always;
    }
    cfg.eager_paging = eager;
    cfg.physmem.fragmentation = fragmentation;
    cfg
}

fn os(mib: u64, thp: bool, eager: bool, fragmentation: f64) -> Os<RadixPageTable> {
    radix_os(&eager_config(mib, thp, eager, fragmentation), 3)
}

/// Every 4 KiB page of `[va, va + bytes)` with its frame, in VA order.
fn frames_of(os: &Os<RadixPageTable>, pid: u16, va: VirtAddr, bytes: u64) -> Vec<u64> {
    (0..bytes / 4096)
        .map(|i| {
            let at = VirtAddr(va.0 + i * 4096);
            let (pfn, size) = os.truth(pid, at).expect("mapped");
            pfn.0 + ((at.0 & size.mask()) >> 12)
        })
        .collect()
}

#[test]
fn one_fault_backs_the_whole_vma_with_consecutive_frames() {
    let mut os = os(64, false, true, 0.0);
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, 8 << 20, MapKind::Anon).unwrap();
    let (_, size, cycles) = os.fault(pid, VirtAddr(va.0 + 5 * 4096)).unwrap();
    assert_eq!(size, PageSize::Size4K);
    assert_eq!(cycles, 100, "the eager fault costs one minor fault");
    assert_eq!(os.stats.faults.minor, 1);
    assert_eq!(os.stats.faults.mapped_4k, 2048);
    let f = frames_of(&os, pid, va, 8 << 20);
    assert!(
        f.windows(2).all(|w| w[1] == w[0] + 1),
        "unfragmented memory gives one contiguous block"
    );
}

#[test]
fn thp_maps_2m_pages_inside_eager_blocks() {
    let mut os = os(64, true, true, 0.0);
    let pid = os.spawn().unwrap();
    // 6 MiB + 12 KiB: three 2 MiB pages, then 4 KiB pages for the tail.
    let bytes = (6 << 20) + 3 * 4096;
    let va = os.mmap(pid, bytes, MapKind::Anon).unwrap();
    os.fault(pid, va).unwrap();
    assert_eq!(os.stats.faults.mapped_2m, 3);
    assert_eq!(os.stats.faults.mapped_4k, 3);
    assert_eq!(os.process(pid).unwrap().mapped_pages(), [3, 3, 0]);
}

#[test]
fn fragmented_memory_gives_runs_in_decreasing_blocks() {
    let mut os = os(256, false, true, 0.5);
    let pid = os.spawn().unwrap();
    let bytes = 64 << 20;
    let va = os.mmap(pid, bytes, MapKind::Anon).unwrap();
    let free_before = os.buddy.free_frames();
    os.fault(pid, va).unwrap();
    let f = frames_of(&os, pid, va, bytes);
    // Runs of consecutive frames: each a whole buddy block, largest first.
    let mut runs = vec![1u64];
    for w in f.windows(2) {
        if w[1] == w[0] + 1 {
            *runs.last_mut().unwrap() += 1;
        } else {
            runs.push(1);
        }
    }
    assert!(runs.len() > 1, "fragmentation leaves no 64 MiB block");
    assert!(runs.len() < f.len() / 8, "blocks are far larger than pages");
    // Adjacent blocks may happen to be physically consecutive and merge into one run, so a run
    // is at least as large as the next one only up to such merges: check the first is largest.
    assert!(runs[0] >= *runs.iter().max().unwrap() / 2);
    let tables = os.buddy.free_frames() + f.len() as u64;
    assert!(
        free_before - tables < 64,
        "only page-table frames besides the data"
    );
}

#[test]
fn later_faults_in_a_populated_vma_never_happen_and_other_vmas_stay_untouched() {
    let mut os = os(64, false, true, 0.0);
    let pid = os.spawn().unwrap();
    let a = os.mmap(pid, 1 << 20, MapKind::Anon).unwrap();
    let b = os.mmap(pid, 1 << 20, MapKind::Anon).unwrap();
    os.fault(pid, a).unwrap();
    assert_eq!(os.stats.faults.mapped_4k, 256);
    assert!(os.truth(pid, b).is_none(), "the other VMA is not touched");
    // Populating an eagerly backed VMA maps nothing more.
    os.populate(pid, a, 1 << 20).unwrap();
    assert_eq!(os.stats.faults.mapped_4k, 256);
    os.populate(pid, b, 4096).unwrap();
    assert_eq!(
        os.stats.faults.mapped_4k, 512,
        "populate backs the whole VMA eagerly"
    );
}

#[test]
fn eager_paging_beyond_physical_memory_is_an_out_of_memory_error() {
    let mut os = os(8, false, true, 0.0);
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, 16 << 20, MapKind::Anon).unwrap();
    match os.fault(pid, va) {
        Err(Error::OutOfMemory(msg)) => assert!(msg.contains("os.physmem.bytes"), "{msg}"),
        other => panic!("expected out of memory, got {other:?}"),
    }
}

#[test]
fn the_catch_all_vma_of_a_trace_stays_demand_paged() {
    let mut os = os(64, false, true, 0.0);
    let pid = os.spawn().unwrap();
    os.map_everything(pid).unwrap();
    os.fault(pid, VirtAddr(0x4000_0000)).unwrap();
    assert_eq!(os.stats.faults.mapped_4k, 1);
}

#[test]
fn demand_paging_is_unchanged_without_eager_paging() {
    let mut os = os(64, false, false, 0.0);
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, 8 << 20, MapKind::Anon).unwrap();
    os.fault(pid, va).unwrap();
    assert_eq!(os.stats.faults.mapped_4k, 1);
}

#[test]
fn contiguous_bytes_stay_free_of_fragmentation_and_eager_paging_uses_them_first() {
    let plain = os(1024, false, true, 0.4);
    assert!(
        plain.buddy.largest_free_order().unwrap() < 15,
        "without a kept region 40 % fragmentation leaves no 128 MiB block"
    );
    let mut cfg = eager_config(1024, false, true, 0.4);
    cfg.physmem.contiguous_bytes = 256 << 20;
    let mut os = radix_os(&cfg, 3);
    assert!(os.buddy.free_blocks(16) >= 1, "a free 256 MiB block");
    // A 200 MiB VMA takes the kept block first: its first 128 MiB are one run of frames.
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, 200 << 20, MapKind::Anon).unwrap();
    os.fault(pid, va).unwrap();
    let f = frames_of(&os, pid, va, 128 << 20);
    assert!(f.windows(2).all(|w| w[1] == w[0] + 1));
}

#[test]
fn contiguous_bytes_beyond_memory_is_a_config_error() {
    let cfg = PhysMemConfig {
        bytes: 64 << 20,
        fragmentation: 0.0,
        fragmentation_order: 9,
        compaction_max_fmfi: 0.75,
        contiguous_bytes: 128 << 20,
        frame_order: crate::mem::physmem::FrameOrder::Buddy,
    };
    let err = cfg.validate("os.physmem").unwrap_err().to_string();
    assert!(err.contains("os.physmem.contiguous_bytes"), "{err}");
}

/// A region built from many allocations (`MapKind::AnonMixed`): with THP, the given share of
/// its 2 MiB ranges stays on 4 KiB pages, the rest gets huge pages; without THP all are 4 KiB.
#[test]
fn mixed_regions_leave_a_share_of_ranges_to_4k_pages_under_thp() {
    let mut os = os(1024, true, false, 0.0);
    let pid = os.spawn().unwrap();
    let ranges = 200u64;
    let kind = MapKind::AnonMixed {
        no_thp_per_mille: 300,
    };
    let va = os.mmap(pid, ranges << 21, kind).unwrap();
    for r in 0..ranges {
        os.fault(pid, VirtAddr(va.0 + (r << 21))).unwrap();
    }
    let [small, huge, _] = os.process(pid).unwrap().mapped_pages();
    assert_eq!(small + huge, ranges, "one fault per range");
    let share = small as f64 / ranges as f64;
    assert!(
        (0.2..0.4).contains(&share),
        "about 30% of ranges on 4 KiB: {share}"
    );
    // The same ranges every time: the choice is a function of the range.
    let vma = *os.process(pid).unwrap().vma_of(va.vpn()).unwrap();
    let ineligible = (0..ranges)
        .filter(|r| !vma.thp_eligible(VirtAddr(va.0 + (r << 21)).vpn(), 0))
        .count() as u64;
    assert_eq!(ineligible, small);
}

/// The 4 KiB pages of a THP fault in each of `ranges` 2 MiB ranges of one region of `kind`,
/// under `os.thp_ineligible = share`: which ranges stayed on 4 KiB pages.
fn ranges_left_to_4k(kind: MapKind, share: f64, ranges: u64) -> Vec<u64> {
    let mut cfg = eager_config(1024, true, false, 0.0);
    cfg.thp_ineligible = share;
    let mut os = radix_os(&cfg, 3);
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, ranges << 21, kind).unwrap();
    (0..ranges)
        .filter(|r| {
            let at = VirtAddr(va.0 + (r << 21));
            os.fault(pid, at).unwrap();
            os.truth(pid, at).unwrap().1 == PageSize::Size4K
        })
        .collect()
}

/// `os.thp_ineligible` leaves its share of every region's ranges to 4 KiB pages: the ranges
/// a region of that share of its own (`AnonMixed`) leaves, and where both apply, the larger
/// share (a superset of the smaller's ranges, as one hash picks them).
#[test]
fn the_os_share_of_ranges_thp_does_not_back_applies_to_every_region() {
    let ranges = 400;
    let mixed = |per_mille| MapKind::AnonMixed {
        no_thp_per_mille: per_mille,
    };
    assert!(ranges_left_to_4k(MapKind::Anon, 0.0, ranges).is_empty());
    let os_share = ranges_left_to_4k(MapKind::Anon, 0.3, ranges);
    assert_eq!(os_share, ranges_left_to_4k(mixed(300), 0.0, ranges));
    let share = os_share.len() as f64 / ranges as f64;
    assert!((0.25..0.35).contains(&share), "about 30%: {share}");
    let larger = ranges_left_to_4k(mixed(300), 0.6, ranges);
    assert_eq!(larger, ranges_left_to_4k(MapKind::Anon, 0.6, ranges));
    assert_eq!(larger, ranges_left_to_4k(mixed(600), 0.3, ranges));
    assert!(os_share.iter().all(|r| larger.contains(r)));
    assert_eq!(
        ranges_left_to_4k(MapKind::Anon, 1.0, ranges).len() as u64,
        ranges
    );
}

#[test]
fn a_thp_share_outside_0_to_1_names_its_key() {
    for bad in [-0.1, 1.5, f64::NAN] {
        let mut cfg = config(64);
        cfg.thp_ineligible = bad;
        let err = cfg.validate("os").unwrap_err().to_string();
        assert!(err.contains("os.thp_ineligible"), "{err}");
    }
}

/// 4 MiB of memory with swapping: faults cost 100 cycles, a 4 KiB page-in 1000 and a
/// page-out 300, and reclaim keeps four frames free (a fault takes at most one data frame and
/// three page-table frames).
fn swap_os(thp: bool) -> Os<RadixPageTable> {
    let mut cfg = eager_config(4, thp, false, 0.0);
    cfg.swap = SwapConfig {
        enabled: true,
        page_out_cycles: 300,
        page_in_cycles: 1000,
        min_free_frames: 4,
        ..SwapConfig::default()
    };
    radix_os(&cfg, 3)
}

/// `lru` over 4 MiB (1024 frames): reclaim starts below 1 % free (11 frames) and stops at
/// 2 % (21 frames).
fn lru_os() -> Os<RadixPageTable> {
    let mut cfg = eager_config(4, false, false, 0.0);
    cfg.swap = SwapConfig {
        enabled: true,
        min_free_frames: 4,
        policy: SwapPolicy::Lru,
        low_watermark: 0.01,
        high_watermark: 0.02,
        ..SwapConfig::default()
    };
    radix_os(&cfg, 3)
}

/// The LRU comparator pages out the least recently used page, not the longest resident: a
/// page touched after it was mapped stays while later-mapped, untouched pages go; reclaim
/// waits for the low watermark and frees up to the high one.
#[test]
fn lru_reclaim_pages_out_the_least_recently_used_pages_between_its_watermarks() {
    let mut os = lru_os();
    let pid = os.spawn().unwrap();
    let pages = 1100;
    let va = os.mmap(pid, pages * 4096, MapKind::Anon).unwrap();
    let frame = |os: &Os<RadixPageTable>, n: u64| os.truth(pid, page(va, n)).map(|(p, _)| p);
    let mut first_out = None;
    for n in 0..pages {
        os.fault(pid, page(va, n)).unwrap();
        os.touch(frame(&os, n).unwrap());
        // Page 0 is used all along; pages 1.. once, when mapped.
        os.touch(frame(&os, 0).unwrap());
        if first_out.is_none() && os.stats.swap.outs > 0 {
            first_out = Some(n);
            // The low watermark (11 frames) was crossed: reclaim freed up to 21.
            let free = os.buddy.free_frames();
            assert!(
                (19..=20).contains(&free),
                "21 freed, then the fault took its frames: {free}"
            );
            assert_eq!(os.stats.swap.outs, 11);
        }
        assert!(os.buddy.free_frames() >= 4);
    }
    assert!(first_out.is_some());
    assert!(frame(&os, 0).is_some(), "the page in use stays");
    let outs = os.stats.swap.outs;
    for n in 1..=outs {
        assert!(
            frame(&os, n).is_none(),
            "page {n}, among the least recently used, went out"
        );
    }
    assert!(frame(&os, outs + 1).is_some());
    let used = os.stats.swap.first_out_utilisation.unwrap();
    assert!(
        (1.0 - used) * 1024.0 < 11.0 && (1.0 - used) * 1024.0 >= 10.0,
        "{used}"
    );
    // Touching page 1 brings it back; the page reclaim takes then is the next LRU one.
    os.fault(pid, page(va, 1)).unwrap();
    assert_eq!(os.stats.swap.ins, 1);
}

fn page(va: VirtAddr, n: u64) -> VirtAddr {
    VirtAddr(va.0 + n * 4096)
}

/// Twice as many pages as memory: the oldest pages go to swap first (FIFO), touching one again
/// is a major fault that reads it back and pages out the next oldest, with exact counts and
/// cycles.
#[test]
fn a_full_memory_pages_out_the_oldest_page_and_a_touch_brings_it_back_as_a_major_fault() {
    let mut os = swap_os(false);
    let pid = os.spawn().unwrap();
    let pages = 2048; // 8 MiB
    let va = os.mmap(pid, pages * 4096, MapKind::Anon).unwrap();
    let mut charged = 0;
    for n in 0..pages {
        let (_, _, cycles) = os.fault(pid, page(va, n)).unwrap();
        charged += cycles;
        // Every fault left memory with at most `min_free_frames` free after taking its frame.
        let free = os.buddy.free_frames();
        assert!(
            free <= 4 || os.stats.swap.outs == 0,
            "page {n}: {free} free"
        );
    }
    let resident = os.process(pid).unwrap().mapped_pages()[0];
    let f = os.stats.faults.clone();
    let s = os.stats.swap;
    assert_eq!((f.minor, f.major), (pages, 0));
    assert_eq!(s.outs, pages - resident, "every page not resident went out");
    assert_eq!((s.ins, s.policy_outs), (0, 0));
    assert_eq!(s.out_cycles, 300 * s.outs);
    assert_eq!(charged, 100 * pages + s.out_cycles);
    assert_eq!(f.cycles, charged);
    // FIFO: the first `outs` pages are out, the rest in; each page out was shot down.
    assert!(resident > 900 && resident < 1024, "{resident}");
    for n in 0..pages {
        assert_eq!(os.truth(pid, page(va, n)).is_none(), n < s.outs, "page {n}");
    }
    let shot: Vec<u64> = os.take_shootdowns().iter().map(|&(_, v, _)| v.0).collect();
    let want: Vec<u64> = (0..s.outs).map(|n| page(va, n).vpn().0).collect();
    assert_eq!(shot, want);
    assert_eq!(os.snapshot().swap.unwrap().swapped, s.outs);

    // Page 0 again: a major fault, one page-in, and the next oldest (page `outs`) goes out.
    assert_eq!(
        os.buddy.free_frames(),
        3,
        "memory is full: the watermark less one"
    );
    let (pfn, size, cycles) = os.fault(pid, va).unwrap();
    assert_eq!(size, PageSize::Size4K);
    assert_eq!(
        os.truth(pid, va),
        Some((pfn, size)),
        "back, at its new frame"
    );
    assert_eq!(cycles, 100 + 1000 + 300);
    let f = os.stats.faults.clone();
    assert_eq!((f.minor, f.major), (pages, 1));
    assert_eq!((os.stats.swap.ins, os.stats.swap.outs), (1, s.outs + 1));
    assert!(
        os.truth(pid, page(va, s.outs)).is_none(),
        "the next oldest went out"
    );
    assert_eq!(os.snapshot().swap.unwrap().swapped, s.outs);

    // Unmapping swapped pages drops them from swap without a shootdown.
    os.take_shootdowns();
    let gone = os.munmap(pid, page(va, 1), 4 * 4096).unwrap();
    assert!(gone.is_empty(), "{gone:?}");
    assert_eq!(os.snapshot().swap.unwrap().swapped, s.outs - 4);
}

/// A swapped 2 MiB page that comes back while no 2 MiB block is free comes back as a 4 KiB
/// page; the other 511 stay swapped, each a major fault of its own later.
#[test]
fn a_swapped_huge_page_that_comes_back_small_leaves_the_rest_swapped() {
    let mut os = swap_os(true);
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, 4 << 21, MapKind::Anon).unwrap();
    os.fault(pid, va).unwrap();
    assert_eq!(os.truth(pid, va).unwrap().1, PageSize::Size2M);
    // Fill the rest of memory with 4 KiB pages of another region: the huge page goes out
    // first, and no 2 MiB block is free afterwards.
    let never_thp = MapKind::AnonMixed {
        no_thp_per_mille: 1000,
    };
    let small = os.mmap(pid, 1024 * 4096, never_thp).unwrap();
    let mut n = 0;
    while os.truth(pid, va).is_some() {
        os.fault(pid, page(small, n)).unwrap();
        n += 1;
    }
    // More small pages split the block the huge page left.
    while os.buddy.has_free_block(9) {
        os.fault(pid, page(small, n)).unwrap();
        n += 1;
    }
    assert_eq!(os.stats.swap.outs, 1);
    assert_eq!(os.stats.swap.out_cycles, 300 * 512, "charged per 4 KiB");
    let (_, size, cycles) = os.fault(pid, page(va, 7)).unwrap();
    assert_eq!(size, PageSize::Size4K, "no free 2 MiB block");
    assert!(cycles >= 100 + 1000, "{cycles}");
    assert_eq!(os.stats.faults.major, 1);
    assert_eq!(os.stats.swap.in_cycles, 1000);
    assert!(os.truth(pid, page(va, 8)).is_none());
    os.fault(pid, page(va, 8)).unwrap();
    assert_eq!(
        os.stats.faults.major, 2,
        "the rest of the huge page was still swapped"
    );
    let [_, huge, _] = os.process(pid).unwrap().mapped_pages();
    assert_eq!(huge, 0);
}

#[test]
fn swap_config_errors_name_their_key() {
    let mut cfg = config(64);
    cfg.swap.enabled = true;
    cfg.eager_paging = true;
    let e = cfg.validate("os").unwrap_err().to_string();
    assert!(e.contains("os.swap.enabled"), "{e}");
    cfg.eager_paging = false;
    cfg.swap.min_free_frames = 0;
    let e = cfg.validate("os").unwrap_err().to_string();
    assert!(e.contains("os.swap.min_free_frames"), "{e}");
}

/// Without swapping, a footprint beyond memory is an error that says how to turn it on.
#[test]
fn without_swap_a_full_memory_is_an_error_naming_the_swap_key() {
    let mut os = radix_os(&config(4), 3);
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, 2048 * 4096, MapKind::Anon).unwrap();
    let e = (0..2048)
        .find_map(|n| os.fault(pid, page(va, n)).err())
        .expect("memory runs out")
        .to_string();
    assert!(e.contains("os.swap.enabled"), "{e}");
}

// ---- Address-space layouts (`os.layout`, `os.aslr`) ----

fn layout_os(layout: LayoutKind, aslr: bool, seed: u64) -> Os<RadixPageTable> {
    let mut cfg = config(64);
    cfg.layout = layout;
    cfg.aslr = aslr;
    radix_os(&cfg, seed)
}

fn vmas_of(os: &Os<RadixPageTable>, pid: u16) -> Vec<Vma> {
    os.process(pid).unwrap().vmas().copied().collect()
}

fn span(v: &Vma) -> (u64, u64) {
    (v.start.addr().0, v.end.addr().0)
}

fn no_overlaps(vmas: &[Vma]) -> bool {
    vmas.windows(2)
        .all(|w| w[0].end <= w[1].start && w[0].start < w[0].end)
}

#[test]
fn linux_mmaps_go_top_down_below_mmap_base_with_no_gaps() {
    let mut os = layout_os(LayoutKind::Linux, true, 11);
    let pid = os.spawn().unwrap();
    let l = layout::LinuxLayout::new(true, 11, pid);
    let libs: Vec<Vma> = vmas_of(&os, pid)
        .into_iter()
        .filter(|v| v.role == Region::Library)
        .collect();
    assert_eq!(libs.len(), layout::LinuxLayout::libraries().len());
    // The loader first, right below mmap_base, the others below it back to back.
    assert_eq!(libs.last().unwrap().end.addr().0, l.mmap_base);
    assert!(libs.windows(2).all(|w| w[0].end == w[1].start));
    let lowest = libs[0].start.addr().0;
    let a = os.mmap(pid, 4096, MapKind::Anon).unwrap();
    let b = os.mmap(pid, 100 << 10, MapKind::Anon).unwrap();
    let c = os.mmap(pid, 12_345, MapKind::Anon).unwrap();
    assert_eq!(a.0 + 4096, lowest, "right below the libraries");
    assert_eq!(b.0 + (100 << 10), a.0);
    assert_eq!(c.0 + 16384, b.0, "rounded up to pages, no gap");
    // 2 MiB or more: aligned to 2 MiB, under the last mapping.
    let d = os.mmap(pid, (3 << 20) + 4096, MapKind::Anon).unwrap();
    assert_eq!(d.0 % (2 << 20), 0);
    assert!(d.0 + (3 << 20) + 4096 <= c.0 && c.0 - (d.0 + (3 << 20) + 4096) < 2 << 20);
    let g = os.mmap(pid, 1 << 30, MapKind::Huge1G).unwrap();
    assert_eq!(g.0 % (1 << 30), 0);
    assert!(g.0 + (1 << 30) <= d.0);
    let vmas = vmas_of(&os, pid);
    assert!(no_overlaps(&vmas));
}

#[test]
fn linux_places_the_binary_its_heap_after_it_and_the_stack_at_the_top() {
    let mut os = layout_os(LayoutKind::Linux, true, 5);
    let pid = os.spawn().unwrap();
    let l = layout::LinuxLayout::new(true, 5, pid);
    let vmas = vmas_of(&os, pid);
    let binary: Vec<_> = vmas.iter().filter(|v| v.role == Region::Binary).collect();
    assert_eq!(binary[0].start.addr().0, l.binary);
    let bss_end = binary.last().unwrap().end.addr().0;
    let stack = vmas.iter().find(|v| v.role == Region::Stack).unwrap();
    assert_eq!(stack.end.addr().0, l.stack_top);
    assert!(stack.start.addr().0 > l.mmap_base && l.stack_top <= layout::TASK_SIZE);
    // The brk heap: after the bss (randomised up to 32 MiB), growing upward in one VMA.
    let h1 = os.sbrk(pid, 200 << 10, MapKind::Anon).unwrap().unwrap();
    assert_eq!(h1.0, l.brk_start);
    assert!(h1.0 >= bss_end && h1.0 < bss_end + (32 << 20));
    let h2 = os.sbrk(pid, 4096, MapKind::Anon).unwrap().unwrap();
    assert_eq!(h2.0, h1.0 + (200 << 10));
    let heap: Vec<_> = vmas_of(&os, pid)
        .into_iter()
        .filter(|v| v.role == Region::Heap)
        .collect();
    assert_eq!(heap.len(), 1);
    assert_eq!(span(&heap[0]), (h1.0, h2.0 + 4096));
    // Threads' stacks: 8 MiB mappings in the mmap area.
    os.start_thread(pid).unwrap();
    let stacks: Vec<_> = vmas_of(&os, pid)
        .into_iter()
        .filter(|v| v.role == Region::Stack)
        .collect();
    assert_eq!(stacks.len(), 2);
    assert!(stacks[0].end.addr().0 <= l.mmap_base);
    assert_eq!(stacks[0].end.0 - stacks[0].start.0, (8 << 20) >> 12);
    // Pages of the heap fault in like any others.
    os.fault(pid, VirtAddr(h1.0 + 4096)).unwrap();
}

#[test]
fn without_aslr_linux_uses_its_fixed_addresses() {
    let mut os = layout_os(LayoutKind::Linux, false, 5);
    let pid = os.spawn().unwrap();
    let vmas = vmas_of(&os, pid);
    let first = vmas[0];
    assert_eq!(
        (first.role, first.start.addr().0),
        (Region::Binary, 0x5555_5555_4000)
    );
    let stack = vmas.iter().find(|v| v.role == Region::Stack).unwrap();
    assert_eq!(span(stack), (0x7fff_fffd_e000, 0x7fff_ffff_f000));
    let loader = vmas.iter().rfind(|v| v.role == Region::Library).unwrap();
    assert_eq!(loader.end.addr().0, 0x7fff_f7ff_f000);
    // Another seed, another pid: the same addresses.
    let mut other = layout_os(LayoutKind::Linux, false, 6);
    other.spawn().unwrap();
    let pid2 = other.spawn().unwrap();
    let a = os.mmap(pid, 1 << 20, MapKind::Anon).unwrap();
    let b = other.mmap(pid2, 1 << 20, MapKind::Anon).unwrap();
    assert_eq!(a, b);
}

#[test]
fn aslr_draws_the_layout_from_the_seed_and_the_pid() {
    let place = |seed: u64| {
        let mut os = layout_os(LayoutKind::Linux, true, seed);
        let p0 = os.spawn().unwrap();
        let p1 = os.spawn().unwrap();
        let a = os.mmap(p0, 64 << 20, MapKind::Anon).unwrap();
        let b = os.mmap(p1, 64 << 20, MapKind::Anon).unwrap();
        let h = os.sbrk(p0, 4096, MapKind::Anon).unwrap().unwrap();
        (a, b, h, vmas_of(&os, p0))
    };
    let (a, b, h, vmas) = place(1);
    assert_eq!((a, b, h, vmas.clone()), place(1), "same seed, same layout");
    assert_ne!(a, b, "each process its own randomisation");
    let (a2, _, h2, _) = place(2);
    assert_ne!(a, a2);
    assert_ne!(h, h2);
}

#[test]
fn munmap_frees_a_gap_the_next_mapping_that_fits_reuses() {
    let mut os = layout_os(LayoutKind::Linux, true, 3);
    let pid = os.spawn().unwrap();
    let a = os.mmap(pid, 1 << 20, MapKind::Anon).unwrap();
    let b = os.mmap(pid, 1 << 20, MapKind::Anon).unwrap();
    let c = os.mmap(pid, 1 << 20, MapKind::Anon).unwrap();
    assert!(c < b && b < a);
    os.fault(pid, b).unwrap();
    os.munmap(pid, b, 1 << 20).unwrap();
    // Too large for the hole: below everything.
    let d = os.mmap(pid, 4 << 20, MapKind::Anon).unwrap();
    assert!(d.0 + (4 << 20) <= c.0);
    // Fits: the hole's top, the highest free gap.
    let e = os.mmap(pid, 256 << 10, MapKind::Anon).unwrap();
    assert_eq!(e.0 + (256 << 10), a.0);
    assert!(no_overlaps(&vmas_of(&os, pid)));
}

#[test]
fn the_primary_region_stays_contiguous_under_the_linux_layout() {
    let mut cfg = config(256);
    cfg.direct_segment.enabled = true;
    cfg.direct_segment.min_bytes = 4 << 20;
    let mut os = radix_os(&cfg, 9);
    let pid = os.spawn().unwrap();
    let a = os.mmap(pid, 8 << 20, MapKind::Anon).unwrap();
    let small = os.mmap(pid, 64 << 10, MapKind::Anon).unwrap();
    let b = os.mmap(pid, 16 << 20, MapKind::Anon).unwrap();
    assert_eq!(b.0, a.0 + (8 << 20), "back to back, upward, in its window");
    assert!(small.0 + (64 << 10) <= a.0 || small.0 >= a.0 + (1 << 40));
    let seg = os.process(pid).unwrap().segment.as_ref().unwrap().seg;
    assert_eq!((seg.base, seg.limit), (a.0, b.0 + (16 << 20)));
    // The segment translates; the heap and the small mapping page as usual.
    assert!(os
        .process(pid)
        .unwrap()
        .segment_frame(VirtAddr(b.0 + 4096).vpn())
        .is_some());
    let h = os.sbrk(pid, 4096, MapKind::Anon).unwrap().unwrap();
    os.fault(pid, h).unwrap();
    os.fault(pid, small).unwrap();
}

#[test]
fn the_packed_layout_is_the_old_placement() {
    let mut os = layout_os(LayoutKind::Packed, true, 3);
    let pid = os.spawn().unwrap();
    assert!(
        vmas_of(&os, pid).is_empty(),
        "no binary, libraries or stack"
    );
    let a = os.mmap(pid, 4096, MapKind::Anon).unwrap();
    let b = os.mmap(pid, 3 << 20, MapKind::Anon).unwrap();
    assert_eq!(a.0, 0x1000_0000_0000);
    assert_eq!(b.0, 0x1000_0040_0000, "a 2 MiB gap, then aligned to 2 MiB");
    assert_eq!(os.sbrk(pid, 4096, MapKind::Anon).unwrap(), None);
    os.start_thread(pid).unwrap();
    assert_eq!(vmas_of(&os, pid).len(), 2);
}

#[test]
fn a_trace_process_replaces_the_layout_with_one_demand_paged_space() {
    let mut os = layout_os(LayoutKind::Linux, true, 3);
    let pid = os.spawn().unwrap();
    os.map_everything(pid).unwrap();
    let vmas = vmas_of(&os, pid);
    assert_eq!(vmas.len(), 1);
    assert!(vmas[0].catch_all);
    os.fault(pid, VirtAddr(0x5555_5555_5000)).unwrap();
}

mod layout_props {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Mmap(u64, bool),
        Munmap(usize),
        Sbrk(u64),
        Thread,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1u64..(12 << 20), any::<bool>()).prop_map(|(b, huge)| Op::Mmap(b, huge)),
            2 => any::<usize>().prop_map(Op::Munmap),
            1 => (0u64..(1 << 20)).prop_map(Op::Sbrk),
            1 => Just(Op::Thread),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever a program maps, unmaps and grows, its regions never overlap, stay in the
        /// user space, keep their alignment and (mappings) stay below `mmap_base`.
        #[test]
        fn regions_never_overlap_and_stay_in_user_space(
            ops in proptest::collection::vec(op(), 1..60),
            seed in 0u64..1000,
            aslr in any::<bool>(),
            packed in any::<bool>(),
        ) {
            let kind = if packed { LayoutKind::Packed } else { LayoutKind::Linux };
            let mut os = layout_os(kind, aslr, seed);
            let pid = os.spawn().unwrap();
            let l = layout::LinuxLayout::new(aslr, seed, pid);
            let mut live: Vec<(VirtAddr, u64)> = Vec::new();
            for op in ops {
                match op {
                    Op::Mmap(bytes, huge) => {
                        let bytes = if huge { bytes.max(2 << 20) } else { bytes };
                        let va = os.mmap(pid, bytes, MapKind::Anon).unwrap();
                        let align = if bytes >= 2 << 20 { 2 << 20 } else { 4096 };
                        prop_assert_eq!(va.0 % align, 0);
                        if !packed {
                            prop_assert!(va.0 + bytes <= l.mmap_base);
                        }
                        os.fault(pid, VirtAddr(va.0 + bytes - 1)).unwrap();
                        live.push((va, bytes));
                    }
                    Op::Munmap(i) if !live.is_empty() => {
                        let (va, bytes) = live.swap_remove(i % live.len());
                        os.munmap(pid, va, bytes).unwrap();
                    }
                    Op::Munmap(_) => {}
                    Op::Sbrk(bytes) => {
                        if let Some(h) = os.sbrk(pid, bytes, MapKind::Anon).unwrap() {
                            prop_assert!(h.0 >= l.brk_start);
                        }
                    }
                    Op::Thread => os.start_thread(pid).unwrap(),
                }
                let vmas = vmas_of(&os, pid);
                prop_assert!(no_overlaps(&vmas), "{:?}", vmas);
                prop_assert!(vmas
                    .iter()
                    .all(|v| v.start.addr().0 >= 0x1_0000 && v.end.addr().0 <= layout::TASK_SIZE));
            }
        }
    }
}
