//! `canneal`: PARSEC 3.0's canneal, simulated-annealing placement of a chip netlist to minimise
//! its routing cost. Elements sit at locations of a grid; each is wired to other elements (its
//! fan-in and fan-out). A step picks two elements, computes how the routing cost (Manhattan
//! distance to every element each is wired to) changes if they trade places, and swaps them if
//! the Metropolis criterion accepts the change at the current temperature; the temperature falls
//! by a factor of 1.5 after every `swaps_per_temp` steps.
//!
//! Memory, as canneal lays it out: an array of element objects (88 bytes: name string, fan-in
//! and fan-out vectors, the pointer to its present location), the vectors' buffers of element
//! pointers, and the array of locations (x and y, 8 bytes). Evaluating a swap chases pointers:
//! element → its vector's buffer → a wired element → its location pointer → the location.
//!
//! Which element sits where steers acceptance, so the host keeps each element's location (4
//! bytes). The wiring is fixed and derived on demand from a seeded hash: element `i` is wired
//! to between 2 and 14 others (8 on average; pairs of elements hold exactly 16, so the buffers'
//! offsets need no table).

use super::emit::{Array, Emitter, SimHeap, Stop, ThreadedSource};
use super::index::mix64;
use crate::addr::page_rounded;
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};

/// A PARSEC input: netlist elements, swaps per temperature step, start temperature, steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Input {
    pub name: &'static str,
    pub elements: u64,
    pub swaps_per_temp: u64,
    pub start_temp: f64,
    pub temp_steps: u64,
}

/// PARSEC 3.0's canneal inputs.
pub const INPUTS: [Input; 4] = [
    Input {
        name: "simsmall",
        elements: 100_000,
        swaps_per_temp: 10_000,
        start_temp: 2000.0,
        temp_steps: 32,
    },
    Input {
        name: "simmedium",
        elements: 200_000,
        swaps_per_temp: 15_000,
        start_temp: 2000.0,
        temp_steps: 64,
    },
    Input {
        name: "simlarge",
        elements: 400_000,
        swaps_per_temp: 15_000,
        start_temp: 2000.0,
        temp_steps: 128,
    },
    Input {
        name: "native",
        elements: 2_500_000,
        swaps_per_temp: 15_000,
        start_temp: 2000.0,
        temp_steps: 6000,
    },
];

/// Bytes of one element object, and where its fields are.
const ELEM_BYTES: u64 = 88;
const FANIN_VEC: u64 = 32;
const FANOUT_VEC: u64 = 56;
const PRESENT_LOC: u64 = 80;
/// Wires per element on average; a pair of elements holds twice this.
const MEAN_FANS: u64 = 8;
/// Largest netlist accepted.
const MAX_ELEMENTS: u64 = 1 << 32;
/// How much the temperature falls after each step.
const COOLING: f64 = 1.5;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CannealConfig {
    /// PARSEC input: `simsmall`, `simmedium`, `simlarge` or `native`.
    #[serde(default = "default_input")]
    pub input: String,
    /// Netlist elements; 0 takes the input's (`footprint` sets it).
    #[serde(default)]
    pub elements: u64,
    #[serde(default = "super::index::default_refs")]
    pub references: u64,
    /// Map the memory before the first reference (canneal reads its netlist first).
    #[serde(default = "super::index::default_populate")]
    pub populate: bool,
}

fn default_input() -> String {
    "native".into()
}

/// Grid cells for `n` elements: the smallest near-square grid holding them.
fn grid(n: u64) -> (u64, u64) {
    let width = (n as f64).sqrt().ceil().max(1.0) as u64;
    (width, n.div_ceil(width))
}

/// Bytes of a netlist of `n` elements.
fn bytes_of(n: u64) -> u64 {
    let (w, h) = grid(n);
    page_rounded(n * ELEM_BYTES) + page_rounded(n * MEAN_FANS * 8) + page_rounded(w * h * 8)
}

impl CannealConfig {
    pub fn input(&self) -> Option<Input> {
        INPUTS
            .iter()
            .copied()
            .find(|i| i.name.eq_ignore_ascii_case(&self.input))
    }

