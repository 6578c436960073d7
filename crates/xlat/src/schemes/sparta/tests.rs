//! SPARTA's partitions, tables and frame policy against reference models.

use super::frames::PartitionFrames;
use super::layout::Layout;
use super::*;
use crate::addr::{PhysAddr, BASE_PAGE_SHIFT};
use crate::os::FramePolicy;
use crate::pt::PageTable;
use std::collections::HashMap;

fn layout(partitions: u32, shift: u32, bytes: u64) -> Layout {
    let cfg = SpartaConfig {
        partitions,
        shift,
        ..SpartaConfig::default()
    };
    Layout::new(&cfg, bytes).unwrap()
}

#[test]
fn the_layout_splits_memory_and_sizes_the_tables() {
    // 1 GiB in 8 partitions: 32768 frames each; 4 entries per frame, 4 to a bucket.
    let l = layout(8, 12, 1 << 30);
    assert_eq!(l.part_frames, 32768);
    assert_eq!(l.buckets, 32768);
    // 64 bytes a bucket: 2 MiB of table per 128 MiB partition (1/64 of memory).
    assert_eq!(l.table_frames, 512);
    assert_eq!(l.frames(3), (3 * 32768, 4 * 32768));
    assert_eq!(l.table_base(3), PhysAddr(3 * 32768 * 4096));
    // Consecutive pages go round the partitions with shift 12, 2 MiB regions with 21.
    let pages: Vec<u64> = (0..10).map(|i| l.partition_of(VirtAddr(i << 12))).collect();
    assert_eq!(pages, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]);
    assert!(!l.holds_whole(PageSize::Size2M));
    let l21 = layout(8, 21, 1 << 30);
    assert_eq!(l21.partition_of(VirtAddr(5 << 21 | 0x1234)), 5);
    assert!(l21.holds_whole(PageSize::Size2M));
    // Squeezing out the partition bits keeps one partition's pages distinct and dense.
    let squeezed: Vec<u64> = (0..4)
        .map(|i| l.squeeze(VirtAddr(((8 * i + 3) << 12) | 0x10)).0)
        .collect();
    assert_eq!(squeezed, [0x10, 0x1010, 0x2010, 0x3010]);
    assert_eq!(
        l21.squeeze(VirtAddr((9 << 24) | (5 << 21) | 0x777)).0,
        (9 << 21) | 0x777
    );
    // Memory that does not split into whole 2 MiB slices is refused, naming the key.
    let bad = SpartaConfig {
        partitions: 1024,
        ..SpartaConfig::default()
    };
    let e = Layout::new(&bad, 1 << 30).unwrap_err().to_string();
    assert!(e.contains("schemes.sparta.partitions"), "{e}");
}

#[test]
fn the_config_is_checked_key_by_key() {
    let path = "schemes.sparta";
    for (mutate, key) in [
        (
            Box::new(|c: &mut SpartaConfig| c.partitions = 3) as Box<dyn Fn(&mut SpartaConfig)>,
            "partitions",
        ),
        (Box::new(|c: &mut SpartaConfig| c.shift = 8), "shift"),
        (
            Box::new(|c: &mut SpartaConfig| c.tlb.entries = 0),
            "tlb.entries",
        ),
        (Box::new(|c: &mut SpartaConfig| c.tlb.ways = 3), "tlb"),
        (
            Box::new(|c: &mut SpartaConfig| c.probe_limit = 9),
            "probe_limit",
        ),
        (
            Box::new(|c: &mut SpartaConfig| c.table_slots_per_frame = 0),
            "table_slots_per_frame",
        ),
    ] {
        let mut c = SpartaConfig::default();
        mutate(&mut c);
        let e = c.validate(path).unwrap_err().to_string();
        assert!(e.contains(&format!("{path}.{key}")), "{e}");
    }
    assert!(SpartaConfig::default().validate(path).is_ok());
}

/// A buddy allocator and store with `l`'s tables reserved, and the frame policy.
fn boot(l: Layout, frames: u64) -> (BuddyAllocator, PtStore, PartitionFrames) {
    let mut buddy = BuddyAllocator::new(frames);
    let mut policy = PartitionFrames::new(l);
    policy.reserve(&mut buddy).unwrap();
    (buddy, PtStore::new(), policy)
}

