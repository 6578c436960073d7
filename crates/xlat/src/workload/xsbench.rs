//! `xsbench`: the XSBench proxy app's event-free macroscopic cross-section lookup kernel
//! (unionised energy grid), the Monte Carlo neutron-transport hot loop that Utopia (§7)
//! and ME-HPT (§VI) evaluate on.
//!
//! Data, as XSBench builds it: per nuclide `gridpoints` random energies in [0, 1), sorted, each a
//! 48-byte grid point (energy and five cross sections: total, elastic, absorption, fission,
//! nu-fission) in one block; the unionised grid, the sorted union of all nuclide energies, each
//! entry an energy and a pointer to its row of `n_isotopes` i32 indices (for every nuclide, the
//! grid point at or below that energy); and 12 materials (XSBench's reactor model) listing
//! nuclide ids and concentrations.
//!
//! A lookup picks a random energy and a material (XSBench's material probabilities), binary
//! searches the unionised grid (each probe loads an energy), loads the entry's index-row pointer,
//! then for each nuclide of the material loads its id and concentration, its index from the row
//! (address from the row pointer), and the bracketing grid points (address from the index): the
//! two energies and the five cross sections of each.

use super::emit::{Array, Emitter, SimHeap, Stop, ThreadedSource};
use super::index::load_after;
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XsbenchConfig {
    /// Nuclides (XSBench "small" = 68, "large" = 355).
    #[serde(default = "default_isotopes")]
    pub n_isotopes: u64,
    /// Energy grid points per nuclide.
    #[serde(default = "default_gridpoints")]
    pub gridpoints: u64,
    /// Memory references to emit (the lookup count follows from it).
    #[serde(default = "super::index::default_refs")]
    pub references: u64,
    /// Map the memory before the first reference (XSBench initialises its grids first).
    #[serde(default = "super::index::default_populate")]
    pub populate: bool,
    /// Software threads of the one process, each on its own core, sharing the lookups (1 to 64).
    #[serde(default = "super::one_thread")]
    pub threads: u32,
}

fn default_isotopes() -> u64 {
    68
}
fn default_gridpoints() -> u64 {
    11303
}

/// Bytes of one nuclide grid point: energy and five cross sections.
const POINT_BYTES: u64 = 48;
/// Bytes of one unionised grid entry: energy and the pointer to its index row.
const UNION_BYTES: u64 = 16;
/// Largest total footprint accepted.
const MAX_BYTES: u64 = 1 << 40;

/// Nuclides per material in XSBench's reactor model (fuel has 34 in "small", 321 otherwise).
fn nuclides_per_material(n_isotopes: u64) -> [u64; 12] {
    let fuel = if n_isotopes == 68 { 34 } else { 321 };
    [fuel, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9].map(|n| n.min(n_isotopes))
}

/// XSBench's probability of a lookup in each material (fuel, cladding, cold and hot borated
/// water, reactor pressure vessel, reflectors, plates, nozzles, assembly ends).
const MATERIAL_PROBABILITY: [f64; 12] = [
    0.140, 0.052, 0.275, 0.134, 0.154, 0.064, 0.066, 0.055, 0.008, 0.015, 0.025, 0.013,
];

impl XsbenchConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.n_isotopes == 0 {
            return Err(Error::config(
                format!("{path}.n_isotopes"),
                "must be at least 1",
            ));
        }
        if self.gridpoints < 2 {
            return Err(Error::config(
                format!("{path}.gridpoints"),
                format!(
                    "must be at least 2 (a lookup interpolates between two points), got {}",
                    self.gridpoints
                ),
            ));
        }
        if self.footprint().is_none_or(|b| b > MAX_BYTES) {
            return Err(Error::config(
                format!("{path}.gridpoints"),
                format!(
                    "n_isotopes = {} with gridpoints = {} needs more than 1 TiB",
                    self.n_isotopes, self.gridpoints
                ),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)?;
        super::threads_in_range(format!("{path}.threads"), self.threads)
    }

    /// Bytes of the grids, `None` on overflow.
    fn footprint(&self) -> Option<u64> {
        let points = self.n_isotopes.checked_mul(self.gridpoints)?;
        let row = self
            .n_isotopes
            .checked_mul(4)?
            .checked_add(UNION_BYTES + POINT_BYTES)?;
        points.checked_mul(row)
    }
}