    /// Netlist elements: `elements`, or the input's.
    pub fn elements(&self) -> Option<u64> {
        let i = self.input()?;
        Some(if self.elements == 0 {
            i.elements
        } else {
            self.elements
        })
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        let Some(n) = self.elements() else {
            let names: Vec<&str> = INPUTS.iter().map(|i| i.name).collect();
            return Err(Error::config(
                format!("{path}.input"),
                format!(
                    "must be one of {} (PARSEC's inputs), got `{}`",
                    names.join(", "),
                    self.input
                ),
            ));
        };
        if !(2..=MAX_ELEMENTS).contains(&n) {
            return Err(Error::config(
                format!("{path}.elements"),
                format!("must be between 2 and 2^32 (a swap needs two elements), got {n}"),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }

    pub fn footprint(&self) -> Option<u64> {
        Some(bytes_of(self.elements()?))
    }

    /// Set `elements` to the most whose netlist fits in `bytes`; `None` if two do not.
    pub fn fit(&mut self, bytes: u64) -> Option<u64> {
        self.input()?;
        let hi = (bytes / (ELEM_BYTES + 8 * MEAN_FANS) + 2).min(MAX_ELEMENTS);
        self.elements = super::footprint::largest_fitting(2, hi, bytes, bytes_of)?;
        Some(bytes_of(self.elements))
    }

    pub fn min_footprint() -> u64 {
        bytes_of(2)
    }
}

/// The netlist: the implicit wiring and, on the host, where each element is.
#[derive(Clone, Debug)]
pub struct Netlist {
    n: u64,
    width: u64,
    seed: u64,
    /// `loc[i]`: the grid cell (`y * width + x`) of element `i`.
    pub loc: Vec<u32>,
}

impl Netlist {
    /// `n` elements, element `i` at cell `i` (canneal places them in the order it reads them;
    /// the wiring is random, so that is a random placement).
    pub fn new(n: u64, seed: u64) -> Netlist {
        Netlist {
            n,
            width: grid(n).0,
            seed: mix64(seed ^ 0x2545_F491_4F6C_DD1D),
            loc: (0..n as u32).collect(),
        }
    }

    fn hash(&self, a: u64, b: u64) -> u64 {
        mix64(self.seed ^ mix64(a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b))
    }

    /// Wires of element `i`: 2 to 14, a pair's two elements adding up to 16.
    pub fn fans(&self, i: u64) -> u64 {
        let d = self.hash(i / 2, u64::MAX) % (MEAN_FANS - 1);
        if i % 2 == 1 {
            MEAN_FANS + d
        } else if i + 1 == self.n {
            MEAN_FANS
        } else {
            MEAN_FANS - d
        }
    }

    /// Where element `i`'s wires start in the buffers.
    pub fn first_fan(&self, i: u64) -> u64 {
        let start = (i / 2) * 2 * MEAN_FANS;
        if i % 2 == 1 {
            start + self.fans(i - 1)
        } else {
            start
        }
    }

    /// The element element `i`'s wire `j` goes to (never `i` itself).
    pub fn fan(&self, i: u64, j: u64) -> u64 {
        (i + 1 + self.hash(i, j) % (self.n - 1)) % self.n
    }

    /// Manhattan distance between two cells.
    pub fn distance(&self, a: u32, b: u32) -> u64 {
        let (a, b, w) = (a as u64, b as u64, self.width);
        (a % w).abs_diff(b % w) + (a / w).abs_diff(b / w)
    }

    /// Routing cost of element `i` if it were at `cell` (tests).
    #[cfg(test)]
    fn cost_at(&self, i: u64, cell: u32) -> u64 {
        (0..self.fans(i))
            .map(|j| self.distance(cell, self.loc[self.fan(i, j) as usize]))
            .sum()
    }

    /// The whole netlist's routing cost, each wire counted from the element that has it
    /// (tests).
    #[cfg(test)]
    pub fn total_cost(&self) -> u64 {
        (0..self.n)
            .map(|i| self.cost_at(i, self.loc[i as usize]))
            .sum()
    }
}

/// The netlist's arrays in simulated memory.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub elements: Array,
    /// Every element's fan-in then fan-out buffer, 8-byte element pointers.
    pub fans: Array,
    pub locations: Array,
}

impl Layout {
    pub fn alloc(os: &mut dyn AddressSpaces, heap: &mut SimHeap, n: u64) -> Result<Layout> {
        let (w, h) = grid(n);
        Ok(Layout {
            elements: heap.array(os, n, ELEM_BYTES)?,
            // One small vector buffer per element and direction: `malloc`s made in turn.
            fans: heap.objects(os, n * MEAN_FANS, 8)?,
            locations: heap.array(os, w * h, 8)?,
        })
    }

    fn field(&self, i: u64, offset: u64) -> VirtAddr {
        VirtAddr(self.elements.at(i).0 + offset)
    }
}

type Emit<T> = std::result::Result<T, Stop>;

/// What a swap step decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// The cost falls: always taken.
    Good,
    /// The cost rises, taken by the Metropolis criterion.
    Bad,
    Rejected,
}

/// The annealer's state: the netlist, the temperature and the two elements of the last step.
pub struct Annealer {
    pub net: Netlist,
    pub l: Layout,
    pub temp: f64,
    rng: Rng,
    b: u64,
}

impl Annealer {
    pub fn new(net: Netlist, l: Layout, temp: f64, mut rng: Rng) -> Annealer {
        let b = rng.below(net.n);
        Annealer {
            net,
            l,
            temp,
            rng,
            b,
        }
    }

