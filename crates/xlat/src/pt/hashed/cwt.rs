//! The contents of the Cuckoo Walk Tables (ECPT; ME-HPT Table III): for each 2 MiB region and
//! each 1 GiB region, which page sizes hold translations in it and in which ways their lines
//! are. The walker's Cuckoo Walk Caches cache these entries so that a walk probes only the
//! tables, and within them only the ways, that can hold the translation (ECPT's "direct"
//! walks; Utopia §7 on ECH: the CWCs find the page size and avoid looking up all the ways).
//! The OS keeps the entries up to date on every map, unmap and cuckoo move; the per-size page
//! counts and per-way line counts behind each entry are the OS's bookkeeping.
//!
//! # Layout in simulated memory
//!
//! A PMD-CWT entry (one per 2 MiB region) starts with a byte of present page sizes (4K, 2M),
//! followed by W-bit way masks (W = ways): field 0 for the line holding the region's 2 MiB
//! PTE, then one field per *section* of the region's 4 KiB PTEs. A section is
//! `cwt_section_lines` consecutive lines (8 PTEs each); its mask is the union of the ways
//! holding them, so with one line per section (the default) a CWC hit names exactly one way.
//! Entries are padded to a power of two bytes (32 for 3 ways, 64 for 4-6 ways with one-line
//! sections), so one entry is one cache-line read. A PUD-CWT entry (one per 1 GiB region) is
//! one word: present sizes (4K, 2M, 1G), then the way mask of the line holding the 1 GiB PTE.
//! Entries of consecutive regions are packed into 4 KiB frames that the OS allocates when a
//! span of regions gets its first entry.
//!
//! Every entry whose bytes change is also recorded in a bounded change log per table
//! ([`ChangeLog`]): the OS's list of CWC invalidations, which the walkers apply before their
//! next walk so that only the cached entries the change affects are dropped.
//!
//! ECPT's CWT entry is also one 64-byte line, but it holds a tag and a small section header
//! (page sizes present, a 2-bit way) for each of many consecutive regions, 64 in the ECPT
//! implementation of EMT-Linux by ECPT's authors; one entry, and one CWC entry, then covers 64
//! regions. This layout gives each region an entry of its own, no larger than a line, with
//! exact masks under random (or weighted) way choice, at a 64th of the reach per CWC entry; the
//! section size is configurable down to one mask per region.
//!
//! The walker does not wait for these entries: on a CWC miss it probes every candidate way and
//! reads the entry beside the probes, to fill the CWC for later walks
//! (`schemes::hashed::walker`).

use super::entry::{cluster_of, page_vpn, PTES_PER_LINE};
use crate::addr::{PageSize, Pfn, PhysAddr, SizeSet, Vpn};
use crate::error::Result;
use crate::pt::store::PtStore;
use crate::pt::PtContext;
use rustc_hash::FxHashMap;

/// Most ways a mask can name (`HashedConfig::validate` keeps `ways` within it).
pub const MAX_WAYS: usize = 8;

/// A set of ways of one table, bit `i` for way `i`.
pub type WayMask = u8;

/// One CWT entry's bytes as read from memory (or held by a CWC): at most one cache line.
pub type RawEntry = [u64; 8];

/// 4 KiB-page lines in a 2 MiB region.
const LINES_PER_2M: u64 = (1 << PageSize::Size2M.order()) / PTES_PER_LINE;
/// Bytes of a PUD-CWT entry.
const PUD_ENTRY_BYTES: u64 = 8;
/// Bit of the first way-mask field of an entry (after the present-sizes byte).
const FIRST_FIELD_BIT: u64 = 8;

/// What a PMD-CWT entry says about one address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmdView {
    pub sizes: SizeSet,
    /// Ways holding the line of the region's 2 MiB PTE.
    pub ways_2m: WayMask,
    /// Ways holding the lines of the address's 4 KiB section.
    pub ways_4k: WayMask,
}

/// What a PUD-CWT entry says about its 1 GiB region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PudView {
    pub sizes: SizeSet,
    pub ways_1g: WayMask,
}

