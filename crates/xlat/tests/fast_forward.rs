//! Fast-forward: records before the measurement run functionally. The structures it keeps warm
//! must end up exactly as a detailed warm-up over the same records leaves them, and a run must
//! start its measurement where the source's region of interest begins.

use xlat::addr::VirtAddr;
use xlat::os::MapKind;
use xlat::trace::{Op, Record, RecordSource, Roi};
use xlat::{SimConfig, Simulation, Stats};

fn run(scheme: &str, workload: &str, sets: &[String]) -> Stats {
    let mut ov: Vec<String> = vec![
        format!("workload.name={workload}"),
        "workload.references=150000".into(),
        "os.physmem.bytes=2147483648".into(),
        "sim.verify=true".into(),
        "seed=3".into(),
    ];
    if workload == "gups" {
        ov.push("workload.table_bytes=268435456".into());
    }
    ov.extend_from_slice(sets);
    let cfg = SimConfig::load(scheme, &ov).unwrap_or_else(|e| panic!("{scheme}: {e}"));
    Simulation::new(cfg)
        .and_then(|mut s| s.run(&mut |_, _| Ok(())))
        .unwrap_or_else(|e| panic!("{scheme} {workload}: {e}"))
}

/// What a warm structure decides: hits and misses of every TLB level, walk counts and the
/// caches' misses. Not timing: fast-forwarding takes none.
fn contents_outcome(s: &Stats) -> serde_json::Value {
    let v = serde_json::to_value(s).unwrap();
    serde_json::json!({
        "l1": v["mmu"]["l1tlb"],
        "l2": v["mmu"]["l2tlb"],
        "walks": v["mmu"]["walks"],
        "faults": v["mmu"]["faults"],
        "walk_refs": v["walk"]["refs"],
        "l1d_misses": v["cache"]["l1d"]["misses"],
        "l2_misses": v["cache"]["l2"]["misses"],
        "llc_misses": v["cache"]["llc"]["misses"],
        "instructions": v["summary"]["instructions"],
    })
}

#[test]
fn fast_forward_leaves_every_structure_as_a_detailed_warm_up_would() {
    const SKIP: u64 = 150_000;
    const MEASURE: u64 = 100_000;
    // Not RMM: its range TLB holds a range only from the cycle its background walk ends, so
    // which lookups hit depends on timing, and the in-order fast-forward differs from the
    // out-of-order warm-up there (a test below checks RMM's fast-forward otherwise).
    for scheme in ["baseline-radix", "ecpt", "mehpt", "pom-tlb"] {
        for workload in ["gups", "btree"] {
            let detailed = run(
                scheme,
                workload,
                &[
                    "sim.fast_forward=0".into(),
                    format!("sim.warmup_instructions={SKIP}"),
                    format!("sim.max_instructions={}", SKIP + MEASURE),
                ],
            );
            let skipped = run(
                scheme,
                workload,
                &[
                    format!("sim.fast_forward={SKIP}"),
                    "sim.warmup_instructions=0".into(),
                    format!("sim.max_instructions={MEASURE}"),
                ],
            );
            let ff = &skipped.fast_forward;
            assert!(
                ff.instructions >= SKIP && !ff.reached_roi,
                "{scheme} {workload}"
            );
            assert_eq!(
                skipped.summary.fast_forwarded_instructions, ff.instructions,
                "{scheme} {workload}"
            );
            assert_eq!(
                contents_outcome(&skipped),
                contents_outcome(&detailed),
                "{scheme} {workload}"
            );
            assert!(skipped.verify.translations_checked > ff.records);
        }
    }
}

