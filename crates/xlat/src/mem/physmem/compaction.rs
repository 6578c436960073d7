//! Compaction for contiguous allocations (ME-HPT §III: "allocating and zeroing" a contiguous
//! chunk at 0.7 FMFI works, slowly; above 0.7 a 64 MB allocation fails).
//!
//! When no free block of the requested order exists, the allocator looks for the aligned range
//! of that order whose only occupants are *movable* frames and which needs the fewest of them
//! moved. Movable are the pins of fragmentation injection (page cache and other programs'
//! pages) and the processes' 4 KiB data pages; page-table frames and huge pages are not. It
//! migrates those frames to free frames outside the range, logs each move for the OS (which
//! remaps the pages and shoots down their TLB entries), and hands out the range. Like Linux's direct compaction,
//! which gives up when memory is too fragmented, compaction is refused when the FMFI (at the
//! policy's order) is above a limit; the default limit sits between ME-HPT's 0.7 (where its
//! 64 MB allocations succeed) and the higher fragmentation where they fail.
//!
//! The time compaction takes is part of the measured allocation cost the caller charges
//! (`schemes.hashed.table.alloc_cost`, measured at 0.7 FMFI), so it is not added here.

use super::{block_frames, BuddyAllocator, MAX_ORDER};
use crate::addr::Pfn;

/// A set of frame numbers, one bit per frame of memory: every 4 KiB data page a process maps
/// is marked, so marking must be cheap (an ordered tree cost a fault or a populated page more
/// than its page-table update). Iterates in address order, as the tree did.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct FrameSet {
    words: Vec<u64>,
}

impl FrameSet {
    /// An empty set of frames below `frames`.
    pub(super) fn new(frames: u64) -> FrameSet {
        FrameSet {
            words: vec![0; frames.div_ceil(64) as usize],
        }
    }

    pub(super) fn insert(&mut self, frame: u64) {
        let w = (frame / 64) as usize;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (frame % 64);
    }

    pub(super) fn remove(&mut self, frame: u64) {
        if let Some(word) = self.words.get_mut((frame / 64) as usize) {
            *word &= !(1 << (frame % 64));
        }
    }

    /// The frames in `start..end`, in order.
    pub(super) fn range(&self, start: u64, end: u64) -> impl Iterator<Item = u64> + '_ {
        let end = end.min(self.words.len() as u64 * 64);
        let (first, last) = (start / 64, end.div_ceil(64));
        (first..last.max(first)).flat_map(move |w| {
            let mut bits = self.words[w as usize];
            // Only the bits of `start..end` in this word.
            if w * 64 < start {
                bits &= u64::MAX << (start - w * 64);
            }
            if (w + 1) * 64 > end {
                bits &= u64::MAX >> ((w + 1) * 64 - end);
            }
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as u64;
                    bits &= bits - 1;
                    w * 64 + b
                })
            })
        })
    }

    /// How many frames of `start..end` the set holds.
    pub(super) fn count(&self, start: u64, end: u64) -> u64 {
        let end = end.min(self.words.len() as u64 * 64);
        if start >= end {
            return 0;
        }
        let (first, last) = (start / 64, end.div_ceil(64));
        (first..last)
            .map(|w| {
                let mut bits = self.words[w as usize];
                if w * 64 < start {
                    bits &= u64::MAX << (start - w * 64);
                }
                if (w + 1) * 64 > end {
                    bits &= u64::MAX >> ((w + 1) * 64 - end);
                }
                bits.count_ones() as u64
            })
            .sum()
    }

    /// Every frame in the set, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.range(0, self.words.len() as u64 * 64)
    }
}

/// When the allocator may compact, set by the OS at boot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompactionPolicy {
    /// Compaction is refused when the FMFI at `fmfi_order` is above this.
    pub max_fmfi: f64,
    pub fmfi_order: u32,
}

impl BuddyAllocator {
    /// Let [`alloc_contiguous`](Self::alloc_contiguous) compact under `policy` (none: never).
    pub fn set_compaction(&mut self, policy: Option<CompactionPolicy>) {
        self.compaction = policy;
    }

