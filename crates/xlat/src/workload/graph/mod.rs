//! Graph analytics: the GraphBIG kernels (Utopia §7; ME-HPT §VI) run for
//! real over Graph500 Kronecker graphs.
//!
//! Every kernel shares the graph keys (`scale`, `edge_factor`, `references`, `populate`) and
//! the same set-up: the CSR arrays (`offsets`: one `u64` per vertex plus one, `neighbours`: one
//! `u32` per directed edge entry, `weights`: one `u32` per entry for the weighted kernels) and
//! the kernel's property arrays are allocated in the simulated process first, sized from the
//! parameters alone (so `xlat workloads` can measure the footprint without generating a graph);
//! the producer thread then generates the graph into a host-side [`Csr`] and runs the kernel,
//! emitting every access the algorithm makes at its simulated address.
//!
//! The edge arrays are sized for the bound `2 * edge_factor * 2^scale` entries (every generated
//! edge stored in both directions). Removing self loops and duplicates leaves fewer entries, so
//! the tail of the allocation is never touched, as in a program that allocates by the bound
//! before deduplicating. Computing the exact count would need the whole generation up front.
//!
//! Kernels restart when they finish (a new root, another round of iterations) so that any
//! `references` budget is filled; each kernel's docs say what a restart does.

pub mod bc;
pub mod bfs;
pub mod cc;
pub mod dc;
pub mod dfs;
pub mod gc;
pub mod implicit;
pub mod pr;
mod rmat;
pub mod sssp;
pub mod tc;

pub use bc::BcConfig;
pub use bfs::BfsConfig;
pub use cc::CcConfig;
pub use dc::DcConfig;
pub use dfs::DfsConfig;
pub use gc::GcConfig;
pub use implicit::Implicit;
pub use pr::PrConfig;
pub use rmat::Csr;
pub use sssp::SsspConfig;
pub use tc::TcConfig;

use super::emit::{Array, Emitter, RecId, SimHeap, Stop, ThreadedSource};
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use std::ops::Range;
use std::sync::Arc;

type Emit<T> = std::result::Result<T, Stop>;

const DEFAULT_SCALE: u32 = 20;
const DEFAULT_EDGE_FACTOR: u32 = 16;
const DEFAULT_REFERENCES: u64 = 10_000_000;
/// 2^30 vertices: ids must fit the `u32` neighbour entries.
const MAX_SCALE: u32 = 30;
/// Keeps the edge arrays' bound (`2 * edge_factor * 2^scale` entries) inside the address space.
const MAX_EDGE_FACTOR: u32 = 1024;

