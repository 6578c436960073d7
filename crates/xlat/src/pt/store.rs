//! Sparse simulated physical memory for translation metadata.
//!
//! Only frames that hold page-table (or other translation) structures have contents; data pages
//! have none, since no scheme's behaviour depends on data values. Each stored frame is 512
//! little-endian 64-bit words, exactly as an x86-64 page-table page.

use crate::addr::{Pfn, PhysAddr};
use crate::mem::prefetch_host;
use std::cell::Cell;

pub const WORDS_PER_FRAME: usize = 512;

/// A frame's contents, stored inline in [`PtStore`]'s arena (no pointer to chase).
type Frame = [u64; WORDS_PER_FRAME];

/// The steps of [`PtStore::prefetch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetch {
    Index,
    Word,
}

/// `owner` of a slot whose frame was released.
const NO_OWNER: u64 = u64::MAX;

/// A table frame and the slot of [`PtStore`] its contents were in when the reference was
/// taken: what a walker keeps in its page-walk caches, so that a read in a cached table goes
/// straight to its contents. Without it a read costs the host two dependent loads that miss
/// its caches on large tables (the direct index's entry, then the word); with it, one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableRef {
    pub pfn: Pfn,
    /// 1 + the index in `frames`, or 0 if `pfn` held no table when the reference was taken.
    slot: u32,
}

/// Table frames, found by frame number through a direct index: a walk reads a few entries at
/// scattered frames, and a direct index costs the host one memory access fewer per read than
/// a hash map would (the walk path is the simulator's hot path, docs/architecture.md "rules").
#[derive(Default)]
pub struct PtStore {
    /// `slot_of[pfn]`: 0 when `pfn` holds no table, else 1 + its index in `frames`. Grows to
    /// the highest table frame number (4 bytes per frame of simulated memory at most).
    slot_of: Vec<u32>,
    /// The frames' contents, one after another: a read is the index's load and then the
    /// word's, with no pointer to a boxed frame between them.
    frames: Vec<Frame>,
    /// `owner[i]`: the frame number whose contents `frames[i]` holds (`NO_OWNER` once
    /// released), by which a [`TableRef`]'s remembered slot is checked.
    owner: Vec<u64>,
    /// `links[i][w]`: 1 + the slot where the table that word `w` of `frames[i]` points to
    /// was found when a walk last followed it (0: never). A walk that follows the word again
    /// goes to that slot if its owner is still the frame the word names, its load read from
    /// `owner` (a short array the host keeps cached) instead of the direct index (one entry
    /// per frame of simulated memory, which misses). Nothing clears a link: a word rewritten,
    /// or a frame released, fails the owner's check and is looked up again. Kept in cells:
    /// walks read the store through a shared reference, and a link simulates nothing.
    links: Vec<[Cell<u32>; WORDS_PER_FRAME]>,
    /// Indices in `frames` of released frames, reused before `frames` grows.
    free: Vec<u32>,
    live: u64,
}

impl PtStore {
    /// Host bytes the direct index may take per frame of simulated memory: one slot number,
    /// up to the highest table frame (which, with fragmented memory, may be near the top).
    pub const INDEX_BYTES_PER_FRAME: u64 = std::mem::size_of::<u32>() as u64;

    pub fn new() -> PtStore {
        PtStore::default()
    }

    #[inline]
    fn frame(&self, pfn: u64) -> Option<&Frame> {
        match self.slot_of.get(pfn as usize) {
            Some(&slot) if slot != 0 => Some(&self.frames[slot as usize - 1]),
            _ => None,
        }
    }

    /// Whether `pfn` has contents (it was given them by [`PtStore::zero_frame`]).
    pub fn holds(&self, pfn: Pfn) -> bool {
        self.frame(pfn.0).is_some()
    }

    /// Give `pfn` zeroed contents (a freshly allocated table page).
    pub fn zero_frame(&mut self, pfn: Pfn) {
        let at = pfn.0 as usize;
        if at >= self.slot_of.len() {
            self.slot_of.resize((at + 1).next_power_of_two(), 0);
        }
        if self.slot_of[at] != 0 {
            self.frames[self.slot_of[at] as usize - 1].fill(0);
            return;
        }
        let slot = match self.free.pop() {
            Some(i) => {
                self.frames[i as usize].fill(0);
                i
            }
            None => {
                self.frames.push([0; WORDS_PER_FRAME]);
                self.links.push([const { Cell::new(0) }; WORDS_PER_FRAME]);
                (self.frames.len() - 1) as u32
            }
        };
        self.slot_of[at] = slot + 1;
        if slot as usize == self.owner.len() {
            self.owner.push(pfn.0);
        } else {
            self.owner[slot as usize] = pfn.0;
        }
        self.live += 1;
    }

