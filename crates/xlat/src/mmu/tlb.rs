//! TLB arrays, generic over what an entry holds.
//!
//! A [`TlbArray`] is set-associative storage of entries of one type with its replacement
//! policy and counters. The entry type ([`TlbEntry`]) says how a lookup finds its entry: the
//! set index and tag a probe selects, and whether an entry stored under that tag answers the
//! probe. Three kinds of entry fit that shape:
//!
//! * a page entry ([`PageEntry`]): one page of one size, its tag the page number, size and
//!   ASID, so the tag alone identifies it (the L1/L2 TLBs, the POM-TLB);
//! * a range entry (RMM's range TLB): any number of pages; every range of an address space
//!   shares the ASID's tag in a single set, and an entry answers if its range covers the page;
//! * a multi-page entry (sub-blocked or compressed, as Mosaic's): one tag for an aligned group
//!   of pages, and an entry answers if it holds the page's sub-entry (the test at the end
//!   builds one).
//!
//! [`Tlb`] is the page TLB of the L1 and L2 levels: a page-entry array probed at each page size
//! it holds. A hit returns the frame straight from the entry: no page-table store or map is
//! touched.

use super::config::{MmuConfig, TlbConfig};
use crate::addr::{PageSize, Pfn, VirtAddr, Vpn};
use crate::assoc::{Replacement, SetAssoc};
use crate::config::HostUses;
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct TlbStats {
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
}

impl TlbStats {
    pub fn add(&mut self, o: &TlbStats) {
        self.accesses += o.accesses;
        self.hits += o.hits;
        self.misses += o.misses;
    }
}

/// Where an entry answering a probe is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// Bits the set is chosen from (the low ones, modulo the sets).
    pub index: u64,
    pub tag: u64,
}

/// What an entry type tells the array that holds it.
pub trait TlbEntry: Copy + Default {
    /// What a lookup presents (a page number at a size and an ASID; a page, an ASID and the
    /// cycle for entries that arrive later...).
    type Probe: Copy;

    /// Where an entry answering `probe` is stored.
    fn key(probe: &Self::Probe) -> Key;

    /// Whether the tag alone answers a probe (page entries): then a lookup is a plain tag
    /// compare and [`TlbEntry::answers`] is never asked.
    const TAG_ANSWERS: bool = false;

    /// Whether this entry, stored under the probe's tag, answers it.
    #[inline(always)]
    fn answers(&self, _probe: &Self::Probe) -> bool {
        true
    }
}

/// A set-associative array of `E` entries with its counters: one probe is one access.
pub struct TlbArray<E> {
    entries: SetAssoc<E>,
    pub stats: TlbStats,
}

impl<E> TlbArray<E> {
    /// Host bytes of one entry (config host-memory checks).
    pub const SLOT_BYTES: u64 = SetAssoc::<E>::SLOT_BYTES;
}

impl<E: TlbEntry> TlbArray<E> {
    pub fn new(sets: usize, ways: usize, replacement: Replacement) -> TlbArray<E> {
        TlbArray {
            entries: SetAssoc::new(sets, ways, replacement),
            stats: TlbStats::default(),
        }
    }

    /// The set `probe` selects.
    #[inline(always)]
    pub fn set_of(&self, probe: &E::Probe) -> usize {
        self.entries.set_of(E::key(probe).index)
    }

    /// The entry answering `probe`, updating replacement state, without counting an access
    /// (for a lookup made of several probes: [`Tlb`] probes each page size).
    #[inline(always)]
    pub fn find(&mut self, probe: &E::Probe) -> Option<&mut E> {
        Self::find_in(&mut self.entries, probe)
    }