/// Defines a kernel's `[workload]` config: the graph keys every kernel shares plus the
/// kernel's own knobs (`name: type = default`), all optional.
macro_rules! kernel_config {
    (
        $(#[$doc:meta])*
        $name:ident { $( $(#[$fdoc:meta])* $field:ident : $ty:ty = $default:expr ),* $(,)? }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            /// log2 of the number of vertices (Graph500 SCALE).
            pub scale: u32,
            /// Generated edges per vertex before symmetrising (Graph500 edgefactor).
            pub edge_factor: u32,
            /// Memory references to emit.
            pub references: u64,
            /// Map the graph and property arrays before the first reference, as the program's
            /// graph loading does, so first-touch faults are not part of the measured run.
            pub populate: bool,
            /// Fraction of the graph's and properties' 2 MiB ranges that transparent huge
            /// pages cannot back: GraphBIG builds them from many small allocations, some in
            /// heap ranges THP does not back (0: every range is eligible, as one large array).
            pub thp_ineligible: f64,
            /// Where the edges come from: a host-side CSR, or rows derived on demand.
            pub graph: super::GraphKind,
            $( $(#[$fdoc])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    scale: super::DEFAULT_SCALE,
                    edge_factor: super::DEFAULT_EDGE_FACTOR,
                    references: super::DEFAULT_REFERENCES,
                    populate: true,
                    thp_ineligible: 0.0,
                    graph: super::GraphKind::Auto,
                    $( $field: $default, )*
                }
            }
        }

        impl $name {
            /// The keys shared by every graph kernel.
            pub fn keys(&self) -> super::GraphKeys {
                super::GraphKeys {
                    scale: self.scale,
                    edge_factor: self.edge_factor,
                    references: self.references,
                    populate: self.populate,
                    thp_ineligible: self.thp_ineligible,
                    graph: self.graph,
                    // Kernels with a `threads` key (bfs, pr) put theirs in place of this.
                    threads: 1,
                }
            }
        }
    };
}
pub(crate) use kernel_config;

/// The keys every graph kernel has, and the set-up's thread count.
#[derive(Clone, Copy, Debug)]
pub struct GraphKeys {
    pub scale: u32,
    pub edge_factor: u32,
    pub references: u64,
    pub populate: bool,
    /// Fraction of 2 MiB ranges THP may not back (see the `thp_ineligible` key).
    pub thp_ineligible: f64,
    pub graph: GraphKind,
    /// Software threads running the kernel: the `threads` key of the kernels that have one
    /// (`bfs`, `pr`), 1 for the sequential ones.
    pub threads: u32,
}

impl GraphKeys {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.scale == 0 || self.scale > MAX_SCALE {
            return Err(Error::config(
                format!("{path}.scale"),
                format!(
                    "must be between 1 and {MAX_SCALE} (log2 of the vertex count), got {}",
                    self.scale
                ),
            ));
        }
        if self.edge_factor == 0 || self.edge_factor > MAX_EDGE_FACTOR {
            return Err(Error::config(
                format!("{path}.edge_factor"),
                format!(
                    "must be between 1 and {MAX_EDGE_FACTOR}, got {}",
                    self.edge_factor
                ),
            ));
        }
        crate::config::fraction(
            format!("{path}.thp_ineligible"),
            "the arrays' 2 MiB ranges",
            self.thp_ineligible,
        )?;
        super::nonzero(format!("{path}.references"), self.references)?;
        super::threads_in_range(format!("{path}.threads"), self.threads)
    }
}

/// `graph`: where a kernel's edges come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphKind {
    /// Explicit up to [`AUTO_IMPLICIT_ENTRIES`] edge entries, implicit above.
    #[default]
    Auto,
    /// The Graph500 graph, generated and stored on the host as a CSR.
    Explicit,
    /// The same R-MAT distribution, each row derived on demand ([`implicit`]).
    Implicit,
}

/// `graph = "auto"` turns implicit above this many edge entries (`2 * edge_factor * 2^scale`):
/// 2^28 entries, a 1 GiB neighbour array, whose explicit construction needs about 3 GiB of host
/// memory and a minute or two of one core; above it the construction takes longer than a
/// paper-scale run simulates (Utopia's 8 GB `sssp`, 2^29.8 entries, spent over four minutes
/// building its CSR). The defaults (2^25 entries) and the `full` scales' 2^28 stay explicit.
pub const AUTO_IMPLICIT_ENTRIES: u64 = 1 << 28;

impl GraphKeys {
    /// Whether these keys run on the implicit graph.
    pub fn implicit(&self) -> bool {
        match self.graph {
            GraphKind::Explicit => false,
            GraphKind::Implicit => true,
            GraphKind::Auto => (2 * self.edge_factor as u64) << self.scale > AUTO_IMPLICIT_ENTRIES,
        }
    }

    /// Entries the neighbour (and weight) arrays are allocated for.
    pub fn max_entries(&self) -> u64 {
        if self.implicit() {
            implicit::max_entries(self.scale, self.edge_factor)
        } else {
            (2 * self.edge_factor as u64) << self.scale
        }
    }

    /// Bytes of simulated memory: offsets, neighbours, weights (`weighted`) and
    /// `vertex_bytes` of properties per vertex (the kernel's own arrays).
    pub fn footprint(&self, weighted: bool, vertex_bytes: u64) -> u64 {
        let n = 1u64 << self.scale;
        let page = crate::addr::page_rounded;
        let entries = self.max_entries();
        page((n + 1) * 8) + page(entries * 4) * (1 + weighted as u64) + page(n * vertex_bytes)
    }

    /// Upper bound of the host memory the graph and `vertex_bytes` of host state per vertex
    /// need: the explicit CSR and its construction buckets, or the implicit graph's offsets.
    pub fn host_bytes(&self, vertex_bytes: u64) -> u64 {
        let n = 1u64 << self.scale;
        let graph = if self.implicit() {
            // Offsets, and each thread's cache of hub rows.
            8 * (n + 1) + 4 * implicit::HUB_CACHE_ENTRIES as u64 * self.threads.max(1) as u64
        } else {
            // Offsets, the neighbour array, and 8 bytes per entry in the construction buckets
            // (freed bucket by bucket while the array fills) plus the label permutation.
            8 * (n + 1) + 12 * self.max_entries() + 4 * n
        };
        graph + n * vertex_bytes
    }
}

/// Where the producer thread gets its graph.
pub(crate) enum GraphSource {
    /// Generated on the producer thread.
    Kronecker { scale: u32, edge_factor: u32 },
    /// Rows derived on demand; the degrees are computed on the producer thread.
    Implicit { scale: u32, edge_factor: u32 },
    /// Given (tiny hand-written graphs in tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Given(Csr),
}

impl GraphSource {
    fn kronecker(keys: &GraphKeys) -> GraphSource {
        let (scale, edge_factor) = (keys.scale, keys.edge_factor);
        if keys.implicit() {
            GraphSource::Implicit { scale, edge_factor }
        } else {
            GraphSource::Kronecker { scale, edge_factor }
        }
    }

    fn vertices(&self) -> u64 {
        match self {
            GraphSource::Kronecker { scale, .. } | GraphSource::Implicit { scale, .. } => {
                1 << scale
            }
            GraphSource::Given(g) => g.vertices() as u64,
        }
    }

    /// Neighbour-array entries to allocate: the bound for generated graphs, exact for given ones.
    fn max_entries(&self) -> u64 {
        match self {
            GraphSource::Kronecker { scale, edge_factor } => (2 * *edge_factor as u64) << scale,
            GraphSource::Implicit { scale, edge_factor } => {
                implicit::max_entries(*scale, *edge_factor)
            }
            GraphSource::Given(g) => g.entries(),
        }
    }

    fn generate(&self, seed: u64) -> Adjacency {
        match self {
            GraphSource::Kronecker { scale, edge_factor } => {
                Adjacency::Explicit(Csr::rmat_shared(*scale, *edge_factor, seed))
            }
            GraphSource::Implicit { scale, edge_factor } => {
                Adjacency::Implicit(Implicit::new(*scale, *edge_factor, seed))
            }
            GraphSource::Given(g) => Adjacency::Explicit(Arc::new(g.clone())),
        }
    }
}

/// The host side of the graph: a stored CSR, or an implicit graph whose rows are regenerated
/// when read. Both answer the same questions; the kernels do not know which they run on.
pub(crate) enum Adjacency {
    /// Shared with other runs of this process on the same graph ([`Csr::rmat_shared`]).
    Explicit(Arc<Csr>),
    Implicit(Implicit),
}

impl Adjacency {
    pub fn vertices(&self) -> u32 {
        match self {
            Adjacency::Explicit(c) => c.vertices(),
            Adjacency::Implicit(g) => g.vertices(),
        }
    }

    /// Indices of `v`'s row in the neighbour array.
    #[inline]
    pub fn row(&self, v: u32) -> Range<u64> {
        match self {
            Adjacency::Explicit(c) => c.row(v),
            Adjacency::Implicit(g) => g.row(v),
        }
    }

    #[inline]
    pub fn degree(&self, v: u32) -> u64 {
        let r = self.row(v);
        r.end - r.start
    }

    /// The entry at index `i` of the neighbour array.
    #[inline]
    pub fn neighbour(&self, i: u64) -> u32 {
        match self {
            Adjacency::Explicit(c) => c.neighbour(i),
            Adjacency::Implicit(g) => g.neighbour(i),
        }
    }

    /// Run `f` on `v`'s neighbours (a host-side computation over the whole row, such as a
    /// search plan). An implicit row goes through this thread's row cache, so the loads of the
    /// row that follow do not generate it again.
    pub fn scan_row<R>(&self, v: u32, f: impl FnOnce(&[u32]) -> R) -> R {
        match self {
            Adjacency::Explicit(c) => f(c.neighbours(v)),
            Adjacency::Implicit(g) => g.with_row(v, f),
        }
    }
}

/// Allocation of a kernel's property arrays in the simulated process, before the graph exists.
pub(crate) struct Setup<'a> {
    heap: SimHeap,
    os: &'a mut dyn AddressSpaces,
    vertices: u64,
}

