//! Fuzzing on stable Rust: damaged trace files of every format and arbitrary config overrides
//! must give a result or an error, never a panic.
//!
//! Bounded in the test command (`XLAT_FUZZ_CASES`, default 48 cases per target); the long mode
//! is the same tests with more cases, e.g.
//! `XLAT_FUZZ_CASES=20000 cargo test --release -p xlat --test fuzz`.

use proptest::prelude::*;
use std::path::Path;
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
