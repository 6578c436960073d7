//! Misses of many LRU set-associative geometries counted in one pass over a stream of tags.
//!
//! A reference to tag `t` in a structure of `S` sets (set `t mod S`, the low bits, as
//! [`SetAssoc`](crate::assoc::SetAssoc) is indexed) hits a `W`-way LRU array if and only if
//! fewer than `W` other tags of its set were referenced since `t` was last: LRU keeps in each
//! set the `W` most recently used tags of the set. That number, the reference's *rank* in its
//! set's LRU stack, does not depend on `W` (the stack property of LRU, Mattson et al. 1970),
//! so one stack per set answers for every way count at once, and one pass per set count
//! answers for every geometry of that set count.
//!
//! Only ranks below the largest way count asked of a set count matter: each set count keeps
//! the stacks' top `W_max` tags, an LRU array of `S x W_max` slots whose sets are circular
//! linked lists in recency order (a hit moves its slot to the front; a miss takes the back
//! one's slot, which becomes the front by turning the circle: both in constant time), and a table from each tag ever seen to the slot it was last
//! given in each set count's array (still its own if that slot's tag is it: an eviction
//! writes nothing but the slot). A reference therefore costs one table lookup and constant
//! work per set count, whatever the associativity: 1024 ways are no dearer than one. A hit whose rank matters (a set count asked for several way counts)
//! reads its set's last-use stamps to rank itself, unless fewer references than the smallest
//! of those way counts reached its set since it was last used (its rank is below that count
//! then, a hit in all of them).
//!
//! A reference to the tag referenced just before it is the top of its stack in every set
//! count: a hit everywhere that changes nothing, counted without a lookup.
//!
//! A *forced miss* ([`LruGeometries::reference`] with `forced`) counts as a miss in every
//! geometry but leaves the stacks as any reference does, its tag most recently used: what a
//! TLB whose entry is present but cannot answer (a Mosaic entry whose page's frame number is
//! not valid yet) does when the walk refills that entry in place.

/// Every tag seen, each with its row: its way + 1 in each set count's array when it was last
/// put there (0: never), which still holds it if that slot's id is the tag's.
/// Open addressing with linear probing; a tag and its row are adjacent words, so a reference
/// reads both in one access to host memory (the table outgrows the host's caches on large
/// footprints, and is read at every reference to a new tag).
#[derive(Clone, Debug)]
struct TagTable {
    /// Words per entry: the tag's two halves, then the row.
    stride: usize,
    words: Vec<u32>,
    /// Entries - 1 (a power of two).
    mask: usize,
    /// log2 of the entries.
    bits: u32,
    len: usize,
}

impl TagTable {
    fn new(width: usize) -> TagTable {
        let bits = 10;
        let stride = 2 + width;
        TagTable {
            stride,
            words: Self::empty(stride, 1 << bits),
            mask: (1 << bits) - 1,
            bits,
            len: 0,
        }
    }

    fn empty(stride: usize, entries: usize) -> Vec<u32> {
        let mut words = vec![0; stride * entries];
        for e in 0..entries {
            words[e * stride] = u32::MAX;
            words[e * stride + 1] = u32::MAX;
        }
        words
    }

    #[inline(always)]
    fn tag_at(&self, e: usize) -> u64 {
        let at = e * self.stride;
        u64::from(self.words[at]) | u64::from(self.words[at + 1]) << 32
    }

    /// Where the search for `tag` starts.
    #[inline(always)]
    fn home(&self, tag: u64) -> usize {
        ((tag ^ tag >> 31).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.bits)) as usize
    }

    /// The entry of `tag`, or the empty one where it would go.
    #[inline(always)]
    fn probe(&self, tag: u64) -> usize {
        let mut e = self.home(tag);
        loop {
            let t = self.tag_at(e);
            if t == tag || t == NO_TAG {
                return e;
            }
            e = (e + 1) & self.mask;
        }
    }

    /// Store `tag` in empty entry `e`.
    #[inline(always)]
    fn put(&mut self, e: usize, tag: u64) {
        let at = e * self.stride;
        self.words[at] = tag as u32;
        self.words[at + 1] = (tag >> 32) as u32;
        self.len += 1;
    }

    #[inline(always)]
    fn row(&self, e: usize) -> &[u32] {
        let at = e * self.stride + 2;
        &self.words[at..at + self.stride - 2]
    }

    #[inline(always)]
    fn row_mut(&mut self, e: usize) -> &mut [u32] {
        let at = e * self.stride + 2;
        &mut self.words[at..at + self.stride - 2]
    }
}