#[derive(Clone, Debug)]
pub struct Cwt {
    ways: u32,
    /// log2 of the lines per 4 KiB section.
    section_shift: u32,
    /// Per 2 MiB region number: pages of 4K and 2M mapped in it.
    pmd: FxHashMap<u64, [u32; 2]>,
    /// Per 1 GiB region number: pages of 4K, 2M and 1G mapped in it.
    pud: FxHashMap<u64, [u32; 3]>,
    /// Lines per way, by (page size, group): a group is a 4 KiB section, or the cluster of a
    /// 2 MiB or 1 GiB line.
    lines: FxHashMap<(usize, u64), [u32; MAX_WAYS]>,
    pmd_image: Image,
    pud_image: Image,
}

/// Regions whose CWT entry changed, in order, numbered from 1; only the last
/// [`ChangeLog::CAPACITY`] are kept. A walker remembers the number of the last change it
/// applied and asks for the ones after it ([`ChangeLog::since`]); one that fell too far
/// behind drops every cached entry of the table instead.
#[derive(Clone, Debug, Default)]
pub struct ChangeLog {
    seq: u64,
    recent: std::collections::VecDeque<u64>,
}

impl ChangeLog {
    pub const CAPACITY: usize = 4096;

    fn push(&mut self, region: u64) {
        self.seq += 1;
        if self.recent.len() == Self::CAPACITY {
            self.recent.pop_front();
        }
        self.recent.push_back(region);
    }

    /// Number of the latest change (0: none yet).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The regions changed after change number `seen`, or `None` if some of them are no
    /// longer kept.
    pub fn since(&self, seen: u64) -> Option<impl Iterator<Item = u64> + '_> {
        let n = self.seq.checked_sub(seen)?;
        (n <= self.recent.len() as u64).then(|| {
            self.recent
                .iter()
                .skip(self.recent.len() - n as usize)
                .copied()
        })
    }
}

/// One CWT's entries in simulated memory: a frame per span of regions.
#[derive(Clone, Debug)]
struct Image {
    entry_bytes: u64,
    frames: FxHashMap<u64, Pfn>,
    changes: ChangeLog,
}

impl Image {
    fn new(entry_bytes: u64) -> Image {
        Image {
            entry_bytes,
            frames: FxHashMap::default(),
            changes: ChangeLog::default(),
        }
    }

    fn per_frame(&self) -> u64 {
        4096 / self.entry_bytes
    }

    fn addr(&self, region: u64) -> Option<PhysAddr> {
        let frame = self.frames.get(&(region / self.per_frame()))?;
        Some(PhysAddr(
            frame.addr().0 + region % self.per_frame() * self.entry_bytes,
        ))
    }

    /// Store `value` in bits `bit .. bit + width` of `region`'s entry, allocating its frame
    /// on first use.
    fn write(
        &mut self,
        ctx: &mut PtContext,
        region: u64,
        bit: u64,
        width: u32,
        value: u64,
    ) -> Result<()> {
        let span = region / self.per_frame();
        if let std::collections::hash_map::Entry::Vacant(slot) = self.frames.entry(span) {
            slot.insert(ctx.alloc_table_frame()?);
        }
        let base = self.addr(region).expect("frame just ensured");
        // The field may straddle two words: write the part in each.
        let mut done = 0;
        let mut changed = false;
        while done < width {
            let at = bit + done as u64;
            let word = PhysAddr(base.0 + at / 64 * 8);
            let shift = (at % 64) as u32;
            let n = (width - done).min(64 - shift);
            let mask = (u64::MAX >> (64 - n)) << shift;
            let old = ctx.store.read(word);
            let part = ((value >> done) << shift) & mask;
            let new = (old & !mask) | part;
            if new != old {
                ctx.store.write(word, new);
                changed = true;
            }
            done += n;
        }
        if changed {
            self.changes.push(region);
        }
        Ok(())
    }

    fn read(&self, store: &PtStore, region: u64) -> Option<(PhysAddr, RawEntry)> {
        let addr = self.addr(region)?;
        let mut raw = RawEntry::default();
        for (k, w) in raw
            .iter_mut()
            .take((self.entry_bytes / 8) as usize)
            .enumerate()
        {
            *w = store.read(PhysAddr(addr.0 + 8 * k as u64));
        }
        Some((addr, raw))
    }
}