impl Setup<'_> {
    /// One element of `elem` bytes per vertex.
    pub fn per_vertex(&mut self, elem: u64) -> Result<Array> {
        self.heap.array(self.os, self.vertices, elem)
    }
}

/// The graph as the kernel sees it: the host CSR with its simulated arrays. The methods load
/// from the simulated arrays and return the host values.
pub(crate) struct Graph {
    pub adj: Adjacency,
    offsets: Array,
    neighbours: Array,
    weights: Option<Array>,
    salt: u64,
}

impl Graph {
    pub fn vertices(&self) -> u32 {
        self.adj.vertices()
    }

    /// Load `offsets[v]` and `offsets[v+1]`; `on` is the load `v` came from, if any. Returns the
    /// row and the first load, on which the row's neighbour loads depend (their index starts
    /// from it).
    pub fn row(&self, e: &mut Emitter, v: u32, on: Option<RecId>) -> Emit<(Range<u64>, RecId)> {
        let first = self.offsets.load(e, v as u64, on)?;
        self.offsets.load(e, v as u64 + 1, on)?;
        Ok((self.adj.row(v), first))
    }

    /// Load `neighbours[i]` of a row whose bounds came from `row`.
    #[inline]
    pub fn neighbour(&self, e: &mut Emitter, i: u64, row: RecId) -> Emit<(u32, RecId)> {
        let id = self.neighbours.load(e, i, Some(row))?;
        Ok((self.adj.neighbour(i), id))
    }