    /// Mark allocated frames as movable by compaction (fragmentation pins).
    pub fn mark_movable(&mut self, frames: impl IntoIterator<Item = Pfn>) {
        for p in frames {
            self.movable.insert(p.0);
        }
    }

    /// A movable frame was freed (or became unmovable).
    pub fn unmark_movable(&mut self, frame: Pfn) {
        self.movable.remove(frame.0);
    }

    /// The frames compaction migrated since the last call, as (old, new): their owners must
    /// now use the new frames.
    pub fn take_moves(&mut self) -> Vec<(Pfn, Pfn)> {
        std::mem::take(&mut self.moves)
    }

    /// The movable frames, in address order.
    pub fn movable_frames(&self) -> impl Iterator<Item = Pfn> + '_ {
        self.movable.iter().map(Pfn)
    }

    /// Allocate `2^order` contiguous frames: a free block if there is one, otherwise a range
    /// emptied by compaction. `None` if neither works.
    pub fn alloc_contiguous(&mut self, order: u32) -> Option<Pfn> {
        // No block is larger than the largest order, and compaction cannot make one: its
        // search counts free blocks by order, up to `order`.
        if order > MAX_ORDER {
            return None;
        }
        if let Some(p) = self.alloc(order) {
            return Some(p);
        }
        let policy = self.compaction?;
        if self.fmfi(policy.fmfi_order) > policy.max_fmfi {
            self.stats.compactions_refused += 1;
            return None;
        }
        let Some((start, moves)) = self.cheapest_compactable_range(order) else {
            self.stats.compactions_failed += 1;
            return None;
        };
        self.migrate_out(start, order, moves);
        Some(Pfn(start))
    }

    /// The aligned `order` range holding only free and movable frames with the fewest movable
    /// ones (lowest address on ties), if there is free memory outside it to move them to.
    fn cheapest_compactable_range(&self, order: u32) -> Option<(u64, u64)> {
        let size = block_frames(order);
        let mut best: Option<(u64, u64)> = None;
        for start in (0..self.total / size).map(|r| r * size) {
            let end = start + size;
            let moves = self.movable.count(start, end);
            if best.is_some_and(|(_, m)| moves >= m) {
                continue;
            }
            // A range with no free block of `order` or more in it is covered by smaller free
            // blocks, movable frames and frames that cannot move.
            let free: u64 = (0..order)
                .map(|o| self.free[o as usize].range(start..end).count() as u64 * block_frames(o))
                .sum();
            if free + moves == size && self.free_frames - free >= moves {
                best = Some((start, moves));
            }
        }
        best
    }

    /// Take the free blocks inside `[start, start + 2^order)` and move its `moves` movable
    /// frames to free frames outside it; the range is then allocated to the caller.
    fn migrate_out(&mut self, start: u64, order: u32, moves: u64) {
        let end = start + block_frames(order);
        for o in 0..order {
            let inside: Vec<u64> = self.free[o as usize].range(start..end).copied().collect();
            for b in inside {
                self.free[o as usize].remove(&b);
                self.free_frames -= block_frames(o);
            }
        }
        let pins: Vec<u64> = self.movable.range(start, end).collect();
        debug_assert_eq!(pins.len() as u64, moves);
        for old in pins {
            let new = self
                .alloc(0)
                .expect("free frames outside the range were counted");
            self.movable.remove(old);
            self.movable.insert(new.0);
            self.moves.push((Pfn(old), new));
        }
        self.stats.compactions += 1;
        self.stats.compaction_moves += moves;
        self.stats.allocs[order as usize] += 1;
        // Its free blocks were counted out above, one by one.
        self.journal(start, order);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn frame_set_agrees_with_an_ordered_set() {
        use std::collections::BTreeSet;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |bound: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % bound
        };
        let frames = 1000;
        let (mut set, mut tree) = (super::FrameSet::new(frames), BTreeSet::new());
        for _ in 0..5000 {
            let f = next(frames);
            if next(3) == 0 {
                set.remove(f);
                tree.remove(&f);
            } else {
                set.insert(f);
                tree.insert(f);
            }
            let (a, b) = (next(frames + 100), next(frames + 100));
            let (start, end) = (a.min(b), a.max(b));
            let want: Vec<u64> = tree.range(start..end).copied().collect();
            assert_eq!(set.range(start, end).collect::<Vec<_>>(), want);
            assert_eq!(set.count(start, end), want.len() as u64);
        }
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            tree.iter().copied().collect::<Vec<_>>()
        );
    }

    use super::*;
    use crate::rng::{stream, Rng};

    fn fragmented(frames: u64, fmfi: f64, seed: u64) -> BuddyAllocator {
        let mut a = BuddyAllocator::new(frames);
        let pins = a.fragment(fmfi, 9, &mut Rng::new(seed, stream::FRAGMENTATION));
        a.mark_movable(pins);
        a.set_compaction(Some(CompactionPolicy {
            max_fmfi: 0.75,
            fmfi_order: 9,
        }));
        a
    }

    #[test]
    fn a_block_beyond_the_largest_order_is_refused_not_compacted_for() {
        // An ECPT way of 2^30 lines (64 GiB) asks for order 24; before this was checked the
        // compaction search indexed its per-order free lists past their end.
        let mut a = fragmented(1 << 18, 0.5, 1);
        let free = a.free_frames();
        assert_eq!(a.alloc_contiguous(MAX_ORDER + 6), None);
        assert_eq!(a.free_frames(), free);
        a.assert_invariants();
    }

    #[test]
    fn compaction_moves_pins_out_of_the_cheapest_range() {
        // 1 GiB at 0.7 FMFI: no free 16 MiB block is left, but pins can be moved.
        let mut a = fragmented(1 << 18, 0.7, 3);
        let order = 12;
        assert!(!a.has_free_block(order));
        let pins_before: Vec<Pfn> = a.movable_frames().collect();
        let free_before = a.free_frames();
        let p = a.alloc_contiguous(order).expect("compactable");
        let range = p.0..p.0 + (1 << order);
        assert!(range.clone().all(|f| !a.is_free(Pfn(f))));
        assert!(a.movable_frames().all(|f| !range.contains(&f.0)));
        assert!(a.movable_frames().all(|f| !a.is_free(f)));
        assert_eq!(a.movable_frames().count(), pins_before.len());
        let moved = a.stats().compaction_moves;
        assert!(moved > 0 && a.stats().compactions == 1);
        // The range took its free frames plus as many outside as pins moved in.
        assert_eq!(free_before - a.free_frames(), 1 << order);
        // It was the range needing the fewest moves.
        let fewest = (0..(1u64 << 18) >> order)
            .map(|r| {
                let r = r << order;
                pins_before
                    .iter()
                    .filter(|p| (r..r + (1 << order)).contains(&p.0))
                    .count() as u64
            })
            .min()
            .unwrap();
        assert_eq!(moved, fewest);
        // Freeing it gives back one coalesced block.
        a.free(p, order);
        assert!(a.has_free_block(order));
        a.assert_invariants();
    }

    #[test]
    fn frames_that_cannot_move_block_a_range_and_high_fmfi_refuses() {
        // 8 MiB: two order-11 ranges. Pin an unmovable frame in each: nothing to compact.
        let mut a = BuddyAllocator::new(1 << 11 << 1);
        a.set_compaction(Some(CompactionPolicy {
            max_fmfi: 1.0,
            fmfi_order: 9,
        }));
        assert!(a.alloc_at(Pfn(5), 0) && a.alloc_at(Pfn((1 << 11) + 7), 0));
        assert_eq!(a.alloc_contiguous(11), None);
        assert_eq!(a.stats().compactions_failed, 1);
        // Made movable, the lower range is emptied.
        a.mark_movable([Pfn(5)]);
        assert_eq!(a.alloc_contiguous(11), Some(Pfn(0)));
        assert!(a.movable_frames().all(|f| f.0 >= 1 << 11));
        // Above the FMFI limit compaction is refused even where it would work.
        let mut b = fragmented(1 << 18, 0.9, 4);
        assert_eq!(b.alloc_contiguous(12), None);
        assert_eq!(b.stats().compactions_refused, 1);
        // Without a policy, never.
        let mut c = fragmented(1 << 18, 0.7, 3);
        c.set_compaction(None);
        assert_eq!(c.alloc_contiguous(12), None);
    }
}
