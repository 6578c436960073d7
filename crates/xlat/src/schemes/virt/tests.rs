//! The 2D walk against the paper's counts (Table II: 24 references for a 4K+4K walk that
//! misses everywhere, 4 with a VMM segment) and against the composed ground truth.

use super::*;
use crate::addr::translate;
use crate::mem::MemKind;
use crate::mmu::TlbLevel;
use crate::os::testing::config;
use crate::os::{BuddyFrames, MapKind, Os, ThpPolicy};
use crate::pt::direct::{DirectSegment, EscapeFilter, Segment};
use proptest::prelude::*;

const MIB: u64 = 1 << 20;

/// A virtualized config with nothing cached: no PWC on either side, no nested TLB.
fn uncached(host_page: PageSize) -> VirtConfig {
    let mut v = VirtConfig {
        host_page,
        nested_in_l2tlb: false,
        ..VirtConfig::default()
    };
    v.host_pwc.entries = 0;
    v
}

fn guest_os(os_mib: u64, v: &VirtConfig, thp: ThpPolicy) -> Os<RadixPageTable> {
    let mut cfg = config(os_mib);
    cfg.thp = thp;
    let tables = Box::new(|pt: &mut PtContext, _| RadixPageTable::new(pt, 4));
    let vmm = Vmm::new(&v.vmm(os_mib * MIB, false), os_mib * MIB, 7).unwrap();
    Os::new(&cfg, 7, tables, Box::new(BuddyFrames), Some(vmm)).unwrap()
}

fn walker(v: &VirtConfig, guest_pwc: bool) -> NestedWalker {
    let mut radix = crate::schemes::radix::RadixConfig::default();
    if !guest_pwc {
        radix.pwc.entries = 0;
    }
    NestedWalker::new(radix.walker(), v.host_path())
}

/// Walk `va` of `pid` once; returns the mapping and the references.
fn walk(
    w: &mut NestedWalker,
    os: &Os<RadixPageTable>,
    l2: &mut TlbLevel,
    pid: u16,
    va: VirtAddr,
) -> (Option<(Pfn, PageSize)>, Vec<crate::mmu::walk::WalkRef>) {
    let segment = os.process(pid).unwrap().segment.as_ref();
    let (found, plan) = walk_plan(w, os, l2, pid, va, segment);
    (found, plan.refs().to_vec())
}

/// Walk `va` of `pid` once with `segment` as its guest segment; returns the mapping and the
/// plan.
fn walk_plan(
    w: &mut NestedWalker,
    os: &Os<RadixPageTable>,
    l2: &mut TlbLevel,
    pid: u16,
    va: VirtAddr,
    segment: Option<&DirectSegment>,
) -> (Option<(Pfn, PageSize)>, WalkPlan) {
    let mut env = WalkEnv {
        table: &os.process(pid).unwrap().pt,
        store: &os.store,
        host: os.host(),
        segment,
        l2tlb: l2,
    };
    let mut plan = WalkPlan::default();
    let found = w.plan_walk(va, pid, &mut env, &mut plan);
    (found, plan)
}

fn no_l2() -> TlbLevel {
    TlbLevel::new(&BTreeMap::new())
}

/// A process with `bytes` mapped and touched from its start.
fn touched(os: &mut Os<RadixPageTable>, bytes: u64) -> (u16, VirtAddr) {
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, bytes, MapKind::Anon).unwrap();
    os.populate(pid, va, bytes).unwrap();
    (pid, va)
}

#[test]
fn a_4k4k_walk_that_misses_everywhere_makes_24_references() {
    let v = uncached(PageSize::Size4K);
    let mut os = guest_os(64, &v, ThpPolicy::Never);
    let (pid, va) = touched(&mut os, 64 << 10);
    let mut w = walker(&v, false);
    let (found, refs) = walk(&mut w, &os, &mut no_l2(), pid, VirtAddr(va.0 + 0x3123));
    assert_eq!(refs.len(), 24);
    let npt = refs.iter().filter(|r| (12..16).contains(&r.kind.0)).count();
    assert_eq!(
        (npt, refs.len() - npt),
        (20, 4),
        "5 host walks of 4, 4 guest entries"
    );
    // Every reference is a step of its own: each needs the one before.
    assert!(refs.iter().enumerate().all(|(i, r)| r.step as usize == i));
    // The last 4 references are the data page's host walk; the guest leaf comes before.
    assert_eq!(refs[19].kind, MemKind::pt_level(1));
    assert_eq!(found, os.truth(pid, VirtAddr(va.0 + 0x3123)));
    // Guest entries are read at the host-physical address of their guest-physical one.
    let host = os.host().unwrap();
    let guest_root = os.process(pid).unwrap().pt.root();
    let root_entry = crate::pt::radix::entry_addr(guest_root, VirtAddr(va.0 + 0x3123), 4);
    assert_eq!(refs[4].addr, host.translate(root_entry).unwrap());
}

