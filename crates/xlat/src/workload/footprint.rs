//! `workload.footprint`: one size key for every workload that scales. It sets the workload's
//! natural size parameter(s) so that the simulated data reaches the requested bytes (from
//! below, within the parameter's granularity), and each workload says how much host memory a
//! footprint needs.
//!
//! Footprints here are the bytes of the workload's arrays as it allocates them (sizes rounded
//! to pages); the process's VMAs add at most a small-allocation arena (64 MiB) on top. Host
//! memory is the workload's own host-side data (what steers its control flow); the engine adds
//! its per-page state on top (see [`ENGINE_BYTES_PER_PAGE`]).

use super::graph::GraphKeys;
use super::WorkloadConfig;
use crate::error::{Error, Result};

/// Host bytes the engine keeps per mapped 4 KiB page of simulated memory (the OS's mapping,
/// page-table pages, frame state), measured: about 120 bytes per page with 4 KiB pages (gups
/// with a 64 GiB table, 1.95 GiB maximum RSS); 128 is the estimate used.
pub const ENGINE_BYTES_PER_PAGE: u64 = 128;

/// A size: a number of bytes, or a string with a binary (`KiB`, `MiB`, `GiB`, `TiB`) or
/// decimal (`KB`, `MB`, `GB`, `TB`) suffix, e.g. `"8GiB"`, `"6.9GB"`.
pub fn parse_size(value: &toml::Value, key: &str) -> Result<u64> {
    let bad = |what: String| {
        Error::config(
            key,
            format!("{what}; expected bytes or a size such as \"8GiB\" or \"33GB\""),
        )
    };
    match value {
        toml::Value::Integer(n) if *n > 0 => Ok(*n as u64),
        toml::Value::Integer(n) => Err(bad(format!("must be positive, got {n}"))),
        toml::Value::String(s) => {
            let t = s.trim();
            let split = t
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(t.len());
            let (num, unit) = (t[..split].trim(), t[split..].trim());
            let mult: f64 = match unit.to_ascii_lowercase().as_str() {
                "" | "b" => 1.0,
                "kib" | "k" => 1024.0,
                "mib" | "m" => 1024.0 * 1024.0,
                "gib" | "g" => 1024.0 * 1024.0 * 1024.0,
                "tib" | "t" => 1024.0f64.powi(4),
                "kb" => 1e3,
                "mb" => 1e6,
                "gb" => 1e9,
                "tb" => 1e12,
                _ => return Err(bad(format!("unknown unit `{unit}` in \"{s}\""))),
            };
            let n: f64 = num
                .parse()
                .map_err(|_| bad(format!("not a size: \"{s}\"")))?;
            let bytes = (n * mult).round();
            if !(1.0..=(1u64 << 52) as f64).contains(&bytes) {
                return Err(bad(format!("out of range: \"{s}\"")));
            }
            Ok(bytes as u64)
        }
        other => Err(bad(format!("not a size: {other}"))),
    }
}

/// [`parse_size`] of a size written as text (a command-line argument).
pub fn parse_size_text(text: &str, key: &str) -> Result<u64> {
    parse_size(&toml::Value::String(text.into()), key)
}

fn page(b: u64) -> u64 {
    b.div_ceil(4096) * 4096
}