/// Bits `bit .. bit + width` of an entry.
fn field(raw: &RawEntry, bit: u64, width: u32) -> u64 {
    let (word, shift) = ((bit / 64) as usize, (bit % 64) as u32);
    let mut v = raw[word] >> shift;
    if shift + width > 64 {
        v |= raw[word + 1] << (64 - shift);
    }
    v & (u64::MAX >> (64 - width))
}

fn region_2m(vpn: Vpn) -> u64 {
    vpn.0 >> PageSize::Size2M.order()
}
fn region_1g(vpn: Vpn) -> u64 {
    vpn.0 >> PageSize::Size1G.order()
}

fn mask_of(counts: &[u32; MAX_WAYS]) -> WayMask {
    counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .fold(0, |m, (w, _)| m | 1 << w)
}

impl Cwt {
    /// Empty tables for `ways`-way page tables with `section_lines` 4 KiB lines per section
    /// (a power of two dividing the 64 lines of a 2 MiB region; validated by the config).
    pub fn new(ways: usize, section_lines: u64) -> Cwt {
        assert!(ways <= MAX_WAYS && section_lines.is_power_of_two());
        let sections = LINES_PER_2M / section_lines;
        let bits = FIRST_FIELD_BIT + ways as u64 * (1 + sections);
        let pmd_bytes = bits.div_ceil(8).next_power_of_two().max(8);
        assert!(pmd_bytes <= 64, "a PMD-CWT entry fits one cache line");
        Cwt {
            ways: ways as u32,
            section_shift: section_lines.trailing_zeros(),
            pmd: FxHashMap::default(),
            pud: FxHashMap::default(),
            lines: FxHashMap::default(),
            pmd_image: Image::new(pmd_bytes),
            pud_image: Image::new(PUD_ENTRY_BYTES),
        }
    }

    /// Bytes of one PMD-CWT entry.
    pub fn pmd_entry_bytes(&self) -> u64 {
        self.pmd_image.entry_bytes
    }

    /// Bit of way-mask field `k` of an entry.
    fn field_bit(&self, k: u64) -> u64 {
        FIRST_FIELD_BIT + k * self.ways as u64
    }

    /// The group whose lines share a way mask: a 4 KiB section, or a 2 MiB or 1 GiB line.
    fn group(&self, size: PageSize, cluster: u64) -> u64 {
        match size {
            PageSize::Size4K => cluster >> self.section_shift,
            _ => cluster,
        }
    }

    /// The 4 KiB section (within its 2 MiB region) of the line `cluster`.
    fn section(&self, cluster: u64) -> u64 {
        (cluster % LINES_PER_2M) >> self.section_shift
    }