    /// Load `weights[i]`, the weight of edge `u`-`neighbours[i]`.
    pub fn weight(&self, e: &mut Emitter, u: u32, i: u64, row: RecId) -> Emit<u32> {
        let weights = self
            .weights
            .expect("weighted kernels allocate the weight array");
        weights.load(e, i, Some(row))?;
        Ok(rmat::edge_weight(u, self.adj.neighbour(i), self.salt))
    }

    /// A root for traversals: a random vertex with at least one edge, as Graph500 chooses its
    /// search keys (any vertex when the graph has no edges).
    pub fn pick_root(&self, rng: &mut Rng) -> u32 {
        let n = self.vertices();
        for _ in 0..64 {
            let v = rng.below(n as u64) as u32;
            if self.adj.degree(v) > 0 {
                return v;
            }
        }
        (0..n).find(|&v| self.adj.degree(v) > 0).unwrap_or(0)
    }

    /// Simulated arrays of the graph, for tests that check emitted addresses.
    #[cfg(test)]
    pub fn arrays(&self) -> (Array, Array, Option<Array>) {
        (self.offsets, self.neighbours, self.weights)
    }
}

/// Emitting an access to element `i` of a simulated array; `on` is the load the index came from.
pub(crate) trait Access {
    fn load(&self, e: &mut Emitter, i: u64, on: Option<RecId>) -> Emit<RecId>;
    fn store(&self, e: &mut Emitter, i: u64, on: Option<RecId>) -> Emit<RecId>;
}

