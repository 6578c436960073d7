//! The HPT line format: one 64-byte line clusters the PTEs of 8 consecutive virtual pages of
//! one page size (Yaniv & Tsafrir's PTE clustering, ME-HPT §II-B) and spreads the line's hash
//! tag over the otherwise unused upper bits of its 8 words (PTE compaction).
//!
//! Word `j` of a line maps page `8 * cluster + j` (in units of the table's page size):
//! bit 0 present, bits 1-2 writable/user as in x86-64, bits 12..51 the frame, and bits 52..63
//! hold bits `12j .. 12j+12` of the tag. The tag is the cluster number (`vpn >> 3` in page-size
//! units), so the 8 words carry 96 tag bits, more than any cluster number needs. A lookup
//! finds a translation from these bytes alone: a line hits if some word is present and the
//! reassembled tag equals the cluster.

use crate::addr::{PageSize, Pfn, PhysAddr, Vpn};
use crate::pt::radix::{ADDR_MASK, PRESENT, USER, WRITABLE};
use crate::pt::store::PtStore;

/// PTEs clustered in one line.
pub const PTES_PER_LINE: u64 = 8;
/// Bytes of one line (one cache line).
pub const LINE_BYTES: u64 = crate::addr::LINE_BYTES;
const TAG_SHIFT: u32 = 52;
const TAG_BITS_PER_WORD: u32 = 12;
/// Tag bits a line carries (8 words x 12 bits).
pub const TAG_BITS: u32 = TAG_BITS_PER_WORD * PTES_PER_LINE as u32;

/// The cluster (line tag) holding the PTE of the `size` page at `vpn`.
#[inline]
pub fn cluster_of(vpn: Vpn, size: PageSize) -> u64 {
    (vpn.0 >> size.order()) / PTES_PER_LINE
}

/// The word of its line that holds the PTE of the `size` page at `vpn`.
#[inline]
pub fn word_of(vpn: Vpn, size: PageSize) -> usize {
    ((vpn.0 >> size.order()) % PTES_PER_LINE) as usize
}

/// The first base page of the page that word `word` of `cluster`'s line maps.
pub fn page_vpn(cluster: u64, word: usize, size: PageSize) -> Vpn {
    Vpn((cluster * PTES_PER_LINE + word as u64) << size.order())
}

/// One HPT line as the 8 little-endian words stored in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    pub words: [u64; PTES_PER_LINE as usize],
}

impl Line {
    /// A line for `cluster` with no present PTE (the tag is written into every word).
    pub fn new(cluster: u64) -> Line {
        let mut words = [0u64; PTES_PER_LINE as usize];
        for (j, w) in words.iter_mut().enumerate() {
            let shift = TAG_BITS_PER_WORD * j as u32;
            let piece = if shift < 64 {
                (cluster >> shift) & 0xfff
            } else {
                0
            };
            *w = piece << TAG_SHIFT;
        }
        Line { words }
    }

    /// The tag reassembled from the words' upper bits.
    pub fn tag(&self) -> u64 {
        self.words
            .iter()
            .enumerate()
            .filter(|(j, _)| TAG_BITS_PER_WORD * (*j as u32) < 64)
            .fold(0, |t, (j, w)| {
                t | ((w >> TAG_SHIFT) << (TAG_BITS_PER_WORD * j as u32))
            })
    }

    /// Whether the line holds at least one present PTE (an unused slot is all zeros).
    pub fn is_live(&self) -> bool {
        self.words.iter().any(|w| w & PRESENT != 0)
    }

    /// Whether this line holds `cluster`'s PTEs.
    pub fn holds(&self, cluster: u64) -> bool {
        self.is_live() && self.tag() == cluster
    }

    pub fn pte(&self, word: usize) -> Option<Pfn> {
        let w = self.words[word];
        (w & PRESENT != 0).then_some(Pfn((w & ADDR_MASK) >> 12))
    }

    /// Set (or clear, with `None`) the PTE in `word`, keeping the tag bits.
    pub fn set_pte(&mut self, word: usize, pfn: Option<Pfn>) {
        let tag = self.words[word] & !((1u64 << TAG_SHIFT) - 1);
        self.words[word] = tag
            | pfn.map_or(0, |p| {
                debug_assert_eq!(p.addr().0 & !ADDR_MASK, 0, "frame beyond 52 bits");
                p.addr().0 | PRESENT | WRITABLE | USER
            });
    }

    /// Read the line at `addr` (64-byte aligned) from simulated memory.
    pub fn read(store: &PtStore, addr: PhysAddr) -> Line {
        debug_assert_eq!(addr.0 % LINE_BYTES, 0);
        Line {
            words: store.read_line(addr),
        }
    }

    pub fn write(&self, store: &mut PtStore, addr: PhysAddr) {
        for (j, w) in self.words.iter().enumerate() {
            store.write(PhysAddr(addr.0 + 8 * j as u64), *w);
        }
    }

    /// Zero the line at `addr` (an unused slot).
    pub fn clear(store: &mut PtStore, addr: PhysAddr) {
        for j in 0..PTES_PER_LINE {
            store.write(PhysAddr(addr.0 + 8 * j), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_and_ptes_round_trip_through_memory() {
        let mut store = PtStore::new();
        store.zero_frame(Pfn(5));
        let cluster = 0x1_2345_6789_abcd;
        let mut line = Line::new(cluster);
        assert!(!line.is_live());
        line.set_pte(3, Some(Pfn(0xf_ffff_ffff)));
        line.set_pte(7, Some(Pfn(1)));
        let at = PhysAddr(Pfn(5).addr().0 + 128);
        line.write(&mut store, at);
        let back = Line::read(&store, at);
        assert!(back.holds(cluster));
        assert!(!back.holds(cluster + 1));
        assert_eq!(back.pte(3), Some(Pfn(0xf_ffff_ffff)));
        assert_eq!(back.pte(7), Some(Pfn(1)));
        assert_eq!(back.pte(0), None);
        let mut cleared = back;
        cleared.set_pte(3, None);
        cleared.set_pte(7, None);
        assert!(!cleared.is_live());
        assert_eq!(cleared.tag(), cluster, "the tag survives clearing the PTEs");
    }

    #[test]
    fn cluster_geometry() {
        assert_eq!(cluster_of(Vpn(0x1f), PageSize::Size4K), 3);
        assert_eq!(word_of(Vpn(0x1f), PageSize::Size4K), 7);
        let v = Vpn(13 << 9);
        assert_eq!(cluster_of(v, PageSize::Size2M), 1);
        assert_eq!(word_of(v, PageSize::Size2M), 5);
        assert_eq!(page_vpn(1, 5, PageSize::Size2M), v);
    }
}
