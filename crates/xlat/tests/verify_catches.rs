//! `--verify` catches a wrong translation whatever structure produced it. The engine's
//! self-test of the check, `sim.verify_inject_after = N`, corrupts, through the scheme's own
//! page-table organisation (`PageTable::corrupt`), the entries that translate one page (a
//! radix PTE, a hashed-table PTE, an RMM range's offset and PTE; a POM-TLB fills from the PTE;
//! a Utopia TAR tag, moved to the next way of its set) and shoots the page down, so that the
//! next access must fail the check instead of running on with a wrong frame. For every preset
//! it must, with a message naming the scheme, the address, its page and both physical
//! addresses; and without the injection the same run passes.

#[path = "common/sim.rs"]
#[allow(dead_code)]
mod sim;

use xlat::addr::{PageSize, PhysAddr, VirtAddr};
use xlat::os::MapKind;
use xlat::{SimConfig, Simulation};

/// Presets whose MMU reads translation structures (`perfect-tlb` reads the OS's own mapping).
fn presets_with_structures() -> Vec<&'static str> {
    let all = xlat::config::presets::names();
    assert!(all.contains(&"perfect-tlb"));
    all.into_iter().filter(|p| *p != "perfect-tlb").collect()
}

fn load(preset: &str, extra: &[&str]) -> xlat::Result<SimConfig> {
    let mut ov: Vec<String> = vec![
        "os.physmem.bytes=2147483648".into(),
        "os.physmem.fragmentation=0.0".into(),
        "workload.table_bytes=67108864".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    SimConfig::load(preset, &ov)
}

#[test]
fn verify_reports_an_injected_corruption_in_every_scheme() {
    for preset in presets_with_structures() {
        let cfg = load(preset, &["sim.verify=true", "sim.verify_inject_after=1"]).unwrap();
        let scheme = cfg.scheme.clone();
        let mut sim = Simulation::new(cfg).unwrap();
        let pid = 0;
        let va = sim
            .address_spaces()
            .mmap(pid, 1 << 20, MapKind::Anon)
            .unwrap();
        let rec = xlat::trace::Record {
            vaddr: VirtAddr(va.0 + 0x3abc),
            pid,
            size: 8,
            ..Default::default()
        };
        // The first access faults the page in and is checked; the second corrupts its
        // entries, walks them, and must fail the check.
        sim.step(&rec).unwrap();
        let (pfn, size) = sim
            .truth(pid, rec.vaddr)
            .expect("mapped by the first access");
        assert_eq!(size, PageSize::Size4K, "{preset}");
        let want = PhysAddr(pfn.addr().0 + 0xabc);
        let e = sim.step(&rec).unwrap_err().to_string();
        let vpn = rec.vaddr.vpn().0;
        for part in [
            "translation check failed: ".to_string(),
            format!("{scheme}: "),
            format!("{:?}", rec.vaddr),
            format!("(vpn {vpn:#x})"),
            "MMU gave PhysAddr(".to_string(),
            format!("OS maps it to {want:?}"),
            "corrupted on purpose by sim.verify_inject_after".to_string(),
        ] {
            assert!(e.contains(&part), "{preset}: `{part}` not in: {e}");
        }
        // A radix-like leaf names the page two pages on; a RestSeg page of Utopia (the first
        // page of a process lands in one) and a DIPTA page are found in the next way's slot
        // instead.
        let two_on = format!("MMU gave {:?}", PhysAddr(want.0 + 2 * 4096));
        let next_way = scheme == "utopia" || scheme == "dipta";
        assert_eq!(e.contains(&two_on), !next_way, "{preset}: {e}");
        // The OS's mapping is untouched: only the translation structures lie.
        assert_eq!(sim.truth(pid, rec.vaddr), Some((pfn, size)), "{preset}");
    }
}

#[test]
fn an_injected_run_fails_verify_and_the_same_run_without_passes() {
    let refs = 20_000;
    for preset in presets_with_structures() {
        let extra = |inject: bool| {
            let mut e = vec![
                "sim.verify=true".to_string(),
                format!("workload.table_bytes={}", 64 * sim::MIB),
            ];
            if inject {
                e.push("sim.verify_inject_after=5000".into());
            }
            e
        };
        let clean = sim::run(sim::cfg(preset, "gups", refs, &extra(false)));
        assert_eq!(
            sim::u(&clean, "verify.translations_checked"),
            refs,
            "{preset}"
        );

        let cfg = sim::cfg(preset, "gups", refs, &extra(true));
        let scheme = cfg.scheme.clone();
        let e = Simulation::new(cfg)
            .and_then(|mut s| s.run(&mut |_, _| Ok(())))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("at record ")
                && e.contains(&format!("translation check failed: {scheme}: "))
                && e.contains("on purpose"),
            "{preset}: {e}"
        );
    }
}

#[test]
fn injection_needs_verify_and_a_structure_to_corrupt() {
    let e = load("baseline-radix", &["sim.verify_inject_after=10"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`sim.verify_inject_after`") && e.contains("sim.verify = true"),
        "{e}"
    );
    let cfg = load(
        "perfect-tlb",
        &["sim.verify=true", "sim.verify_inject_after=10"],
    )
    .unwrap();
    let e = Simulation::new(cfg).map(|_| ()).unwrap_err().to_string();
    assert!(
        e.contains("`sim.verify_inject_after`") && e.contains("perfect-tlb"),
        "{e}"
    );
    // Off by default, and left out of the resolved config then.
    let cfg = load("baseline-radix", &[]).unwrap();
    assert_eq!(cfg.sim.verify_inject_after, 0);
    assert!(!cfg.to_toml().contains("verify_inject_after"));
}
