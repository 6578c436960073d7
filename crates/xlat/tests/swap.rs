//! Swapping end to end: workloads larger than memory run under `--verify` on radix and on
//! Utopia (FlexSeg full), and restrictive-only Utopia pages out a full set's victim, which a
//! touch brings back as a major fault with a correct translation.

use xlat::os::MapKind;
use xlat::Simulation;

#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;
use sim::*;

/// Swapping on, with `bytes` of memory.
fn swap(bytes: u64) -> Vec<String> {
    vec![
        "os.swap.enabled=true".into(),
        format!("os.physmem.bytes={bytes}"),
        "sim.verify=true".into(),
        "sim.fast_forward=0".into(),
    ]
}

#[test]
fn a_table_twice_the_memory_swaps_and_every_translation_stays_correct() {
    // GUPS over 16 MiB in 8 MiB of memory: random updates keep paging pages out and in.
    let mut extra = swap(8 * MIB);
    extra.push(format!("workload.table_bytes={}", 16 * MIB));
    for preset in ["baseline-radix", "utopia"] {
        let mut extra = extra.clone();
        if preset == "utopia" {
            // A 1 MiB RestSeg: the FlexSeg (the rest) fills, and RestSeg conflicts move pages
            // into it while reclaim pages FlexSeg pages out.
            extra.push(
                "schemes.utopia.restsegs=[{bytes = 1048576, page = \"4K\", ways = 8}]".into(),
            );
        }
        let s = run(cfg(preset, "gups", 50_000, &extra));
        let refs = u(&s, "core.memory_refs");
        assert_eq!(u(&s, "verify.translations_checked"), refs, "{preset}");
        let (minor, major) = (u(&s, "os.faults.minor"), u(&s, "os.faults.major"));
        assert!(major > 1000, "{preset}: {major} major faults");
        assert_eq!(u(&s, "summary.faults"), minor + major, "{preset}");
        assert_eq!(u(&s, "os.swap.ins"), major, "{preset}");
        // A page faults minor once, at its first touch (at most the table's pages and a few
        // of the program's own); pages out = in + still out.
        assert!(minor <= 16 * MIB / 4096 + 64, "{preset}: {minor}");
        assert!(
            major > minor,
            "{preset}: a random table twice memory faults mostly major"
        );
        assert_eq!(
            u(&s, "os.swap.outs"),
            u(&s, "os.swap.ins") + u(&s, "os.swap.swapped"),
            "{preset}"
        );
        assert_eq!(u(&s, "os.swap.policy_outs"), 0, "{preset}");
        assert!(
            u(&s, "os.faults.cycles") >= u(&s, "os.swap.in_cycles") + u(&s, "os.swap.out_cycles"),
            "{preset}"
        );
    }
}

#[test]
fn pages_out_on_one_core_are_shot_down_on_every_core_that_runs_the_process() {
    // Four threads of GUPS over a table twice memory: a page one core pages out may sit in
    // another core's TLBs, and verify checks that none of them translates it stale.
    let mut extra = swap(8 * MIB);
    extra.extend([
        format!("workload.table_bytes={}", 16 * MIB),
        "workload.threads=4".into(),
        "sim.cores=4".into(),
    ]);
    let s = run(cfg("baseline-radix", "gups", 200_000, &extra));
    assert!(u(&s, "os.faults.major") > 0);
    assert!(
        u(&s, "verify.translations_checked") >= u(&s, "core.memory_refs"),
        "every translation checked"
    );
    assert!(
        u(&s, "system.shootdowns_remote") > 0,
        "page-outs reached other cores"
    );
}