impl Access for Array {
    #[inline]
    fn load(&self, e: &mut Emitter, i: u64, on: Option<RecId>) -> Emit<RecId> {
        let (va, size) = (self.at(i), self.elem as u8);
        match on {
            Some(d) => e.load_dep(va, size, d),
            None => e.load(va, size),
        }
    }

    #[inline]
    fn store(&self, e: &mut Emitter, i: u64, on: Option<RecId>) -> Emit<RecId> {
        let (va, size) = (self.at(i), self.elem as u8);
        match on {
            Some(d) => e.store_dep(va, size, d),
            None => e.store(va, size),
        }
    }
}

/// Address of the field at byte `offset` of element `i` (arrays of small structs).
pub(crate) fn field(a: &Array, i: u64, offset: u64) -> VirtAddr {
    VirtAddr(a.at(i).0 + offset)
}

/// The graph's simulated arrays: `offsets`, `neighbours` and (weighted kernels) `weights`.
type GraphArrays = (Array, Array, Option<Array>);

/// The heap every array of a graph kernel comes from: anonymous memory, of which the
/// `thp_ineligible` fraction of 2 MiB ranges cannot get huge pages (GraphBIG's many small
/// allocations; ME-HPT §VII-E2: with THP its graph kernels still map most pages at 4 KiB).
fn graph_heap(keys: &GraphKeys, pid: u16) -> SimHeap {
    let kind = match crate::os::per_mille(keys.thp_ineligible) {
        0 => MapKind::Anon,
        n => MapKind::AnonMixed {
            no_thp_per_mille: n,
        },
    };
    SimHeap::new(pid, kind, keys.populate)
}

/// Allocate the graph's arrays, then the kernel's properties (`props`), in process `pid`. One
/// routine for runs and tests, so a test that allocates again in a fresh OS finds the arrays
/// where the run put them.
fn alloc<P>(
    source: &GraphSource,
    keys: &GraphKeys,
    weighted: bool,
    os: &mut dyn AddressSpaces,
    pid: u16,
    props: impl FnOnce(&mut Setup) -> Result<P>,
) -> Result<(GraphArrays, P)> {
    let vertices = source.vertices();
    let entries = source.max_entries();
    let mut heap = graph_heap(keys, pid);
    let offsets = heap.array(os, vertices + 1, 8)?;
    // Each vertex's edge list (and its weights) is a small allocation of its own, made in
    // vertex order: glibc puts them one after the other on the brk heap.
    let neighbours = heap.objects(os, entries, 4)?;
    let weights = if weighted {
        Some(heap.objects(os, entries, 4)?)
    } else {
        None
    };
    let mut setup = Setup { heap, os, vertices };
    let props = props(&mut setup)?;
    Ok(((offsets, neighbours, weights), props))
}

