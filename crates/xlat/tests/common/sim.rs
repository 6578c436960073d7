//! Helpers of the scheme tests that run whole simulations and read their stats (included by
//! `#[path]`, so that test crates that do not use them do not carry them).

use xlat::Simulation;

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// `workload` on `preset` with `refs` references, demand-paged, on 4 GiB of unfragmented
/// memory, plus `extra` overrides.
pub fn cfg(preset: &str, workload: &str, refs: u64, extra: &[String]) -> xlat::SimConfig {
    let mut ov = vec![
        format!("workload.name={workload}"),
        format!("workload.references={refs}"),
        "workload.populate=false".to_string(),
        "os.physmem.fragmentation=0.0".to_string(),
        format!("os.physmem.bytes={}", 4 * GIB),
    ];
    ov.extend(extra.iter().cloned());
    xlat::SimConfig::load(preset, &ov).unwrap_or_else(|e| panic!("{preset} {workload}: {e}"))
}

/// Run `cfg` to the end; its stats as JSON.
pub fn run(cfg: xlat::SimConfig) -> serde_json::Value {
    let name = format!("{} {}", cfg.scheme, cfg.workload.name());
    let stats = Simulation::new(cfg)
        .and_then(|mut s| s.run(&mut |_, _| Ok(())))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&stats.to_json()).unwrap()
}

/// A load by process `pid` of 4 KiB page `page` of the region mapped at `va`, 100
/// instructions after the previous record.
pub fn load_of_page(va: xlat::addr::VirtAddr, pid: u16, page: u64) -> xlat::trace::Record {
    xlat::trace::Record {
        vaddr: xlat::addr::VirtAddr(va.0 + page * 4096),
        pid,
        size: 8,
        instr_delta: 100,
        ..Default::default()
    }
}

/// The counter at dotted `path` of `v`.
pub fn u(v: &serde_json::Value, path: &str) -> u64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {path} in {v}"))
}

/// The stats tree `v` as `path=value` lines (`core.loads=12`, `epochs[3].cycles=…`), in the
/// tree's order.
pub fn flatten(v: &serde_json::Value) -> Vec<String> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&path, v, out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(&format!("{prefix}[{i}]"), v, out);
                }
            }
            leaf => out.push(format!("{prefix}={leaf}")),
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    out
}
