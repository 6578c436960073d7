//! Configuration of the hashed page tables. Defaults are ME-HPT Table III: 3 ways, 128 lines
//! (8 KiB) per way initially, upsize above 0.6 and downsize below 0.2 occupancy, CRC hashes,
//! L2P of 32 entries per (way, page size), chunks of 8 KiB, 1 MiB, 8 MiB and 64 MiB (§V-B).

use super::cost::{self, CostPoint};
use super::hash::{HashKind, CRC_FUNCTIONS};
use crate::config::HostUses;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

// Every way must have a bit in the CWT's way masks.
const _: () = assert!(CRC_FUNCTIONS <= super::cwt::MAX_WAYS);

/// Which organisation a [`super::HashedPageTable`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HptKind {
    /// Elastic Cuckoo Page Tables: each way one contiguous block, all ways resized together
    /// out of place (ME-HPT §II-B).
    Ecpt,
    /// Memory-Efficient HPTs: ways in chunks behind the L2P table, with the techniques the
    /// `mehpt` sub-table switches on (ME-HPT §IV-V).
    Mehpt,
}

/// Estimated OS cycles to move one 64-byte entry (ME-HPT gives no per-entry cost; §III
/// measures only allocation). The move reads the line at its old slot (a sequential scan
/// behind the rehash pointer, which prefetches well), hashes the key (a few cycles with a
/// CRC instruction), writes the line at its new slot, clears the old one and updates the
/// region's Cuckoo Walk Table entry. The new slot and the CWT entry are random lines of
/// tables far larger than the private caches: we count one exposed memory round trip
/// (200 cycles, ME-HPT Table III; the handler's out-of-order window overlaps the two
/// misses) plus about 50 cycles of instructions.
pub const DEFAULT_REHASH_CYCLES_PER_ENTRY: u64 = 250;

/// Most entries `rehash_per_insert` may ask each resizing way to move per insertion: 2^24,
/// the lines of the largest ECPT way (one buddy block of at most 1 GiB). At that count one
/// insertion finishes any ECPT resize, so a larger one asks for nothing more; the bound
/// keeps the count a statement about rehashing rather than a number no table reaches.
pub const MAX_REHASH_PER_INSERT: u32 = 1 << 24;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HashedConfig {
    /// Ways (hash functions) per table; ME-HPT uses 3, Utopia's ECH 4.
    pub ways: usize,
    /// Lines (64-byte entries of 8 PTEs) per way when a table is created.
    pub initial_lines: u64,
    /// Occupancy above which a table (or, per-way, a way) is upsized.
    pub upsize: f64,
    /// Occupancy below which a table (or way) is downsized.
    pub downsize: f64,
    /// Scaling factor of a resize: an upsize multiplies a way's lines by it, a downsize
    /// divides them (elastic cuckoo hashing's `k`; ECPT and ME-HPT double, Utopia Table 1's
    /// ECH uses 10). Ways are indexed by a mask of the hash, so a factor that is not a power
    /// of two acts as the power of two below it (10 as 8). ME-HPT takes only 2: in-place and
    /// per-way resizing are defined for doubling (§IV-C, §IV-D).
    pub scale: u32,
    pub hash: HashKind,
    /// Cuckoo re-insertions allowed for one insertion before the table is upsized.
    pub max_reinsertions: u32,
    /// Entries each resizing way migrates per insertion (§II-B: the OS rehashes on inserts).
    pub rehash_per_insert: u32,
    /// Cycles to allocate and zero a contiguous block, by size (§III, 0.7 FMFI).
    pub alloc_cost: Vec<CostPoint>,
    /// Cycles the OS spends moving one entry: a rehash into a resized way (ECPT moves every
    /// entry of an upsized way, ME-HPT's in-place upsize about half) or a cuckoo
    /// re-insertion. The paper gives no figure; the default is an estimate (see
    /// [`DEFAULT_REHASH_CYCLES_PER_ENTRY`]). Charged to the fault whose handler does the work.
    pub rehash_cycles_per_entry: u64,
    /// 4 KiB-page lines per section of a PMD-CWT entry, each section with its own way mask
    /// (see `cwt`): 1 names the way of every line, 64 gives one mask per 2 MiB region.
    pub cwt_section_lines: u64,
    pub mehpt: MehptConfig,
}