#[test]
fn pages_land_in_their_partition_and_the_tables_find_them() {
    let bytes = 256 << 20;
    let l = layout(4, 12, bytes);
    let (mut buddy, mut store, mut policy) = boot(l, bytes >> 12);
    let mut tables = [SpartaTable::new(l, 1), SpartaTable::new(l, 2)];
    let mut model: HashMap<(u16, u64), u64> = HashMap::new();
    let mut x = 0x1234_5678_9abc_def1u64;
    for i in 0..6000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let t = (i % 2) as usize;
        let asid = t as u16 + 1;
        let vpn = Vpn(x % (1 << 26));
        if model.contains_key(&(asid, vpn.0)) {
            continue;
        }
        let pfn = policy
            .frame(&mut buddy, asid, vpn, PageSize::Size4K)
            .unwrap();
        // Algorithm 1: the frame is in the partition the virtual address names, and not in
        // the partition's table.
        let p = l.partition_of_vpn(vpn);
        let (lo, hi) = l.frames(p);
        assert!(pfn.0 >= lo + l.table_frames && pfn.0 < hi);
        let mut ctx = PtContext {
            store: &mut store,
            buddy: &mut buddy,
        };
        tables[t].map(&mut ctx, vpn, pfn, PageSize::Size4K).unwrap();
        model.insert((asid, vpn.0), pfn.0);
        // Unmap every seventh page again (tombstones must not hide later entries).
        if i % 7 == 0 {
            assert_eq!(tables[t].unmap(&mut ctx, vpn, PageSize::Size4K), Some(pfn));
            policy.free(&mut buddy, pfn, PageSize::Size4K);
            model.remove(&(asid, vpn.0));
        }
    }
    for (&(asid, vpn), &pfn) in &model {
        let va = VirtAddr(vpn << BASE_PAGE_SHIFT | 0x88);
        let t = &tables[asid as usize - 1];
        assert_eq!(t.lookup(&store, va), Some((Pfn(pfn), PageSize::Size4K)));
        // The other address space does not see it.
        let other = &tables[2 - asid as usize];
        if !model.contains_key(&(3 - asid, vpn)) {
            assert_eq!(other.lookup(&store, va), None);
        }
    }
}

#[test]
fn a_walk_reads_one_bucket_in_its_own_partition() {
    let bytes = 256 << 20;
    let l = layout(8, 12, bytes);
    let (mut buddy, mut store, mut policy) = boot(l, bytes >> 12);
    let mut table = SpartaTable::new(l, 1);
    let mut plan = WalkPlan::default();
    for i in 0..2000u64 {
        let vpn = Vpn(0x40000 + i * 3);
        let pfn = policy.frame(&mut buddy, 1, vpn, PageSize::Size4K).unwrap();
        let mut ctx = PtContext {
            store: &mut store,
            buddy: &mut buddy,
        };
        table.map(&mut ctx, vpn, pfn, PageSize::Size4K).unwrap();
        let va = VirtAddr(vpn.0 << 12);
        assert_eq!(
            table.plan(&store, va, &mut plan),
            Some((pfn, PageSize::Size4K))
        );
        // Load factor 1/8 of the table here: the home bucket holds the entry.
        assert_eq!(plan.refs().len(), 1);
        let p = l.partition_of(va);
        let (lo, _) = l.frames(p);
        let line = plan.refs()[0].addr.0 >> 12;
        assert!(
            line >= lo && line < lo + l.table_frames,
            "bucket outside partition {p}'s table"
        );
        assert_eq!(plan.controller, Some(l.table_base(p)));
    }
}

#[test]
fn a_full_partition_refuses_while_others_have_room() {
    let bytes = 64 << 20; // 4 partitions of 4096 frames, 64 of them table
    let l = layout(4, 12, bytes);
    let (mut buddy, _, mut policy) = boot(l, bytes >> 12);
    // Pages of partition 1 only: vpn % 4 == 1.
    let mut got = 0;
    while policy
        .frame(&mut buddy, 1, Vpn(4 * got + 1), PageSize::Size4K)
        .is_some()
    {
        got += 1;
    }
    assert_eq!(got, l.part_frames - l.table_frames);
    assert!(policy.refusal().unwrap().contains("partition 1"));
    assert!(policy
        .frame(&mut buddy, 1, Vpn(2), PageSize::Size4K)
        .is_some());
    // A 2 MiB page spans partitions when the index bits are below bit 21: refused, so that
    // the OS maps base pages.
    assert!(policy
        .frame(&mut buddy, 1, Vpn(0), PageSize::Size2M)
        .is_none());
}