/// A set-associative geometry: `sets` (a power of two) x `ways`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Geometry {
    pub sets: u32,
    pub ways: u32,
}

/// No tag: the reserved value (as in [`SetAssoc`](crate::assoc::SetAssoc)).
const NO_TAG: u64 = u64::MAX;
/// The end of a set's list.
const NIL: u32 = u32::MAX;

/// One slot of a set count's array: its tag's id (`u32::MAX`: never used), its neighbours in
/// its set's recency list (ways of the set; `NIL` at the ends), its last use on its set's
/// clock. Together, so that a reference touches one host cache line per slot it changes.
#[derive(Clone, Copy, Debug)]
struct Slot {
    stamp: u64,
    id: u32,
    newer: u32,
    older: u32,
}

/// One set of a set count's array: its most recently used way, the slots in use, the
/// references it has had. The set's list is circular: the front's `newer` is the back (the
/// least recently used), whose `older` is the front, so the back becomes the front with no
/// link changed (a miss in a full set, most references of a large footprint).
#[derive(Clone, Copy, Debug)]
struct SetHead {
    clock: u64,
    front: u32,
    used: u32,
}

/// The LRU arrays of one set count: `sets x ways` slots, `ways` the most any geometry of this
/// set count asks for.
#[derive(Clone, Debug)]
struct SetCount {
    sets: usize,
    ways: usize,
    /// The geometries of this set count as `(ways, index in the counter's geometries)`, by
    /// ascending ways.
    asked: Vec<(u32, usize)>,
    /// Fewest ways asked (`asked[0].0`).
    fewest: u64,
    slots: Vec<Slot>,
    heads: Vec<SetHead>,
}

impl SetCount {
    fn new(sets: usize, ways: usize) -> SetCount {
        let slot = Slot {
            stamp: 0,
            id: u32::MAX,
            newer: NIL,
            older: NIL,
        };
        let head = SetHead {
            clock: 0,
            front: NIL,
            used: 0,
        };
        SetCount {
            sets,
            ways,
            asked: Vec::new(),
            fewest: 0,
            slots: vec![slot; sets * ways],
            heads: vec![head; sets],
        }
    }

    /// Stamp way `w` of `set` (at `base`), the front now, with the set's next reference.
    #[inline(always)]
    fn stamp(&mut self, set: usize, base: usize, w: u32) {
        let head = &mut self.heads[set];
        head.clock += 1;
        self.slots[base + w as usize].stamp = head.clock;
    }

    /// Link way `w` of `set` (at `base`), in no list yet, at the front of the set's list,
    /// between its back and its front.
    #[inline(always)]
    fn push_front(&mut self, set: usize, base: usize, w: u32) {
        let f = self.heads[set].front;
        let (newer, older) = if f == NIL {
            (w, w)
        } else {
            let b = self.slots[base + f as usize].newer;
            self.slots[base + f as usize].newer = w;
            self.slots[base + b as usize].older = w;
            (b, f)
        };
        let slot = &mut self.slots[base + w as usize];
        slot.newer = newer;
        slot.older = older;
        self.heads[set].front = w;
        self.stamp(set, base, w);
    }

    /// The back of `set` (at `base`), a full set, made its front: the least recently used
    /// way, for a tag that missed.
    #[inline(always)]
    fn rotate(&mut self, set: usize, base: usize) -> u32 {
        let w = self.slots[base + self.heads[set].front as usize].newer;
        self.heads[set].front = w;
        self.stamp(set, base, w);
        w
    }

    /// Way `w` of `set` (at `base`), in the list, made its front: a hit.
    #[inline(always)]
    fn make_front(&mut self, set: usize, base: usize, w: u32) {
        let f = self.heads[set].front;
        if w != f {
            if w == self.slots[base + f as usize].newer {
                // The back: the circle turns.
                self.heads[set].front = w;
            } else {
                let Slot { newer, older, .. } = self.slots[base + w as usize];
                self.slots[base + newer as usize].older = older;
                self.slots[base + older as usize].newer = newer;
                self.push_front(set, base, w);
                return;
            }
        }
        self.stamp(set, base, w);
    }

