//! What the index-structure workloads (`btree`, `hashtable`, `skiplist`, `bst-int`, `bst-ext`)
//! share: the `[workload]` knobs, the key set, the ASCYLIB-style lookup/insert/delete mix with
//! uniform or Zipf keys, and node pools in simulated memory.
//!
//! The benchmark harness follows ASCYLIB (used by SPARTA §7): the structure starts with
//! `keys` keys drawn from a universe of `2 * keys`, and every operation picks a key of the
//! universe, so about half the lookups hit and inserts/deletes keep the size steady.

use super::emit::{Array, Emitter, RecId, SimHeap, Stop, ThreadedSource};
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::AddressSpaces;
use crate::rng::{stream, Rng};
use serde::{Deserialize, Serialize};

/// "No node": the null pointer of the host mirrors.
pub(crate) const NIL: u32 = u32::MAX;

/// The `[workload]` knobs of `hashtable`, `skiplist`, `bst-int` and `bst-ext`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Keys in the structure at the start (the key universe is twice as large).
    #[serde(default = "default_keys")]
    pub keys: u64,
    /// Fraction of operations that update (half inserts, half deletes); the rest are lookups.
    #[serde(default)]
    pub update_ratio: f64,
    /// Zipf exponent of the key popularity; 0 = uniform.
    #[serde(default)]
    pub zipf_alpha: f64,
    /// Memory references to emit.
    #[serde(default = "default_refs")]
    pub references: u64,
    /// Map the memory before the first reference (the structure is built before measuring).
    #[serde(default = "default_populate")]
    pub populate: bool,
    /// Software threads of the one process sharing the structure and its lookups (1 to 64;
    /// above 1, lookups only: `update_ratio` must be 0).
    #[serde(default = "one_thread")]
    pub threads: u32,
}

fn one_thread() -> u32 {
    1
}

fn default_keys() -> u64 {
    1 << 22
}
pub(crate) fn default_refs() -> u64 {
    10_000_000
}
pub(crate) fn default_populate() -> bool {
    true
}

impl IndexConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        self.mix().validate(path)?;
        super::threads_in_range(format!("{path}.threads"), self.threads)?;
        if self.threads > 1 && self.update_ratio > 0.0 {
            return Err(Error::config(
                format!("{path}.threads"),
                format!(
                    "{} threads share the structure read-only: set {path}.update_ratio = 0 \
                     (concurrent updates are not modelled)",
                    self.threads
                ),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }

    pub(crate) fn mix(&self) -> MixConfig {
        MixConfig {
            keys: self.keys,
            update_ratio: self.update_ratio,
            zipf_alpha: self.zipf_alpha,
        }
    }
}

/// The knobs every index workload has, whatever its config struct.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MixConfig {
    pub keys: u64,
    pub update_ratio: f64,
    pub zipf_alpha: f64,
}

impl MixConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        // Node ids are u32 and the universe (2 * keys) may fill a pool with up to 4 nodes a key.
        if !(2..=(1 << 28)).contains(&self.keys) {
            return Err(Error::config(
                format!("{path}.keys"),
                format!("must be in 2..=2^28, got {}", self.keys),
            ));
        }
        if !(0.0..=1.0).contains(&self.update_ratio) {
            return Err(Error::config(
                format!("{path}.update_ratio"),
                format!("must be in [0, 1], got {}", self.update_ratio),
            ));
        }
        if !(0.0..=20.0).contains(&self.zipf_alpha) {
            return Err(Error::config(
                format!("{path}.zipf_alpha"),
                format!("must be in [0, 20] (0 = uniform), got {}", self.zipf_alpha),
            ));
        }
        Ok(())
    }

    /// Keys the structure may hold at once: the start size, or the whole universe if updates
    /// may insert. Pools are sized from this.
    pub fn max_keys(&self) -> u64 {
        if self.update_ratio > 0.0 {
            2 * self.keys
        } else {
            self.keys
        }
    }
}

/// SplitMix64's finaliser: a bijective 64-bit mix, used for hashes.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The start key set, implicit: of each pair `{2i, 2i+1}` of the universe `[0, 2n)` exactly one
/// key (chosen by a seeded hash) is present, so key `i` in sorted order is `2i + bit(i)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeySpace {
    pub n: u64,
    salt: u64,
}