    #[inline(always)]
    fn find_in<'a>(entries: &'a mut SetAssoc<E>, probe: &E::Probe) -> Option<&'a mut E> {
        let key = E::key(probe);
        let set = entries.set_of(key.index);
        if E::TAG_ANSWERS {
            entries.lookup(set, key.tag)
        } else {
            entries.lookup_where(set, key.tag, |e| e.answers(probe))
        }
    }

    /// The entry stored where `probe` selects that satisfies `pred` instead of answering the
    /// probe (an update of an entry found by content), updating replacement state.
    pub fn find_with(&mut self, probe: &E::Probe, pred: impl Fn(&E) -> bool) -> Option<&mut E> {
        let key = E::key(probe);
        let set = self.entries.set_of(key.index);
        self.entries.lookup_where(set, key.tag, pred)
    }

    /// One counted lookup.
    #[inline]
    pub fn lookup(&mut self, probe: &E::Probe) -> Option<&mut E> {
        self.stats.accesses += 1;
        match Self::find_in(&mut self.entries, probe) {
            Some(e) => {
                self.stats.hits += 1;
                Some(e)
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// The entry answering `probe` and the way it sits in, without touching replacement
    /// state (checks, and structures laid out in memory that need the way's address).
    pub fn peek(&self, probe: &E::Probe) -> Option<(usize, &E)> {
        let key = E::key(probe);
        let set = self.entries.set_of(key.index);
        self.entries.peek_where(set, key.tag, |e| e.answers(probe))
    }

    /// Insert `entry` for `probe`, replacing the entry answering it if there is one; returns
    /// the valid entry evicted to make room, with its tag.
    pub fn insert(&mut self, probe: &E::Probe, entry: E) -> Option<(u64, E)> {
        if let Some(e) = self.find(probe) {
            *e = entry;
            return None;
        }
        self.insert_absent(probe, entry)
    }

    /// [`TlbArray::insert`] of an entry known to be absent (right after a missed lookup).
    #[inline]
    pub fn insert_absent(&mut self, probe: &E::Probe, entry: E) -> Option<(u64, E)> {
        let key = E::key(probe);
        let set = self.entries.set_of(key.index);
        self.entries.insert_another(set, key.tag, entry)
    }

    /// Drop the entry answering `probe`; returns whether there was one.
    pub fn invalidate(&mut self, probe: &E::Probe) -> bool {
        let key = E::key(probe);
        let set = self.entries.set_of(key.index);
        self.entries
            .invalidate_where_in(set, key.tag, |e| e.answers(probe))
    }

    /// Drop every entry for which `pred(tag, entry)` holds: one pass over the array.
    pub fn invalidate_where(&mut self, pred: impl FnMut(u64, &E) -> bool) -> usize {
        self.entries.invalidate_where(pred)
    }

    /// Valid entries with their tags.
    pub fn entries(&self) -> impl Iterator<Item = (u64, &E)> {
        self.entries.entries()
    }

    pub fn len(&self) -> usize {
        self.entries().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn flush(&mut self) {
        self.entries.clear();
    }
}

/// A page entry: the frame of one page, tagged with the page number at its size, the size
/// and the ASID, so sizes never alias and a tag can be read back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageEntry(pub Pfn);

/// A lookup of the `size` page numbered `vpn` (at that size) in address space `asid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageProbe {
    pub vpn: u64,
    pub size: PageSize,
    pub asid: u16,
}

impl PageProbe {
    /// The probe for the `size` page holding `va`.
    #[inline(always)]
    pub fn of(va: VirtAddr, size: PageSize, asid: u16) -> PageProbe {
        PageProbe {
            vpn: va.0 >> size.shift(),
            size,
            asid,
        }
    }

    /// The probe for the `size` page at 4 KiB page number `vpn`.
    pub fn at(vpn: Vpn, size: PageSize, asid: u16) -> PageProbe {
        PageProbe {
            vpn: vpn.0 >> size.order(),
            size,
            asid,
        }
    }
}

impl PageEntry {
    /// The ASID of a page entry's tag.
    pub fn asid_of(tag: u64) -> u16 {
        (tag & 0xffff) as u16
    }

    /// The page size of a page entry's tag.
    pub fn size_of(tag: u64) -> PageSize {
        PageSize::ALL[((tag >> 16) & 3) as usize]
    }

    /// The page number (at its size) of a page entry's tag.
    pub fn vpn_of(tag: u64) -> u64 {
        tag >> 18
    }
}

impl TlbEntry for PageEntry {
    type Probe = PageProbe;
    const TAG_ANSWERS: bool = true;

    #[inline(always)]
    fn key(p: &PageProbe) -> Key {
        Key {
            index: p.vpn,
            tag: (p.vpn << 18) | ((p.size.index() as u64) << 16) | p.asid as u64,
        }
    }
}

/// A page TLB: page entries of one or more sizes, ASID-tagged.
pub struct Tlb {
    array: TlbArray<PageEntry>,
    latency: u64,
    sizes: Vec<PageSize>,
    /// Valid entries of each page size (by [`PageSize::index`]). A probe at a size with none
    /// cannot hit and a missing probe changes nothing, so a lookup skips it: a run of 4 KiB
    /// pages does not search the sets of the 2 MiB and 1 GiB arrays (or sizes of a unified
    /// array) on every miss.
    held: [u32; 3],
}

impl MmuConfig {
    /// The host memory of each core's TLBs (the TLBs know their entries' size).
    pub fn host_uses(&self, uses: &mut HostUses) {
        let slot = Tlb::SLOT_BYTES;
        let per_core = (uses.cores(), "one per core");
        self.itlb.host_use("mmu.itlb", slot, per_core, uses);
        for (level, tlbs) in [("l1tlb", &self.l1tlb), ("l2tlb", &self.l2tlb)] {
            for (name, t) in tlbs {
                t.host_use(&format!("mmu.{level}.{name}"), slot, per_core, uses);
            }
        }
    }
}

impl Tlb {
    /// Host bytes of one entry (config host-memory checks).
    pub const SLOT_BYTES: u64 = SetAssoc::<PageEntry>::SLOT_BYTES;

    pub fn new(cfg: &TlbConfig) -> Tlb {
        let mut sizes = cfg.page_sizes.clone();
        sizes.sort();
        sizes.dedup();
        Tlb {
            array: TlbArray::new(cfg.sets() as usize, cfg.ways as usize, cfg.replacement),
            latency: cfg.latency as u64,
            sizes,
            held: [0; 3],
        }
    }

    pub fn latency(&self) -> u64 {
        self.latency
    }

    pub fn stats(&self) -> TlbStats {
        self.array.stats
    }

    pub fn reset_stats(&mut self) {
        self.array.stats = TlbStats::default();
    }

    pub fn smallest_size(&self) -> PageSize {
        self.sizes[0]
    }

    pub fn holds(&self, size: PageSize) -> bool {
        self.sizes.contains(&size)
    }

    /// Probe every page size this array holds (hardware probes them in parallel): one access.
    #[inline]
    pub fn lookup(&mut self, va: VirtAddr, asid: u16) -> Option<(Pfn, PageSize)> {
        self.array.stats.accesses += 1;
        for &size in &self.sizes {
            if self.held[size.index()] == 0 {
                continue;
            }
            if let Some(&mut PageEntry(pfn)) = self.array.find(&PageProbe::of(va, size, asid)) {
                self.array.stats.hits += 1;
                return Some((pfn, size));
            }
        }
        self.array.stats.misses += 1;
        None
    }

    /// Count `n` lookups known to repeat the one before them, and their outcome, without
    /// making them (see [`TlbLevel::lookup`](crate::mmu::TlbLevel::lookup)).
    #[inline(always)]
    pub fn count_lookups(&mut self, hit: bool, n: u64) {
        let stats = &mut self.array.stats;
        stats.accesses += n;
        if hit {
            stats.hits += n;
        } else {
            stats.misses += n;
        }
    }

    pub fn insert(&mut self, va: VirtAddr, asid: u16, pfn: Pfn, size: PageSize) {
        let probe = PageProbe::of(va, size, asid);
        if let Some(e) = self.array.find(&probe) {
            *e = PageEntry(pfn);
            return;
        }
        self.insert_absent(va, asid, pfn, size);
    }

    /// [`Tlb::insert`] of a translation a lookup just missed: no search for it first.
    pub fn insert_absent(&mut self, va: VirtAddr, asid: u16, pfn: Pfn, size: PageSize) {
        let evicted = self
            .array
            .insert_absent(&PageProbe::of(va, size, asid), PageEntry(pfn));
        self.held[size.index()] += 1;
        if let Some((tag, _)) = evicted {
            self.held[PageEntry::size_of(tag).index()] -= 1;
        }
    }

    /// Invalidate the translation of the `size` page at `vpn` (INVLPG).
    pub fn invalidate_page(&mut self, vpn: Vpn, size: PageSize, asid: u16) -> bool {
        let dropped = self.array.invalidate(&PageProbe::at(vpn, size, asid));
        self.held[size.index()] -= dropped as u32;
        dropped
    }

    /// Invalidate the 4 KiB pieces of the `size` page at `vpn` that a splintering fill left
    /// here: one pass over the entries, not one probe per 4 KiB page (a 1 GiB page has
    /// 262,144 of them).
    pub fn invalidate_pieces(&mut self, vpn: Vpn, size: PageSize, asid: u16) -> usize {
        if !self.holds(PageSize::Size4K) {
            return 0;
        }
        let huge = vpn.0 >> size.order();
        let dropped = self.array.invalidate_where(|t, _| {
            PageEntry::asid_of(t) == asid
                && PageEntry::size_of(t) == PageSize::Size4K
                && PageEntry::vpn_of(t) >> size.order() == huge
        });
        self.held[PageSize::Size4K.index()] -= dropped as u32;
        dropped
    }

    pub fn flush(&mut self) {
        self.array.flush();
        self.held = [0; 3];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A multi-page entry as Mosaic's TLB holds them: one tag for an aligned group of four
    /// pages, one sub-entry per page (here an uncompressed frame, or none).
    #[derive(Clone, Copy, Debug, Default)]
    struct Group([Option<Pfn>; 4]);

    #[derive(Clone, Copy)]
    struct GroupProbe {
        vpn: u64,
        asid: u16,
    }

    impl TlbEntry for Group {
        type Probe = GroupProbe;
        fn key(p: &GroupProbe) -> Key {
            Key {
                index: p.vpn >> 2,
                tag: ((p.vpn >> 2) << 16) | p.asid as u64,
            }
        }
        fn answers(&self, p: &GroupProbe) -> bool {
            self.0[(p.vpn & 3) as usize].is_some()
        }
    }

    #[test]
    fn a_multi_page_entry_answers_only_the_pages_it_holds() {
        let mut tlb: TlbArray<Group> = TlbArray::new(4, 2, Replacement::Lru);
        let probe = |vpn| GroupProbe { vpn, asid: 1 };
        let mut g = Group::default();
        g.0[1] = Some(Pfn(77));
        tlb.insert_absent(&probe(9), g);
        // Pages 8..12 share the tag; only page 9's sub-entry is there.
        let hit = tlb.lookup(&probe(9)).map(|e| e.0[1]);
        assert_eq!(hit, Some(Some(Pfn(77))));
        assert!(tlb.lookup(&probe(10)).is_none());
        assert!(tlb.lookup(&probe(13)).is_none());
        assert_eq!(
            (tlb.stats.accesses, tlb.stats.hits, tlb.stats.misses),
            (3, 1, 2)
        );
        // Filling page 10 extends the entry in place.
        tlb.find(&probe(9)).expect("held").0[2] = Some(Pfn(78));
        assert!(tlb.peek(&probe(10)).is_some());
        assert_eq!(tlb.len(), 1);
    }

    /// Entries sharing one tag are told apart by their contents (range entries).
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Span(u64, u64);

    impl TlbEntry for Span {
        type Probe = u64;
        fn key(_: &u64) -> Key {
            Key { index: 0, tag: 7 }
        }
        fn answers(&self, vpn: &u64) -> bool {
            (self.0..self.1).contains(vpn)
        }
    }

    #[test]
    fn entries_sharing_a_tag_are_found_by_content_and_replaced_lru() {
        let mut tlb: TlbArray<Span> = TlbArray::new(1, 2, Replacement::Lru);
        tlb.insert_absent(&0, Span(0, 10));
        tlb.insert_absent(&20, Span(20, 30));
        assert_eq!(tlb.lookup(&5).copied(), Some(Span(0, 10)));
        assert_eq!(tlb.lookup(&25).copied(), Some(Span(20, 30)));
        assert!(tlb.lookup(&15).is_none());
        // Span(0, 10) is the least recently used: it makes room.
        let evicted = tlb.insert_absent(&40, Span(40, 50));
        assert_eq!(evicted.map(|(_, e)| e), Some(Span(0, 10)));
        assert!(tlb.invalidate(&45));
        assert!(!tlb.invalidate(&45));
        assert_eq!(tlb.len(), 1);
    }

    #[test]
    fn page_entry_tags_read_back() {
        let p = PageProbe::of(VirtAddr(0x4020_1000), PageSize::Size2M, 9);
        let key = PageEntry::key(&p);
        assert_eq!(PageEntry::asid_of(key.tag), 9);
        assert_eq!(PageEntry::size_of(key.tag), PageSize::Size2M);
        assert_eq!(PageEntry::vpn_of(key.tag), 0x4020_1000 >> 21);
        assert_eq!(key.index, 0x4020_1000 >> 21);
    }
}