    /// How many tags of `set` (at `base`) were used since way `w`'s.
    #[cold]
    fn rank(&self, base: usize, set: usize, w: u32) -> u64 {
        let mine = self.slots[base + w as usize].stamp;
        let used = self.heads[set].used as usize;
        self.slots[base..base + used]
            .iter()
            .filter(|s| s.stamp > mine)
            .count() as u64
    }
}

/// Counts the misses of LRU arrays of several geometries over one stream of tags, exactly as
/// separate [`SetAssoc`](crate::assoc::SetAssoc) arrays with LRU replacement would (see the
/// module's documentation).
#[derive(Clone, Debug)]
pub struct LruGeometries {
    geometries: Vec<Geometry>,
    counts: Vec<SetCount>,
    misses: Vec<u64>,
    /// Every tag seen with the way it was last given in each set count's array; a slot of
    /// an array holds its tag's entry here (its id), which says whether the way is still the
    /// tag's.
    tags: TagTable,
    last: u64,
    references: u64,
    forced: u64,
}

impl LruGeometries {
    /// A counter for `geometries` (each `sets` a power of two, `ways` at least 1; in any order,
    /// repeats allowed). Host memory: the slots of the largest geometry of each set count,
    /// and per distinct tag a table entry and a `u32` per set count.
    pub fn new(geometries: &[Geometry]) -> LruGeometries {
        let mut counts: Vec<SetCount> = Vec::new();
        for (i, g) in geometries.iter().enumerate() {
            assert!(
                g.sets.is_power_of_two() && g.ways > 0,
                "a geometry has a power-of-two set count and ways: {g:?}"
            );
            let sets = g.sets as usize;
            let most = geometries
                .iter()
                .filter(|h| h.sets == g.sets)
                .map(|h| h.ways as usize)
                .max()
                .expect("g itself");
            let k = match counts.iter().position(|c| c.sets == sets) {
                Some(k) => k,
                None => {
                    counts.push(SetCount::new(sets, most));
                    counts.len() - 1
                }
            };
            counts[k].asked.push((g.ways, i));
        }
        for c in &mut counts {
            c.asked.sort();
            c.fewest = c.asked[0].0.into();
        }
        LruGeometries {
            geometries: geometries.to_vec(),
            tags: TagTable::new(counts.len()),
            counts,
            misses: vec![0; geometries.len()],
            last: NO_TAG,
            references: 0,
            forced: 0,
        }
    }

    /// The geometries, in the order given.
    pub fn geometries(&self) -> &[Geometry] {
        &self.geometries
    }

    /// Misses of each geometry (in the order given) since the last [`LruGeometries::reset_counts`].
    pub fn misses(&self) -> &[u64] {
        &self.misses
    }

    /// References counted since the last [`LruGeometries::reset_counts`].
    pub fn references(&self) -> u64 {
        self.references
    }

    /// Forced misses among them.
    pub fn forced(&self) -> u64 {
        self.forced
    }

    /// Distinct tags seen since the counter was made.
    pub fn distinct_tags(&self) -> usize {
        self.tags.len
    }

    /// Restart the counts; the stacks keep their contents (the end of a warm-up).
    pub fn reset_counts(&mut self) {
        self.misses.fill(0);
        self.references = 0;
        self.forced = 0;
    }

    /// One reference to `tag` (any value but `u64::MAX`); with `forced`, a miss in every
    /// geometry that still leaves `tag` the most recently used of its set.
    #[inline]
    pub fn reference(&mut self, tag: u64, forced: bool) {
        debug_assert_ne!(tag, NO_TAG, "u64::MAX is reserved");
        self.references += 1;
        if forced {
            self.forced += 1;
            self.misses.iter_mut().for_each(|m| *m += 1);
        } else if tag == self.last {
            // The front of its set in every array already: a hit everywhere, nothing moves.
            return;
        }
        self.last = tag;
        let mut id = self.tags.probe(tag);
        if self.tags.tag_at(id) == NO_TAG {
            if 2 * (self.tags.len + 1) > self.tags.mask + 1 {
                self.grow();
                id = self.tags.probe(tag);
            }
            self.tags.put(id, tag);
        }
        for k in 0..self.counts.len() {
            let c = &mut self.counts[k];
            let set = (tag as usize) & (c.sets - 1);
            let base = set * c.ways;
            // The way the tag was last given in this array, if a slot still holds it: an
            // eviction does not clear the evicted tag's row (a write to a random entry of a
            // large table per set count and reference), the slot's own id says.
            let held = match self.tags.row(id)[k] {
                0 => 0,
                w if c.slots[base + w as usize - 1].id == id as u32 => w,
                _ => 0,
            };
            match held {
                0 => {
                    // Beyond the largest array of this set count: a miss in each.
                    if !forced {
                        for &(_, g) in &c.asked {
                            self.misses[g] += 1;
                        }
                    }
                    let head = &mut c.heads[set];
                    let w = if (head.used as usize) < c.ways {
                        head.used += 1;
                        let w = head.used - 1;
                        c.push_front(set, base, w);
                        w
                    } else {
                        c.rotate(set, base)
                    };
                    c.slots[base + w as usize].id = id as u32;
                    self.tags.row_mut(id)[k] = w + 1;
                }
                held => {
                    let w = held - 1;
                    // A hit in every array if only the largest is asked for, or if fewer
                    // references than the fewest ways asked reached the set since its last
                    // use (its rank is below that).
                    if !forced
                        && c.fewest < c.ways as u64
                        && c.heads[set].clock - c.slots[base + w as usize].stamp >= c.fewest
                    {
                        let rank = c.rank(base, set, w);
                        for &(ways, g) in &c.asked {
                            if u64::from(ways) > rank {
                                break;
                            }
                            self.misses[g] += 1;
                        }
                    }
                    c.make_front(set, base, w);
                }
            }
        }
    }