impl Default for HashedConfig {
    fn default() -> Self {
        HashedConfig {
            ways: 3,
            initial_lines: 128,
            upsize: 0.6,
            downsize: 0.2,
            scale: 2,
            hash: HashKind::Crc,
            max_reinsertions: 32,
            rehash_per_insert: 1,
            alloc_cost: cost::paper_points(),
            rehash_cycles_per_entry: DEFAULT_REHASH_CYCLES_PER_ENTRY,
            cwt_section_lines: 1,
            mehpt: MehptConfig::default(),
        }
    }
}

/// The ME-HPT techniques, each switchable to separate its contribution (ME-HPT Figs 10, 15).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MehptConfig {
    /// Chunk sizes in bytes, smallest first (§V-B). One entry = fixed chunks.
    pub chunk_sizes: Vec<u64>,
    /// L2P entries per (way, page size) subtable (§V-A).
    pub l2p_entries: usize,
    /// Resize in place: same hash, one more/fewer key bit (§IV-C).
    pub in_place: bool,
    /// Resize one way at a time with weighted insertion (§IV-D).
    pub per_way: bool,
    /// Let the 4K/2M subtables take the unused 1G L2P entries (§V-A).
    pub stealing: bool,
}

impl Default for MehptConfig {
    fn default() -> Self {
        MehptConfig {
            chunk_sizes: vec![8 << 10, 1 << 20, 8 << 20, 64 << 20],
            l2p_entries: 32,
            in_place: true,
            per_way: true,
            stealing: true,
        }
    }
}

impl HashedConfig {
    /// Key bits a resize adds or removes: log2 of `scale`, rounded down.
    pub fn resize_bits(&self) -> u32 {
        self.scale.max(2).ilog2()
    }

    /// The tables a process starts with: `initial_lines` 64-byte lines per way, for each
    /// page size it maps (the lines live in host memory, as all page-table memory does).
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        let copies = self.ways as u64 * crate::addr::PageSize::ALL.len() as u64 * uses.processes();
        uses.add(
            format!("{path}.initial_lines"),
            self.initial_lines,
            "lines",
            crate::addr::LINE_BYTES,
            (copies, "one per way, page size and process"),
        );
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        if !(2..=CRC_FUNCTIONS).contains(&self.ways) {
            return Err(Error::config(
                format!("{path}.ways"),
                format!("must be 2..={CRC_FUNCTIONS} (one distinct hash function per way)"),
            ));
        }
        if !self.initial_lines.is_power_of_two() || self.initial_lines > 1 << 30 {
            return Err(Error::config(
                format!("{path}.initial_lines"),
                "must be a power of two (ways resize by doubling), at most 2^30",
            ));
        }
        if !(self.upsize > 0.0 && self.upsize < 1.0) {
            return Err(Error::config(format!("{path}.upsize"), "must be in (0, 1)"));
        }
        if !(2..=1024).contains(&self.scale) {
            return Err(Error::config(
                format!("{path}.scale"),
                "must be 2..=1024 (the factor a resize multiplies or divides a way by)",
            ));
        }
        // An upsize by a factor f divides the occupancy by f and a downsize multiplies it: the
        // thresholds must leave room so that a resize never immediately triggers the opposite.
        let factor = (1u64 << self.resize_bits()) as f64;
        if !(self.downsize >= 0.0 && self.downsize * factor < self.upsize) {
            return Err(Error::config(
                format!("{path}.downsize"),
                format!("must be >= 0 and less than `upsize` / {factor} (the resize factor)"),
            ));
        }
        if !(1..=1000).contains(&self.max_reinsertions) {
            return Err(Error::config(
                format!("{path}.max_reinsertions"),
                "must be 1..=1000",
            ));
        }
        if !(1..=MAX_REHASH_PER_INSERT).contains(&self.rehash_per_insert) {
            return Err(Error::config(
                format!("{path}.rehash_per_insert"),
                format!(
                    "must be 1 (or resizes never finish) to {MAX_REHASH_PER_INSERT} (the lines \
                     of the largest ECPT way: more moves nothing more), got {}",
                    self.rehash_per_insert
                ),
            ));
        }
        if !(self.cwt_section_lines.is_power_of_two() && self.cwt_section_lines <= 64) {
            return Err(Error::config(
                format!("{path}.cwt_section_lines"),
                "must be a power of two from 1 to 64 (the 4 KiB lines of a 2 MiB region)",
            ));
        }
        if self.rehash_cycles_per_entry > 1_000_000 {
            return Err(Error::config(
                format!("{path}.rehash_cycles_per_entry"),
                "must be at most 1000000 cycles (moving one 64-byte entry)",
            ));
        }
        cost::validate(&self.alloc_cost, &format!("{path}.alloc_cost"))?;
        self.mehpt.validate(&format!("{path}.mehpt"))
    }
}