#[test]
fn with_memory_to_spare_swapping_changes_nothing() {
    // The same run with swapping on and off: no page goes out, and the stats agree but for
    // the `os.swap` subtree.
    let extra = vec![
        format!("workload.table_bytes={}", 16 * MIB),
        format!("os.physmem.bytes={}", 64 * MIB),
        "sim.fast_forward=0".to_string(),
    ];
    let off = run(cfg("baseline-radix", "gups", 20_000, &extra));
    let mut on_extra = extra.clone();
    on_extra.push("os.swap.enabled=true".into());
    let mut on = run(cfg("baseline-radix", "gups", 20_000, &on_extra));
    assert_eq!(u(&on, "os.swap.outs"), 0);
    on["os"].as_object_mut().unwrap().remove("swap");
    assert_eq!(on, off);
}

/// Restrictive-only Utopia with one set of 8 ways: the 9th page pages a victim out, a touch
/// of the victim brings it back (evicting another), and every translation checks.
#[test]
fn restrictive_only_pages_out_a_full_sets_victim_and_faults_it_back() {
    let mut extra = swap(4 * MIB);
    extra.extend([
        format!("workload.table_bytes={}", 64 * MIB),
        "schemes.utopia.restsegs=[{bytes = 32768, page = \"4K\", ways = 8}]".into(),
        "schemes.utopia.flexseg=false".into(),
    ]);
    let mut sim = Simulation::new(cfg("utopia", "gups", 1000, &extra)).unwrap();
    let pid = 0;
    let va = sim
        .address_spaces()
        .mmap(pid, 9 * 4096, MapKind::Anon)
        .unwrap();
    let addr = |page: u64| xlat::addr::VirtAddr(va.0 + page * 4096);
    let at = |page: u64| load_of_page(va, pid, page);
    for page in 0..8 {
        sim.step(&at(page)).unwrap();
    }
    let s = sim.stats();
    assert_eq!(s.os.swap.map(|w| w.outs), Some(0));
    // Memory is mostly free, yet the 9th page of the set pushes one out.
    sim.step(&at(8)).unwrap();
    let s = sim.stats();
    let w = s.os.swap.unwrap();
    assert_eq!((w.outs, w.policy_outs, w.swapped), (1, 1, 1));
    assert_eq!(s.os.faults.minor, 9);
    assert!(s.os.physmem.free_frames > 512, "memory is not full");
    let out: Vec<u64> = (0..9)
        .filter(|&p| sim.truth(pid, addr(p)).is_none())
        .collect();
    assert_eq!(out.len(), 1, "exactly one page is out");
    let victim = out[0];
    // The victim is back: a major fault, costing a page-in, and another page is out now.
    let cycles = s.core.cycles;
    sim.step(&at(victim)).unwrap();
    let s = sim.stats();
    let w = s.os.swap.unwrap();
    assert_eq!((s.os.faults.minor, s.os.faults.major), (9, 1));
    assert_eq!((w.ins, w.outs, w.swapped), (1, 2, 1));
    assert!(
        s.core.cycles - cycles >= 26_000,
        "the page-in took its time"
    );
    assert!(sim.truth(pid, addr(victim)).is_some());
    // Every page translates (verify checks each against the OS, so no stale TLB entry of a
    // page that went out survives).
    for page in 0..9 {
        sim.step(&at(page)).unwrap();
    }
    let s = sim.stats();
    assert!(s.os.faults.major >= 2);
    assert_eq!(
        s.os.faults.major,
        s.os.swap.unwrap().ins,
        "every major fault read a page back"
    );
    let frames = s.os.frames.unwrap();
    let seg = &frames["restsegs"][0]["stats"];
    assert_eq!(
        seg["paged_out"].as_u64(),
        Some(s.os.swap.unwrap().policy_outs)
    );
    assert_eq!(seg["used"].as_u64(), Some(8));
}