impl KeySpace {
    pub fn new(n: u64, rng: &mut Rng) -> KeySpace {
        KeySpace {
            n,
            salt: rng.next_u64(),
        }
    }
    pub fn universe(&self) -> u64 {
        2 * self.n
    }
    /// The `i`-th smallest start key.
    pub fn initial(&self, i: u64) -> u64 {
        2 * i + (mix64(i ^ self.salt) & 1)
    }
}

/// A seeded permutation of `0..n`: a bijective mix on the next power of two, cycle-walked back
/// into range. Gives random insertion orders and scatters Zipf ranks over the key universe
/// without a table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Permutation {
    n: u64,
    bits: u32,
    mask: u64,
    add: u64,
    mul: [u64; 2],
}

impl Permutation {
    pub fn new(n: u64, rng: &mut Rng) -> Permutation {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Permutation {
            n,
            bits,
            mask,
            add: rng.next_u64(),
            mul: [rng.next_u64() | 1, rng.next_u64() | 1],
        }
    }

    fn round(&self, mut x: u64) -> u64 {
        // Each step is a bijection of `bits`-bit words: add, multiply by odd, xor-shift right.
        let shift = self.bits.div_ceil(2).max(1);
        x = x.wrapping_add(self.add) & self.mask;
        for m in self.mul {
            x = x.wrapping_mul(m) & self.mask;
            x ^= x >> shift;
        }
        x
    }

    pub fn apply(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        let mut x = self.round(i);
        while x >= self.n {
            x = self.round(x);
        }
        x
    }
}

/// Zipf-distributed ranks `1..=n` with exponent `s > 0`, by rejection-inversion (Hörmann and
/// Derflinger 1996): O(1) per sample and no table, so it scales to any key count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    threshold: f64,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            threshold: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(n as f64 + 0.5);
        z.threshold = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// `(e^x - 1) / x`, accurate near 0.
    fn expm1_over(x: f64) -> f64 {
        if x.abs() > 1e-8 {
            x.exp_m1() / x
        } else {
            1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
        }
    }
    /// `ln(1 + x) / x`, accurate near 0.
    fn ln1p_over(x: f64) -> f64 {
        if x.abs() > 1e-8 {
            x.ln_1p() / x
        } else {
            1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
        }
    }
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }
    /// Integral of `h` (`(x^(1-s) - 1) / (1-s)`, `ln x` at s = 1).
    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        Self::expm1_over((1.0 - self.s) * lx) * lx
    }
    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (Self::ln1p_over(t) * x).exp()
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.threshold || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// One operation of the benchmark loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexOp {
    Lookup(u64),
    Insert(u64),
    Delete(u64),
}

/// The operation stream: `update_ratio` of updates (insert or delete with equal odds), keys
/// uniform over the universe or Zipf over it (popular ranks scattered by a permutation, so hot
/// keys are not neighbours in the structure).
#[derive(Clone)]
pub(crate) struct OpMix {
    rng: Rng,
    universe: u64,
    update_ratio: f64,
    zipf: Option<(Zipf, Permutation)>,
}

impl OpMix {
    pub fn new(cfg: &MixConfig, keys: &KeySpace, mut rng: Rng) -> OpMix {
        let universe = keys.universe();
        let zipf = (cfg.zipf_alpha > 0.0).then(|| {
            (
                Zipf::new(universe, cfg.zipf_alpha),
                Permutation::new(universe, &mut rng),
            )
        });
        OpMix {
            rng,
            universe,
            update_ratio: cfg.update_ratio,
            zipf,
        }
    }

    pub fn next_op(&mut self) -> IndexOp {
        let update = self.update_ratio > 0.0 && self.rng.unit() < self.update_ratio;
        let insert = update && self.rng.next_u64() & 1 == 0;
        let key = match &self.zipf {
            Some((z, perm)) => perm.apply(z.sample(&mut self.rng) - 1),
            None => self.rng.below(self.universe),
        };
        match (update, insert) {
            (false, _) => IndexOp::Lookup(key),
            (true, true) => IndexOp::Insert(key),
            (true, false) => IndexOp::Delete(key),
        }
    }
}