/// The grids and materials in simulated memory.
#[derive(Clone, Debug)]
struct Layout {
    nuclide_grids: Array,
    union_grid: Array,
    index_rows: Array,
    /// Per material: nuclide ids (i32) and concentrations (f64).
    mat_nuclides: Vec<Array>,
    mat_concs: Vec<Array>,
}

pub fn build(
    cfg: &XsbenchConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let (iso, g) = (cfg.n_isotopes, cfg.gridpoints);
    let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
    let mut layout = Layout {
        nuclide_grids: heap.array(os, iso * g, POINT_BYTES)?,
        union_grid: heap.array(os, iso * g, UNION_BYTES)?,
        index_rows: heap.array(os, iso * g * iso, 4)?,
        mat_nuclides: Vec::new(),
        mat_concs: Vec::new(),
    };
    for n in nuclides_per_material(iso) {
        layout.mat_nuclides.push(heap.array(os, n, 4)?);
        layout.mat_concs.push(heap.array(os, n, 8)?);
    }
    Ok(ThreadedSource::team(
        pid,
        cfg.references,
        cfg.threads,
        |_| {
            let layout = layout.clone();
            move |e| {
                // Thread 0 builds the grids (XSBench's initialisation, before its parallel lookup
                // loop) and hands them to the team with the random stream as it stands after that.
                let shared = e.share(|| {
                    let mut rng = Rng::new(seed, rng::stream::WORKLOAD);
                    let xs = CrossSections::generate(layout, iso, g, &mut rng);
                    (xs, rng)
                })?;
                let (xs, rng) = &*shared;
                let mut rng = rng.clone();
                let (me, threads) = (e.thread(), e.threads());
                loop {
                    // XSBench draws each lookup's energy and material from its RNG. The lookups are
                    // dealt out round robin (OpenMP schedule(static, 1)): every thread follows the
                    // one random stream and performs every `threads`-th lookup, so the team performs
                    // the lookups of a single-threaded run.
                    for k in 0..threads {
                        let energy = rng.unit();
                        let mat = pick_material(rng.unit());
                        if k == me {
                            e.instr(20);
                            xs.lookup(e, energy, mat)?;
                        }
                    }
                }
            }
        },
    ))
}

/// Material of a lookup from a uniform draw `u` in [0, 1), by XSBench's probabilities.
fn pick_material(u: f64) -> usize {
    let mut acc = 0.0;
    for (m, p) in MATERIAL_PROBABILITY.iter().enumerate() {
        acc += p;
        if u < acc {
            return m;
        }
    }
    0
}

/// The host mirror: energies (what the searches compare) and material contents.
#[derive(Clone, Debug)]
struct CrossSections {
    layout: Layout,
    isotopes: u64,
    gridpoints: u64,
    /// Nuclide `i`'s sorted energies at `[i * gridpoints ..][.. gridpoints]`.
    nuclide_energy: Vec<f64>,
    union_energy: Vec<f64>,
    materials: Vec<Vec<u32>>,
}

impl CrossSections {
    fn generate(layout: Layout, isotopes: u64, gridpoints: u64, rng: &mut Rng) -> CrossSections {
        let mut nuclide_energy: Vec<f64> = (0..isotopes * gridpoints).map(|_| rng.unit()).collect();
        for grid in nuclide_energy.chunks_mut(gridpoints as usize) {
            grid.sort_unstable_by(f64::total_cmp);
        }
        let mut union_energy = nuclide_energy.clone();
        union_energy.sort_unstable_by(f64::total_cmp);
        // Fuel holds the first nuclides; the other materials distinct random ones.
        let materials = nuclides_per_material(isotopes)
            .iter()
            .enumerate()
            .map(|(m, &n)| {
                let mut ids: Vec<u32> = (0..isotopes as u32).collect();
                if m > 0 {
                    for i in 0..n as usize {
                        let j = i + rng.below(isotopes - i as u64) as usize;
                        ids.swap(i, j);
                    }
                }
                ids.truncate(n as usize);
                ids
            })
            .collect();
        CrossSections {
            layout,
            isotopes,
            gridpoints,
            nuclide_energy,
            union_energy,
            materials,
        }
    }

    /// Index-grid content: nuclide `nuc`'s grid point at or below union energy `u` (0 below the
    /// nuclide's first point), as XSBench precomputes it.
    fn index_of(&self, u: usize, nuc: u32) -> u64 {
        let start = nuc as usize * self.gridpoints as usize;
        let grid = &self.nuclide_energy[start..start + self.gridpoints as usize];
        let above = grid.partition_point(|&x| x <= self.union_energy[u]);
        above.saturating_sub(1) as u64
    }