#[test]
fn restrictive_only_runs_whole_workloads_under_verify_and_faults_more_than_flexible() {
    // DLRM's embedding tables at 8 MiB; 8 MiB of RestSeg (256 sets of 8: 16 ways of 28-bit
    // tags would not fit a line) plus 2 MiB for page tables. The tables' sizes are no multiple
    // of the sets' span, so the sets where they begin and end overflow, while the radix system
    // with the same memory never swaps.
    let mut extra = swap(10 * MIB);
    extra.push("workload.footprint=\"8MiB\"".into());
    let flexible = run(cfg("baseline-radix", "dlrm-sls", 500_000, &extra));
    extra.extend([
        "schemes.utopia.restsegs=[{bytes = 8388608, page = \"4K\", ways = 8}]".into(),
        "schemes.utopia.flexseg=false".into(),
    ]);
    let restrictive = run(cfg("utopia", "dlrm-sls", 500_000, &extra));
    for s in [&restrictive, &flexible] {
        assert_eq!(
            u(s, "verify.translations_checked"),
            u(s, "core.memory_refs")
        );
    }
    assert_eq!(u(&flexible, "os.swap.outs"), 0);
    assert!(flexible["os"]["faults"].get("major").is_none());
    let (r, f) = (
        u(&restrictive, "summary.faults"),
        u(&flexible, "summary.faults"),
    );
    assert!(r > f, "restrictive {r} faults, flexible {f}");
    // The same pages are touched first in both; the difference is the major faults.
    assert_eq!(u(&restrictive, "os.faults.minor"), f);
    assert_eq!(r - f, u(&restrictive, "os.swap.ins"));
    assert!(u(&restrictive, "os.swap.policy_outs") > 0);
    assert_eq!(
        u(&restrictive, "os.swap.policy_outs"),
        u(&restrictive, "os.swap.outs"),
        "memory never filled: every page-out was a set's"
    );
}

#[test]
fn swap_config_errors_name_their_key() {
    let load = |ov: &[&str]| {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        xlat::SimConfig::load("utopia", &ov)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let e = load(&["schemes.utopia.flexseg=false"]);
    assert!(
        e.contains("schemes.utopia.flexseg") && e.contains("os.swap.enabled"),
        "{e}"
    );
    let e = load(&[
        "schemes.utopia.flexseg=false",
        "os.swap.enabled=true",
        "schemes.utopia.restsegs=[{bytes = 536870912, page = \"2M\", ways = 16}]",
    ]);
    assert!(e.contains("schemes.utopia.flexseg"), "{e}");
    let e = load(&["os.swap.enabled=true", "os.eager_paging=true"]);
    assert!(e.contains("os.swap.enabled"), "{e}");
    let e = load(&["os.swap.page_in=3"]);
    assert!(e.contains("page_in"), "{e}");
}

#[test]
fn fast_forward_leaves_memory_as_a_detailed_run_does_while_pages_go_out_and_come_back() {
    // Three passes of sequential reads over 16 MiB in 8 MiB of memory: every pass pages the
    // buffer out and back in. Skipped functionally, the records must fault as simulated ones
    // do (a skipped record on the page of the one before it is not looked up, which must
    // never hide a page that went out meanwhile), so both runs end with the same pages out
    // and the same frames free. (The fault counters start after a fast-forward: they are 0
    // in the skipped run.)
    let mut extra = swap(8 * MIB);
    extra.extend([
        format!("workload.total_bytes={}", 16 * MIB),
        "workload.oper=read".into(),
        "workload.access=seq".into(),
        "workload.populate=false".into(),
    ]);
    let refs = 3 * 16 * MIB / 8;
    let detailed = run(cfg("baseline-radix", "sysbench-mem", refs, &extra));
    extra.push("sim.fast_forward=1000000000000".into());
    let skipped = run(cfg("baseline-radix", "sysbench-mem", refs, &extra));
    assert_eq!(
        u(&skipped, "core.memory_refs"),
        0,
        "every record was skipped"
    );
    assert_eq!(u(&skipped, "fast_forward.records"), refs);
    assert_eq!(u(&detailed, "os.faults.major"), 2 * 16 * MIB / 4096);
    assert!(u(&detailed, "os.swap.swapped") > 0);
    for key in ["os.swap.swapped", "os.physmem.free_frames", "os.pt_bytes"] {
        assert_eq!(u(&skipped, key), u(&detailed, key), "{key}");
    }
}
