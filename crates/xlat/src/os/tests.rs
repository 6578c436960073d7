//! Eager paging: the first fault in a VMA backs all of it with consecutive frames; memory kept
//! contiguous through fragmentation injection.

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
    let vma = os.process(pid).unwrap().vmas().next().copied().unwrap();
    let ineligible = (0..ranges)
        .filter(|r| !vma.thp_eligible(VirtAddr(va.0 + (r << 21)).vpn()))
        .count() as u64;
    assert_eq!(ineligible, small);
}
