//! k-mer counting, GenomicsBench's `kmer-cnt` kernel, one of Utopia's (§7) workloads.
//!
//! The program streams a 2-bit packed genome, rolls the canonical k-mer (the smaller of the
//! k-mer and its reverse complement, as counters such as Jellyfish do) base by base, hashes it
//! and counts it in an open-addressing table with linear probing. The genome read is
//! sequential; the table probes land on hash-random slots of a table far larger than the TLB
//! reach, which is what makes the kernel translation-bound.
//!
//! The genome is synthetic (seeded): random segments interleaved with copies of earlier
//! segments carrying sparse point mutations, so repeated k-mers (counts above 1) occur as in
//! real genomes' repeats.

use super::dist::mix64;
use super::emit::{Array, Emitter, SimHeap, Stop, ThreadedSource};
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KmerConfig {
    /// Bytes of the 2-bit packed genome (four bases per byte; a multiple of 8).
    #[serde(default = "default_genome")]
    pub genome_bytes: u64,
    /// k-mer length (1..=31, so a k-mer fits a 64-bit word with room for the empty marker).
    #[serde(default = "default_k")]
    pub k: u32,
    /// Fraction of the genome made of copies of earlier segments.
    #[serde(default = "default_repeat")]
    pub repeat_fraction: f64,
    /// Hash-table slots (a power of two of at least the genome's k-mer count, so the table
    /// never fills); 0 picks the smallest such size.
    #[serde(default)]
    pub table_slots: u64,
    /// Memory references to emit (the run ends earlier once the whole genome is counted).
    #[serde(default = "default_refs")]
    pub references: u64,
    /// Map the genome and the table before the first reference (the genome is read in and the
    /// table zeroed at start-up).
    #[serde(default = "default_populate")]
    pub populate: bool,
}

fn default_genome() -> u64 {
    4 << 20
}
fn default_k() -> u32 {
    31
}
fn default_repeat() -> f64 {
    0.25
}
fn default_refs() -> u64 {
    40_000_000
}
fn default_populate() -> bool {
    true
}

/// Bytes of one table slot: the 8-byte k-mer and its 4-byte count, padded to 16.
const SLOT_BYTES: u64 = 16;
/// Host bytes of one slot of [`CountTable`]: where its k-mer first occurred and its count.
pub const HOST_SLOT_BYTES: u64 = 5;
/// Largest genome accepted (1 GiB of packed bases: 4 Gbases, beyond the human genome's 3.1,
/// and few enough that a base's index fits 32 bits).
const MAX_GENOME_BYTES: u64 = 1 << 30;