#[test]
fn without_the_caches_the_tlbs_are_still_warm() {
    let sets = |caches: bool| {
        [
            "sim.fast_forward=150000".to_string(),
            "sim.warmup_instructions=0".into(),
            "sim.max_instructions=100000".into(),
            format!("sim.fast_forward_caches={caches}"),
        ]
    };
    let a = run("baseline-radix", "gups", &sets(true));
    let b = run("baseline-radix", "gups", &sets(false));
    let (a, b) = (contents_outcome(&a), contents_outcome(&b));
    for key in ["l1", "l2", "walks", "faults"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    // Cold caches miss more in the measured part.
    assert!(b["llc_misses"].as_u64() > a["llc_misses"].as_u64());
}

/// Records from a vector, whose region of interest begins at record `roi`.
struct Marked {
    records: std::vec::IntoIter<Record>,
    read: u64,
    roi: u64,
}

impl RecordSource for Marked {
    fn fill(&mut self, buf: &mut Vec<Record>) -> xlat::Result<()> {
        buf.clear();
        buf.extend(self.records.by_ref().take(buf.capacity().max(1)));
        self.read += buf.len() as u64;
        Ok(())
    }
    fn roi(&self) -> Roi {
        if self.read > self.roi {
            Roi::At(self.roi)
        } else {
            Roi::NotYet
        }
    }
}

fn marked_run(roi: u64, sets: &[&str]) -> Stats {
    let mut ov = vec![
        "os.physmem.bytes=1073741824".to_string(),
        "sim.verify=true".into(),
        "sim.warmup_instructions=0".into(),
    ];
    ov.extend(sets.iter().map(|s| s.to_string()));
    let cfg = SimConfig::load("baseline-radix", &ov).unwrap();
    let mut sim = Simulation::with_source(cfg, |os| {
        let pid = os.spawn()?;
        let va = os.mmap(pid, 64 << 20, MapKind::Anon)?;
        // Set-up: a store to every page (each one faults); then the kernel reloads them.
        let pages = (64 << 20) / 4096;
        let store = |p: u64, op| Record {
            vaddr: VirtAddr(va.0 + p * 4096),
            op,
            size: 8,
            pid,
            instr_delta: 2,
            ..Default::default()
        };
        let mut records: Vec<Record> = (0..pages).map(|p| store(p, Op::Store)).collect();
        records.extend((0..3 * pages).map(|p| store(p % pages, Op::Load)));
        Ok(Box::new(Marked {
            records: records.into_iter(),
            read: 0,
            roi,
        }) as Box<dyn RecordSource>)
    })
    .unwrap();
    sim.run(&mut |_, _| Ok(())).unwrap()
}

#[test]
fn a_run_fast_forwards_to_the_region_of_interest() {
    let pages = 16_384;
    let s = marked_run(pages, &[]);
    assert_eq!(s.fast_forward.records, pages);
    assert_eq!(s.fast_forward.instructions, 3 * pages);
    assert!(s.fast_forward.reached_roi);
    // The set-up took every fault; the kernel measured none and ran every one of its records.
    assert_eq!(s.summary.faults, 0);
    assert_eq!(s.summary.instructions, 3 * 3 * pages);
    assert_eq!(s.verify.translations_checked, 4 * pages);
    // Off: the set-up is measured too.
    let all = marked_run(pages, &["sim.fast_forward=0"]);
    assert_eq!(all.fast_forward.records, 0);
    assert_eq!(all.summary.faults, pages);
    assert_eq!(all.summary.instructions, 4 * 3 * pages);
    // A region that starts at a batch boundary, and one that starts at the first record.
    assert_eq!(marked_run(4096, &[]).fast_forward.records, 4096);
    assert_eq!(marked_run(0, &[]).fast_forward.records, 0);
}

#[test]
fn fast_forward_takes_roi_or_a_count_and_names_the_key_when_wrong() {
    for good in [
        "sim.fast_forward=\"roi\"",
        "sim.fast_forward=0",
        "sim.fast_forward=5",
    ] {
        SimConfig::load("baseline-radix", &[good.into()]).unwrap();
    }
    for bad in ["sim.fast_forward=\"start\"", "sim.fast_forward=-1"] {
        let err = SimConfig::load("baseline-radix", &[bad.into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("sim.fast_forward"), "{bad}: {err}");
        assert!(err.contains("roi"), "{bad}: {err}");
    }
}

#[test]
fn rmm_fast_forwards_with_its_range_tlb_ready() {
    let detailed = run(
        "rmm",
        "gups",
        &[
            "sim.fast_forward=0".into(),
            "sim.warmup_instructions=150000".into(),
            "sim.max_instructions=250000".into(),
        ],
    );
    let skipped = run(
        "rmm",
        "gups",
        &[
            "sim.fast_forward=150000".into(),
            "sim.warmup_instructions=0".into(),
            "sim.max_instructions=100000".into(),
        ],
    );
    for s in [&detailed, &skipped] {
        let v = serde_json::to_value(s).unwrap();
        let (hits, l2_misses) = (
            v["mmu"]["range_tlb"]["hits"].as_u64().unwrap(),
            v["mmu"]["l2tlb"]["misses"].as_u64().unwrap(),
        );
        // Eager paging maps the table as one range: once it is cached, the range TLB serves
        // nearly every L2 TLB miss, whether the warm-up was detailed or fast-forwarded.
        assert!(
            l2_misses > 1000 && hits * 100 >= l2_misses * 99,
            "{hits} of {l2_misses}"
        );
    }
}