/// The largest `x` in `lo..hi` whose `bytes_at(x)` is at most `bytes`, for a size that grows
/// with `x`; `None` if not even `lo` fits. How a workload with a count parameter (rows,
/// elements, points, keys, bases) meets a footprint.
pub fn largest_fitting(lo: u64, hi: u64, bytes: u64, bytes_at: impl Fn(u64) -> u64) -> Option<u64> {
    if bytes_at(lo) > bytes {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi.max(lo + 1));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if bytes_at(mid) <= bytes {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// Largest power of two at most `n` (`n > 0`).
fn pow2_floor(n: u64) -> u64 {
    1 << (63 - n.leading_zeros())
}

/// Per-vertex simulated property bytes of each graph kernel (one entry per array), whether it
/// has the weight array, and the host bytes per vertex of its own state (counted from its code,
/// with 8 bytes to spare: `bfs` keeps the plan's level, parent and queue and returns a copy of
/// the levels; `bc` Brandes' depth, sigma, delta, its copy, the order and the scores; `dfs` its
/// order and a stack of 16-byte frames).
fn graph_props(cfg: &WorkloadConfig) -> Option<(GraphKeys, &'static [u64], bool, u64)> {
    Some(match cfg {
        WorkloadConfig::Bfs(c) => (
            GraphKeys {
                threads: c.threads,
                ..c.keys()
            },
            &[4, 4],
            false,
            24,
        ),
        WorkloadConfig::Pr(c) => (
            GraphKeys {
                threads: c.threads,
                ..c.keys()
            },
            &[8, 8],
            false,
            32,
        ),
        WorkloadConfig::Cc(c) => (c.keys(), &[4], false, 16),
        WorkloadConfig::Sssp(c) => (c.keys(), &[8, 4, 4], true, 24),
        WorkloadConfig::Bc(c) => (c.keys(), &[8, 4, 4, 8, 8, 8], false, 48),
        WorkloadConfig::Tc(c) => (c.keys(), &[], false, 8),
        WorkloadConfig::Dc(c) => (c.keys(), &[4], false, 16),
        WorkloadConfig::Dfs(c) => (c.keys(), &[4, 16], false, 32),
        WorkloadConfig::Gc(c) => (c.keys(), &[4, 4], false, 16),
        _ => return None,
    })
}

fn graph_footprint(keys: &GraphKeys, props: &[u64], weighted: bool) -> u64 {
    let n = 1u64 << keys.scale;
    keys.footprint(weighted, 0) + props.iter().map(|&b| page(n * b)).sum::<u64>()
}

fn set_graph(cfg: &mut WorkloadConfig, scale: u32, edge_factor: u32) {
    macro_rules! set {
        ($($v:ident),*) => {
            match cfg {
                $(WorkloadConfig::$v(c) => {
                    c.scale = scale;
                    c.edge_factor = edge_factor;
                })*
                _ => unreachable!("graph kernels only"),
            }
        };
    }
    set!(Bfs, Pr, Cc, Sssp, Bc, Tc, Dc, Dfs, Gc);
}

/// The size keys of the workloads that do not take `footprint`.
fn size_keys(cfg: &WorkloadConfig) -> &'static str {
    match cfg {
        WorkloadConfig::Btree(_)
        | WorkloadConfig::Hashtable(_)
        | WorkloadConfig::Skiplist(_)
        | WorkloadConfig::BstInt(_)
        | WorkloadConfig::BstExt(_) => "`keys`",
        WorkloadConfig::Mix(_) => "each member's own size keys",
        WorkloadConfig::Trace(_) => "nothing: a trace's footprint is what it touches",
        _ => "its size keys",
    }
}

impl WorkloadConfig {
    /// Bytes of simulated memory the workload's data takes (its arrays, rounded to pages), or
    /// `None` where that is known only by building it (index structures, traces).
    pub fn footprint_bytes(&self) -> Option<u64> {
        if let Some((keys, props, weighted, _)) = graph_props(self) {
            return Some(graph_footprint(&keys, props, weighted));
        }
        Some(match self {
            WorkloadConfig::Gups(g) => g.table_bytes,
            WorkloadConfig::Stream(s) => 3 * page(s.array_bytes),
            WorkloadConfig::SysbenchMem(s) => page(s.total_bytes),
            WorkloadConfig::DlrmSls(d) => {
                let row = d.dim * 4;
                d.tables * page(d.rows * row)
                    + page(d.tables * d.batch * d.pooling * 8)
                    + page(d.tables * d.batch * 4)
                    + page(d.tables * d.batch * row)
            }
            WorkloadConfig::Xsbench(x) => {
                let points = x.n_isotopes * x.gridpoints;
                page(points * 48) + page(points * 16) + page(points * x.n_isotopes * 4)
            }
            WorkloadConfig::Kmer(k) => page(k.genome_bytes) + page(16 * k.slots()),
            WorkloadConfig::Cg(c) => c.footprint()?,
            WorkloadConfig::Canneal(c) => c.footprint()?,
            WorkloadConfig::Streamcluster(c) => c.footprint()?,
            WorkloadConfig::Mummer(m) => m.footprint(),
            WorkloadConfig::Kvstore(k) => k.footprint(),
            WorkloadConfig::Mix(m) => {
                let mut sum = 0;
                for member in &m.members {
                    sum += member.footprint_bytes()?;
                }
                sum
            }
            _ => return None,
        })
    }

    /// Upper bound of the host memory the workload's own data takes (what the engine keeps per
    /// simulated page comes on top: [`WorkloadConfig::host_bytes`] adds it).
    pub fn workload_host_bytes(&self) -> Option<u64> {
        if let Some((keys, _, _, host_vertex_bytes)) = graph_props(self) {
            return Some(keys.host_bytes(host_vertex_bytes));
        }
        Some(match self {
            // The data steers nothing: only generator state, a few KiB.
            WorkloadConfig::Gups(_)
            | WorkloadConfig::Stream(_)
            | WorkloadConfig::SysbenchMem(_)
            | WorkloadConfig::DlrmSls(_)
            // CG: the matrix is implicit and no value steers the solver.
            | WorkloadConfig::Cg(_) => 1 << 20,
            // The energies steer the binary searches: 16 bytes per grid point on the host (the
            // nuclide and the unionised energies), against 64 + 4 * n_isotopes simulated.
            WorkloadConfig::Xsbench(x) => 16 * x.n_isotopes * x.gridpoints + (1 << 20),
            // Where each element is (steers acceptance): 4 bytes per element.
            WorkloadConfig::Canneal(c) => 4 * c.elements()? + (1 << 20),
            // A byte per coordinate of a block, and each point's state.
            WorkloadConfig::Streamcluster(c) => c.host_bytes()?,
            // The table's slots (where each k-mer first occurred and its count) and the
            // packed genome.
            WorkloadConfig::Kmer(k) => {
                super::kmer::HOST_SLOT_BYTES * k.slots() + k.genome_bytes + (1 << 20)
            }
            // The text and suffix array steer the searches; the store's links its lookups.
            WorkloadConfig::Mummer(m) => m.host_bytes(),
            WorkloadConfig::Kvstore(k) => k.host_bytes(),
            WorkloadConfig::Mix(m) => {
                let mut sum = 0;
                for member in &m.members {
                    sum += member.workload_host_bytes()?;
                }
                sum
            }
            _ => return None,
        })
    }

    /// Estimated host memory of a run: the workload's host data plus the engine's per-page
    /// state for the whole footprint mapped in 4 KiB pages.
    pub fn host_bytes(&self) -> Option<u64> {
        let pages = self.footprint_bytes()?.div_ceil(4096);
        Some(self.workload_host_bytes()? + ENGINE_BYTES_PER_PAGE * pages)
    }

    /// Set the natural size parameter(s) so that the footprint is as large as it can be
    /// without exceeding `bytes`. `key` names the setting in errors.
    pub fn set_footprint(&mut self, bytes: u64, key: &str) -> Result<()> {
        let name = self.name();
        let too_small = |min: u64| {
            Error::config(
                key,
                format!("{bytes} bytes is below the smallest footprint of `{name}` ({min} bytes)"),
            )
        };
        if let Some((keys, props, weighted, _)) = graph_props(self) {
            // The largest scale at the configured edge factor, then the edge factor raised to
            // fill the rest (Graph500's scales are a factor of two apart).
            let at = |scale: u32, edge_factor: u32| {
                graph_footprint(
                    &GraphKeys {
                        scale,
                        edge_factor,
                        ..keys
                    },
                    props,
                    weighted,
                )
            };
            let ef = keys.edge_factor;
            let Some(scale) = (1..=30).rev().find(|&s| at(s, ef) <= bytes) else {
                return Err(too_small(at(1, ef)));
            };
            let mut edge_factor = ef;
            while edge_factor < 1024 && at(scale, edge_factor + 1) <= bytes {
                edge_factor += 1;
            }
            set_graph(self, scale, edge_factor);
            return Ok(());
        }
        match self {
            WorkloadConfig::Gups(g) => {
                if bytes < 4096 {
                    return Err(too_small(4096));
                }
                g.table_bytes = pow2_floor(bytes);
            }
            WorkloadConfig::Stream(s) => {
                let per = bytes / 3 / 4096 * 4096;
                if per == 0 {
                    return Err(too_small(3 * 4096));
                }
                s.array_bytes = per;
            }
            WorkloadConfig::SysbenchMem(s) => {
                let total = bytes / 4096 * 4096 / s.block_bytes * s.block_bytes;
                if total == 0 {
                    return Err(too_small(page(s.block_bytes)));
                }
                s.total_bytes = total;
            }
            WorkloadConfig::DlrmSls(d) => {
                let row = d.dim * 4;
                let small = page(d.tables * d.batch * d.pooling * 8)
                    + page(d.tables * d.batch * 4)
                    + page(d.tables * d.batch * row);
                let per_table = bytes.saturating_sub(small) / d.tables / 4096 * 4096;
                let rows = per_table / row;
                if rows == 0 {
                    return Err(too_small(small + d.tables * page(row)));
                }
                d.rows = rows;
            }
            WorkloadConfig::Xsbench(x) => {
                // 64 + 4 * n_isotopes bytes per (nuclide, grid point).
                let per_point = x.n_isotopes * (64 + 4 * x.n_isotopes);
                let mut g = bytes / per_point;
                while g > 1 && self_footprint_xs(x.n_isotopes, g) > bytes {
                    g -= 1;
                }
                if g == 0 || self_footprint_xs(x.n_isotopes, g) > bytes {
                    return Err(too_small(self_footprint_xs(x.n_isotopes, 1)));
                }
                x.gridpoints = g;
            }
            WorkloadConfig::Kmer(k) => {
                // A table of 2^n 16-byte slots over a genome of 2^n / 4 bytes (as many bases as
                // slots: the default's proportion, about three quarters full once counted).
                let slots = pow2_floor((bytes * 4 / 65).max(1));
                if slots < 64 {
                    return Err(too_small(16 * 64 + 4096));
                }
                k.genome_bytes = slots / 4;
                k.table_slots = 0;
            }
            WorkloadConfig::Cg(c) => {
                if c.fit(bytes).is_none() {
                    return Err(too_small(c.min_footprint().unwrap_or(0)));
                }
            }
            WorkloadConfig::Canneal(c) => {
                if c.fit(bytes).is_none() {
                    return Err(too_small(super::CannealConfig::min_footprint()));
                }
            }
            WorkloadConfig::Streamcluster(c) => {
                if c.fit(bytes).is_none() {
                    return Err(too_small(c.min_footprint().unwrap_or(0)));
                }
            }
            WorkloadConfig::Mummer(m) => {
                let max = m.max_footprint();
                if bytes > max {
                    return Err(Error::config(
                        key,
                        format!(
                            "{bytes} bytes is above the largest footprint of `mummer` ({max} \
                             bytes: its suffix array holds 32-bit positions)"
                        ),
                    ));
                }
                if m.fit(bytes).is_none() {
                    return Err(too_small(m.min_footprint()));
                }
            }
            WorkloadConfig::Kvstore(k) => {
                if k.fit(bytes).is_none() {
                    return Err(too_small(k.min_footprint()));
                }
            }
            other => {
                return Err(Error::config(
                    key,
                    format!(
                        "`{}` does not take a footprint: set {} instead",
                        other.name(),
                        size_keys(other)
                    ),
                ))
            }
        }
        Ok(())
    }
}

fn self_footprint_xs(isotopes: u64, gridpoints: u64) -> u64 {
    let points = isotopes * gridpoints;
    page(points * 48) + page(points * 16) + page(points * isotopes * 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        let s = |t: &str| parse_size(&toml::Value::String(t.into()), "k");
        assert_eq!(s("8GiB").unwrap(), 8 << 30);
        assert_eq!(s("8 GiB").unwrap(), 8 << 30);
        assert_eq!(s("64g").unwrap(), 64 << 30);
        assert_eq!(s("6.9GB").unwrap(), 6_900_000_000);
        assert_eq!(s("4096").unwrap(), 4096);
        assert_eq!(parse_size(&toml::Value::Integer(12), "k").unwrap(), 12);
        for bad in ["", "GB", "8XB", "-3GB", "1.2.3GB"] {
            let e = s(bad).unwrap_err().to_string();
            assert!(e.contains("`k`"), "{bad}: {e}");
        }
    }

    /// The workload with `footprint` set through the loader, as a user would.
    fn fitted(name: &str, footprint: &str) -> WorkloadConfig {
        crate::SimConfig::load(
            "baseline-radix",
            &[
                format!("workload.name={name}"),
                format!("workload.footprint=\"{footprint}\""),
            ],
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .workload
    }

    #[test]
    fn footprints_are_reached_from_below() {
        for name in [
            "gups",
            "stream",
            "sysbench-mem",
            "dlrm-sls",
            "xsbench",
            "kmer",
            "cg",
            "canneal",
            "streamcluster",
            "mummer",
            "kvstore",
            "bfs",
            "pr",
            "cc",
            "sssp",
            "bc",
            "tc",
            "dc",
            "dfs",
            "gc",
        ] {
            for target in [1u64 << 30, 8 << 30, 33_000_000_000, 64 << 30] {
                if name == "mummer" && target > 11 << 30 {
                    continue; // beyond 2^31 bases: refused, below
                }
                let w = fitted(name, &target.to_string());
                let got = w.footprint_bytes().unwrap();
                assert!(got <= target, "{name}: {got} > {target}");
                // Within the parameter's granularity: gups and kmer by powers of two, the
                // graphs by one edge per vertex, the others nearly exactly.
                let slack = match name {
                    "gups" | "kmer" => 0.5,
                    "xsbench" => 0.95,
                    _ => 0.9,
                };
                assert!(
                    got as f64 >= slack * target as f64,
                    "{name}: {got} of {target}"
                );
            }
        }
    }

    #[test]
    fn a_footprint_beyond_what_a_workload_can_index_is_refused_with_its_limit() {
        let err = crate::SimConfig::load(
            "baseline-radix",
            &[
                "workload.name=mummer".to_string(),
                "workload.footprint=\"33GB\"".to_string(),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("workload.footprint"), "{err}");
        assert!(err.contains("32-bit positions"), "{err}");
    }

    #[test]
    fn the_formula_matches_what_the_workload_maps() {
        // Small sizes, built without populating: the VMAs are the arrays (plus at most one
        // 64 MiB arena for small allocations).
        for (name, footprint) in [
            ("gups", "1MiB"),
            ("stream", "3MiB"),
            ("sysbench-mem", "1MiB"),
            ("dlrm-sls", "64MiB"),
            ("xsbench", "64MiB"),
            ("kmer", "8MiB"),
            ("cg", "4MiB"),
            ("canneal", "4MiB"),
            ("streamcluster", "8MiB"),
            ("mummer", "8MiB"),
            ("kvstore", "64MiB"),
            ("bfs", "4MiB"),
            ("pr", "4MiB"),
            ("sssp", "4MiB"),
            ("bc", "4MiB"),
            ("tc", "4MiB"),
            ("dfs", "4MiB"),
            ("gc", "4MiB"),
            ("cc", "4MiB"),
            ("dc", "4MiB"),
        ] {
            let cfg = crate::SimConfig::load(
                "baseline-radix",
                &[
                    format!("workload.name={name}"),
                    format!("workload.footprint=\"{footprint}\""),
                    "workload.populate=false".into(),
                    "os.physmem.fragmentation=0.0".into(),
                ],
            )
            .unwrap();
            let mut os = crate::sim::boot_os(&cfg).unwrap();
            drop(crate::workload::build(&cfg.workload, os.as_mut(), cfg.seed).unwrap());
            let mapped: u64 = os
                .vmas(0)
                .unwrap()
                .iter()
                .filter(|v| v.role.is_data())
                .map(|v| (v.end.0 - v.start.0) * 4096)
                .sum();
            let formula = cfg.workload.footprint_bytes().unwrap();
            // kvstore's formula takes each slab class's expected share of the items; a run
            // draws them, so its classes may take a slab page more or fewer each.
            let drawn = if name == "kvstore" { 16 << 20 } else { 0 };
            // Small arrays share the brk heap, without the formula's page per array (and a
            // graph kernel's formula counts a property array or two it may not allocate).
            let packed = formula / 16;
            assert!(
                formula <= mapped + drawn + packed && mapped <= formula + drawn + (64 << 20),
                "{name}: formula {formula}, mapped {mapped}"
            );
        }
    }

    #[test]
    fn physical_memory_and_dram_rows_follow_the_footprint_unless_memory_is_given() {
        let load = |extra: &[&str]| {
            let mut ov = vec!["workload.footprint=\"64GiB\"".to_string()];
            ov.extend(extra.iter().map(|s| s.to_string()));
            crate::SimConfig::load("baseline-radix", &ov).unwrap()
        };
        let cfg = load(&[]);
        assert_eq!(cfg.os.physmem.bytes, 81 << 30);
        assert!(cfg.dram.capacity_bytes().unwrap() >= cfg.os.physmem.bytes);
        assert!(cfg.dram.rows.unwrap() > 65536);
        // The user's memory stays (the OS reports a footprint beyond it when it runs out).
        let given = load(&["os.physmem.bytes=34359738368"]);
        assert_eq!(given.os.physmem.bytes, 32 << 30);
        // Defaults that fit are untouched.
        let default = crate::SimConfig::load("baseline-radix", &[]).unwrap();
        assert_eq!(default.os.physmem.bytes, 32 << 30);
        assert_eq!(default.dram.rows, Some(65536));
    }

    #[test]
    fn workloads_without_a_footprint_name_their_size_keys() {
        let e = crate::SimConfig::load(
            "baseline-radix",
            &[
                "workload.name=btree".into(),
                "workload.footprint=\"8GiB\"".into(),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("workload.footprint") && e.contains("`keys`"),
            "{e}"
        );
        let e = crate::SimConfig::load(
            "baseline-radix",
            &["workload.name=bfs".into(), "workload.footprint=100".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("smallest footprint"), "{e}");
    }

    #[test]
    fn the_data_free_workloads_hold_no_data_on_the_host() {
        use std::mem::needs_drop;
        // A type that owns no heap memory needs no drop: the per-thread state of gups and
        // stream, and the Zipf sampler and permutation behind the DLRM indices, are a few
        // words whatever the table size.
        assert!(!needs_drop::<super::super::gups::Updater>());
        assert!(!needs_drop::<super::super::stream::Triad>());
        assert!(!needs_drop::<super::super::dist::Zipf>());
        assert!(!needs_drop::<super::super::dist::Scatter>());
        // The DLRM index stream holds one permutation per table, not per row.
        let WorkloadConfig::DlrmSls(small) = fitted("dlrm-sls", "1GiB") else {
            unreachable!()
        };
        let WorkloadConfig::DlrmSls(large) = fitted("dlrm-sls", "64GiB") else {
            unreachable!()
        };
        assert!(large.rows > 32 * small.rows);
        let (a, b) = (
            super::super::dlrm::IndexStream::new(&small, 1),
            super::super::dlrm::IndexStream::new(&large, 1),
        );
        assert_eq!(a.tables(), b.tables());
        // The implicit graph: one offset per vertex, whatever the edge factor.
        let sparse = super::super::graph::Implicit::new(12, 1, 1);
        let dense = super::super::graph::Implicit::new(12, 64, 1);
        assert_eq!(sparse.host_bytes(), dense.host_bytes());
        assert_eq!(dense.host_bytes(), 8 * ((1 << 12) + 1));
    }

    #[test]
    fn host_memory_of_the_data_free_workloads_does_not_grow_with_the_footprint() {
        for name in ["gups", "stream", "sysbench-mem", "dlrm-sls"] {
            let small = fitted(name, "1GiB").workload_host_bytes().unwrap();
            let large = fitted(name, "64GiB").workload_host_bytes().unwrap();
            assert_eq!(small, large, "{name}");
        }
        // Graphs: the implicit graph keeps 8 bytes per vertex, not per edge.
        let bfs = fitted("bfs", "64GiB");
        let WorkloadConfig::Bfs(c) = &bfs else {
            unreachable!()
        };
        assert!(c.keys().implicit());
        let vertices = 1u64 << c.scale;
        assert!(bfs.workload_host_bytes().unwrap() <= (8 + 8 + 24) * vertices);
    }
}