    /// Double the tag table: every tag moves to a new entry (its row with it), and each slot
    /// of the arrays is given its tag's new id.
    #[cold]
    fn grow(&mut self) {
        let old = std::mem::replace(&mut self.tags, TagTable::new(self.counts.len()));
        self.tags.bits = old.bits + 1;
        self.tags.mask = (1 << self.tags.bits) - 1;
        self.tags.words = TagTable::empty(old.stride, 1 << self.tags.bits);
        for e in 0..=old.mask {
            let tag = old.tag_at(e);
            if tag != NO_TAG {
                let moved = self.tags.probe(tag);
                self.tags.put(moved, tag);
                self.tags.row_mut(moved).copy_from_slice(old.row(e));
            }
        }
        for c in &mut self.counts {
            for slot in c.slots.iter_mut().filter(|s| s.id != u32::MAX) {
                slot.id = self.tags.probe(old.tag_at(slot.id as usize)) as u32;
            }
        }
    }

    /// Have the host cache the table entry a reference to `tag` will read (a hint, a few
    /// references ahead: the table outgrows the host's caches at paper footprints).
    #[inline(always)]
    pub fn prefetch(&self, tag: u64) {
        let at = self.tags.home(tag) * self.tags.stride;
        crate::mem::prefetch_host(&self.tags.words[at]);
    }

