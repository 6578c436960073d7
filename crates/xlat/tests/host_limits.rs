//! Values that would make the engine allocate absurd amounts of host memory, or do unbounded
//! work per event, are config errors naming their key: the process never aborts on an
//! allocation, and a short run stays short (docs/config.md, "Host memory and work bounds").

use xlat::{Error, SimConfig};

/// The key a config error names, or the error itself if it is another kind.
fn error_key(preset: &str, overrides: &[&str]) -> (String, String) {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match SimConfig::load(preset, &ov) {
        Ok(_) => panic!("{preset} {overrides:?}: loaded"),
        Err(e @ Error::Config { .. }) => {
            let Error::Config { key, .. } = &e else {
                unreachable!()
            };
            (key.clone(), e.to_string())
        }
        Err(e) => panic!("{preset} {overrides:?}: not a config error: {e}"),
    }
}

#[test]
fn structures_too_large_for_host_memory_are_refused_at_load_naming_the_key() {
    // The values of the issue, each of which aborted the process when the system was built,
    // and one per kind of structure the check counts.
    let cases: &[(&str, &str, &str)] = &[
        (
            "baseline-radix",
            "mmu.l1tlb.4k.entries=2147483648",
            "mmu.l1tlb.4k.entries",
        ),
        (
            "baseline-radix",
            "mmu.l2tlb.1g.entries=536870912",
            "mmu.l2tlb.1g.entries",
        ),
        (
            "virt-4k4k",
            "schemes.virt.nested_tlb.entries=1073741824",
            "schemes.virt.nested_tlb.entries",
        ),
        (
            "baseline-radix",
            "cache.l1d.size=68719476736",
            "cache.l1d.size",
        ),
        (
            "baseline-radix",
            "cache.llc.size=137438953472",
            "cache.llc.size",
        ),
        (
            "baseline-radix",
            "schemes.radix.pwc.entries=268435456",
            "schemes.radix.pwc.entries",
        ),
        (
            "virt-4k4k",
            "schemes.virt.host_pwc.entries=268435456",
            "schemes.virt.host_pwc.entries",
        ),
        (
            "ecpt",
            "schemes.hashed.table.initial_lines=1073741824",
            "schemes.hashed.table.initial_lines",
        ),
        (
            "utopia",
            "schemes.utopia.restsegs=[{bytes = 1099511627776, page = \"4K\", ways = 16}]",
            "schemes.utopia.restsegs[0].bytes",
        ),
        (
            "virt-4k4k",
            "schemes.virt.host_bytes=1152921504606846976",
            "schemes.virt.host_bytes",
        ),
        (
            "virt-4k4k",
            "schemes.virt.balloon_reserve_bytes=1125899906842624",
            "schemes.virt.balloon_reserve_bytes",
        ),
        (
            "baseline-radix",
            "sim.fast_forward_warm_records=4294967296",
            "sim.fast_forward_warm_records",
        ),
    ];
    for (preset, ov, want) in cases {
        let (key, msg) = error_key(preset, &[ov]);
        assert_eq!(key, *want, "{msg}");
        assert!(msg.contains("of host memory"), "{msg}");
    }
    // The structures count together: a POM-TLB of 3 GiB fits alone, not beside two 2 GiB
    // caches (576 MiB of host memory each); the largest is named.
    let pom = [
        "schemes.pom_tlb.entries=134217728",
        "schemes.pom_tlb.entry_bytes=8",
    ];
    SimConfig::load("pom-tlb", &pom.map(String::from)).unwrap();
    let (key, msg) = error_key(
        "pom-tlb",
        &[
            pom[0],
            pom[1],
            "cache.l2.size=2147483648",
            "cache.llc.size=2147483648",
        ],
    );
    assert_eq!(key, "schemes.pom_tlb.entries", "{msg}");
    assert!(
        msg.contains("would take 3 GiB") && msg.contains("(the others take 1.2 GiB)"),
        "{msg}"
    );
    // Simulated memory is counted by its frames: 4 PiB needs DRAM rows to hold it.
    let (key, msg) = error_key(
        "baseline-radix",
        &["os.physmem.bytes=4503599627370496", "dram.rows=8589934592"],
    );
    assert_eq!(key, "os.physmem.bytes", "{msg}");
    // Per-core structures count once per core: a 256 MiB L2 is fine on one core, not on 64.
    SimConfig::load("baseline-radix", &["cache.l2.size=268435456".into()]).unwrap();
    let (key, msg) = error_key(
        "baseline-radix",
        &["cache.l2.size=268435456", "sim.cores=64"],
    );
    assert_eq!(key, "cache.l2.size");
    assert!(msg.contains("x 64 copies, one per core"), "{msg}");
}