    pub fn release_frame(&mut self, pfn: Pfn) {
        if let Some(slot) = self.slot_of.get_mut(pfn.0 as usize) {
            if *slot != 0 {
                self.owner[*slot as usize - 1] = NO_OWNER;
                self.free.push(*slot - 1);
                *slot = 0;
                self.live -= 1;
            }
        }
    }

    /// Read the 8-byte word at `addr` (must be 8-byte aligned). Frames never written read as 0,
    /// i.e. a not-present entry.
    #[inline]
    pub fn read(&self, addr: PhysAddr) -> u64 {
        debug_assert_eq!(addr.0 % 8, 0);
        self.frame(addr.pfn().0)
            .map_or(0, |f| f[((addr.0 & 0xfff) >> 3) as usize])
    }

    /// A reference to the table at `pfn`, remembering where its contents are now.
    #[inline]
    pub fn table(&self, pfn: Pfn) -> TableRef {
        TableRef {
            pfn,
            slot: self.slot_of.get(pfn.0 as usize).copied().unwrap_or(0),
        }
    }

    /// Word `index` (0..512) of `table`: what [`PtStore::read`] returns for that word's
    /// address. The remembered slot is read if it still holds the frame (the owner's check
    /// does not delay the word's load); a frame released or moved since is looked up again.
    #[inline]
    pub fn read_in(&self, table: TableRef, index: usize) -> u64 {
        let at = (table.slot as usize).wrapping_sub(1);
        match (self.owner.get(at), self.frames.get(at)) {
            (Some(&owner), Some(f)) if owner == table.pfn.0 => f[index],
            _ => self.read(PhysAddr(table.pfn.addr().0 + 8 * index as u64)),
        }
    }

    /// The table at `pfn`, which word `index` of `table` points to: at the slot where it was
    /// found the last time this word was followed if that slot still holds it, else looked
    /// up in the index and remembered for the next time.
    #[inline]
    pub fn child(&self, table: TableRef, index: usize, pfn: Pfn) -> TableRef {
        let Some(link) = self.links.get((table.slot as usize).wrapping_sub(1)) else {
            return self.table(pfn);
        };
        let slot = link[index].get();
        if self.owner.get((slot as usize).wrapping_sub(1)) == Some(&pfn.0) {
            return TableRef { pfn, slot };
        }
        let child = self.table(pfn);
        link[index].set(child.slot);
        child
    }

    /// Ask the host to bring into its caches what a read of the word at `addr` needs: a hint
    /// that changes nothing here. `Prefetch::Index` requests the direct index's entry of the
    /// frame (without reading anything that could miss); `Prefetch::Word`, given a few
    /// references after that, reads the entry and requests the word. A walk reads a leaf
    /// entry the host has rarely kept cached (random pages over a large table): requested
    /// ahead in these two steps, the read finds both in the host's cache.
    #[inline]
    pub fn prefetch(&self, addr: PhysAddr, what: Prefetch) {
        let pfn = addr.pfn().0 as usize;
        match what {
            Prefetch::Index => {
                if let Some(slot) = self.slot_of.get(pfn) {
                    prefetch_host(slot);
                }
            }
            Prefetch::Word => {
                if let Some(f) = self.frame(pfn as u64) {
                    prefetch_host(&f[((addr.0 & 0xfff) >> 3) as usize]);
                }
            }
        }
    }

    /// Read the eight words of the 64-byte line at `addr` (64-byte aligned) with one frame
    /// lookup: how hashed page-table lines are fetched on every walk.
    #[inline]
    pub fn read_line(&self, addr: PhysAddr) -> [u64; 8] {
        debug_assert_eq!(addr.0 % 64, 0);
        self.frame(addr.pfn().0).map_or([0; 8], |f| {
            let at = ((addr.0 & 0xfff) >> 3) as usize;
            f[at..at + 8]
                .try_into()
                .expect("a line lies inside its frame")
        })
    }

    /// Write the 8-byte word at `addr`; the frame must have been given contents first.
    pub fn write(&mut self, addr: PhysAddr, value: u64) {
        let slot = self
            .slot_of
            .get(addr.pfn().0 as usize)
            .copied()
            .filter(|&s| s != 0)
            .expect("page-table write to a frame that was never allocated as a table");
        self.frames[slot as usize - 1][((addr.0 & 0xfff) >> 3) as usize] = value;
    }

