//! `streamcluster`: PARSEC 3.0's streamcluster, online k-median clustering of a stream of
//! points. The stream arrives in blocks of `chunk` points of `dim` float coordinates; each block
//! is clustered by the local search of Charikar and Guha's streaming k-median as streamcluster
//! runs it (`pkmedian`): a first solution by `pspeedy` (open a point as a centre with a
//! probability proportional to its cost, and move every point that is closer to it), then
//! rounds of `pgain` (would opening candidate centre `x` — and closing the centres whose points
//! would rather move to `x` — lower the cost? then do it) over a sample of feasible centres. The
//! block's centres, weighted by the points they serve, are copied to the centre set.
//!
//! Memory, as streamcluster lays it out: the block of coordinates, the array of 32-byte point
//! records (weight, pointer to the coordinates, assigned centre, cost), the per-point work
//! arrays of `pgain` (`is_center`, `switch_membership`, `center_table`) and of the feasible
//! sampling (`accumweight`), the per-centre `lower` gains, and the centre set. The shuffles move
//! point records, not coordinates, so after the first a point's coordinates are one pointer
//! away anywhere in the block: every distance chases that pointer and reads both points'
//! coordinates (one 16-byte load per four floats, as the compiled loop's SSE vectors do).
//!
//! Coordinates steer every decision, so the host keeps them, one byte each (PARSEC's generator
//! draws uniform floats in [0, 1); here uniform multiples of 1/256, which are exactly
//! representable: the distances computed are those of the stored values).

use super::emit::{Array, Emitter, SimHeap, Stop, ThreadedSource};
use crate::addr::page_rounded;
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};

/// A PARSEC input: stream length, block size, dimensions, centre-set capacity. Every input
/// asks for 10 to 20 centres.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Input {
    pub name: &'static str,
    pub points: u64,
    pub chunk: u64,
    pub dim: u64,
    pub clustersize: u64,
}

pub const INPUTS: [Input; 4] = [
    Input {
        name: "simsmall",
        points: 4096,
        chunk: 4096,
        dim: 32,
        clustersize: 1000,
    },
    Input {
        name: "simmedium",
        points: 8192,
        chunk: 8192,
        dim: 64,
        clustersize: 1000,
    },
    Input {
        name: "simlarge",
        points: 16384,
        chunk: 16384,
        dim: 128,
        clustersize: 1000,
    },
    Input {
        name: "native",
        points: 1_000_000,
        chunk: 200_000,
        dim: 128,
        clustersize: 5000,
    },
];

const KMIN: u64 = 10;
const KMAX: u64 = 20;
/// `pgain` calls per `pFL` round: streamcluster's `ITER * kmax * ln(kmax)`.
const PGAINS_PER_ROUND: u64 = 179;
/// Bytes of a point record, and where its fields are.
const POINT_BYTES: u64 = 32;
const WEIGHT: u64 = 0;
const COORD: u64 = 8;
const ASSIGN: u64 = 16;
const COST: u64 = 24;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamclusterConfig {
    /// PARSEC input: `simsmall`, `simmedium`, `simlarge` or `native`.
    #[serde(default = "default_input")]
    pub input: String,
    /// Points per block; 0 takes the input's (`footprint` sets it). The stream holds as many
    /// blocks as the input's (5 for `native`, 1 for the others).
    #[serde(default)]
    pub chunk: u64,
    #[serde(default = "super::index::default_refs")]
    pub references: u64,
    /// Map the memory before the first reference.
    #[serde(default = "super::index::default_populate")]
    pub populate: bool,
}

fn default_input() -> String {
    "native".into()
}

/// The sizes a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub chunk: u64,
    pub dim: u64,
    pub blocks: u64,
    pub clustersize: u64,
}

impl Sizes {
    /// Bytes of every array (the block, the point records, the work arrays, the centre set).
    pub fn bytes(&self) -> Option<u64> {
        let c = self.chunk;
        let row = self.dim.checked_mul(4)?;
        Some(
            page_rounded(c.checked_mul(row)?)
                + page_rounded(c * POINT_BYTES)
                + 2 * page_rounded(c)
                + 2 * page_rounded(4 * c)
                + page_rounded(8 * c)
                + page_rounded(self.clustersize * POINT_BYTES)
                + page_rounded(self.clustersize.checked_mul(row)?),
        )
    }
}