/// Allocate the graph's arrays and the kernel's properties (`props`) in process `pid`, then start
/// the producer threads (`keys.threads` of them): thread 0 builds the graph from `source`, the
/// team shares it, and every thread runs `kernel` on it until the `references` budget is spent.
/// Each thread gets the same kernel random stream, so all of them pick the same roots.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start<P, K>(
    source: GraphSource,
    keys: &GraphKeys,
    weighted: bool,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
    props: impl FnOnce(&mut Setup) -> Result<P>,
    kernel: K,
) -> Result<ThreadedSource>
where
    P: Clone + Send + 'static,
    K: Fn(&mut Emitter, &Graph, P, &mut Rng) -> Emit<()> + Send + Sync + 'static,
{
    let ((offsets, neighbours, weights), props) = alloc(&source, keys, weighted, os, pid, props)?;
    let mut seeds = Rng::new(seed, rng::stream::WORKLOAD);
    let graph_seed = seeds.next_u64();
    let salt = seeds.next_u64();
    let kernel_rng = Rng::new(seeds.next_u64(), 0);
    let (source, kernel) = (Arc::new(source), Arc::new(kernel));
    Ok(ThreadedSource::team(
        pid,
        keys.references,
        keys.threads,
        |_| {
            let (source, kernel) = (source.clone(), kernel.clone());
            let (props, mut rng) = (props.clone(), kernel_rng.clone());
            move |e| {
                let graph = e.share(|| Graph {
                    adj: source.generate(graph_seed),
                    offsets,
                    neighbours,
                    weights,
                    salt,
                })?;
                kernel(e, &graph, props, &mut rng)
            }
        },
    ))
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Running kernels on tiny graphs and inspecting what they emitted.

    use super::*;
    use crate::trace::{Op, Record, RecordSource, Roi};
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};
    use std::sync::mpsc;

    pub fn os() -> crate::os::Os<crate::pt::radix::RadixPageTable> {
        let cfg = crate::SimConfig::load(
            "baseline-radix",
            &["os.physmem.fragmentation=0.0".to_string()],
        )
        .unwrap();
        crate::sim::system::boot_os::<crate::schemes::radix::Radix>(&cfg).unwrap()
    }

    pub fn drain(s: &mut dyn RecordSource) -> Vec<Record> {
        let mut all = Vec::new();
        let mut buf = Vec::with_capacity(1000);
        loop {
            s.fill(&mut buf).unwrap();
            if buf.is_empty() {
                return all;
            }
            all.extend_from_slice(&buf);
        }
    }

    pub fn hash(records: &[Record]) -> u64 {
        let mut h = DefaultHasher::new();
        for r in records {
            (r.vaddr.0, r.op, r.size, r.pid, r.instr_delta, r.dep).hash(&mut h);
        }
        h.finish()
    }

    /// Run `kernel` once on `csr` (unlimited budget) and return its records, the graph's
    /// arrays, the kernel's property arrays and its result.
    pub fn run_once<P, R>(
        csr: Csr,
        weighted: bool,
        props: impl FnOnce(&mut Setup) -> Result<P>,
        kernel: impl FnOnce(&mut Emitter, &Graph, &P) -> Emit<R> + Send + 'static,
    ) -> (Vec<Record>, (Array, Array, Option<Array>), P, R)
    where
        P: Clone + Send + 'static,
        R: Send + 'static,
    {
        let mut os = os();
        let pid = os.spawn().unwrap();
        let keys = GraphKeys {
            scale: 1,
            edge_factor: 1,
            references: u64::MAX,
            populate: false,
            thp_ineligible: 0.0,
            graph: GraphKind::Explicit,
            threads: 1,
        };
        let (tx, rx) = mpsc::channel();
        // `start` takes a kernel every thread can call; this one thread calls it once.
        let once = std::sync::Mutex::new(Some((kernel, tx)));
        let src = start(
            GraphSource::Given(csr),
            &keys,
            weighted,
            &mut os,
            pid,
            1,
            props,
            move |e, g, p: P, _| {
                let (kernel, tx) = once.lock().unwrap().take().expect("one thread, one call");
                let r = kernel(e, g, &p)?;
                tx.send((g.arrays(), p, r)).unwrap();
                Ok(())
            },
        )
        .unwrap();
        let mut src = src;
        let records = drain(&mut src);
        let (arrays, p, r) = rx.recv().unwrap();
        (records, arrays, p, r)
    }

    /// Run `kernel` once on `csr` in every thread of a team of `threads`: the merged records,
    /// where the barriers opened, and thread 0's result.
    pub fn run_team<P, R>(
        csr: Csr,
        threads: u32,
        props: impl FnOnce(&mut Setup) -> Result<P>,
        kernel: impl Fn(&mut Emitter, &Graph, &P) -> Emit<R> + Send + Sync + 'static,
    ) -> (Vec<Record>, Vec<u64>, R)
    where
        P: Clone + Send + 'static,
        R: Send + 'static,
    {
        let mut os = os();
        let pid = os.spawn().unwrap();
        let keys = GraphKeys {
            scale: 1,
            edge_factor: 1,
            references: u64::MAX,
            populate: false,
            thp_ineligible: 0.0,
            graph: GraphKind::Explicit,
            threads,
        };
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let mut src = start(
            GraphSource::Given(csr),
            &keys,
            false,
            &mut os,
            pid,
            1,
            props,
            move |e, g, p: P, _| {
                let r = kernel(e, g, &p)?;
                if e.thread() == 0 {
                    tx.lock().unwrap().send(r).unwrap();
                }
                Ok(())
            },
        )
        .unwrap();
        let records = drain(&mut src);
        (
            records,
            src.barrier_positions().to_vec(),
            rx.recv().unwrap(),
        )
    }

    /// Build the kernel `cfg` (whose graph keys are `keys`) as a run does and drain it: its
    /// records, where its region of interest begins, the graph's arrays and the kernel's
    /// property arrays (allocated again in a fresh OS, where they land where the run put them).
    pub fn run_with_roi<P>(
        cfg: &crate::workload::WorkloadConfig,
        keys: &GraphKeys,
        weighted: bool,
        props: impl FnOnce(&mut Setup) -> Result<P>,
    ) -> (Vec<Record>, Roi, GraphArrays, P) {
        let (mut run, mut fresh) = (os(), os());
        let mut src = crate::workload::build(cfg, &mut run, 7).unwrap();
        let records = drain(src.as_mut());
        let pid = fresh.spawn().unwrap();
        let source = GraphSource::kronecker(keys);
        let (arrays, p) = alloc(&source, keys, weighted, &mut fresh, pid, props).unwrap();
        (records, src.roi(), arrays, p)
    }

    /// `records` (a run's set-up) are exactly one store to every element of each of `arrays`,
    /// in any order (a team's threads interleave them).
    pub fn assert_initialise(records: &[Record], arrays: &[&Array]) {
        assert!(records.iter().all(|r| r.op == Op::Store && r.dep == 0));
        for a in arrays {
            let mut elems: Vec<u64> = accesses(records, a).into_iter().map(|(_, i)| i).collect();
            elems.sort_unstable();
            assert_eq!(elems, (0..a.len).collect::<Vec<_>>());
        }
        let stores: u64 = arrays.iter().map(|a| a.len).sum();
        assert_eq!(records.len() as u64, stores);
    }

    /// Every record's fields but its core, sorted: what a team did regardless of which thread
    /// did it and in which order the threads' records were merged.
    pub fn work(records: &[Record]) -> Vec<(u64, Op, u8, u32, u32)> {
        let mut w: Vec<_> = records
            .iter()
            .map(|r| (r.vaddr.0, r.op, r.size, r.instr_delta, r.dep))
            .collect();
        w.sort_unstable_by_key(|&(va, op, size, delta, dep)| (va, op as u8, size, delta, dep));
        w
    }

    /// Indices of the records that access `a`, with their operation, in order.
    pub fn accesses(records: &[Record], a: &Array) -> Vec<(Op, u64)> {
        records
            .iter()
            .filter(|r| r.vaddr.0 >= a.base.0 && r.vaddr.0 < a.base.0 + a.bytes())
            .map(|r| (r.op, (r.vaddr.0 - a.base.0) / a.elem))
            .collect()
    }

    /// The whole record stream of a workload, hashed; for determinism tests.
    pub fn stream_hash(cfg: &crate::workload::WorkloadConfig, seed: u64) -> u64 {
        let mut os = os();
        let mut src = crate::workload::build(cfg, &mut os, seed).unwrap();
        hash(&drain(src.as_mut()))
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use crate::workload::WorkloadConfig;

    fn all_kernels(scale: u32, references: u64, populate: bool) -> Vec<WorkloadConfig> {
        macro_rules! cfg {
            ($variant:ident, $ty:ident) => {
                WorkloadConfig::$variant($ty {
                    scale,
                    references,
                    populate,
                    ..Default::default()
                })
            };
        }
        vec![
            cfg!(Bfs, BfsConfig),
            cfg!(Pr, PrConfig),
            cfg!(Cc, CcConfig),
            cfg!(Sssp, SsspConfig),
            cfg!(Bc, BcConfig),
            cfg!(Tc, TcConfig),
            cfg!(Dc, DcConfig),
            cfg!(Dfs, DfsConfig),
            cfg!(Gc, GcConfig),
        ]
    }

    #[test]
    fn every_kernel_is_deterministic_and_fills_its_budget() {
        for cfg in all_kernels(9, 200_000, false) {
            let a = stream_hash(&cfg, 5);
            assert_eq!(a, stream_hash(&cfg, 5), "{}", cfg.name());
            assert_ne!(a, stream_hash(&cfg, 6), "{} ignores the seed", cfg.name());
            let mut os = os();
            let mut src = crate::workload::build(&cfg, &mut os, 5).unwrap();
            let n = drain(src.as_mut()).len() as u64;
            // The budget counts the region of interest; the set-up comes on top.
            let crate::trace::Roi::At(setup) = src.roi() else {
                panic!("{}: no region of interest", cfg.name())
            };
            assert_eq!(n, setup + 200_000, "{} stopped early", cfg.name());
        }
    }

    #[test]
    fn bad_graph_keys_are_rejected_with_their_path() {
        let bad = [
            (
                "scale",
                BfsConfig {
                    scale: 0,
                    ..Default::default()
                },
            ),
            (
                "scale",
                BfsConfig {
                    scale: 31,
                    ..Default::default()
                },
            ),
            (
                "edge_factor",
                BfsConfig {
                    edge_factor: 0,
                    ..Default::default()
                },
            ),
            (
                "references",
                BfsConfig {
                    references: 0,
                    ..Default::default()
                },
            ),
        ];
        let bad = bad
            .map(|(key, cfg)| (key, WorkloadConfig::Bfs(cfg)))
            .into_iter()
            .chain([
                (
                    "iterations",
                    WorkloadConfig::Pr(PrConfig {
                        iterations: 0,
                        ..Default::default()
                    }),
                ),
                (
                    "sources",
                    WorkloadConfig::Bc(BcConfig {
                        sources: 0,
                        ..Default::default()
                    }),
                ),
            ]);
        for (key, cfg) in bad {
            let err = cfg.validate("workload").unwrap_err();
            assert!(
                err.to_string().contains(&format!("`workload.{key}`")),
                "{err}"
            );
        }
        for cfg in all_kernels(DEFAULT_SCALE, 1, true) {
            cfg.validate("workload").unwrap();
        }
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let r: std::result::Result<WorkloadConfig, _> =
            toml::from_str("name = \"bfs\"\nscael = 3\n");
        assert!(r.is_err());
        let r: WorkloadConfig = toml::from_str("name = \"pr\"\niterations = 3\n").unwrap();
        assert!(matches!(
            r,
            WorkloadConfig::Pr(PrConfig {
                iterations: 3,
                scale: 20,
                ..
            })
        ));
    }

    #[test]
    fn default_footprint_is_far_beyond_l2_tlb_reach() {
        // The producer threads started here generate their graphs and stop at the first send.
        for cfg in all_kernels(DEFAULT_SCALE, 1, false) {
            let mut os = os();
            drop(crate::workload::build(&cfg, &mut os, 1).unwrap());
            let bytes: u64 = os
                .process(0)
                .unwrap()
                .vmas()
                .map(|v| (v.end.0 - v.start.0) * 4096)
                .sum();
            // Offsets (8 MiB) and neighbours (128 MiB) alone; 6 MiB is the L2 TLB's 4 KiB reach.
            assert!(bytes > 136 << 20, "{}: {bytes} bytes", cfg.name());
        }
    }
}