    /// `n` more references to the tag referenced last, none forced: hits everywhere.
    #[inline]
    pub fn repeat(&mut self, n: u64) {
        debug_assert!(
            n == 0 || self.last != NO_TAG,
            "a repeat follows a reference"
        );
        self.references += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assoc::{Replacement, SetAssoc};

    /// Misses of one geometry by a plain LRU array of the engine's own kind.
    fn separate_run(g: Geometry, stream: &[(u64, bool)]) -> u64 {
        let mut a: SetAssoc<()> = SetAssoc::new(g.sets as usize, g.ways as usize, Replacement::Lru);
        let mut misses = 0;
        for &(tag, forced) in stream {
            let set = a.set_of(tag);
            let hit = a.lookup(set, tag).is_some();
            if !hit {
                a.insert_absent(set, tag, ());
            }
            misses += u64::from(!hit || forced);
        }
        misses
    }

    /// Every power-of-two set count of `entries` entries.
    fn all_set_counts(entries: u32) -> Vec<Geometry> {
        (0..=entries.trailing_zeros())
            .map(|b| Geometry {
                sets: 1 << b,
                ways: entries >> b,
            })
            .collect()
    }

    /// A hand-worked stream: 2 sets x 2 ways, and 1 set x 4 ways, and 1 set x 1 way.
    ///
    /// Tags 0, 2, 4 fall in set 0 of 2 sets; 1 in set 1.
    ///
    /// ```text
    /// ref   2x2 set 0 stack (MRU first)  2x2       1x4 stack         1x4     1x1
    /// 0     [0]                          miss      [0]               miss    miss
    /// 2     [2 0]                        miss      [2 0]             miss    miss
    /// 1     (set 1: [1])                 miss      [1 2 0]           miss    miss
    /// 0     [0 2]   rank 1 < 2           hit       [0 1 2] rank 2    hit     miss
    /// 4     [4 0 2] evicts 2             miss      [4 0 1 2]         miss    miss
    /// 2     [2 4 0] evicts 0             miss      [2 4 0 1] rank 3  hit     miss
    /// 2     repeat                       hit       repeat            hit     hit
    /// 1*    forced (set 1 [1])           miss      [1 2 4 0] forced  miss    miss
    /// 0     [0 2 4] rank 2 evicted       miss      [0 1 2 4] rank 3  hit     miss
    /// ```
    #[test]
    fn hand_worked_example() {
        let gs = [
            Geometry { sets: 2, ways: 2 },
            Geometry { sets: 1, ways: 4 },
            Geometry { sets: 1, ways: 1 },
        ];
        let mut c = LruGeometries::new(&gs);
        let stream = [
            (0, false),
            (2, false),
            (1, false),
            (0, false),
            (4, false),
            (2, false),
            (2, false),
            (1, true),
            (0, false),
        ];
        for &(t, f) in &stream {
            c.reference(t, f);
        }
        assert_eq!(c.misses(), &[7, 5, 8]);
        assert_eq!(c.references(), 9);
        assert_eq!(c.forced(), 1);
        assert_eq!(c.distinct_tags(), 4);
        for (g, &m) in gs.iter().zip(c.misses()) {
            assert_eq!(separate_run(*g, &stream), m, "{g:?}");
        }
    }

    #[test]
    fn repeats_and_reset_count_as_hits() {
        let gs = all_set_counts(8);
        let mut c = LruGeometries::new(&gs);
        c.reference(5, false);
        c.repeat(10);
        c.reference(5, false);
        assert_eq!(c.references(), 12);
        assert!(c.misses().iter().all(|&m| m == 1));
        c.reset_counts();
        c.reference(5, false);
        assert!(c.misses().iter().all(|&m| m == 0));
        c.reference(5, true);
        assert!(c.misses().iter().all(|&m| m == 1));
    }

    /// Streams with locality at every scale: mostly a small working set, sometimes a larger
    /// one, sometimes anything, and runs of one tag.
    fn stream() -> impl proptest::strategy::Strategy<Value = Vec<(u64, bool)>> {
        use proptest::prelude::*;
        let tag = prop_oneof![
            6 => 0u64..24,
            3 => 0u64..200,
            1 => 0u64..5000,
            1 => (0u64..64).prop_map(|t| t << 40 | 3),
        ];
        proptest::collection::vec((tag, proptest::bool::weighted(0.08)), 1..1500)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// For every power-of-two set count of 64 entries, and of 16, and a few odd way
        /// counts, one pass counts exactly the misses that a separate LRU `SetAssoc` of each
        /// geometry counts, forced misses included.
        #[test]
        fn one_pass_equals_separate_runs(stream in stream()) {
            let mut gs = all_set_counts(64);
            gs.extend(all_set_counts(16));
            gs.extend([Geometry { sets: 4, ways: 3 }, Geometry { sets: 1, ways: 7 }, Geometry { sets: 8, ways: 5 }]);
            let mut c = LruGeometries::new(&gs);
            for &(t, f) in &stream {
                c.reference(t, f);
            }
            for (g, &m) in gs.iter().zip(c.misses()) {
                proptest::prop_assert_eq!(separate_run(*g, &stream), m, "{:?}", g);
            }
            proptest::prop_assert_eq!(c.references(), stream.len() as u64);
        }
    }

    /// A long stream over a large footprint, as a TLB profile sees: 1024 entries, all set
    /// counts, against separate runs.
    #[test]
    fn a_thousand_ways_equal_separate_runs() {
        let mut rng = crate::rng::Rng::new(7, 0);
        let mut stream = Vec::new();
        let mut hot = 0u64;
        for i in 0..60_000u64 {
            let t = match rng.below(10) {
                0..=5 => hot + rng.below(700),
                6..=8 => rng.below(3000),
                _ => rng.below(1 << 20),
            };
            if i % 5000 == 0 {
                hot += 500;
            }
            stream.push((t, rng.below(50) == 0));
        }
        let gs = all_set_counts(1024);
        let mut c = LruGeometries::new(&gs);
        for &(t, f) in &stream {
            c.reference(t, f);
        }
        for (g, &m) in gs.iter().zip(c.misses()) {
            assert_eq!(separate_run(*g, &stream), m, "{g:?}");
        }
    }
}