impl KmerConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.genome_bytes < 8
            || !self.genome_bytes.is_multiple_of(8)
            || self.genome_bytes > MAX_GENOME_BYTES
        {
            return Err(Error::config(
                format!("{path}.genome_bytes"),
                format!(
                    "must be a multiple of 8 between 8 and 1 GiB, got {}",
                    self.genome_bytes
                ),
            ));
        }
        if !(1..=31).contains(&self.k) {
            return Err(Error::config(
                format!("{path}.k"),
                format!("must be between 1 and 31, got {}", self.k),
            ));
        }
        if !(0.0..=1.0).contains(&self.repeat_fraction) {
            return Err(Error::config(
                format!("{path}.repeat_fraction"),
                format!("must be between 0 and 1, got {}", self.repeat_fraction),
            ));
        }
        if self.table_slots != 0
            && (!self.table_slots.is_power_of_two() || self.table_slots < self.kmers())
        {
            return Err(Error::config(
                format!("{path}.table_slots"),
                format!(
                    "must be 0 (automatic) or a power of two of at least the genome's {} k-mers, got {}",
                    self.kmers(),
                    self.table_slots
                ),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }

    fn bases(&self) -> u64 {
        self.genome_bytes * 4
    }

    /// k-mers in the genome (every one could be distinct).
    fn kmers(&self) -> u64 {
        self.bases() + 1 - self.k as u64
    }

    /// The table size in slots.
    pub fn slots(&self) -> u64 {
        if self.table_slots == 0 {
            self.kmers().next_power_of_two()
        } else {
            self.table_slots
        }
    }
}

/// A synthetic genome of `bases` bases, 2-bit packed (base `i` in bits `2*(i%4)` of byte
/// `i/4`). Segments of 1-10 kbases are fresh random bases, or with probability
/// `repeat_fraction` a copy of an earlier stretch with one point mutation per ~200 bases.
pub fn synth_genome(bases: u64, repeat_fraction: f64, rng: &mut Rng) -> Vec<u8> {
    let mut g = vec![0u8; bases.div_ceil(4) as usize];
    let set = |g: &mut [u8], i: u64, b: u8| g[(i / 4) as usize] |= b << (2 * (i % 4));
    let mut pos = 0;
    while pos < bases {
        let len = (1000 + rng.below(9000)).min(bases - pos);
        if pos > 0 && rng.unit() < repeat_fraction {
            let src = rng.below(pos);
            for i in 0..len {
                let mut b = base_at(&g, src + i);
                if rng.below(200) == 0 {
                    b = (b + 1 + rng.below(3) as u8) & 3;
                }
                set(&mut g, pos + i, b);
            }
        } else {
            let mut word = 0;
            for i in 0..len {
                if i % 32 == 0 {
                    word = rng.next_u64();
                }
                set(&mut g, pos + i, ((word >> (2 * (i % 32))) & 3) as u8);
            }
        }
        pos += len;
    }
    g
}

/// Base `i` (0..4) of a packed genome.
#[inline]
pub fn base_at(g: &[u8], i: u64) -> u8 {
    (g[(i / 4) as usize] >> (2 * (i % 4))) & 3
}

/// Rolls the forward and reverse-complement k-mers one base at a time.
#[derive(Clone, Debug)]
pub struct Roller {
    k: u32,
    fwd: u64,
    rc: u64,
    seen: u32,
}

impl Roller {
    pub fn new(k: u32) -> Roller {
        Roller {
            k,
            fwd: 0,
            rc: 0,
            seen: 0,
        }
    }

    /// Push a base; returns the canonical k-mer once `k` bases have been seen.
    #[inline]
    pub fn push(&mut self, base: u8) -> Option<u64> {
        let mask = (1u64 << (2 * self.k)) - 1;
        self.fwd = ((self.fwd << 2) | base as u64) & mask;
        self.rc = (self.rc >> 2) | (((3 - base) as u64) << (2 * (self.k - 1)));
        self.seen = (self.seen + 1).min(self.k);
        (self.seen == self.k).then(|| self.fwd.min(self.rc))
    }
}

/// The host copy of the open-addressing count table: which k-mer each slot of the simulated
/// table holds, and its count (their simulated addresses are `slot * SLOT_BYTES` into the table
/// array).
///
/// A slot does not store its k-mer but where in the genome the k-mer first occurred: 4 bytes
/// instead of 8, and the k-mer is read back from the genome when a probe compares it. The
/// count is a byte, with the counts that outgrow it kept aside. So a slot takes 5 host bytes
/// where the simulated one takes 16 (Utopia's 2^30-slot table: 5 GiB instead of 12 GiB with
/// the keys and counts stored whole, which let only one such run fit a 24 GiB machine).
pub struct CountTable {
    k: u32,
    /// Start (base index) of the first occurrence of each slot's k-mer; `EMPTY_SLOT` if free.
    firsts: Vec<u32>,
    /// Each slot's count, up to `COUNT_ASIDE - 1`; `COUNT_ASIDE` says the count is in `aside`.
    counts: Vec<u8>,
    /// Counts of `COUNT_ASIDE` and more, by slot (repeats of one k-mer that many times are
    /// rare in a genome: low-complexity stretches).
    aside: HashMap<u64, u32>,
    mask: u64,
}

/// Marks a free slot: genomes are at most `MAX_GENOME_BYTES`, 2^32 bases, so no k-mer starts
/// at `u32::MAX`.
const EMPTY_SLOT: u32 = u32::MAX;
/// A count byte of this value means the count is kept aside.
const COUNT_ASIDE: u8 = u8::MAX;

/// What one count did to the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Slot of the first probe (the hash).
    pub home: u64,
    /// Slots examined, `home` onwards with wrap-around.
    pub probes: u64,
    /// The k-mer was new (its slot was empty).
    pub inserted: bool,
}