    /// The routing cost change of moving element `i` from `from` to `to`: for each of its
    /// fan-in and fan-out wires, read the wired element's location through its pointer.
    fn swap_cost(&self, e: &mut Emitter, i: u64, from: u32, to: u32) -> Emit<i64> {
        let (net, l) = (&self.net, &self.l);
        let (n, first) = (net.fans(i), net.first_fan(i));
        let fanin = n / 2;
        let (mut before, mut after) = (0, 0);
        for (vector, range) in [(FANIN_VEC, 0..fanin), (FANOUT_VEC, fanin..n)] {
            // The vector's begin and end pointers.
            let begin = e.load(l.field(i, vector), 8)?;
            e.load(l.field(i, vector + 8), 8)?;
            for j in range {
                e.instr(2);
                let ptr = e.load_dep(l.fans.at(first + j), 8, begin)?;
                let f = net.fan(i, j);
                let loc_ptr = e.load_dep(l.field(f, PRESENT_LOC), 8, ptr)?;
                let cell = net.loc[f as usize];
                e.load_dep(l.locations.at(cell as u64), 8, loc_ptr)?;
                e.instr(8);
                before += net.distance(from, cell);
                after += net.distance(to, cell);
            }
        }
        Ok(after as i64 - before as i64)
    }

    /// One step: the last step's second element and a new random one; trade places if the
    /// criterion accepts.
    pub fn step(&mut self, e: &mut Emitter) -> Emit<Move> {
        let a = self.b;
        // Any element but `a`.
        let b = (a + 1 + self.rng.below(self.net.n - 1)) % self.net.n;
        self.b = b;
        e.instr(10);
        let (a_cell, b_cell) = (self.net.loc[a as usize], self.net.loc[b as usize]);
        let a_ptr = e.load(self.l.field(a, PRESENT_LOC), 8)?;
        let b_ptr = e.load(self.l.field(b, PRESENT_LOC), 8)?;
        e.load_dep(self.l.locations.at(a_cell as u64), 8, a_ptr)?;
        e.load_dep(self.l.locations.at(b_cell as u64), 8, b_ptr)?;
        let delta = self.swap_cost(e, a, a_cell, b_cell)? + self.swap_cost(e, b, b_cell, a_cell)?;
        e.instr(6);
        let verdict = if delta < 0 {
            Move::Good
        } else if self.rng.unit() < (-(delta as f64) / self.temp).exp() {
            Move::Bad
        } else {
            Move::Rejected
        };
        if verdict != Move::Rejected {
            // Each element's location pointer now names the other's location.
            e.store(self.l.field(a, PRESENT_LOC), 8)?;
            e.store(self.l.field(b, PRESENT_LOC), 8)?;
            self.net.loc.swap(a as usize, b as usize);
        }
        Ok(verdict)
    }
}

pub fn build(
    cfg: &CannealConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let input = cfg
        .input()
        .ok_or_else(|| Error::config("workload.input", "unknown"))?;
    let n = cfg.elements().unwrap_or(input.elements);
    let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
    let l = Layout::alloc(os, &mut heap, n)?;
    Ok(ThreadedSource::spawn(pid, cfg.references, move |e| {
        // The netlist is read before canneal's region of interest: built on the host, not
        // emitted.
        let net = Netlist::new(n, seed);
        let rng = Rng::new(seed, rng::stream::WORKLOAD);
        let mut annealer = Annealer::new(net, l, input.start_temp, rng);
        for _ in 0..input.temp_steps {
            for _ in 0..input.swaps_per_temp {
                annealer.step(e)?;
            }
            annealer.temp /= COOLING;
        }
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Op;
    use crate::workload::testutil;

    fn cfg(input: &str, elements: u64) -> CannealConfig {
        CannealConfig {
            input: input.into(),
            elements,
            references: 10_000,
            populate: false,
        }
    }

    fn annealer(n: u64, temp: f64) -> Annealer {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let l = Layout::alloc(&mut os, &mut heap, n).unwrap();
        Annealer::new(Netlist::new(n, 3), l, temp, Rng::new(3, 77))
    }

    #[test]
    fn wiring_is_implicit_and_consistent() {
        for n in [2, 3, 1000, 1001] {
            let net = Netlist::new(n, 1);
            let mut total = 0;
            for i in 0..n {
                assert_eq!(net.first_fan(i), total, "n {n} element {i}");
                assert!((2..=14).contains(&net.fans(i)));
                for j in 0..net.fans(i) {
                    let f = net.fan(i, j);
                    assert!(f < n && f != i);
                }
                total += net.fans(i);
            }
            assert_eq!(total, n * MEAN_FANS, "n {n}");
        }
        let net = Netlist::new(100, 1);
        assert_eq!(net.width, 10);
        assert_eq!(net.distance(0, 99), 18);
        assert_eq!(net.distance(12, 21), 2);
    }

    #[test]
    fn a_step_reads_both_elements_and_their_wired_locations_and_swaps_when_accepted() {
        let mut an = annealer(2000, 1e12);
        let l = an.l;
        let recs = testutil::run(move |e| {
            for _ in 0..50 {
                let a = an.b;
                let before = an.net.clone();
                let start = e.emitted();
                let verdict = an.step(e)?;
                let b = an.b;
                // A hot annealer takes nearly every move; every taken move trades places.
                if verdict == Move::Rejected {
                    assert_eq!(an.net.loc, before.loc);
                } else {
                    assert_eq!(an.net.loc[a as usize], before.loc[b as usize]);
                    assert_eq!(an.net.loc[b as usize], before.loc[a as usize]);
                }
                // Reads: the two location pointers and locations, then per element two vectors'
                // begin/end and three loads per wire; and two stores if taken.
                let loads = 4 + 4 + 4 + 3 * (before.fans(a) + before.fans(b));
                let stores = if verdict == Move::Rejected { 0 } else { 2 };
                assert_eq!(e.emitted() - start, loads + stores);
            }
            Ok(())
        });
        // Every record inside the three arrays; each wired location is read through the wired
        // element's pointer.
        for r in &recs {
            let inside = [l.elements, l.fans, l.locations]
                .iter()
                .any(|a| (a.base.0..a.base.0 + a.bytes()).contains(&r.vaddr.0));
            assert!(inside, "{:x}", r.vaddr.0);
        }
        for (k, r) in recs.iter().enumerate() {
            let loc =
                (l.locations.base.0..l.locations.base.0 + l.locations.bytes()).contains(&r.vaddr.0);
            if loc {
                let from = recs[k - r.dep as usize].vaddr.0;
                assert_eq!((from - l.elements.base.0) % ELEM_BYTES, PRESENT_LOC);
            }
        }
        assert!(recs.iter().any(|r| r.op == Op::Store));
    }

    #[test]
    fn cooling_lowers_the_routing_cost() {
        let an = annealer(4096, 2000.0);
        testutil::run(move |e| {
            let mut an = an;
            let start = an.net.total_cost();
            let mut costs = vec![start];
            let mut rejected_late = 0;
            for step in 0..12 {
                for _ in 0..4000 {
                    let v = an.step(e)?;
                    if step == 11 && v == Move::Rejected {
                        rejected_late += 1;
                    }
                }
                an.temp /= COOLING;
                costs.push(an.net.total_cost());
            }
            // It falls, and keeps falling as the temperature does.
            let end = *costs.last().unwrap();
            assert!(end < start * 95 / 100, "{costs:?}");
            assert!(end < costs[8] && costs[8] < costs[4], "{costs:?}");
            // Cold, it rejects most moves.
            assert!(rejected_late > 2000, "{rejected_late}");
            Ok(())
        });
    }

    #[test]
    fn same_seed_same_stream() {
        let stream = |seed| {
            let mut os = testutil::os(64);
            let pid = os.spawn().unwrap();
            let c = cfg("simsmall", 5000);
            c.validate("workload").unwrap();
            testutil::stream_hash(&testutil::drain_owned(
                build(&c, &mut os, pid, seed).unwrap(),
            ))
        };
        assert_eq!(stream(1), stream(1));
        assert_ne!(stream(1), stream(2));
    }

    #[test]
    fn inputs_footprints_and_bad_keys() {
        let native = cfg("native", 0);
        native.validate("w").unwrap();
        let fp = native.footprint().unwrap();
        // 2.5M elements: 220 MB of objects, 160 MB of wires, 20 MB of locations.
        assert!((400_000_000..401_000_000).contains(&fp), "{fp}");
        let mut c = cfg("simlarge", 0);
        let got = c.fit(8 << 30).unwrap();
        assert!(got <= 8 << 30 && got > (8 << 30) - 3 * 4096, "{got}");
        assert_eq!(c.footprint(), Some(got));
        assert!(c.fit(100).is_none());
        let err = |c: CannealConfig| c.validate("workload").unwrap_err().to_string();
        let e = err(cfg("huge", 0));
        assert!(
            e.contains("workload.input") && e.contains("simsmall"),
            "{e}"
        );
        assert!(err(cfg("native", 1)).contains("workload.elements"));
        assert!(err(CannealConfig {
            references: 0,
            ..cfg("native", 0)
        })
        .contains("workload.references"));
        assert!(toml::from_str::<CannealConfig>("nets = 3").is_err());
    }
}