#[test]
fn larger_host_pages_shorten_every_host_walk() {
    // Host walks of 3 (2 MiB) and 2 (1 GiB) references: 5 x 3 + 4 and 5 x 2 + 4.
    for (host_page, refs_per_walk) in [(PageSize::Size2M, 19), (PageSize::Size1G, 14)] {
        let v = uncached(host_page);
        let mut os = guest_os(64, &v, ThpPolicy::Never);
        let (pid, va) = touched(&mut os, 64 << 10);
        let (found, refs) = walk(&mut walker(&v, false), &os, &mut no_l2(), pid, va);
        assert_eq!(refs.len(), refs_per_walk, "{host_page} host pages");
        assert_eq!(found, os.truth(pid, va));
        assert_eq!(
            found.unwrap().1,
            PageSize::Size4K,
            "4K guest page: 4K entry"
        );
    }
}

#[test]
fn with_a_vmm_segment_only_the_guest_walk_remains() {
    // VMM Direct (Gandhi §III-B, Table II): "TLB misses take only up to 4 memory accesses".
    let v = VirtConfig {
        vmm_segment: true,
        ..uncached(PageSize::Size4K)
    };
    let mut os = guest_os(64, &v, ThpPolicy::Never);
    let (pid, va) = touched(&mut os, 64 << 10);
    let mut w = walker(&v, false);
    let (found, plan) = walk_plan(&mut w, &os, &mut no_l2(), pid, va, None);
    let refs = plan.refs();
    assert_eq!(refs.len(), 4);
    assert!(refs.iter().all(|r| (1..=4).contains(&r.kind.0)));
    assert_eq!(found, os.truth(pid, va));
    assert_eq!(w.host.stats.segment, 5);
    // Table II: 5 base-bound checks, at Gandhi §IX-A's 1 cycle each (nothing else is fixed
    // here: no PWC on either side).
    assert_eq!(plan.fixed_cycles, 5 * walker::BASE_BOUND_CHECK_CYCLES);
}

#[test]
fn a_guest_segment_costs_one_base_bound_check_a_walk_and_none_without_segments() {
    let v = uncached(PageSize::Size4K);
    let mut os = guest_os(64, &v, ThpPolicy::Never);
    let (pid, va) = touched(&mut os, 64 << 10);
    let mut w = walker(&v, false);
    let (_, plain) = walk_plan(&mut w, &os, &mut no_l2(), pid, va, None);
    assert_eq!(plain.fixed_cycles, 0, "no segment, no PWC: nothing fixed");
    // Guest Direct (Table I "Guest segment only"): a segment over the guest-physical frame
    // the guest table maps `va` to, so the walk's first dimension is one check.
    let guest_frame = os.process(pid).unwrap().truth(va).unwrap().0;
    let gpa = translate(va, guest_frame, PageSize::Size4K);
    let seg = DirectSegment::new(
        Segment::new(va.0, 4096, gpa.0),
        EscapeFilter::new(64, 1, &mut crate::rng::Rng::new(1, 0)),
    );
    let (found, direct) = walk_plan(&mut w, &os, &mut no_l2(), pid, va, Some(&seg));
    assert_eq!(found, os.truth(pid, va));
    assert_eq!(direct.refs().len(), 4, "only the data page's host walk");
    assert_eq!(direct.fixed_cycles, walker::BASE_BOUND_CHECK_CYCLES);
}

#[test]
fn nested_translations_cached_in_the_l2_tlb_spare_the_next_walk() {
    let mut v = uncached(PageSize::Size4K);
    v.nested_in_l2tlb = true;
    let mut os = guest_os(64, &v, ThpPolicy::Never);
    let (pid, va) = touched(&mut os, 64 << 10);
    let mut l2cfg = BTreeMap::new();
    l2cfg.insert(
        "unified".to_string(),
        TlbConfig {
            entries: 64,
            ways: 4,
            latency: 7,
            replacement: Replacement::Lru,
            page_sizes: vec![PageSize::Size4K],
        },
    );
    let mut l2 = TlbLevel::new(&l2cfg);
    let mut w = walker(&v, false);
    let (_, first) = walk(&mut w, &os, &mut l2, pid, va);
    assert_eq!(first.len(), 24);
    // The next page: same guest table pages, whose host translations are now cached; only
    // the new data page's gPA walks the nested table.
    let next = VirtAddr(va.0 + 4096);
    let (found, second) = walk(&mut w, &os, &mut l2, pid, next);
    assert_eq!(second.len(), 4 + 4);
    assert_eq!(found, os.truth(pid, next));
    assert_eq!(w.host.stats.tlb_hits, 4);
}

