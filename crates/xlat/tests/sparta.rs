//! SPARTA end to end (docs/schemes/sparta.md): correct translations on every built-in
//! workload, with one accelerator and with four sharing the memory-side TLBs; memory-side
//! walks that stay in their partition's memory; and the directions of the paper's Figs 4 and 7.

#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;
use sim::*;

#[test]
fn sparta_translates_every_workload_correctly() {
    const REFS: u64 = 20_000;
    for preset in ["sparta-8", "sparta-32"] {
        for (name, _) in xlat::workload::WORKLOADS {
            let s = run(cfg(preset, name, REFS, &["sim.verify=true".into()]));
            let refs = u(&s, "core.memory_refs");
            assert!(refs >= REFS, "{preset} {name}");
            // Fast-forward's translations are checked too.
            assert!(
                u(&s, "verify.translations_checked") >= refs,
                "{preset} {name}"
            );
        }
    }
}

#[test]
fn four_accelerators_share_the_memory_side_tlbs() {
    let extra = [
        "sim.verify=true".into(),
        "sim.cores=4".into(),
        "workload.threads=4".into(),
        format!("workload.table_bytes={}", 256 * MIB),
    ];
    let s = run(cfg("sparta-8", "gups", 40_000, &extra));
    assert!(u(&s, "verify.translations_checked") >= u(&s, "core.memory_refs"));
    // Every core's misses go to the same eight TLBs: the shared counters hold them all,
    // each access once (a faulting access is not counted again after the fault).
    assert!(u(&s, "mmu.faults") > 0);
    let side = u(&s, "mmu.memory_side_tlb.accesses");
    assert_eq!(side, u(&s, "mmu.l1_misses"));
    let by_partition = s["mmu"]["memory_side_tlb"]["by_partition"]
        .as_array()
        .unwrap();
    assert_eq!(by_partition.len(), 8);
    for p in by_partition {
        assert!(p["accesses"].as_u64().unwrap() > 0);
    }
}