impl MehptConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.chunk_sizes.is_empty() {
            return Err(Error::config(
                format!("{path}.chunk_sizes"),
                "needs at least one size",
            ));
        }
        for (i, &c) in self.chunk_sizes.iter().enumerate() {
            if !c.is_power_of_two() || !(4096..=1 << 30).contains(&c) {
                return Err(Error::config(
                    format!("{path}.chunk_sizes[{i}]"),
                    "must be a power of two from 4096 to 1 GiB (a buddy block)",
                ));
            }
            if i > 0 && c <= self.chunk_sizes[i - 1] {
                return Err(Error::config(
                    format!("{path}.chunk_sizes[{i}]"),
                    "sizes must be strictly increasing",
                ));
            }
        }
        if !(1..=4096).contains(&self.l2p_entries) {
            return Err(Error::config(
                format!("{path}.l2p_entries"),
                "must be 1..=4096",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_table_iii_and_valid() {
        let c = HashedConfig::default();
        c.validate("schemes.hashed.table").unwrap();
        assert_eq!(
            (c.ways, c.initial_lines, c.upsize, c.downsize),
            (3, 128, 0.6, 0.2)
        );
        assert_eq!(c.mehpt.l2p_entries, 32);
        let parsed: HashedConfig =
            toml::from_str("ways = 4\nhash = \"city\"\n[mehpt]\nper_way = false").unwrap();
        assert_eq!(
            (parsed.ways, parsed.hash, parsed.mehpt.per_way),
            (4, HashKind::City, false)
        );
        assert!(toml::from_str::<HashedConfig>("wayz = 4").is_err());
    }

    #[test]
    fn errors_name_the_key() {
        type Mutation = Box<dyn Fn(&mut HashedConfig)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|c| c.ways = 1), "schemes.hashed.table.ways"),
            (
                Box::new(|c| c.initial_lines = 100),
                "schemes.hashed.table.initial_lines",
            ),
            (Box::new(|c| c.upsize = 1.5), "schemes.hashed.table.upsize"),
            (
                Box::new(|c| c.downsize = 0.4),
                "schemes.hashed.table.downsize",
            ),
            (Box::new(|c| c.scale = 1), "schemes.hashed.table.scale"),
            (
                Box::new(|c| {
                    c.scale = 10;
                    c.downsize = 0.1;
                }),
                "schemes.hashed.table.downsize",
            ),
            (
                Box::new(|c| c.max_reinsertions = 0),
                "schemes.hashed.table.max_reinsertions",
            ),
            (
                Box::new(|c| c.rehash_per_insert = 0),
                "schemes.hashed.table.rehash_per_insert",
            ),
            (
                Box::new(|c| c.rehash_per_insert = MAX_REHASH_PER_INSERT + 1),
                "schemes.hashed.table.rehash_per_insert",
            ),
            (
                Box::new(|c| c.mehpt.chunk_sizes = vec![8192, 4096]),
                "schemes.hashed.table.mehpt.chunk_sizes[1]",
            ),
            (
                Box::new(|c| c.mehpt.chunk_sizes = vec![3000]),
                "schemes.hashed.table.mehpt.chunk_sizes[0]",
            ),
            (
                Box::new(|c| c.rehash_cycles_per_entry = u64::MAX),
                "schemes.hashed.table.rehash_cycles_per_entry",
            ),
            (
                Box::new(|c| c.cwt_section_lines = 3),
                "schemes.hashed.table.cwt_section_lines",
            ),
            (
                Box::new(|c| c.mehpt.l2p_entries = 0),
                "schemes.hashed.table.mehpt.l2p_entries",
            ),
        ];
        for (mutate, key) in cases {
            let mut c = HashedConfig::default();
            mutate(&mut c);
            let e = c.validate("schemes.hashed.table").unwrap_err().to_string();
            assert!(e.contains(&format!("`{key}`")), "{e} should name {key}");
        }
    }
}