#[test]
fn guest_memory_skips_the_io_gap_and_every_frame_is_backed() {
    // 4 GiB of guest memory: 3 GiB below the gap, 1 GiB above 4 GiB.
    let v = VirtConfig::default();
    let mut os = guest_os(4096, &v, ThpPolicy::Always);
    let (pid, va) = touched(&mut os, 3600 * MIB);
    let gap = (3u64 << 30)..(4u64 << 30);
    let mut at = va.0;
    while at < va.0 + 3600 * MIB {
        let (gpfn, size) = os.process(pid).unwrap().truth(VirtAddr(at)).unwrap();
        assert!(!gap.contains(&gpfn.addr().0), "guest frame in the I/O gap");
        assert!(
            os.truth(pid, VirtAddr(at)).is_some(),
            "guest frame not backed"
        );
        at += size.bytes();
    }
    assert!(os.snapshot().vmm.unwrap().ept_faults > 0);
}

#[test]
fn the_io_gap_relocated_leaves_one_range_above_4_gib() {
    let l = GuestLayout::of(8 << 30, true, true, 0);
    assert_eq!(l.holes, vec![(0, 1 << 20)]);
    assert_eq!(l.main, (1 << 20, ((8u64 << 30) - (256 << 20)) >> 12));
    let plain = GuestLayout::of(8 << 30, true, false, 0);
    assert_eq!(plain.holes, vec![(3 << 18, 1 << 18)]);
    assert_eq!(GuestLayout::of(2 << 30, true, false, 0).holes, vec![]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the page sizes on both sides and whatever is cached, every walk translates as
    /// the composition of the guest's and the VMM's mappings. (A VMM segment may give a
    /// larger TLB page than the nested table's own: the segment is contiguous.)
    #[test]
    fn every_walk_finds_the_composed_truth(
        host in prop_oneof![Just(PageSize::Size4K), Just(PageSize::Size2M), Just(PageSize::Size1G)],
        thp in prop_oneof![Just(ThpPolicy::Never), Just(ThpPolicy::Always)],
        segment in any::<bool>(),
        pwc in any::<bool>(),
        offsets in proptest::collection::vec(0u64..(48 << 20), 1..40),
    ) {
        let v = VirtConfig { vmm_segment: segment, host_page: host, ..VirtConfig::default() };
        let mut os = guest_os(256, &v, thp);
        let (pid, va) = touched(&mut os, 48 << 20);
        let mut w = walker(&v, pwc);
        let mut l2 = no_l2();
        for off in offsets {
            let at = VirtAddr(va.0 + off);
            let (found, _) = walk(&mut w, &os, &mut l2, pid, at);
            let hpa = |m: Option<(Pfn, PageSize)>| m.map(|(p, s)| crate::addr::translate(at, p, s));
            prop_assert_eq!(hpa(found), hpa(os.truth(pid, at)));
        }
    }
}

#[test]
fn a_primary_region_grows_one_segment_over_its_later_large_mappings() {
    let v = VirtConfig::default();
    let mut cfg = config(512);
    cfg.direct_segment.enabled = true;
    let tables = Box::new(|pt: &mut PtContext, _| RadixPageTable::new(pt, 4));
    let vmm = Vmm::new(&v.vmm(512 * MIB, false), 512 * MIB, 7).unwrap();
    let mut os = Os::new(&cfg, 7, tables, Box::new(BuddyFrames), Some(vmm)).unwrap();
    let pid = os.spawn().unwrap();
    let a = os.mmap(pid, 32 * MIB, MapKind::Anon).unwrap();
    let small = os.mmap(pid, MIB, MapKind::Anon).unwrap();
    let b = os.mmap(pid, 64 * MIB, MapKind::Anon).unwrap();
    // The large mappings sit back to back; the small one lies elsewhere.
    assert_eq!(b.0, a.0 + 32 * MIB);
    assert!(!(a.0..b.0 + 64 * MIB).contains(&small.0));
    let seg = os.process(pid).unwrap().segment.as_ref().unwrap().seg;
    assert_eq!((seg.base, seg.bytes()), (a.0, 96 * MIB));
    // Both translate through the segment, contiguously, without a fault.
    let last = VirtAddr(b.0 + 64 * MIB - 8);
    let p = os.process(pid).unwrap();
    let first_frame = p.segment_frame(a.vpn()).unwrap();
    let last_frame = p.segment_frame(last.vpn()).unwrap();
    assert_eq!(last_frame.0 - first_frame.0, ((96 * MIB) >> 12) - 1);
    assert!(os.truth(pid, last).is_some());
}