    fn lookup(&self, e: &mut Emitter, energy: f64, mat: usize) -> std::result::Result<(), Stop> {
        let l = &self.layout;
        // XSBench's grid_search: the largest entry index whose energy is <= `energy` (0 below).
        let (mut lo, mut hi) = (0usize, self.union_energy.len() - 1);
        let mut probe = None;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            probe = Some(load_after(e, l.union_grid.at(mid as u64), probe)?);
            e.instr(4);
            if self.union_energy[mid] > energy {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let row_ptr = load_after(e, VirtAddr(l.union_grid.at(lo as u64).0 + 8), probe)?;
        let row = lo as u64 * self.isotopes;
        for (j, &nuc) in self.materials[mat].iter().enumerate() {
            e.instr(3);
            e.load(l.mat_nuclides[mat].at(j as u64), 4)?;
            e.load(l.mat_concs[mat].at(j as u64), 8)?;
            let index = e.load_dep(l.index_rows.at(row + u64::from(nuc)), 4, row_ptr)?;
            let low = self.index_of(lo, nuc).min(self.gridpoints - 2);
            let low_point = l.nuclide_grids.at(u64::from(nuc) * self.gridpoints + low).0;
            let high_point = low_point + POINT_BYTES;
            // Interpolation factor from both energies, then each of the five cross sections
            // interpolated and accumulated with the concentration.
            e.instr(2);
            e.load_dep(VirtAddr(high_point), 8, index)?;
            e.load_dep(VirtAddr(low_point), 8, index)?;
            e.instr(4);
            for xs in 1..=5 {
                e.load_dep(VirtAddr(high_point + 8 * xs), 8, index)?;
                e.load_dep(VirtAddr(low_point + 8 * xs), 8, index)?;
                e.instr(5);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream::WORKLOAD;
    use crate::trace::Record;
    use crate::workload::emit::TURN;
    use crate::workload::testutil::{self, addrs, max_lead, per_core};

    fn cfg(iso: u64, g: u64) -> XsbenchConfig {
        XsbenchConfig {
            n_isotopes: iso,
            gridpoints: g,
            references: 30_000,
            populate: true,
            threads: 1,
        }
    }

    fn tiny() -> CrossSections {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let (iso, g) = (6, 9);
        let mut layout = Layout {
            nuclide_grids: heap.array(&mut os, iso * g, POINT_BYTES).unwrap(),
            union_grid: heap.array(&mut os, iso * g, UNION_BYTES).unwrap(),
            index_rows: heap.array(&mut os, iso * g * iso, 4).unwrap(),
            mat_nuclides: Vec::new(),
            mat_concs: Vec::new(),
        };
        for n in nuclides_per_material(iso) {
            layout.mat_nuclides.push(heap.array(&mut os, n, 4).unwrap());
            layout.mat_concs.push(heap.array(&mut os, n, 8).unwrap());
        }
        CrossSections::generate(layout, iso, g, &mut Rng::new(2, WORKLOAD))
    }

    /// Reference bisection (XSBench's grid_search): the probed indices and the result.
    fn reference_search(grid: &[f64], quarry: f64) -> (Vec<usize>, usize) {
        let (mut lower, mut upper) = (0, grid.len() - 1);
        let mut probes = Vec::new();
        let mut length = upper - lower;
        while length > 1 {
            let exam = lower + length / 2;
            probes.push(exam);
            if grid[exam] > quarry {
                upper = exam;
            } else {
                lower = exam;
            }
            length = upper - lower;
        }
        (probes, lower)
    }

    #[test]
    fn lookup_bisects_then_reads_the_bracketing_points() {
        let xs = tiny();
        let l = xs.layout.clone();
        let g = xs.gridpoints;
        assert!(xs.union_energy.windows(2).all(|w| w[0] <= w[1]));
        for (step, mat) in (0..40).zip((0..12).cycle()) {
            let energy = step as f64 / 40.0 + 0.003;
            let (probes, idx) = reference_search(&xs.union_energy, energy);
            let mut want: Vec<u64> = probes
                .iter()
                .map(|&p| l.union_grid.at(p as u64).0)
                .collect();
            want.push(l.union_grid.at(idx as u64).0 + 8);
            for (j, &nuc) in xs.materials[mat].iter().enumerate() {
                // The lower bracket by a linear scan of the nuclide's own grid.
                let grid = &xs.nuclide_energy[(nuc as u64 * g) as usize..][..g as usize];
                let at_or_below = grid
                    .iter()
                    .rposition(|&x| x <= xs.union_energy[idx])
                    .unwrap_or(0) as u64;
                let low = l
                    .nuclide_grids
                    .at(nuc as u64 * g + at_or_below.min(g - 2))
                    .0;
                want.push(l.mat_nuclides[mat].at(j as u64).0);
                want.push(l.mat_concs[mat].at(j as u64).0);
                want.push(l.index_rows.at(idx as u64 * 6 + nuc as u64).0);
                want.extend([low + 48, low]);
                for x in 1..=5 {
                    want.extend([low + 48 + 8 * x, low + 8 * x]);
                }
            }
            let xs2 = xs.clone();
            let recs = testutil::run(move |e| xs2.lookup(e, energy, mat));
            assert_eq!(addrs(&recs), want, "energy {energy} material {mat}");
        }
    }

    #[test]
    fn materials_follow_xsbench() {
        let xs = tiny();
        assert_eq!(xs.materials[0], vec![0, 1, 2, 3, 4, 5]);
        for m in &xs.materials {
            let mut s = m.clone();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), m.len());
        }
        assert_eq!(nuclides_per_material(68)[0], 34);
        assert_eq!(pick_material(0.0), 0);
        assert_eq!(pick_material(0.999), 11);
        assert_eq!(pick_material(0.2), 2);
    }

    #[test]
    fn same_seed_same_stream() {
        let stream = |seed| {
            let mut os = testutil::os(64);
            let pid = os.spawn().unwrap();
            testutil::stream_hash(&testutil::drain_owned(
                build(&cfg(12, 500), &mut os, pid, seed).unwrap(),
            ))
        };
        assert_eq!(stream(1), stream(1));
        assert_ne!(stream(1), stream(2));
    }

    /// The lookups of a stream of one thread's records, as address lists: a lookup starts with
    /// the record that carries the 20 instructions of drawing its energy and material.
    fn lookups(recs: &[Record]) -> Vec<Vec<u64>> {
        testutil::operations(recs, 20)
    }

    #[test]
    fn a_team_deals_the_lookups_out_round_robin() {
        let run = |threads| {
            let mut os = testutil::os(64);
            let pid = os.spawn().unwrap();
            let c = XsbenchConfig {
                threads,
                ..cfg(12, 500)
            };
            c.validate("workload").unwrap();
            testutil::drain_owned(build(&c, &mut os, pid, 3).unwrap())
        };
        let alone = lookups(&run(1));
        let team = run(4);
        assert!(team.iter().all(|r| r.pid == 0));
        let threads = per_core(&team);
        assert_eq!(threads.len(), 4);
        for (core, mine) in threads {
            let recs: Vec<Record> = mine.into_iter().map(|(_, r)| r).collect();
            let mine = lookups(&recs);
            // Every lookup but the last, which the budget may have cut short.
            for (k, lookup) in mine[..mine.len() - 1].iter().enumerate() {
                let n = k * 4 + core as usize;
                if n + 1 < alone.len() {
                    assert_eq!(lookup, &alone[n], "core {core} lookup {k}");
                }
            }
        }
        assert!(max_lead(&team, &[]) <= TURN as u64);
    }

    #[test]
    fn default_footprint_is_xsbench_small() {
        let c: XsbenchConfig = toml::from_str("populate = false").unwrap();
        c.validate("workload").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        drop(build(&c, &mut os, pid, 1).unwrap());
        // XSBench "small" is about 240 MB of grids; the material lists add one 64 MiB malloc
        // arena of address space.
        let grids = c.footprint().unwrap();
        assert!(grids > 240_000_000, "{grids}");
        let bytes = testutil::footprint(&os, pid);
        assert!((grids..grids + (65 << 20)).contains(&bytes), "{bytes}");
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let err = |c: XsbenchConfig| c.validate("workload").unwrap_err().to_string();
        assert!(err(cfg(0, 10)).contains("workload.n_isotopes"));
        assert!(err(cfg(10, 1)).contains("workload.gridpoints"));
        assert!(err(cfg(1 << 20, 1 << 20)).contains("workload.gridpoints"));
        assert!(err(XsbenchConfig {
            references: 0,
            ..cfg(10, 10)
        })
        .contains("workload.references"));
    }
}