/// An index structure with a host mirror of its logical contents that emits the memory accesses
/// of each operation. The bool results say whether the key was found / inserted / removed.
pub(crate) trait IndexStructure {
    fn lookup(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop>;
    /// `Err(Stop)` also when the preallocated node pool is exhausted.
    fn insert(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop>;
    fn remove(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop>;
}

/// The benchmark loop: run the operation mix until the reference budget stops it.
pub(crate) fn serve<S: IndexStructure>(
    s: &mut S,
    mix: &mut OpMix,
    e: &mut Emitter,
) -> std::result::Result<(), Stop> {
    loop {
        // Drawing the operation and key: the harness's RNG calls and branches.
        e.instr(12);
        match mix.next_op() {
            IndexOp::Lookup(k) => s.lookup(e, k)?,
            IndexOp::Insert(k) => s.insert(e, k)?,
            IndexOp::Delete(k) => s.remove(e, k)?,
        };
    }
}

/// A load that depends on `on` if its address came from a loaded pointer, or is independent
/// (its base is a global, e.g. a list head or a root pointer's own address).
#[inline]
pub(crate) fn load_after(
    e: &mut Emitter,
    va: VirtAddr,
    on: Option<RecId>,
) -> std::result::Result<RecId, Stop> {
    match on {
        Some(r) => e.load_dep(va, 8, r),
        None => e.load(va, 8),
    }
}

/// A store whose address came from the pointer load `on`, if any.
#[inline]
pub(crate) fn store_after(
    e: &mut Emitter,
    va: VirtAddr,
    on: Option<RecId>,
) -> std::result::Result<RecId, Stop> {
    match on {
        Some(r) => e.store_dep(va, 8, r),
        None => e.store(va, 8),
    }
}

/// Start an index workload: on the producer thread, `make` builds the structure's host mirror
/// holding the start keys (the program's initialisation, not emitted), then the benchmark loop
/// runs the operation mix until `references` records are out.
pub(crate) fn spawn<S, F>(
    pid: u16,
    references: u64,
    mix: MixConfig,
    seed: u64,
    make: F,
) -> ThreadedSource
where
    S: IndexStructure,
    F: FnOnce(&KeySpace, &mut Rng) -> S + Send + 'static,
{
    ThreadedSource::spawn(pid, references, move |e| {
        let (mut s, mut ops) = start(mix, seed, make);
        serve(&mut s, &mut ops, e)
    })
}

/// The program's initialisation: the key set, the structure holding it, the operation stream.
fn start<S>(mix: MixConfig, seed: u64, make: impl FnOnce(&KeySpace, &mut Rng) -> S) -> (S, OpMix) {
    let mut rng = Rng::new(seed, stream::WORKLOAD);
    let keys = KeySpace::new(mix.keys, &mut rng);
    let ops_rng = Rng::new(rng.next_u64(), stream::WORKLOAD);
    let s = make(&keys, &mut rng);
    (s, OpMix::new(&mix, &keys, ops_rng))
}

/// An index structure whose lookups several threads may run at once over one host mirror:
/// a lookup that reads the mirror and changes nothing.
pub(crate) trait SharedLookup: IndexStructure + Send + Sync + 'static {
    fn lookup_shared(&self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop>;
}

/// [`spawn`] for a program of `threads` software threads (lookups only above 1): thread 0
/// builds the structure and the team shares it; every thread follows the one operation stream
/// and performs every `threads`-th operation (OpenMP's `schedule(static, 1)`), so the team
/// performs the lookups of the single-threaded run, their records merged round robin
/// ([`ThreadedSource::team`]). One thread is exactly [`spawn`].
pub(crate) fn spawn_team<S, F>(
    pid: u16,
    references: u64,
    mix: MixConfig,
    seed: u64,
    threads: u32,
    make: F,
) -> ThreadedSource
where
    S: SharedLookup,
    F: FnOnce(&KeySpace, &mut Rng) -> S + Send + 'static,
{
    if threads <= 1 {
        return spawn(pid, references, mix, seed, make);
    }
    let mut make = Some(make);
    ThreadedSource::team(pid, references, threads, |i| {
        let make = if i == 0 { make.take() } else { None };
        move |e: &mut Emitter| {
            let shared =
                e.share(move || start(mix, seed, make.expect("thread 0 builds the structure")))?;
            let (s, ops) = &*shared;
            let mut ops = ops.clone();
            let (me, threads) = (e.thread(), e.threads());
            loop {
                for k in 0..threads {
                    let op = ops.next_op();
                    if k != me {
                        continue;
                    }
                    // Drawing the operation and key: the harness's RNG calls and branches.
                    e.instr(12);
                    let IndexOp::Lookup(key) = op else {
                        unreachable!("threads above 1 are refused with updates")
                    };
                    s.lookup_shared(e, key)?;
                }
            }
        }
    })
}

/// Fixed-size nodes in simulated memory, each a small `malloc` made in turn (so on the brk heap,
/// one after the other: [`SimHeap::objects`]): node `i` lives at `base + i * node_bytes`; freed
/// nodes are reused last-in first-out.
#[derive(Clone, Debug)]
pub(crate) struct NodePool {
    pub array: Array,
    used: u32,
    free: Vec<u32>,
}

impl NodePool {
    pub fn new(
        heap: &mut SimHeap,
        os: &mut dyn AddressSpaces,
        nodes: u64,
        node_bytes: u64,
    ) -> Result<NodePool> {
        Ok(NodePool {
            array: heap.objects(os, nodes, node_bytes)?,
            used: 0,
            free: Vec::new(),
        })
    }

    /// A fresh node, or `Stop` when the pool is exhausted (the run ends there).
    pub fn alloc(&mut self) -> std::result::Result<u32, Stop> {
        if let Some(i) = self.free.pop() {
            return Ok(i);
        }
        if u64::from(self.used) >= self.array.len {
            return Err(Stop);
        }
        self.used += 1;
        Ok(self.used - 1)
    }

    /// Mark nodes `0..n` used: the start structure placed them itself.
    pub fn claim_prefix(&mut self, n: u32) {
        debug_assert!(u64::from(n) <= self.array.len && self.used == 0);
        self.used = n;
    }

    pub fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    /// Address of byte `offset` of node `i`.
    #[inline]
    pub fn at(&self, i: u32, offset: u64) -> VirtAddr {
        VirtAddr(self.array.at(u64::from(i)).0 + offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Record;
    use crate::workload::emit::TURN;
    use crate::workload::testutil::{self, max_lead, per_core};
    use crate::workload::WorkloadConfig;
    use stream::WORKLOAD;

    /// A stream cut into operations: each starts with the harness's 12 instructions.
    fn operations(recs: &[Record]) -> Vec<Vec<u64>> {
        testutil::operations(recs, 12)
    }

    #[test]
    fn a_team_shares_the_structure_and_deals_the_lookups_out_round_robin() {
        for name in ["hashtable", "skiplist", "bst-int", "bst-ext"] {
            let run = |threads: u32| {
                let cfg: WorkloadConfig = toml::from_str(&format!(
                    "name = '{name}'\nkeys = 3000\nreferences = 20000\nthreads = {threads}"
                ))
                .unwrap();
                cfg.validate("workload").unwrap();
                assert_eq!(cfg.cores(), threads);
                let mut os = testutil::os(64);
                let mut src = crate::workload::build(&cfg, &mut os, 7).unwrap();
                testutil::drain(&mut *src, 100_000)
            };
            let alone = operations(&run(1));
            let team = run(4);
            assert_eq!(team.len(), 20_000, "{name}");
            let threads = per_core(&team);
            assert_eq!(threads.len(), 4, "{name}");
            for (core, mine) in threads {
                let recs: Vec<Record> = mine.into_iter().map(|(_, r)| r).collect();
                let mine = operations(&recs);
                // Every lookup but the last, which the budget may have cut short: the one the
                // single-threaded run performs at that position of the operation stream.
                for (k, op) in mine[..mine.len() - 1].iter().enumerate() {
                    let n = k * 4 + core as usize;
                    if n + 1 < alone.len() {
                        assert_eq!(op, &alone[n], "{name}: core {core} lookup {k}");
                    }
                }
            }
            assert!(max_lead(&team, &[]) <= TURN as u64, "{name}");
        }
    }

    #[test]
    fn a_team_refuses_updates() {
        let cfg: WorkloadConfig =
            toml::from_str("name = 'bst-ext'\nthreads = 2\nupdate_ratio = 0.1").unwrap();
        let e = cfg.validate("workload").unwrap_err().to_string();
        assert!(e.contains("workload.threads"), "{e}");
        let cfg: WorkloadConfig = toml::from_str("name = 'hashtable'\nthreads = 65").unwrap();
        let e = cfg.validate("workload").unwrap_err().to_string();
        assert!(e.contains("workload.threads"), "{e}");
    }

    #[test]
    fn start_keys_are_sorted_one_per_pair() {
        let ks = KeySpace::new(1000, &mut Rng::new(1, WORKLOAD));
        let keys: Vec<u64> = (0..1000).map(|i| ks.initial(i)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert!(keys.iter().enumerate().all(|(i, &k)| k / 2 == i as u64));
        let odd = keys.iter().filter(|&&k| k & 1 == 1).count();
        assert!((400..600).contains(&odd), "{odd}");
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 17, 1000, 4096] {
            let p = Permutation::new(n, &mut Rng::new(n, WORKLOAD));
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = p.apply(i) as usize;
                assert!(!seen[j]);
                seen[j] = true;
            }
        }
    }

    #[test]
    fn zipf_frequencies_follow_the_power_law() {
        for s in [0.5, 0.99, 1.0, 1.5] {
            let z = Zipf::new(1000, s);
            let mut rng = Rng::new(9, WORKLOAD);
            let mut count = [0u32; 5];
            for _ in 0..400_000 {
                let k = z.sample(&mut rng);
                assert!((1..=1000).contains(&k));
                if k <= 4 {
                    count[k as usize] += 1;
                }
            }
            // P(1)/P(k) = k^s.
            for k in 2..=4usize {
                let ratio = count[1] as f64 / count[k] as f64;
                let want = (k as f64).powf(s);
                assert!(
                    (ratio / want - 1.0).abs() < 0.08,
                    "s={s} k={k} {ratio} {want}"
                );
            }
        }
    }

    #[test]
    fn op_mix_respects_the_update_ratio() {
        let mut rng = Rng::new(3, WORKLOAD);
        let ks = KeySpace::new(500, &mut rng);
        let cfg = MixConfig {
            keys: 500,
            update_ratio: 0.2,
            zipf_alpha: 0.0,
        };
        let mut mix = OpMix::new(&cfg, &ks, rng);
        let (mut ins, mut del) = (0, 0);
        for _ in 0..100_000 {
            match mix.next_op() {
                IndexOp::Insert(k) | IndexOp::Delete(k) if k >= 1000 => panic!("{k}"),
                IndexOp::Insert(_) => ins += 1,
                IndexOp::Delete(_) => del += 1,
                IndexOp::Lookup(k) => assert!(k < 1000),
            }
        }
        assert!((9_000..11_000).contains(&ins) && (9_000..11_000).contains(&del));
    }

    #[test]
    fn configs_parse_by_name_and_reject_bad_keys() {
        use crate::workload::WorkloadConfig;
        for name in [
            "hashtable",
            "skiplist",
            "bst-int",
            "bst-ext",
            "btree",
            "xsbench",
        ] {
            let w: WorkloadConfig = toml::from_str(&format!("name = \"{name}\"")).unwrap();
            assert_eq!(w.name(), name);
            w.validate("workload").unwrap();
        }
        let w: WorkloadConfig = toml::from_str("name = \"bst-ext\"\nreferences = 0").unwrap();
        let msg = w.validate("workload").unwrap_err().to_string();
        assert!(msg.contains("workload.references"), "{msg}");
        assert!(toml::from_str::<WorkloadConfig>("name = \"skiplist\"\nkey = 5").is_err());
    }

    #[test]
    fn bad_mix_parameters_name_their_key() {
        let good = MixConfig {
            keys: 100,
            update_ratio: 0.1,
            zipf_alpha: 0.9,
        };
        let msg = |c: MixConfig| c.validate("workload").unwrap_err().to_string();
        assert!(msg(MixConfig { keys: 1, ..good }).contains("workload.keys"));
        assert!(msg(MixConfig {
            update_ratio: 1.5,
            ..good
        })
        .contains("workload.update_ratio"));
        assert!(msg(MixConfig {
            zipf_alpha: f64::NAN,
            ..good
        })
        .contains("workload.zipf_alpha"));
        assert!(good.validate("workload").is_ok());
    }
}