    /// Record a new mapping of a `size` page at `vpn` (and write the changed entries).
    pub fn add(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Result<()> {
        if size != PageSize::Size1G {
            self.pmd.entry(region_2m(vpn)).or_default()[size.index()] += 1;
        }
        self.pud.entry(region_1g(vpn)).or_default()[size.index()] += 1;
        self.write_sizes(ctx, vpn, size)
    }

    /// Record the removal of a mapping of a `size` page at `vpn`.
    pub fn remove(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Result<()> {
        fn dec<const N: usize>(map: &mut FxHashMap<u64, [u32; N]>, key: u64, i: usize) {
            if let Some(c) = map.get_mut(&key) {
                c[i] -= 1;
                if c.iter().all(|&n| n == 0) {
                    map.remove(&key);
                }
            }
        }
        if size != PageSize::Size1G {
            dec(&mut self.pmd, region_2m(vpn), size.index());
        }
        dec(&mut self.pud, region_1g(vpn), size.index());
        self.write_sizes(ctx, vpn, size)
    }

    fn write_sizes(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Result<()> {
        if size != PageSize::Size1G {
            let set = self.sizes_in_2m(vpn).bits() as u64;
            self.pmd_image.write(ctx, region_2m(vpn), 0, 8, set)?;
        }
        let set = self.sizes_in_1g(vpn).bits() as u64;
        self.pud_image.write(ctx, region_1g(vpn), 0, 8, set)
    }

    /// Record that the `size` line of `cluster` entered (or left) `way`, and rewrite the way
    /// masks that changed.
    pub fn line_moved(
        &mut self,
        ctx: &mut PtContext,
        size: PageSize,
        cluster: u64,
        way: usize,
        entered: bool,
    ) -> Result<()> {
        let key = (size.index(), self.group(size, cluster));
        let counts = self.lines.entry(key).or_default();
        let before = mask_of(counts);
        if entered {
            counts[way] += 1;
        } else {
            counts[way] = counts[way]
                .checked_sub(1)
                .expect("a line leaves only a way it entered");
        }
        let after = mask_of(counts);
        if after == 0 {
            self.lines.remove(&key);
        }
        if before == after {
            return Ok(());
        }
        let (w, value) = (self.ways, after as u64);
        match size {
            PageSize::Size4K => {
                let bit = self.field_bit(1 + self.section(cluster));
                self.pmd_image
                    .write(ctx, cluster / LINES_PER_2M, bit, w, value)
            }
            // A 2 MiB line holds the PTEs of 8 regions, a 1 GiB line of 8 PUD regions: each
            // of their entries names the line's ways.
            PageSize::Size2M => (0..PTES_PER_LINE).try_for_each(|j| {
                let bit = self.field_bit(0);
                self.pmd_image
                    .write(ctx, cluster * PTES_PER_LINE + j, bit, w, value)
            }),
            PageSize::Size1G => (0..PTES_PER_LINE).try_for_each(|j| {
                let bit = self.field_bit(0);
                self.pud_image
                    .write(ctx, cluster * PTES_PER_LINE + j, bit, w, value)
            }),
        }
    }

    /// The PMD-CWT entry of `vpn`'s 2 MiB region as stored in memory, with its address (none
    /// if no page was ever mapped in its span).
    pub fn pmd_entry(&self, store: &PtStore, vpn: Vpn) -> Option<(PhysAddr, RawEntry)> {
        self.pmd_image.read(store, region_2m(vpn))
    }

    /// The PUD-CWT entry of `vpn`'s 1 GiB region as stored in memory, with its address.
    pub fn pud_entry(&self, store: &PtStore, vpn: Vpn) -> Option<(PhysAddr, RawEntry)> {
        self.pud_image.read(store, region_1g(vpn))
    }

    /// Decode what the PMD-CWT entry `raw` of `vpn`'s region says about `vpn`.
    pub fn pmd_view(&self, raw: &RawEntry, vpn: Vpn) -> PmdView {
        let cluster = cluster_of(vpn, PageSize::Size4K);
        PmdView {
            sizes: SizeSet::from_bits(field(raw, 0, 8) as u8),
            ways_2m: field(raw, self.field_bit(0), self.ways) as WayMask,
            ways_4k: field(raw, self.field_bit(1 + self.section(cluster)), self.ways) as WayMask,
        }
    }

    /// Decode a PUD-CWT entry.
    pub fn pud_view(&self, raw: &RawEntry) -> PudView {
        PudView {
            sizes: SizeSet::from_bits(field(raw, 0, 8) as u8),
            ways_1g: field(raw, self.field_bit(0), self.ways) as WayMask,
        }
    }

    /// The ways holding the lines an entry names for a `size` page at `vpn` (the OS's
    /// bookkeeping, against which the stored masks are checked).
    pub fn ways_holding(&self, size: PageSize, vpn: Vpn) -> WayMask {
        let group = self.group(size, cluster_of(vpn, size));
        self.lines.get(&(size.index(), group)).map_or(0, mask_of)
    }

    /// Check the bookkeeping and the stored masks against the live lines `(way, cluster)` of
    /// the `size` table found by scanning memory.
    pub fn audit(
        &self,
        store: &PtStore,
        size: PageSize,
        live: &[(usize, u64)],
    ) -> std::result::Result<(), String> {
        let mut counts: FxHashMap<u64, [u32; MAX_WAYS]> = FxHashMap::default();
        for &(way, cluster) in live {
            counts.entry(self.group(size, cluster)).or_default()[way] += 1;
        }
        let kept = self.lines.keys().filter(|k| k.0 == size.index()).count();
        if kept != counts.len() {
            return Err(format!(
                "CWT {size}: {kept} groups with lines recorded, {} in memory",
                counts.len()
            ));
        }
        for (&group, c) in &counts {
            if self.lines.get(&(size.index(), group)) != Some(c) {
                return Err(format!(
                    "CWT {size}: line counts of group {group:#x} differ"
                ));
            }
        }
        for &(way, cluster) in live {
            let vpn = page_vpn(cluster, 0, size);
            let stored = match size {
                PageSize::Size1G => self
                    .pud_entry(store, vpn)
                    .map(|(_, raw)| self.pud_view(&raw).ways_1g),
                _ => self.pmd_entry(store, vpn).map(|(_, raw)| {
                    let view = self.pmd_view(&raw, vpn);
                    match size {
                        PageSize::Size4K => view.ways_4k,
                        _ => view.ways_2m,
                    }
                }),
            };
            if stored != Some(self.ways_holding(size, vpn)) || stored.unwrap_or(0) & 1 << way == 0 {
                return Err(format!(
                    "CWT {size}: cluster {cluster:#x} in way {way}, stored mask {stored:?}"
                ));
            }
        }
        Ok(())
    }

    /// The 2 MiB regions whose PMD-CWT entry changed (see [`ChangeLog`]).
    pub fn pmd_changes(&self) -> &ChangeLog {
        &self.pmd_image.changes
    }

    /// The 1 GiB regions whose PUD-CWT entry changed.
    pub fn pud_changes(&self) -> &ChangeLog {
        &self.pud_image.changes
    }

    /// Bytes of memory the two tables occupy.
    pub fn bytes(&self) -> u64 {
        (self.pmd_image.frames.len() + self.pud_image.frames.len()) as u64 * 4096
    }

    /// Page sizes mapped in the 2 MiB region containing `vpn` (a PMD-CWT entry).
    pub fn sizes_in_2m(&self, vpn: Vpn) -> SizeSet {
        self.pmd
            .get(&region_2m(vpn))
            .map_or(SizeSet::default(), |c| SizeSet::from_counts(c))
    }

    /// Page sizes mapped in the 1 GiB region containing `vpn` (a PUD-CWT entry).
    pub fn sizes_in_1g(&self, vpn: Vpn) -> SizeSet {
        self.pud
            .get(&region_1g(vpn))
            .map_or(SizeSet::default(), |c| SizeSet::from_counts(c))
    }

    /// Regions with an entry: (2 MiB, 1 GiB).
    pub fn regions(&self) -> (usize, usize) {
        (self.pmd.len(), self.pud.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PageSize::*;

    fn rig() -> (PtStore, crate::mem::physmem::BuddyAllocator) {
        (
            PtStore::new(),
            crate::mem::physmem::BuddyAllocator::new(1024),
        )
    }

    #[test]
    fn tracks_sizes_per_region_in_memory() {
        let (mut store, mut buddy) = rig();
        let mut ctx = PtContext {
            store: &mut store,
            buddy: &mut buddy,
        };
        let mut c = Cwt::new(3, 1);
        let a = Vpn(0x4_0000 + 3); // in 1 GiB region 1, 2 MiB region 0x200
        c.add(&mut ctx, a, Size4K).unwrap();
        c.add(&mut ctx, Vpn(0x4_0000 + 512), Size2M).unwrap();
        // What a walker reads from memory is what the OS recorded.
        let pmd =
            |c: &Cwt, store: &PtStore, v: Vpn| c.pmd_view(&c.pmd_entry(store, v).unwrap().1, v);
        let pud = |c: &Cwt, store: &PtStore, v: Vpn| c.pud_view(&c.pud_entry(store, v).unwrap().1);
        assert_eq!(pmd(&c, ctx.store, a).sizes, c.sizes_in_2m(a));
        assert_eq!(pud(&c, ctx.store, a).sizes, c.sizes_in_1g(a));
        assert_ne!(
            c.pmd_entry(ctx.store, a).unwrap().0,
            c.pmd_entry(ctx.store, Vpn(0x4_0000 + 512)).unwrap().0
        );
        assert_eq!(c.sizes_in_2m(a).iter().collect::<Vec<_>>(), vec![Size4K]);
        assert_eq!(
            c.sizes_in_1g(a).iter().collect::<Vec<_>>(),
            vec![Size4K, Size2M]
        );
        c.add(&mut ctx, Vpn(0), Size1G).unwrap();
        assert!(c.sizes_in_2m(Vpn(0)).is_empty());
        assert!(c.sizes_in_1g(Vpn(5)).contains(Size1G));
        assert!(pud(&c, ctx.store, Vpn(5)).sizes.contains(Size1G));
        c.remove(&mut ctx, a, Size4K).unwrap();
        assert!(c.sizes_in_2m(a).is_empty());
        assert!(pmd(&c, ctx.store, a).sizes.is_empty());
        assert_eq!(c.sizes_in_1g(a).iter().collect::<Vec<_>>(), vec![Size2M]);
        assert_eq!(c.regions(), (1, 2));
    }

    #[test]
    fn way_masks_follow_lines_in_memory() {
        let (mut store, mut buddy) = rig();
        let mut ctx = PtContext {
            store: &mut store,
            buddy: &mut buddy,
        };
        // 4 ways, sections of 2 lines: 8 + 4 x 33 bits = 18 bytes, padded to 32.
        let mut c = Cwt::new(4, 2);
        assert_eq!(c.pmd_entry_bytes(), 32);
        let region = 7u64; // 2 MiB region 7: lines 7 * 64 ..
        let line = |k: u64| region * LINES_PER_2M + k;
        c.line_moved(&mut ctx, Size4K, line(62), 3, true).unwrap();
        c.line_moved(&mut ctx, Size4K, line(63), 1, true).unwrap();
        c.line_moved(&mut ctx, Size4K, line(0), 2, true).unwrap();
        let view = |c: &Cwt, store: &PtStore, k: u64| {
            let v = Vpn(line(k) * PTES_PER_LINE + 5);
            c.pmd_view(&c.pmd_entry(store, v).unwrap().1, v)
        };
        // The last section's field straddles two words (bits 8 + 4 * 32 ..).
        assert_eq!(view(&c, ctx.store, 62).ways_4k, 0b1010);
        assert_eq!(view(&c, ctx.store, 63).ways_4k, 0b1010);
        assert_eq!(view(&c, ctx.store, 0).ways_4k, 0b0100);
        assert_eq!(view(&c, ctx.store, 2).ways_4k, 0);
        // A cuckoo move of line 63 from way 1 to way 3.
        c.line_moved(&mut ctx, Size4K, line(63), 1, false).unwrap();
        c.line_moved(&mut ctx, Size4K, line(63), 3, true).unwrap();
        assert_eq!(view(&c, ctx.store, 63).ways_4k, 0b1000);
        assert_eq!(c.ways_holding(Size4K, Vpn(line(62) * 8)), 0b1000);
        // A 2 MiB line covers 8 regions; every one of their entries names its way.
        c.line_moved(&mut ctx, Size2M, 0, 2, true).unwrap();
        for r in 0..8 {
            let v = Vpn(r << 9);
            assert_eq!(
                c.pmd_view(&c.pmd_entry(ctx.store, v).unwrap().1, v).ways_2m,
                0b100
            );
        }
        c.line_moved(&mut ctx, Size1G, 1, 0, true).unwrap();
        let v = Vpn(9 << 18);
        assert_eq!(c.pud_view(&c.pud_entry(ctx.store, v).unwrap().1).ways_1g, 1);
        // Audit against the lines "found in memory".
        let live = [(3, line(62)), (3, line(63)), (2, line(0))];
        c.audit(ctx.store, Size4K, &live).unwrap();
        assert!(c.audit(ctx.store, Size4K, &live[..2]).is_err());
    }

    #[test]
    fn entry_sizes_fit_one_line() {
        assert_eq!(Cwt::new(3, 1).pmd_entry_bytes(), 32);
        assert_eq!(Cwt::new(4, 1).pmd_entry_bytes(), 64);
        assert_eq!(Cwt::new(6, 1).pmd_entry_bytes(), 64);
        assert_eq!(Cwt::new(3, 64).pmd_entry_bytes(), 8);
    }
}