#[test]
fn memory_side_walks_stay_in_their_partition() {
    for preset in ["sparta-8", "sparta-32", "sparta-128"] {
        let s = run(cfg(preset, "hashtable", 30_000, &[]));
        let walks = u(&s, "walk.walks");
        assert!(walks > 1000, "{preset}: {walks} walks");
        // One bucket read per walk (load factor 1/4: no overflow).
        assert_eq!(u(&s, "walk.refs.total"), walks, "{preset}");
        assert_eq!(u(&s, "walk.refs.by_level.dram"), walks, "{preset}");
        // Every one read by the controller of the channel it lies in: no network crossed.
        assert!(u(&s, "topology.controller_local") >= walks, "{preset}");
        // Every page of each partition is in that partition's memory (the table checks each
        // mapping as it inserts it) and the partitions share the pages evenly.
        let frames: Vec<u64> = s["os"]["frames"]["frames_by_partition"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let (lo, hi) = (frames.iter().min().unwrap(), frames.iter().max().unwrap());
        assert!(*hi < 2 * *lo, "{preset}: pages per partition {frames:?}");
    }
}

#[test]
fn partitions_must_lie_in_one_memory_node() {
    // Channels interleaved every 8 KiB: no partition is one channel or one socket.
    let e = xlat::Simulation::new(cfg(
        "sparta-32",
        "gups",
        1000,
        &["dram.mapping=\"row:rank:bank:channel:column\"".into()],
    ))
    .err()
    .expect("a config error")
    .to_string();
    assert!(e.contains("schemes.sparta.partitions"), "{e}");
    assert!(e.contains("dram.mapping"), "{e}");
}

/// TLB misses per TLB access: the accelerator's own TLB for the conventional system, the
/// memory-side TLBs for SPARTA (both 128 entries, 4-way, as in Fig 4).
fn miss_ratio(preset: &str, workload: &str, extra: &[String]) -> f64 {
    // The structure populated before the measured region: no faults in it, so that both
    // systems count the same references (the conventional TLB sees a faulting access once
    // before the fault and once after).
    let mut extra = extra.to_vec();
    extra.push("workload.populate=true".into());
    let s = run(cfg(preset, workload, 60_000, &extra));
    assert_eq!(u(&s, "mmu.faults"), 0);
    let (misses, accesses) = if preset.starts_with("sparta") {
        (
            u(&s, "mmu.memory_side_tlb.misses"),
            u(&s, "mmu.memory_side_tlb.accesses"),
        )
    } else {
        (u(&s, "mmu.l1tlb.misses"), u(&s, "mmu.l1tlb.accesses"))
    };
    misses as f64 / accesses as f64
}

#[test]
fn partitioned_tlbs_miss_less_than_one_conventional_tlb() {
    // Fig 4's direction: at equal entries per TLB, SPARTA-4's memory-side TLBs (each
    // covering a quarter of memory) miss less than the accelerator's TLB; one partition
    // (the partitions switched off) misses exactly as much: the same references on the same
    // geometry. No accelerator-side TLB in front.
    // Small structures (a few thousand pages), so that four TLBs' reach is a sizeable part
    // of them, as 512-entry TLBs are of a 128 GB footprint's hot pages.
    for w in ["bst-ext", "skiplist", "hashtable"] {
        let size = vec!["workload.keys=16384".to_string()];
        let conventional = miss_ratio("accel-conventional", w, &size);
        let mut no_accel_tlb = size.clone();
        no_accel_tlb.push("mmu.l1tlb.4k.entries=0".into());
        let sparta4 = miss_ratio("sparta-4", w, &no_accel_tlb);
        let mut one = no_accel_tlb.to_vec();
        one.push("schemes.sparta.partitions=1".into());
        let sparta1 = miss_ratio("sparta-4", w, &one);
        assert!(
            sparta4 < 0.9 * conventional,
            "{w}: SPARTA-4 {sparta4:.3} vs conventional {conventional:.3}"
        );
        assert_eq!(sparta1, conventional, "{w}: one partition");
        eprintln!("{w}: SPARTA-4 {sparta4:.3}, conventional {conventional:.3}");
    }
}

#[test]
fn a_memory_side_walk_costs_dram_alone() {
    // Fig 7's direction on the eight-socket machine: a conventional walk crosses the
    // network to its PTE and back; SPARTA's reads its partition's DRAM only.
    let walk = |preset: &str| {
        let s = run(cfg(preset, "gups", 40_000, &[]));
        u(&s, "walk.cycles") as f64 / u(&s, "walk.walks") as f64
    };
    let (conventional, sparta) = (walk("accel-conventional"), walk("sparta-8"));
    assert!(
        sparta < 0.75 * conventional,
        "walks: SPARTA-8 {sparta:.0} cycles, conventional {conventional:.0}"
    );
}

/// The data structures of the paper's Table 2 (ASCYLIB) and its key-value store.
const STRUCTURES: [&str; 5] = ["bst-ext", "bst-int", "hashtable", "skiplist", "kvstore"];

#[test]
fn dipta_translates_correctly_and_predicts_ways() {
    for w in STRUCTURES {
        let s = run(cfg("dipta", w, 20_000, &["sim.verify=true".into()]));
        assert!(
            u(&s, "verify.translations_checked") >= u(&s, "core.memory_refs"),
            "{w}"
        );
        let p = &s["mmu"]["way_predictor"];
        let (n, right) = (
            p["predictions"].as_u64().unwrap(),
            p["correct"].as_u64().unwrap(),
        );
        assert!(n >= 20_000, "{w}: every access is predicted");
        assert_eq!(right + p["wrong"].as_u64().unwrap(), n, "{w}");
        // Memory is nearly empty: most pages took their set's first way.
        assert!(right * 2 > n, "{w}: {right} of {n} right");
    }
    let extra = [
        "sim.verify=true".into(),
        "sim.cores=4".into(),
        "workload.threads=4".into(),
        format!("workload.table_bytes={}", 256 * MIB),
    ];
    let s = run(cfg("dipta", "gups", 40_000, &extra));
    assert!(u(&s, "verify.translations_checked") >= u(&s, "core.memory_refs"));
}

#[test]
fn sparta_runs_faster_than_conventional_on_every_data_structure() {
    // Fig 10's direction (4 KiB pages, populated structures, 128-entry TLBs): SPARTA-8 and
    // SPARTA-32 take fewer cycles than the conventional accelerators.
    for w in ["bst-ext", "bst-int", "hashtable", "skiplist"] {
        let cycles = |preset: &str| {
            let extra = ["workload.populate=true".to_string()];
            u(&run(cfg(preset, w, 30_000, &extra)), "core.cycles")
        };
        let conventional = cycles("accel-conventional");
        for preset in ["sparta-8", "sparta-32"] {
            let c = cycles(preset);
            assert!(
                c < conventional,
                "{w}: {preset} {c} cycles, conventional {conventional}"
            );
            eprintln!(
                "{w}: {preset} speed-up {:.2}",
                conventional as f64 / c as f64
            );
        }
    }
}

#[test]
fn huge_pages_stay_in_their_partition() {
    for preset in [
        "sparta-4-2m",
        "sparta-8-2m",
        "sparta-32-2m",
        "sparta-128-2m",
    ] {
        let extra = ["sim.verify=true".to_string()];
        let s = run(cfg(preset, "bst-ext", 20_000, &extra));
        assert!(u(&s, "verify.translations_checked") >= u(&s, "core.memory_refs"));
        // The structure is in 2 MiB pages, none refused for spanning partitions.
        let frames = &s["os"]["frames"];
        assert_eq!(frames["huge_pages_spanning_partitions"].as_u64(), Some(0));
        assert!(u(&s, "os.faults.2m") > 0, "{preset}");
        // The process has pages of both sizes (its small VMAs stay in 4 KiB pages): a walk
        // reads the home bucket of each size, in parallel.
        let walks = u(&s, "walk.walks");
        assert!(u(&s, "walk.refs.total") <= 2 * walks, "{preset}");
    }
    // With the partition bits at 12, a huge page would span partitions: the OS maps base
    // pages instead, and says how often.
    let s = run(cfg(
        "sparta-8-2m",
        "bst-ext",
        20_000,
        &["schemes.sparta.shift=12".into(), "sim.verify=true".into()],
    ));
    assert!(u(&s, "os.frames.huge_pages_spanning_partitions") > 0);
}

#[test]
fn huge_pages_cut_conventional_tlb_misses() {
    let extra = ["workload.populate=true".to_string()];
    let misses = |p: &str| u(&run(cfg(p, "bst-ext", 30_000, &extra)), "mmu.l1tlb.misses");
    let (small, huge) = (
        misses("accel-conventional"),
        misses("accel-conventional-2m"),
    );
    assert!(huge * 2 < small, "2 MiB: {huge} misses, 4 KiB: {small}");
}

#[test]
fn a_faulting_access_probes_the_memory_side_tlb_once() {
    // The reference: the same run with every page mapped before it starts (no faults), in
    // which each access that misses the accelerator's TLB probes a memory-side TLB once.
    // Demand-paged, the same accesses fault, and the re-executed access is not counted
    // again: the memory-side TLBs count the same accesses and misses.
    let base = [
        "sim.fast_forward=0".to_string(),
        "workload.keys=16384".to_string(),
    ];
    let mut populated = base.to_vec();
    populated.push("workload.populate=true".into());
    let (faulting, reference) = (
        run(cfg("sparta-8", "bst-ext", 30_000, &base)),
        run(cfg("sparta-8", "bst-ext", 30_000, &populated)),
    );
    assert!(u(&faulting, "mmu.faults") > 100);
    assert_eq!(u(&reference, "mmu.faults"), 0);
    for counter in ["accesses", "misses"] {
        let key = format!("mmu.memory_side_tlb.{counter}");
        assert_eq!(u(&faulting, &key), u(&reference, &key), "{key}");
    }
    // Each miss walks once; a fault adds the walk of the re-executed access.
    assert_eq!(
        u(&faulting, "mmu.memory_side_tlb.misses") + u(&faulting, "mmu.faults"),
        u(&faulting, "walk.walks")
    );
}

const VIRTUAL: &str = "cache.l1d.addressing=\"virtual\"";
/// The L1D's misses of data (a conventional walk's PTE reads pass through it too).
const DATA_MISSES: &str = "cache.l1d.by_kind.data.misses";

#[test]
fn a_virtual_cache_translates_only_its_misses() {
    // §4.3: SPARTA with a virtual L1D and no accelerator-side TLB. A hit needs no
    // translation; each miss is translated once, at its partition's memory-side TLB.
    for w in STRUCTURES {
        let extra = [
            VIRTUAL.to_string(),
            "mmu.l1tlb.4k.entries=0".into(),
            "sim.verify=true".into(),
        ];
        let s = run(cfg("sparta-8", w, 20_000, &extra));
        let (hits, misses) = (u(&s, "cache.l1d.hits"), u(&s, DATA_MISSES));
        assert!(hits > misses / 4, "{w}: {hits} hits, {misses} misses");
        assert_eq!(u(&s, "mmu.translations"), misses, "{w}");
        assert_eq!(u(&s, "mmu.memory_side_tlb.accesses"), misses, "{w}");
        assert_eq!(u(&s, "mmu.l1tlb.hits"), 0, "{w}");
        assert_eq!(u(&s, "verify.translations_checked"), misses, "{w}");
    }
    // Four accelerators sharing the memory-side TLBs, each with its own virtual cache.
    let extra = [
        VIRTUAL.to_string(),
        "mmu.l1tlb.4k.entries=0".into(),
        "sim.verify=true".into(),
        "sim.cores=4".into(),
        "workload.threads=4".into(),
        format!("workload.table_bytes={}", 256 * MIB),
    ];
    let s = run(cfg("sparta-8", "gups", 40_000, &extra));
    let misses = u(&s, DATA_MISSES);
    assert_eq!(u(&s, "mmu.memory_side_tlb.accesses"), misses);
    assert_eq!(u(&s, "verify.translations_checked"), misses);
}

#[test]
fn a_virtual_cache_in_front_of_a_conventional_tlb() {
    // The baseline of Fig 10 (virtual caches everywhere): the accelerator's 128-entry TLB
    // is looked up only on a cache miss, and a cache hit makes no TLB lookup at all.
    let physical = run(cfg("accel-conventional", "bst-ext", 30_000, &[]));
    let s = run(cfg(
        "accel-conventional",
        "bst-ext",
        30_000,
        &[VIRTUAL.into()],
    ));
    let misses = u(&s, DATA_MISSES);
    assert_eq!(u(&s, "mmu.l1tlb.accesses"), misses);
    assert!(u(&s, "mmu.l1tlb.accesses") < u(&physical, "mmu.l1tlb.accesses") / 2);
    // Fewer walks, whose PTE reads pass through the cache, leave more of it to the data.
    assert!(misses <= u(&physical, DATA_MISSES));
    assert!(u(&s, "core.cycles") < u(&physical, "core.cycles"));
}

#[test]
fn virtual_addressing_is_refused_where_it_cannot_be_modelled() {
    let err = |extra: &[String]| {
        xlat::SimConfig::load("sparta-8", extra)
            .expect_err("a config error")
            .to_string()
    };
    let e = err(&["cache.l2.addressing=\"virtual\"".into()]);
    assert!(e.contains("cache.l2.addressing"), "{e}");
    // 64 KiB 4-way: 256 sets, indexed beyond the page offset.
    let e = err(&[VIRTUAL.into(), "cache.l1d.size=65536".into()]);
    assert!(e.contains("cache.l1d.addressing"), "{e}");
    let e = err(&[VIRTUAL.into(), "sim.timing=\"translation\"".into()]);
    assert!(e.contains("cache.l1d.addressing"), "{e}");
}

#[test]
fn the_default_addressing_is_left_out_of_the_resolved_config() {
    let physical = cfg("sparta-8", "gups", 1000, &[]).to_toml();
    assert!(!physical.contains("addressing"), "{physical}");
    let virt = cfg("sparta-8", "gups", 1000, &[VIRTUAL.into()]).to_toml();
    assert!(virt.contains("addressing = \"virtual\""), "{virt}");
}

#[test]
fn after_an_accelerator_tlb_miss_the_data_comes_from_memory() {
    // Fig 3d: with a physical cache, an access whose page the accelerator's TLB misses
    // goes to its partition by virtual address and its data comes back from there with
    // the translation: it cannot hit the cache, which it could not look up. The
    // conventional accelerator, which walks first, looks its cache up after the walk.
    let extra = ["workload.keys=16384".to_string()];
    let sparta = run(cfg("sparta-8", "bst-ext", 30_000, &extra));
    let l1_misses = u(&sparta, "mmu.l1_misses");
    assert!(l1_misses > 1000);
    // Every access past the accelerator's TLB is an L1D miss, read from DRAM: only the
    // accesses whose page the accelerator's TLB had can hit.
    assert!(u(&sparta, DATA_MISSES) >= l1_misses);
    assert!(u(&sparta, "cache.l1d.hits") <= u(&sparta, "mmu.l1tlb.hits"));
    assert!(u(&sparta, "dram.data.reads") >= l1_misses);
}

#[test]
fn partition_tables_must_fit_the_host() {
    // 64 entries per frame of 128 GiB: 32 GiB of tables.
    let e = xlat::SimConfig::load(
        "sparta-8",
        &[
            format!("os.physmem.bytes={}", 128 * GIB),
            "schemes.sparta.table_slots_per_frame=64".into(),
        ],
    )
    .expect_err("a host-memory error")
    .to_string();
    assert!(e.contains("schemes.sparta.table_slots_per_frame"), "{e}");
    // The presets' 1/4 load factor fits at 128 GiB.
    xlat::SimConfig::load("sparta-128", &[format!("os.physmem.bytes={}", 128 * GIB)]).unwrap();
}

#[test]
fn accelerators_queue_at_a_shared_iommu() {
    // §4.1: accelerators ask the IOMMU to walk. Four accelerators on four sockets, each
    // with its own walker, against one IOMMU walker on socket 0 that they share: its walks
    // queue, and the requests from the other sockets travel to it and back.
    let extra = |sharing: &str| {
        vec![
            "sim.cores=4".to_string(),
            "workload.threads=4".into(),
            format!("workload.table_bytes={}", 256 * MIB),
            "mmu.walkers=1".into(),
            format!("mmu.walker_sharing=\"{sharing}\""),
            "sim.verify=true".into(),
        ]
    };
    let private = run(cfg("accel-conventional", "gups", 40_000, &extra("core")));
    let iommu = run(cfg("accel-conventional", "gups", 40_000, &extra("system")));
    assert_eq!(u(&private, "mmu.walks"), u(&iommu, "mmu.walks"));
    let queued = |s: &serde_json::Value| u(s, "mmu.walker_queue_cycles");
    assert!(
        queued(&iommu) > 10 * queued(&private).max(1),
        "{} vs {}",
        queued(&iommu),
        queued(&private)
    );
    assert!(u(&iommu, "core.cycles") > u(&private, "core.cycles"));
    assert!(u(&iommu, "mmu.translation_cycles") > u(&private, "mmu.translation_cycles"));
    // One IOMMU per socket: each accelerator here is alone on its socket, so nothing queues
    // beyond what its own walker did; the request crosses its own socket to the IOMMU.
    let per_socket = run(cfg("accel-conventional", "gups", 40_000, &extra("socket")));
    assert_eq!(queued(&per_socket), queued(&private));
    // The preset, and the default left out of the resolved config.
    xlat::SimConfig::load("accel-iommu", &[]).unwrap();
    let text = cfg("accel-conventional", "gups", 1000, &[]).to_toml();
    assert!(!text.contains("walker_sharing"), "{text}");
}