impl StreamclusterConfig {
    pub fn input(&self) -> Option<Input> {
        INPUTS
            .iter()
            .copied()
            .find(|i| i.name.eq_ignore_ascii_case(&self.input))
    }

    pub fn sizes(&self) -> Option<Sizes> {
        let i = self.input()?;
        Some(Sizes {
            chunk: if self.chunk == 0 { i.chunk } else { self.chunk },
            dim: i.dim,
            blocks: i.points / i.chunk,
            clustersize: i.clustersize,
        })
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        let Some(s) = self.sizes() else {
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
        if !(2 * KMAX..=1 << 32).contains(&s.chunk) {
            return Err(Error::config(
                format!("{path}.chunk"),
                format!(
                    "must be between {} (twice the most centres) and 2^32, got {}",
                    2 * KMAX,
                    s.chunk
                ),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }

    pub fn footprint(&self) -> Option<u64> {
        self.sizes()?.bytes()
    }

    /// Host bytes: a byte per coordinate of a block, and 40 bytes of each point's state (its
    /// record, the centre flag, `pgain`'s and the sampling's working arrays).
    pub fn host_bytes(&self) -> Option<u64> {
        let s = self.sizes()?;
        Some(s.chunk * (s.dim + 40) + (1 << 20))
    }

    /// Set `chunk` to the most points whose arrays fit in `bytes`.
    pub fn fit(&mut self, bytes: u64) -> Option<u64> {
        let s = self.sizes()?;
        let at = |chunk| Sizes { chunk, ..s }.bytes().unwrap_or(u64::MAX);
        let hi = (bytes / (4 * s.dim) + 2).min(1 << 32);
        self.chunk = super::footprint::largest_fitting(2 * KMAX, hi, bytes, at)?;
        Some(at(self.chunk))
    }

    pub fn min_footprint(&self) -> Option<u64> {
        Sizes {
            chunk: 2 * KMAX,
            ..self.sizes()?
        }
        .bytes()
    }
}

/// The arrays in simulated memory.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub block: Array,
    pub points: Array,
    pub is_center: Array,
    pub switch: Array,
    pub center_table: Array,
    pub accumweight: Array,
    pub lower: Array,
    pub centers: Array,
    pub center_block: Array,
}

impl Layout {
    pub fn alloc(os: &mut dyn AddressSpaces, heap: &mut SimHeap, s: Sizes) -> Result<Layout> {
        let c = s.chunk;
        Ok(Layout {
            block: heap.array(os, c, 4 * s.dim)?,
            points: heap.array(os, c, POINT_BYTES)?,
            is_center: heap.array(os, c, 1)?,
            switch: heap.array(os, c, 1)?,
            center_table: heap.array(os, c, 4)?,
            accumweight: heap.array(os, c, 4)?,
            lower: heap.array(os, c, 8)?,
            centers: heap.array(os, s.clustersize, POINT_BYTES)?,
            center_block: heap.array(os, s.clustersize, 4 * s.dim)?,
        })
    }

    fn field(&self, i: u64, offset: u64) -> VirtAddr {
        VirtAddr(self.points.at(i).0 + offset)
    }
}

type Emit<T> = std::result::Result<T, Stop>;

/// One point record as the host sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub weight: f32,
    /// The block row of its coordinates.
    pub row: u32,
    pub assign: u32,
    pub cost: f32,
}

/// A block being clustered: the coordinates (row-major, `dim` bytes per row; value `v` is
/// the float `v / 256`), the point records and the open centres.
pub struct Block {
    pub dim: usize,
    pub coords: Vec<u8>,
    pub p: Vec<Point>,
    pub is_center: Vec<bool>,
    pub l: Layout,
}

impl Block {
    /// A block of `n` points of `dim` dimensions at `l`, before its points are read: every
    /// point of weight 1, unassigned, no centre open.
    fn new(n: usize, dim: usize, l: Layout) -> Block {
        let point = Point {
            weight: 1.0,
            row: 0,
            assign: 0,
            cost: 0.0,
        };
        Block {
            dim,
            coords: vec![0; n * dim],
            p: vec![point; n],
            is_center: vec![false; n],
            l,
        }
    }

    /// Squared Euclidean distance between points `i` and `j` (streamcluster's `dist`), read
    /// through both records' coordinate pointers.
    fn dist(&self, e: &mut Emitter, i: usize, j: usize) -> Emit<f32> {
        let l = &self.l;
        let pi = e.load(l.field(i as u64, COORD), 8)?;
        let pj = e.load(l.field(j as u64, COORD), 8)?;
        let (ri, rj) = (self.p[i].row as u64, self.p[j].row as u64);
        for k in (0..self.dim as u64).step_by(4) {
            e.instr(3);
            e.load_dep(VirtAddr(l.block.at(ri).0 + 4 * k), 16, pi)?;
            e.load_dep(VirtAddr(l.block.at(rj).0 + 4 * k), 16, pj)?;
        }
        Ok(self.distance(i, j))
    }

    /// The distance itself, on the host.
    pub fn distance(&self, i: usize, j: usize) -> f32 {
        let (a, b) = (self.row(i), self.row(j));
        let sum: u32 = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| {
                let d = x.abs_diff(y) as u32;
                d * d
            })
            .sum();
        sum as f32 / 65536.0
    }

    fn row(&self, i: usize) -> &[u8] {
        let r = self.p[i].row as usize * self.dim;
        &self.coords[r..r + self.dim]
    }

    fn n(&self) -> usize {
        self.p.len()
    }

    /// Read the next block of the stream: draw each point's coordinates, store them, and set
    /// up its record (weight 1, coordinates at its own row, no centre yet).
    fn read(&mut self, e: &mut Emitter, rng: &mut Rng) -> Emit<()> {
        let l = self.l;
        for i in 0..self.n() {
            let row = i * self.dim;
            for k in 0..self.dim {
                self.coords[row + k] = rng.below(256) as u8;
                if k % 4 == 3 {
                    e.instr(12);
                    e.store(VirtAddr(l.block.at(i as u64).0 + 4 * (k as u64 - 3)), 16)?;
                }
            }
            self.p[i] = Point {
                weight: 1.0,
                row: i as u32,
                assign: 0,
                cost: 0.0,
            };
            self.is_center[i] = false;
            e.instr(2);
            e.store(l.field(i as u64, WEIGHT), 4)?;
            e.store(l.field(i as u64, COORD), 8)?;
            e.store(l.is_center.at(i as u64), 1)?;
        }
        Ok(())
    }

    /// Shuffle the point records (streamcluster's `shuffle`): each swap copies two 32-byte
    /// records, two 16-byte moves each way.
    fn shuffle(&mut self, e: &mut Emitter, rng: &mut Rng) -> Emit<()> {
        let n = self.n();
        for i in 0..n - 1 {
            let j = i + rng.below((n - i) as u64) as usize;
            e.instr(6);
            for k in [i, j] {
                e.load(self.l.points.at(k as u64), 16)?;
                e.load(VirtAddr(self.l.points.at(k as u64).0 + 16), 16)?;
            }
            for k in [i, j] {
                e.store(self.l.points.at(k as u64), 16)?;
                e.store(VirtAddr(self.l.points.at(k as u64).0 + 16), 16)?;
            }
            self.p.swap(i, j);
        }
        Ok(())
    }

    /// Assign `i` to centre `c` at weighted cost `cost`.
    fn assign(&mut self, e: &mut Emitter, i: usize, c: usize, cost: f32) -> Emit<()> {
        self.p[i].assign = c as u32;
        self.p[i].cost = cost;
        e.store(self.l.field(i as u64, COST), 4)?;
        e.store(self.l.field(i as u64, ASSIGN), 8).map(drop)
    }

    /// A point's weight, read.
    fn weight(&self, e: &mut Emitter, i: usize) -> Emit<f32> {
        e.load(self.l.field(i as u64, WEIGHT), 4)?;
        Ok(self.p[i].weight)
    }

    /// `pspeedy`: open point 0 and assign everything to it, then walk the points, opening
    /// each with probability cost / z and moving every point closer to a newly opened centre.
    /// Returns the number of centres and the total cost (`z` per centre plus the points').
    pub fn pspeedy(&mut self, e: &mut Emitter, z: f32, rng: &mut Rng) -> Emit<(u64, f64)> {
        let n = self.n();
        for i in 0..n {
            let d = self.dist(e, i, 0)? * self.weight(e, i)?;
            self.assign(e, i, 0, d)?;
            self.is_center[i] = false;
        }
        self.is_center[0] = true;
        let mut k = 1;
        for i in 1..n {
            e.instr(4);
            e.load(self.l.field(i as u64, COST), 4)?;
            if (rng.unit() as f32) < self.p[i].cost / z {
                k += 1;
                self.is_center[i] = true;
                for j in 0..n {
                    let d = self.dist(e, j, i)? * self.weight(e, j)?;
                    e.load(self.l.field(j as u64, COST), 4)?;
                    if d < self.p[j].cost {
                        self.assign(e, j, i, d)?;
                    }
                }
            }
        }
        let cost = z as f64 * k as f64 + self.p.iter().map(|p| p.cost as f64).sum::<f64>();
        Ok((k, cost))
    }

    /// `selectfeasible_fast`: sample candidate centres with probability proportional to their
    /// cost (a prefix sum of the costs, then a binary search of it per sample).
    fn feasible(&self, e: &mut Emitter, rng: &mut Rng) -> Emit<Vec<usize>> {
        let n = self.n();
        let want = ((KMIN as f64 * (3.0 + (n as f64).ln())) as usize).min(n);
        if want == n {
            return Ok((0..n).collect());
        }
        let mut accum = Vec::with_capacity(n);
        let mut sum = 0.0f64;
        for i in 0..n {
            e.instr(2);
            e.load(self.l.field(i as u64, COST), 4)?;
            sum += self.p[i].cost as f64;
            accum.push(sum);
            e.store(self.l.accumweight.at(i as u64), 4)?;
        }
        let mut out = Vec::with_capacity(want);
        for _ in 0..want {
            let target = rng.unit() * sum;
            let (mut lo, mut hi) = (0, n - 1);
            while lo < hi {
                let mid = (lo + hi) / 2;
                e.instr(4);
                e.load(self.l.accumweight.at(mid as u64), 4)?;
                if accum[mid] > target {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            out.push(lo);
        }
        Ok(out)
    }

    /// `pgain`: the gain of opening `x` (closing every centre whose points would, together,
    /// save more than `z` by moving to `x`); if positive, make the change. Returns the gain and
    /// the new number of centres.
    pub fn pgain(&mut self, e: &mut Emitter, x: usize, z: f32, k: u64) -> Emit<(f64, u64)> {
        let n = self.n();
        let l = self.l;
        // Number the open centres: center_table maps a centre to its slot of `lower`.
        let mut table = vec![0u32; n];
        let mut centres = 0u32;
        for (i, slot) in table.iter_mut().enumerate() {
            e.instr(2);
            e.load(l.is_center.at(i as u64), 1)?;
            if self.is_center[i] {
                *slot = centres;
                e.store(l.center_table.at(i as u64), 4)?;
                centres += 1;
            }
        }
        for c in 0..centres as u64 {
            e.store(l.lower.at(c), 8)?;
        }
        // What each point saves by moving to x, or what its centre would save if closed.
        let mut lower = vec![0f64; centres as usize];
        let mut switch = vec![false; n];
        let mut x_cost = vec![0f32; n];
        let mut opening = 0f64;
        for i in 0..n {
            let cost = self.dist(e, i, x)? * self.weight(e, i)?;
            x_cost[i] = cost;
            e.instr(4);
            let rec = e.load(l.field(i as u64, COST), 4)?;
            let current = self.p[i].cost;
            if cost < current {
                switch[i] = true;
                e.store(l.switch.at(i as u64), 1)?;
                opening += (cost - current) as f64;
            } else {
                let a = self.p[i].assign as usize;
                e.load_dep(l.field(i as u64, ASSIGN), 8, rec)?;
                let t = e.load(l.center_table.at(a as u64), 4)?;
                e.load_dep(l.lower.at(table[a] as u64), 8, t)?;
                e.store_dep(l.lower.at(table[a] as u64), 8, t)?;
                lower[table[a] as usize] += (current - cost) as f64;
            }
        }
        // A centre closes if its points save more than the z it costs by moving to x.
        let mut closing = 0;
        for (i, &t) in table.iter().enumerate() {
            e.instr(2);
            e.load(l.is_center.at(i as u64), 1)?;
            if self.is_center[i] {
                let t = t as usize;
                e.load(l.lower.at(t as u64), 8)?;
                let low = z as f64 + lower[t];
                lower[t] = low;
                e.store(l.lower.at(t as u64), 8)?;
                if low > 0.0 {
                    closing += 1;
                    opening -= low;
                }
            }
        }
        opening += z as f64;
        let gain = if opening < 0.0 {
            for i in 0..n {
                e.instr(3);
                let a = self.p[i].assign as usize;
                let rec = e.load(l.field(i as u64, ASSIGN), 8)?;
                let t = e.load_dep(l.center_table.at(a as u64), 4, rec)?;
                e.load_dep(l.lower.at(table[a] as u64), 8, t)?;
                e.load(l.switch.at(i as u64), 1)?;
                let close = self.is_center[a] && lower[table[a] as usize] > 0.0;
                if switch[i] || close {
                    self.assign(e, i, x, x_cost[i])?;
                }
            }
            for i in 0..n {
                e.load(l.is_center.at(i as u64), 1)?;
                if self.is_center[i] && lower[table[i] as usize] > 0.0 {
                    self.is_center[i] = false;
                    e.store(l.is_center.at(i as u64), 1)?;
                }
            }
            self.is_center[x] = true;
            e.store(l.is_center.at(x as u64), 1)?;
            -opening
        } else {
            0.0
        };
        // switch_membership is cleared for the next call (a memset, 16 bytes a store).
        for i in (0..n as u64).step_by(16) {
            e.store(l.switch.at(i), (n as u64 - i).min(16) as u8)?;
        }
        let k = k + u64::from(gain > 0.0) - if gain > 0.0 { closing } else { 0 };
        Ok((gain, k))
    }

    /// `pFL`: rounds of `pgain` over the shuffled feasible centres until a round improves the
    /// cost by less than the fraction `eps`.
    #[allow(clippy::too_many_arguments)]
    fn pfl(
        &mut self,
        e: &mut Emitter,
        feasible: &mut [usize],
        z: f32,
        k: &mut u64,
        mut cost: f64,
        eps: f64,
        rng: &mut Rng,
    ) -> Emit<f64> {
        loop {
            for i in (1..feasible.len()).rev() {
                feasible.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let mut change = 0.0;
            for i in 0..PGAINS_PER_ROUND as usize {
                let x = feasible[i % feasible.len()];
                let (gain, now) = self.pgain(e, x, z, *k)?;
                change += gain;
                *k = now;
            }
            cost -= change;
            if change / cost <= eps {
                return Ok(cost);
            }
        }
    }

    /// `pkmedian`: cluster the block into KMIN..=KMAX centres, searching for the facility cost
    /// `z` that gives that many.
    pub fn pkmedian(&mut self, e: &mut Emitter, rng: &mut Rng) -> Emit<u64> {
        let n = self.n();
        // hiz: the cost of serving everything from point 0.
        let mut hiz = 0.0f64;
        for i in 0..n {
            hiz += (self.dist(e, i, 0)? * self.weight(e, i)?) as f64;
        }
        let mut loz = 0.0f64;
        let mut z = ((hiz + loz) / 2.0) as f32;
        self.shuffle(e, rng)?;
        let (mut k, mut cost) = self.pspeedy(e, z, rng)?;
        // Too few centres: a cheaper facility cost, until pspeedy opens enough.
        while k < KMIN && z > f32::MIN_POSITIVE {
            hiz = z as f64;
            z = ((hiz + loz) / 2.0) as f32;
            self.shuffle(e, rng)?;
            (k, cost) = self.pspeedy(e, z, rng)?;
        }
        let mut feasible = self.feasible(e, rng)?;
        loop {
            cost = self.pfl(e, &mut feasible, z, &mut k, cost, 0.1, rng)?;
            if (KMIN..=KMAX).contains(&k) || hiz - loz < 1e-4 * hiz.max(1e-30) {
                self.pfl(e, &mut feasible, z, &mut k, cost, 0.001, rng)?;
                return Ok(k);
            }
            // Bisect the facility cost: more centres than wanted make it dearer.
            let old = z as f64;
            if k > KMAX {
                loz = old;
            } else {
                hiz = old;
            }
            z = ((hiz + loz) / 2.0) as f32;
            // The k open centres now cost the new z each.
            cost += (z as f64 - old) * k as f64;
        }
    }

    /// `contcenters` and `copycenters`: the centres take their points' weight, and their
    /// coordinates and weights are appended to the centre set (up to its capacity).
    fn copy_centres(&mut self, e: &mut Emitter, into: &mut u64, capacity: u64) -> Emit<()> {
        let l = self.l;
        for i in 0..self.n() {
            e.instr(3);
            let rec = e.load(l.field(i as u64, ASSIGN), 8)?;
            let a = self.p[i].assign as usize;
            if a != i {
                e.load_dep(l.field(a as u64, WEIGHT), 4, rec)?;
                e.store_dep(l.field(a as u64, WEIGHT), 4, rec)?;
                self.p[a].weight += self.p[i].weight;
            }
        }
        for i in 0..self.n() {
            e.load(l.is_center.at(i as u64), 1)?;
            if !self.is_center[i] || *into >= capacity {
                continue;
            }
            let (src, dst) = (l.block.at(self.p[i].row as u64), l.center_block.at(*into));
            for k in (0..self.dim as u64 * 4).step_by(16) {
                e.load(VirtAddr(src.0 + k), 16)?;
                e.store(VirtAddr(dst.0 + k), 16)?;
            }
            e.store(l.centers.at(*into), 16)?;
            *into += 1;
        }
        Ok(())
    }
}

pub fn build(
    cfg: &StreamclusterConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let s = cfg
        .sizes()
        .ok_or_else(|| Error::config("workload.input", "unknown"))?;
    let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
    let l = Layout::alloc(os, &mut heap, s)?;
    Ok(ThreadedSource::spawn(pid, cfg.references, move |e| {
        let mut rng = Rng::new(seed, rng::stream::WORKLOAD);
        let mut block = Block::new(s.chunk as usize, s.dim as usize, l);
        let mut centres = 0;
        for _ in 0..s.blocks {
            block.read(e, &mut rng)?;
            block.pkmedian(e, &mut rng)?;
            block.copy_centres(e, &mut centres, s.clustersize)?;
        }
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testutil;

    fn cfg(input: &str, chunk: u64) -> StreamclusterConfig {
        StreamclusterConfig {
            input: input.into(),
            chunk,
            references: 20_000,
            populate: false,
        }
    }

    fn block(n: u64, dim: u64, seed: u64) -> (Block, Rng) {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let s = Sizes {
            chunk: n,
            dim,
            blocks: 1,
            clustersize: 100,
        };
        let l = Layout::alloc(&mut os, &mut heap, s).unwrap();
        (Block::new(n as usize, dim as usize, l), Rng::new(seed, 5))
    }

    /// Every point assigned to an open centre at its recorded cost.
    fn consistent(b: &Block) {
        for i in 0..b.n() {
            let a = b.p[i].assign as usize;
            assert!(b.is_center[a], "point {i} assigned to closed {a}");
            let d = b.distance(i, a) * b.p[i].weight;
            assert!((d - b.p[i].cost).abs() <= 1e-4 * d.max(1.0), "point {i}");
        }
    }

    #[test]
    fn pspeedy_assigns_every_point_to_its_nearest_open_centre() {
        let (b, rng) = block(500, 16, 1);
        testutil::run(move |e| {
            let (mut b, mut rng) = (b, rng);
            b.read(e, &mut rng)?;
            b.shuffle(e, &mut rng)?;
            let (k, _) = b.pspeedy(e, 2.0, &mut rng)?;
            let open: Vec<usize> = (0..b.n()).filter(|&i| b.is_center[i]).collect();
            assert_eq!(open.len() as u64, k);
            assert!(k > 1, "{k}");
            for i in 0..b.n() {
                let nearest = open
                    .iter()
                    .map(|&c| b.distance(i, c))
                    .fold(f32::INFINITY, f32::min);
                assert_eq!(b.distance(i, b.p[i].assign as usize), nearest, "point {i}");
            }
            consistent(&b);
            Ok(())
        });
    }

    #[test]
    fn pgain_keeps_assignments_to_open_centres_and_lowers_the_cost() {
        let (b, rng) = block(400, 16, 2);
        testutil::run(move |e| {
            let (mut b, mut rng) = (b, rng);
            b.read(e, &mut rng)?;
            let (mut k, _) = b.pspeedy(e, 4.0, &mut rng)?;
            let total = |b: &Block| b.p.iter().map(|p| p.cost as f64).sum::<f64>();
            let mut cost = 4.0 * k as f64 + total(&b);
            let mut gained = false;
            for x in (0..400).step_by(7) {
                let (gain, now) = b.pgain(e, x, 4.0, k)?;
                k = now;
                let open = (0..b.n()).filter(|&i| b.is_center[i]).count() as u64;
                assert_eq!(open, k);
                consistent(&b);
                let after = 4.0 * k as f64 + total(&b);
                assert!(gain >= 0.0);
                assert!(
                    (cost - gain - after).abs() < 1e-3 * cost,
                    "{cost} {gain} {after}"
                );
                gained |= gain > 0.0;
                cost = after;
            }
            assert!(gained);
            Ok(())
        });
    }

    #[test]
    fn a_block_clusters_into_kmin_to_kmax_centres_inside_its_arrays() {
        let (b, rng) = block(300, 8, 3);
        let l = b.l;
        let arrays = [
            l.block,
            l.points,
            l.is_center,
            l.switch,
            l.center_table,
            l.accumweight,
            l.lower,
            l.centers,
            l.center_block,
        ];
        let mut src = ThreadedSource::spawn(0, u64::MAX, move |e| {
            let (mut b, mut rng) = (b, rng);
            b.read(e, &mut rng)?;
            let k = b.pkmedian(e, &mut rng)?;
            assert!((KMIN..=KMAX).contains(&k), "{k} centres");
            consistent(&b);
            let mut into = 0;
            b.copy_centres(e, &mut into, 100)?;
            assert_eq!(into, k);
            Ok(())
        });
        // Millions of records: checked batch by batch rather than collected.
        let mut buf = Vec::with_capacity(4096);
        let mut seen = 0;
        loop {
            crate::trace::RecordSource::fill(&mut src, &mut buf).unwrap();
            if buf.is_empty() {
                break;
            }
            seen += buf.len();
            for r in &buf {
                let end = r.vaddr.0 + r.size as u64;
                assert!(
                    arrays
                        .iter()
                        .any(|a| a.base.0 <= r.vaddr.0 && end <= a.base.0 + a.bytes()),
                    "{:x}",
                    r.vaddr.0
                );
            }
        }
        assert!(seen > 100_000, "{seen}");
    }

    #[test]
    fn same_seed_same_stream() {
        let stream = |seed| {
            let mut os = testutil::os(64);
            let pid = os.spawn().unwrap();
            // Past the reading of the block, whose addresses are the same for every seed.
            let c = StreamclusterConfig {
                references: 200_000,
                ..cfg("simsmall", 0)
            };
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
        // 200 000 points of 128 floats (102 MB) and their records and work arrays.
        let fp = native.footprint().unwrap();
        assert!((113_000_000..116_000_000).contains(&fp), "{fp}");
        let mut c = cfg("native", 0);
        let got = c.fit(8 << 30).unwrap();
        assert!(got <= 8 << 30 && got > (8 << 30) - 10 * 4096, "{got}");
        assert_eq!(c.footprint(), Some(got));
        assert!(c.fit(1000).is_none());
        let err = |c: StreamclusterConfig| c.validate("workload").unwrap_err().to_string();
        let e = err(cfg("huge", 0));
        assert!(e.contains("workload.input") && e.contains("native"), "{e}");
        assert!(err(cfg("native", 5)).contains("workload.chunk"));
        assert!(toml::from_str::<StreamclusterConfig>("dims = 3").is_err());
    }
}