#[test]
fn the_message_says_what_the_value_costs_and_the_limit() {
    let (_, msg) = error_key("baseline-radix", &["mmu.l1tlb.4k.entries=2147483648"]);
    assert!(
        msg.starts_with(
            "config error at `mmu.l1tlb.4k.entries`: 2147483648 entries of 24 host bytes each \
             would take 48 GiB of host memory; the structures a config sizes may take 4 GiB \
             together"
        ),
        "{msg}"
    );
}

#[test]
fn work_per_event_is_bounded_naming_the_key() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "utopia-ech",
            "schemes.hashed.table.rehash_per_insert=2147483648",
            "schemes.hashed.table.rehash_per_insert",
        ),
        (
            "baseline-radix",
            "mmu.l2tlb.unified.ways=8192",
            "mmu.l2tlb.unified.ways",
        ),
        ("baseline-radix", "cache.llc.ways=65536", "cache.llc.ways"),
        (
            "pom-tlb",
            "schemes.pom_tlb.ways=65536",
            "schemes.pom_tlb.ways",
        ),
        (
            "ecpt",
            "schemes.hashed.walker.pmd_cwc_entries=4294967295",
            "schemes.hashed.walker.pmd_cwc_entries",
        ),
        ("baseline-radix", "mmu.walkers=4294967295", "mmu.walkers"),
        ("baseline-radix", "core.lq_size=4294967295", "core.lq_size"),
        ("baseline-radix", "core.sq_size=4294967295", "core.sq_size"),
        (
            "direct-segment",
            "os.direct_segment.filter_hashes=4294967295",
            "os.direct_segment.filter_hashes",
        ),
        (
            "direct-segment",
            "os.direct_segment.bad_pages=4294967295",
            "os.direct_segment.bad_pages",
        ),
        (
            "dual-direct",
            "schemes.virt.escape_filter_hashes=65",
            "schemes.virt.escape_filter_hashes",
        ),
        (
            "dual-direct",
            "schemes.virt.vmm_bad_pages=65537",
            "schemes.virt.vmm_bad_pages",
        ),
    ];
    for (preset, ov, want) in cases {
        let (key, msg) = error_key(preset, &[ov]);
        assert_eq!(key, *want, "{msg}");
    }
    // The bounds themselves are accepted.
    for (preset, ov) in [
        (
            "utopia-ech",
            "schemes.hashed.table.rehash_per_insert=16777216",
        ),
        ("baseline-radix", "core.lq_size=65536"),
        ("baseline-radix", "mmu.walkers=4096"),
        ("dual-direct", "schemes.virt.escape_filter_hashes=64"),
        ("dual-direct", "schemes.virt.vmm_bad_pages=65536"),
    ] {
        SimConfig::load(preset, &[ov.to_string()]).unwrap_or_else(|e| panic!("{ov}: {e}"));
    }
}

#[test]
fn the_run_path_refuses_a_config_changed_after_loading() {
    // What the CLI and the Python API call: resolve, then run. A config built or changed in
    // code is validated again when the system is built, so it cannot reach the allocation.
    let e = xlat::run::resolve(
        "baseline-radix",
        &["mmu.l1tlb.4k.entries=2147483648".to_string()],
        None,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::Config { key, .. } if key == "mmu.l1tlb.4k.entries"),
        "{e}"
    );
    let mut cfg = xlat::run::resolve(
        "baseline-radix",
        &["workload.references=1000".to_string()],
        None,
    )
    .unwrap();
    cfg.cache.l1d.size = 68719476736;
    let e = xlat::run::run(cfg, None, &mut |_, _| Ok(())).unwrap_err();
    assert!(
        matches!(&e, Error::Config { key, .. } if key == "cache.l1d.size"),
        "{e}"
    );
}