    /// Read the `width`-bit field (1..=64 bits, inside one word) at bit `bit` of the
    /// structure at `base` (8-byte aligned): a TAR tag or an SF counter.
    #[inline]
    pub fn read_bits(&self, base: PhysAddr, bit: u64, width: u64) -> u64 {
        let word = self.read(PhysAddr(base.0 + bit / 64 * 8));
        (word >> (bit % 64)) & field_mask(bit, width)
    }

    /// Write the `width`-bit field at bit `bit` of the structure at `base`, keeping the rest
    /// of its word.
    pub fn write_bits(&mut self, base: PhysAddr, bit: u64, width: u64, value: u64) {
        let addr = PhysAddr(base.0 + bit / 64 * 8);
        let mask = field_mask(bit, width);
        debug_assert_eq!(value & !mask, 0, "value wider than its field");
        let word = self.read(addr) & !(mask << (bit % 64));
        self.write(addr, word | (value & mask) << (bit % 64));
    }

    /// Frames holding table contents now.
    pub fn frames(&self) -> u64 {
        self.live
    }
}

/// The mask of a `width`-bit field at bit `bit`, which must not straddle a word.
#[inline]
fn field_mask(bit: u64, width: u64) -> u64 {
    debug_assert!((1..=64).contains(&width) && bit % 64 + width <= 64);
    if width == 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_zeroed_read_back_released_and_reused() {
        let mut s = PtStore::new();
        let a = PhysAddr(Pfn(7).addr().0 + 64);
        assert_eq!(s.read(a), 0, "a frame never allocated reads as not-present");
        s.zero_frame(Pfn(7));
        s.write(a, 0xabc);
        assert_eq!(s.read(a), 0xabc);
        assert_eq!(s.read_line(a)[0], 0xabc);
        s.zero_frame(Pfn(1 << 20)); // far above: the index grows
        assert_eq!(s.frames(), 2);
        s.release_frame(Pfn(7));
        assert_eq!(s.read(a), 0);
        s.zero_frame(Pfn(9)); // reuses the released slot, zeroed
        assert_eq!(s.read(PhysAddr(Pfn(9).addr().0 + 64)), 0);
        assert_eq!(s.frames(), 2);
    }

    #[test]
    fn bit_fields_keep_their_neighbours() {
        let mut s = PtStore::new();
        s.zero_frame(Pfn(3));
        let base = Pfn(3).addr();
        for i in 0..32 {
            s.write_bits(base, i * 4, 4, i % 16);
        }
        s.write_bits(base, 64 + 32, 32, 0xdead_beef);
        for i in 0..16 {
            assert_eq!(s.read_bits(base, i * 4, 4), i % 16);
        }
        assert_eq!(s.read_bits(base, 64 + 32, 32), 0xdead_beef);
        assert_eq!(s.read_bits(base, 64, 4), 0);
        s.write_bits(base, 128, 64, u64::MAX);
        assert_eq!(s.read_bits(base, 128, 64), u64::MAX);
    }

    proptest::proptest! {
        /// A table reference, however old, reads what the frame's address reads now: through
        /// its slot while the frame keeps it, by the index once the frame was released (and
        /// its slot perhaps reused by another) or when it was taken before the frame existed;
        /// and so does one found by following a word, whatever that word's link remembers.
        #[test]
        fn table_refs_read_what_addresses_read(
            ops in proptest::collection::vec((0u8..4, 0u64..6, 0usize..512, 1u64..1000), 1..80)
        ) {
            let mut s = PtStore::new();
            let mut refs: Vec<TableRef> = Vec::new();
            for (op, pfn, index, value) in ops {
                let pfn = Pfn(pfn * 5);
                let at = PhysAddr(pfn.addr().0 + 8 * index as u64);
                match op {
                    0 => s.zero_frame(pfn),
                    1 => s.release_frame(pfn),
                    2 if s.holds(pfn) => s.write(at, value),
                    _ => {
                        let parent = refs.get(value as usize % refs.len().max(1)).copied();
                        refs.push(s.table(pfn));
                        if let Some(p) = parent {
                            refs.push(s.child(p, index, pfn));
                        }
                    }
                }
                for &r in &refs {
                    let addr = PhysAddr(r.pfn.addr().0 + 8 * index as u64);
                    proptest::prop_assert_eq!(s.read_in(r, index), s.read(addr));
                }
            }
        }
    }
}