/// The canonical k-mer of `k` bases (1..=31) of packed genome `g` starting at base `start`, as
/// [`Roller`] computes it when it reaches the k-mer's last base.
#[inline]
fn canonical_at(g: &[u8], start: u64, k: u32) -> u64 {
    // Bases `start..start + k` as a little-endian bit string, base `start + m` at bits 2m:
    // at most 62 bits after a shift of at most 6, so 16 bytes from `start / 4` hold them.
    let at = (start / 4) as usize;
    let mut bytes = [0u8; 16];
    let end = g.len().min(at + 16);
    bytes[..end - at].copy_from_slice(&g[at..end]);
    let mask = (1u64 << (2 * k)) - 1;
    let stream = (u128::from_le_bytes(bytes) >> (2 * (start % 4))) as u64 & mask;
    // The roller's forward k-mer has the first base in its top bits: the bit string with its
    // 2-bit groups reversed. Its reverse complement has the first base, complemented, in its
    // low bits: the bit string complemented.
    let reversed = stream.reverse_bits();
    let fwd = ((reversed >> 1) & 0x5555_5555_5555_5555) | ((reversed & 0x5555_5555_5555_5555) << 1);
    let fwd = fwd >> (64 - 2 * k);
    let rc = !stream & mask;
    fwd.min(rc)
}

impl CountTable {
    /// An empty table of `slots` slots for k-mers of length `k`.
    pub fn new(slots: u64, k: u32) -> CountTable {
        CountTable {
            k,
            firsts: vec![EMPTY_SLOT; slots as usize],
            counts: vec![0; slots as usize],
            aside: HashMap::new(),
            mask: slots - 1,
        }
    }

    /// Count one occurrence of `kmer`, which starts at base `start` of genome `g`, with linear
    /// probing. The caller guarantees a free slot (the table has at least as many slots as the
    /// genome has k-mers).
    pub fn count(&mut self, g: &[u8], kmer: u64, start: u64) -> Probe {
        let home = mix64(kmer) & self.mask;
        let mut slot = home;
        let mut probes = 1;
        loop {
            let s = slot as usize;
            let first = self.firsts[s];
            if first == EMPTY_SLOT {
                self.firsts[s] = start as u32;
                self.counts[s] = 1;
                return Probe {
                    home,
                    probes,
                    inserted: true,
                };
            }
            if canonical_at(g, u64::from(first), self.k) == kmer {
                self.add_one(slot);
                return Probe {
                    home,
                    probes,
                    inserted: false,
                };
            }
            slot = (slot + 1) & self.mask;
            probes += 1;
        }
    }

    fn add_one(&mut self, slot: u64) {
        let c = &mut self.counts[slot as usize];
        if *c < COUNT_ASIDE - 1 {
            *c += 1;
        } else if *c == COUNT_ASIDE - 1 {
            *c = COUNT_ASIDE;
            self.aside.insert(slot, u32::from(COUNT_ASIDE));
        } else {
            *self.aside.get_mut(&slot).expect("a count kept aside") += 1;
        }
    }

    /// Every `(k-mer, count)` held, read back through genome `g`.
    #[cfg(test)]
    pub fn entries<'a>(&'a self, g: &'a [u8]) -> impl Iterator<Item = (u64, u32)> + 'a {
        (0..self.firsts.len())
            .filter(|&s| self.firsts[s] != EMPTY_SLOT)
            .map(move |s| {
                let count = match self.counts[s] {
                    COUNT_ASIDE => self.aside[&(s as u64)],
                    c => u32::from(c),
                };
                (canonical_at(g, u64::from(self.firsts[s]), self.k), count)
            })
    }
}

/// Where the genome and the table live in the simulated process.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The packed genome as 8-byte words.
    pub genome: Array,
    pub table: Array,
}

impl Layout {
    pub fn alloc(cfg: &KmerConfig, os: &mut dyn AddressSpaces, pid: u16) -> Result<Layout> {
        let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
        Ok(Layout {
            genome: heap.array(os, cfg.genome_bytes / 8, 8)?,
            table: heap.array(os, cfg.slots(), SLOT_BYTES)?,
        })
    }
}

