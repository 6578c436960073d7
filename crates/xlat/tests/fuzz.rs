//! Fuzzing on stable Rust: damaged trace files of every format and arbitrary config overrides
//! must give a result or an error, never a panic; and short runs with huge sizes and work
//! counts must give a result or an error without aborting on an allocation or running on.
//!
//! Bounded in the test command (`XLAT_FUZZ_CASES`, default 48 cases per target; a run case,
//! a child process, takes some 20 ms); the long mode is the same tests with more cases, e.g.
//! `XLAT_FUZZ_CASES=20000 cargo test --release -p xlat --test fuzz`.

use proptest::prelude::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use xlat::addr::VirtAddr;
use xlat::trace::{Op, Record};

fn cases() -> u32 {
    std::env::var("XLAT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// A short, valid record stream: loads and stores around two regions, some dependent.
fn records() -> Vec<Record> {
    (0..120u64)
        .map(|i| Record {
            vaddr: VirtAddr(0x10_0000 + (i * 4160) % (1 << 22) + ((i & 1) << 33)),
            op: if i % 3 == 0 { Op::Store } else { Op::Load },
            size: 8,
            instr_delta: (i % 4) as u32,
            dep: u32::from(i % 5 == 1 && i > 0),
            ..Default::default()
        })
        .collect()
}

/// Writes `records()` as `name` (its format and compression from the name).
fn write_valid(dir: &Path, name: &str) -> std::path::PathBuf {
    let xtr = dir.join("valid.xtr");
    let mut w = xlat::trace::native::XtrWriter::create(&xtr, Default::default()).unwrap();
    w.write_all(&records()).unwrap();
    w.finish().unwrap();
    if name.ends_with(".xtr") {
        return xtr;
    }
    let out = dir.join(name);
    xlat::trace::convert(&xtr, &out).unwrap();
    out
}

/// Every way in: read all records, inspect, and simulate (a wrong address is an error).
fn use_trace(path: &Path) {
    if let Ok(mut source) = xlat::trace::open(path) {
        let mut buf = Vec::with_capacity(37);
        while source.fill(&mut buf).is_ok() && !buf.is_empty() {}
    }
    let _ = xlat::trace::inspect(path);
    let overrides = [
        "os.physmem.bytes=2147483648".to_string(),
        "os.physmem.fragmentation=0.0".to_string(),
        "sim.verify=true".to_string(),
    ];
    if let Ok(cfg) = xlat::run::resolve("baseline-radix", &overrides, Some(path)) {
        let _ = xlat::run::run(cfg, None, &mut |_, _| Ok(()));
    }
}

const TRACE_NAMES: &[&str] = &[
    "t.xtr",
    "t.champsim",
    "t.champsim.xz",
    "t.champsim.gz",
    "t.lackey",
    "t.lackey.gz",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// A valid trace with bytes overwritten, inserted or cut, in every format.
    #[test]
    fn damaged_traces_never_panic(
        which in 0..TRACE_NAMES.len(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..10),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = write_valid(dir.path(), TRACE_NAMES[which]);
        let mut bytes = std::fs::read(&path).unwrap();
        for (at, byte, how) in edits {
            let i = at.index(bytes.len().max(1));
            match how {
                0 if !bytes.is_empty() => bytes[i] = byte,
                1 => bytes.insert(i.min(bytes.len()), byte),
                _ if !bytes.is_empty() => { bytes.remove(i); }
                _ => {}
            }
        }
        if let Some(c) = cut {
            bytes.truncate(c.index(bytes.len() + 1));
        }
        std::fs::write(&path, &bytes).unwrap();
        use_trace(&path);
    }

    /// Arbitrary bytes under every name.
    #[test]
    fn arbitrary_bytes_never_panic(
        which in 0..TRACE_NAMES.len(),
        bytes in prop::collection::vec(any::<u8>(), 0..700),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRACE_NAMES[which]);
        std::fs::write(&path, &bytes).unwrap();
        use_trace(&path);
    }

    /// Overrides of real keys (and near-misses) with values of every kind load or fail with a
    /// config error.
    #[test]
    fn arbitrary_overrides_never_panic(
        picks in prop::collection::vec((any::<prop::sample::Index>(), 0usize..VALUES.len(), any::<i64>(), any::<bool>()), 1..4),
    ) {
        let keys = config_keys();
        let overrides: Vec<String> = picks
            .into_iter()
            .map(|(k, v, n, misspell)| {
                let mut key = keys[k.index(keys.len())].clone();
                if misspell {
                    key.push('x');
                }
                let value = VALUES[v].replace("N", &n.to_string());
                format!("{key}={value}")
            })
            .collect();
        match xlat::SimConfig::load("baseline-radix", &overrides) {
            Ok(_) => {}
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// Arbitrary text as a config file that extends a preset.
    #[test]
    fn arbitrary_config_files_never_panic(text in "[\\[\\]a-z0-9_.=\" \\n\\-]{0,200}") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, format!("extends = \"baseline-radix\"\n{text}")).unwrap();
        let _ = xlat::SimConfig::load(path.to_str().unwrap(), &[]);
    }
}

const VALUES: &[&str] = &[
    "N",
    "0",
    "-1",
    "1",
    "3",
    "4096",
    "18446744073709551615",
    "1e300",
    "-0.5",
    "nan",
    "true",
    "\"x\"",
    "[]",
    "[\"4K\", \"2M\"]",
    "{a = 1}",
    "lru",
    "",
];

/// Every key path of the resolved baseline-radix config.
fn config_keys() -> Vec<String> {
    fn walk(prefix: &str, v: &toml::Value, out: &mut Vec<String>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, v, out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }
    let cfg = xlat::SimConfig::load("baseline-radix", &[]).unwrap();
    let value: toml::Value = toml::from_str(&cfg.to_toml()).unwrap();
    let mut out = Vec::new();
    walk("", &value, &mut out);
    out
}

// ---- short runs with huge sizes and work counts, in a child process -------------------------
//
// An allocation the host cannot give aborts the process (Rust's allocation-error handler),
// and a test cannot catch that, so each case runs in a child: this test binary again, running
// only `fuzz_run_child`, started by a POSIX `sh` under an address-space limit (`ulimit -v`,
// so that an absurd allocation fails at once instead of being overcommitted and swapping)
// and watched with a time limit. An abort, a panic or a timeout is a failure naming the case;
// an error or a result is fine.

/// Presets whose sections the keys below belong to (all but `champsim` extend
/// `baseline-radix`, so they share its TLB names).
const RUN_PRESETS: &[&str] = &[
    "baseline-radix",
    "perfect-tlb",
    "ecpt",
    "mehpt",
    "pom-tlb",
    "rmm",
    "utopia",
    "utopia-ech",
    "virt-4k4k",
    "dual-direct",
    "direct-segment",
    "shadow-4k",
];

/// Keys that size a structure or set work per event, with the preset they apply to (`""`:
/// any) and the value's form (`N`: the drawn value).
const RUN_KEYS: &[(&str, &str, &str)] = &[
    ("", "mmu.itlb.entries", "N"),
    ("", "mmu.itlb.ways", "N"),
    ("", "mmu.l1tlb.4k.entries", "N"),
    ("", "mmu.l1tlb.4k.ways", "N"),
    ("", "mmu.l2tlb.unified.entries", "N"),
    ("", "mmu.l2tlb.unified.ways", "N"),
    ("", "mmu.l2tlb.1g.entries", "N"),
    ("", "mmu.walkers", "N"),
    ("", "cache.l1d.size", "N"),
    ("", "cache.l1d.ways", "N"),
    ("", "cache.l1d.mshrs", "N"),
    ("", "cache.l2.size", "N"),
    ("", "cache.llc.size", "N"),
    ("", "cache.llc.ways", "N"),
    ("", "core.lq_size", "N"),
    ("", "core.sq_size", "N"),
    ("", "core.width", "N"),
    ("", "dram.channels", "N"),
    ("", "dram.ranks", "N"),
    ("", "dram.banks", "N"),
    ("", "dram.write_queue", "N"),
    ("", "os.physmem.bytes", "N"),
    ("", "os.swap.min_free_frames", "N"),
    ("", "sim.cores", "N"),
    ("", "sim.fast_forward_warm_records", "N"),
    ("", "schemes.radix.pwc.entries", "N"),
    ("", "schemes.radix.pwc.ways", "N"),
    ("ecpt", "schemes.hashed.table.initial_lines", "N"),
    ("ecpt", "schemes.hashed.table.rehash_per_insert", "N"),
    ("ecpt", "schemes.hashed.walker.pmd_cwc_entries", "N"),
    ("mehpt", "schemes.hashed.table.initial_lines", "N"),
    ("mehpt", "schemes.hashed.table.rehash_per_insert", "N"),
    ("mehpt", "schemes.hashed.table.mehpt.l2p_entries", "N"),
    ("utopia-ech", "schemes.hashed.table.rehash_per_insert", "N"),
    ("utopia-ech", "schemes.hashed.walker.pud_cwc_entries", "N"),
    ("pom-tlb", "schemes.pom_tlb.entries", "N"),
    ("pom-tlb", "schemes.pom_tlb.ways", "N"),
    ("rmm", "schemes.rmm.range_tlb_entries", "N"),
    ("utopia", "schemes.utopia.tar_cache_bytes", "N"),
    ("utopia", "schemes.utopia.decay_interval", "N"),
    (
        "utopia",
        "schemes.utopia.restsegs",
        "[{bytes = N, page = \"4K\", ways = 16}]",
    ),
    ("virt-4k4k", "schemes.virt.nested_tlb.entries", "N"),
    ("virt-4k4k", "schemes.virt.host_pwc.entries", "N"),
    ("virt-4k4k", "schemes.virt.host_bytes", "N"),
    ("virt-4k4k", "schemes.virt.balloon_reserve_bytes", "N"),
    ("dual-direct", "schemes.virt.vmm_bad_pages", "N"),
    ("dual-direct", "schemes.virt.escape_filter_hashes", "N"),
    ("direct-segment", "os.direct_segment.bad_pages", "N"),
    ("direct-segment", "os.direct_segment.filter_hashes", "N"),
    ("shadow-4k", "schemes.virt.host_bytes", "N"),
];

/// Values a config might hold: small ones that build and run.
const ORDINARY: &[u64] = &[0, 1, 2, 4, 16, 64, 4096];

/// Values of a slip of the finger or a wrong unit: each must be refused at load, or run
/// within the limits (a 1 GiB cache is allowed, and built). Counts of most structures are
/// `u32`, so the values cluster around 2^32 as well as going far beyond.
const HUGE: &[u64] = &[
    1 << 29,
    1 << 30,
    1 << 31,
    u32::MAX as u64,
    1 << 32,
    1 << 36,
    1 << 40,
    1 << 52,
    i64::MAX as u64,
];

/// The run every case starts from: a small GUPS table, a few thousand references, every
/// translation verified, and 4 GiB of simulated memory, room for every preset's own
/// structures (Utopia's RestSegs, the POM-TLB array) and quick to boot.
const RUN_BASE: &[&str] = &[
    "workload.name=\"gups\"",
    "workload.table_bytes=16777216",
    "workload.references=3000",
    "os.physmem.bytes=4294967296",
    "sim.verify=true",
];

/// The address-space limit of a child: the structures' budget plus room for the binary, its
/// threads' arenas and a small workload. An allocation beyond what validation allows fails.
const CHILD_ADDRESS_SPACE: u64 = xlat::config::HOST_BUDGET + (4 << 30);

/// How long a case may take: one takes some 20 ms, a few seconds with the largest
/// structures the budget allows in a debug build on a busy machine; this only catches work
/// without end.
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

/// The environment variable that carries a case to the child: the preset, then one override
/// per line.
const CHILD_CASE: &str = "XLAT_FUZZ_RUN_CASE";

/// A case that checks the harness: the child allocates more than its address space.
const ALLOCATE_BEYOND_THE_LIMIT: &str = "(allocate beyond the limit)";

/// What the child prints last, before its outcome.
const CHILD_OUTCOME: &str = "fuzz run outcome: ";

/// A case, run by the child process: load, run, print the outcome. Without the environment
/// variable (`cargo test -- --ignored`) there is nothing to run.
#[test]
#[ignore = "the child of runs_with_huge_sizes_and_work_end_in_a_result_or_an_error"]
fn fuzz_run_child() {
    let Ok(case) = std::env::var(CHILD_CASE) else {
        return;
    };
    let mut lines = case.lines();
    let preset = lines.next().expect("a preset");
    if preset == ALLOCATE_BEYOND_THE_LIMIT {
        let bytes = std::hint::black_box(CHILD_ADDRESS_SPACE as usize);
        println!("{CHILD_OUTCOME}allocated {}", vec![1u8; bytes].len());
        return;
    }
    let overrides: Vec<String> = lines.map(str::to_string).collect();
    let outcome = match xlat::run::resolve(preset, &overrides, None) {
        Err(e) => format!("refused: {e}"),
        Ok(cfg) => match xlat::run::run(cfg, None, &mut |_, _| Ok(())) {
            Ok(stats) => format!("ran {} instructions", stats.summary.instructions),
            Err(e) => format!("failed: {e}"),
        },
    };
    assert!(!outcome.ends_with(": "), "an empty error message");
    println!("{CHILD_OUTCOME}{outcome}");
}

/// Run `preset` with `overrides` in a child process under the limits: its outcome, or what
/// went wrong (abort, panic, timeout) with the child's output.
fn run_in_child(preset: &str, overrides: &[String]) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let case = std::iter::once(preset.to_string())
        .chain(overrides.iter().cloned())
        .collect::<Vec<_>>()
        .join("\n");
    // Files, not pipes: a child that writes a lot (a backtrace) never blocks on a full pipe.
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -v \"$1\" && shift && exec \"$@\"", "sh"])
        .arg((CHILD_ADDRESS_SPACE >> 10).to_string())
        .arg(std::env::current_exe().unwrap())
        .args(["fuzz_run_child", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads=1", "-q"])
        .env(CHILD_CASE, &case)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("sh runs the child");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > CHILD_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = std::fs::read_to_string(&out).unwrap_or_default();
    let errors = std::fs::read_to_string(&err).unwrap_or_default();
    let outcome = output
        .lines()
        .find_map(|l| l.strip_prefix(CHILD_OUTCOME))
        .map(str::to_string);
    match (status, outcome) {
        (Some(s), Some(outcome)) if s.success() => Ok(outcome),
        (None, _) => Err(format!(
            "still running after {CHILD_TIMEOUT:?}\n{output}{errors}"
        )),
        (Some(s), _) => Err(format!("child {s}\n{output}{errors}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Short runs of every scheme with sizes and work counts drawn ordinary or huge end in a
    /// result or an error: no allocation aborts, nothing runs on without end.
    #[test]
    fn runs_with_huge_sizes_and_work_end_in_a_result_or_an_error(
        preset in 0..RUN_PRESETS.len(),
        picks in prop::collection::vec(
            // A third huge: a case of one to three overrides is all ordinary often enough
            // to run, not only to be refused.
            (any::<prop::sample::Index>(), prop::bool::weighted(0.35), any::<prop::sample::Index>()),
            1..4,
        ),
    ) {
        let preset = RUN_PRESETS[preset];
        let keys: Vec<_> = RUN_KEYS
            .iter()
            .filter(|(p, _, _)| p.is_empty() || *p == preset)
            .collect();
        let mut overrides: Vec<String> = RUN_BASE.iter().map(|s| s.to_string()).collect();
        for (key, huge, value) in picks {
            let (_, key, form) = keys[key.index(keys.len())];
            let values = if huge { HUGE } else { ORDINARY };
            let value = values[value.index(values.len())];
            overrides.push(format!("{key}={}", form.replace('N', &value.to_string())));
        }
        if let Err(e) = run_in_child(preset, &overrides) {
            prop_assert!(false, "{preset} {overrides:?}: {e}");
        }
    }
}

#[test]
fn the_child_harness_reports_an_allocation_abort_as_a_failure() {
    // A refused config and a run are outcomes; an allocation beyond the address-space limit
    // aborts the child, which the harness reports, while this test binary goes on.
    let refused = run_in_child("baseline-radix", &["mmu.walkers=0".to_string()]).unwrap();
    assert!(
        refused.starts_with("refused: config error at `mmu.walkers`"),
        "{refused}"
    );
    let base: Vec<String> = RUN_BASE.iter().map(|s| s.to_string()).collect();
    let ran = run_in_child("baseline-radix", &base).unwrap();
    assert!(ran.starts_with("ran "), "{ran}");
    let aborted = run_in_child(ALLOCATE_BEYOND_THE_LIMIT, &[]).unwrap_err();
    assert!(aborted.contains("memory allocation of"), "{aborted}");
}