/// Builds k-mer counting in process `pid` and returns its record stream.
pub fn build(
    cfg: &KmerConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let Layout { genome, table } = Layout::alloc(cfg, os, pid)?;
    let cfg = cfg.clone();
    Ok(ThreadedSource::spawn(
        pid,
        cfg.references,
        move |e: &mut Emitter| -> std::result::Result<(), Stop> {
            let mut rng = Rng::new(seed, rng::stream::WORKLOAD);
            let g = synth_genome(cfg.bases(), cfg.repeat_fraction, &mut rng);
            let mut counts = CountTable::new(cfg.slots(), cfg.k);
            let mut roller = Roller::new(cfg.k);
            for i in 0..cfg.bases() {
                if i % 32 == 0 {
                    // The next 32 packed bases.
                    e.instr(2);
                    e.load(genome.at(i / 32), 8)?;
                }
                // Extract the base, shift it into both k-mers, mask, take the minimum.
                e.instr(7);
                let Some(kmer) = roller.push(base_at(&g, i)) else {
                    continue;
                };
                // The mixing hash and the mask.
                e.instr(8);
                let p = counts.count(&g, kmer, i + 1 - u64::from(cfg.k));
                for j in 0..p.probes {
                    // Compare the slot's key; the first probe's address comes from the hash
                    // of a computed k-mer, the next ones are the following slots.
                    e.instr(2);
                    e.load(table.at((p.home + j) & (cfg.slots() - 1)), 16)?;
                }
                let slot = table.at((p.home + p.probes - 1) & (cfg.slots() - 1));
                e.instr(1);
                if p.inserted {
                    e.store(slot, 12)?;
                } else {
                    e.store(crate::addr::VirtAddr(slot.0 + 8), 4)?;
                }
            }
            Ok(())
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Op, Record};
    use crate::workload::testutil::{drain, small_os, stream_hash, vma_bytes};
    use std::collections::{BTreeMap, HashMap};

    fn tiny() -> KmerConfig {
        KmerConfig {
            genome_bytes: 64, // 256 bases
            k: 5,
            repeat_fraction: 0.5,
            table_slots: 0,
            references: 1_000_000,
            populate: true,
        }
    }

    fn run(cfg: &KmerConfig, seed: u64) -> (Vec<Record>, Layout) {
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        let mut src = build(cfg, &mut os, pid, seed).unwrap();
        let mut fresh = small_os();
        let pid = fresh.spawn().unwrap();
        let layout = Layout::alloc(cfg, &mut fresh, pid).unwrap();
        (drain(&mut src, 100), layout)
    }

    /// The canonical k-mers of an unpacked sequence, computed from strings of bases.
    fn naive_kmers(bases: &[u8], k: usize) -> Vec<u64> {
        bases
            .windows(k)
            .map(|w| {
                let fwd = w.iter().fold(0u64, |a, &b| (a << 2) | b as u64);
                let rc = w.iter().rev().fold(0u64, |a, &b| (a << 2) | (3 - b) as u64);
                fwd.min(rc)
            })
            .collect()
    }

    #[test]
    fn counts_match_a_reference_count_and_repeats_occur() {
        let cfg = KmerConfig {
            genome_bytes: 4096,
            k: 11,
            ..tiny()
        };
        let g = synth_genome(cfg.bases(), 0.5, &mut Rng::new(2, rng::stream::WORKLOAD));
        let bases: Vec<u8> = (0..cfg.bases()).map(|i| base_at(&g, i)).collect();
        let mut want: HashMap<u64, u32> = HashMap::new();
        for kmer in naive_kmers(&bases, 11) {
            *want.entry(kmer).or_default() += 1;
        }
        let mut table = CountTable::new(cfg.slots(), 11);
        let mut roller = Roller::new(11);
        for (i, &b) in bases.iter().enumerate() {
            if let Some(kmer) = roller.push(b) {
                assert_eq!(canonical_at(&g, i as u64 - 10, 11), kmer);
                table.count(&g, kmer, i as u64 - 10);
            }
        }
        let got: HashMap<u64, u32> = table.entries(&g).collect();
        assert_eq!(got, want);
        assert!(want.values().any(|&c| c > 1), "the genome has repeats");
    }

    #[test]
    fn counts_beyond_a_byte_are_kept_exactly() {
        // A run of 1,021 A's, then C, G, T: 1,017 k-mers of A's, then three others.
        let mut g = vec![0u8; 256];
        g[255] = 0b1110_0100; // the last four bases: A C G T
        let k = 5;
        let mut table = CountTable::new(2048, k);
        let mut roller = Roller::new(k);
        for i in 0..1024u64 {
            if let Some(kmer) = roller.push(base_at(&g, i)) {
                table.count(&g, kmer, i + 1 - u64::from(k));
            }
        }
        let got: HashMap<u64, u32> = table.entries(&g).collect();
        assert_eq!(got.get(&0), Some(&1017), "{got:?}");
        assert_eq!(got.len(), 4);
        assert_eq!(got.values().sum::<u32>(), 1020);
    }

    proptest::proptest! {
        /// The k-mer read back from where it starts is the one the roller computed at its
        /// last base, for every k and offset, up to the genome's last byte.
        #[test]
        fn a_kmer_read_back_from_the_genome_is_the_rolled_one(
            g in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..40),
            k in 1u32..=31,
        ) {
            let bases = 4 * g.len() as u64;
            let mut roller = Roller::new(k);
            for i in 0..bases {
                if let Some(kmer) = roller.push(base_at(&g, i)) {
                    proptest::prop_assert_eq!(canonical_at(&g, i + 1 - u64::from(k), k), kmer);
                }
            }
        }
    }

    #[test]
    fn probes_follow_linear_probing_of_the_reference() {
        let cfg = tiny();
        let (recs, layout) = run(&cfg, 3);
        let g = synth_genome(cfg.bases(), 0.5, &mut Rng::new(3, rng::stream::WORKLOAD));
        let bases: Vec<u8> = (0..cfg.bases()).map(|i| base_at(&g, i)).collect();
        let kmers = naive_kmers(&bases, 5);
        // Reference: slot -> k-mer map, probing home, home+1, ... until a match or a hole.
        let mask = cfg.slots() - 1;
        let mut slots: BTreeMap<u64, u64> = BTreeMap::new();
        let mut want = Vec::new();
        for (n, &kmer) in kmers.iter().enumerate() {
            let i = n as u64 + 4; // base index completing this k-mer
            if n == 0 {
                want.push((layout.genome.at(0).0, Op::Load));
            }
            let mut slot = mix64(kmer) & mask;
            loop {
                want.push((layout.table.at(slot).0, Op::Load));
                match slots.get(&slot) {
                    Some(&k) if k == kmer => {
                        want.push((layout.table.at(slot).0 + 8, Op::Store));
                        break;
                    }
                    None => {
                        slots.insert(slot, kmer);
                        want.push((layout.table.at(slot).0, Op::Store));
                        break;
                    }
                    Some(_) => slot = (slot + 1) & mask,
                }
            }
            if (i + 1).is_multiple_of(32) && i + 1 < cfg.bases() {
                want.push((layout.genome.at((i + 1) / 32).0, Op::Load));
            }
        }
        let got: Vec<_> = recs.iter().map(|r| (r.vaddr.0, r.op)).collect();
        assert_eq!(got, want);
        // The tiny table is loaded enough that some counts needed more than one probe.
        assert!(recs.windows(2).any(|w| w[0].op == Op::Load
            && w[1].op == Op::Load
            && w[1].vaddr.0 == w[0].vaddr.0 + 16));
        assert!(recs.iter().all(|r| r.dep == 0));
    }

    #[test]
    fn deterministic_per_seed() {
        let cfg = tiny();
        let a = stream_hash(&run(&cfg, 4).0);
        assert_eq!(a, stream_hash(&run(&cfg, 4).0));
        assert_ne!(a, stream_hash(&run(&cfg, 5).0));
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let check = |f: fn(&mut KmerConfig), key: &str| {
            let mut c = tiny();
            f(&mut c);
            let err = c.validate("workload").unwrap_err().to_string();
            assert!(err.contains(&format!("`workload.{key}`")), "{err}");
        };
        check(|c| c.genome_bytes = 12, "genome_bytes");
        check(|c| c.k = 32, "k");
        check(|c| c.k = 0, "k");
        check(|c| c.repeat_fraction = 1.5, "repeat_fraction");
        check(|c| c.table_slots = 100, "table_slots");
        check(|c| c.table_slots = 128, "table_slots"); // fewer than the 252 k-mers
        check(|c| c.references = 0, "references");
        assert!(tiny().validate("workload").is_ok());
    }

    #[test]
    fn default_footprint_and_load_factor() {
        let mut cfg: KmerConfig = toml::from_str("").unwrap();
        cfg.validate("workload").unwrap();
        assert_eq!(cfg.slots(), 1 << 24);
        cfg.populate = false;
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        drop(build(&cfg, &mut os, pid, 1).unwrap());
        assert!(vma_bytes(&os) >= 256 << 20, "{}", vma_bytes(&os));
    }
}
