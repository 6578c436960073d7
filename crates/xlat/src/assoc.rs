//! Set-associative storage with pluggable replacement, shared by every cache-like structure
//! (TLBs, page-walk caches, data caches). One implementation so that a replacement bug is fixed
//! once and the reference-model tests cover all of them.
//!
//! Storage is flat (`sets * ways` slots) and the set index is chosen by the caller, who knows how
//! its structure is indexed (line address for caches, page number for TLBs, VA prefix for PWCs).

use serde::{Deserialize, Serialize};

/// Replacement policy of a set-associative structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// True least-recently-used.
    Lru,
    /// Static re-reference interval prediction (Jaleel et al., ISCA'10) with 2-bit RRPVs:
    /// insert at "long" (2), promote to 0 on hit, evict the first way at "distant" (3).
    Srrip,
}

/// Most ways a structure a config sizes may have. Every access searches its set's ways one
/// by one (hardware compares them in parallel), so the ways are work per access: 4096 is far
/// beyond any real structure (tens of ways; fully associative TLBs and page-walk caches of a
/// few dozen entries) and keeps a fully associative one searchable.
pub const MAX_WAYS: u64 = 4096;

const INVALID: u64 = u64::MAX;
const RRPV_MAX: u8 = 3;
const RRPV_INSERT: u8 = 2;

/// Run `f` on one set's `tags` and `ages` (each `ways` long), as arrays of a constant length
/// when `ways` is one of the geometries the presets use: a loop over a set then unrolls, with
/// no bounds checks, where a loop over a run-time length costs about twice the instructions
/// (the scans over the ways are most of the time of every cache, TLB and PWC access).
#[inline(always)]
fn with_set<R>(tags: &[u64], ages: &[u64], f: impl FnOnce(&[u64], &[u64]) -> R) -> R {
    #[inline(always)]
    fn fixed<const N: usize, R>(
        tags: &[u64],
        ages: &[u64],
        f: impl FnOnce(&[u64], &[u64]) -> R,
    ) -> R {
        let tags: &[u64; N] = tags.try_into().expect("a set is `ways` long");
        let ages: &[u64; N] = ages.try_into().expect("a set is `ways` long");
        f(tags, ages)
    }
    match tags.len() {
        4 => fixed::<4, R>(tags, ages, f),
        8 => fixed::<8, R>(tags, ages, f),
        12 => fixed::<12, R>(tags, ages, f),
        16 => fixed::<16, R>(tags, ages, f),
        32 => fixed::<32, R>(tags, ages, f),
        _ => f(tags, ages),
    }
}

/// The way holding `tag` in a set, or the LRU victim's way (the first with the smallest
/// stamp) if none does: both in one pass.
#[inline(always)]
fn find_or_oldest(tags: &[u64], ages: &[u64], tag: u64) -> Result<usize, usize> {
    let (mut victim, mut oldest) = (0, u64::MAX);
    for (w, (&t, &a)) in tags.iter().zip(ages).enumerate() {
        if t == tag {
            return Ok(w);
        }
        if a < oldest {
            (victim, oldest) = (w, a);
        }
    }
    Err(victim)
}

/// The first way with the smallest stamp (the LRU victim).
#[inline(always)]
fn oldest(ages: &[u64]) -> usize {
    let (mut victim, mut oldest) = (0, u64::MAX);
    for (w, &a) in ages.iter().enumerate() {
        if a < oldest {
            (victim, oldest) = (w, a);
        }
    }
    victim
}

/// Where a tag that [`SetAssoc::probe`] missed goes: the slot its set's replacement victim
/// is in (chosen by the probe's pass under LRU, by the fill under SRRIP).
#[derive(Clone, Copy, Debug)]
pub struct Vacancy {
    set: usize,
    slot: Option<usize>,
}

/// A set-associative array mapping `u64` tags to values of type `V`.
#[derive(Clone, Debug)]
pub struct SetAssoc<V> {
    sets: usize,
    ways: usize,
    policy: Replacement,
    tags: Vec<u64>,
    values: Vec<V>,
    /// LRU: last-use stamp per slot. SRRIP: RRPV per slot (in the low byte).
    age: Vec<u64>,
    clock: u64,
    /// The slot the last lookup or probe hit (or the last fill filled), as `(set, tag, slot)`;
    /// `NO_MRU` when the array has changed otherwise since. See [`SetAssoc::mru_hit`].
    mru: (usize, u64, usize),
}

/// No memorised slot: no set is numbered `usize::MAX`.
const NO_MRU: (usize, u64, usize) = (usize::MAX, INVALID, usize::MAX);

impl<V> SetAssoc<V> {
    /// Host bytes one slot takes: its tag, its replacement state and its value. The config's
    /// host-memory check counts structures with it.
    pub const SLOT_BYTES: u64 = (2 * std::mem::size_of::<u64>() + std::mem::size_of::<V>()) as u64;
}

impl<V: Copy + Default> SetAssoc<V> {
    /// `sets` must be a power of two and `ways` non-zero; config validation guarantees both.
    pub fn new(sets: usize, ways: usize, policy: Replacement) -> SetAssoc<V> {
        debug_assert!(sets.is_power_of_two() && ways > 0);
        SetAssoc {
            sets,
            ways,
            policy,
            tags: vec![INVALID; sets * ways],
            values: vec![V::default(); sets * ways],
            age: vec![
                if policy == Replacement::Lru {
                    0
                } else {
                    RRPV_MAX as u64
                };
                sets * ways
            ],
            clock: 0,
            mru: NO_MRU,
        }
    }

    pub fn sets(&self) -> usize {
        self.sets
    }
    pub fn ways(&self) -> usize {
        self.ways
    }
    /// The set a key with low-order bits `index` maps to.
    #[inline]
    pub fn set_of(&self, index: u64) -> usize {
        (index as usize) & (self.sets - 1)
    }

    #[inline]
    fn find(&self, set: usize, tag: u64) -> Option<usize> {
        let base = set * self.ways;
        let tags = &self.tags[base..base + self.ways];
        with_set(tags, tags, |tags, _| tags.iter().position(|&t| t == tag)).map(|w| base + w)
    }

    #[inline]
    fn touch(&mut self, slot: usize) {
        match self.policy {
            Replacement::Lru => {
                self.clock += 1;
                self.age[slot] = self.clock;
            }
            Replacement::Srrip => self.age[slot] = 0,
        }
    }

    /// The slot of a hit on `tag` in `set` if it is the slot the last lookup or probe hit (or
    /// the last fill filled) and nothing else has changed the array since: a repeated access
    /// to the same page (TLB) or line (cache), most accesses of a sequential stream. Such a
    /// hit needs no search, and no replacement update, because the update would change
    /// nothing: under LRU the slot already holds the newest stamp of the whole array (a new
    /// stamp would be larger, but no other stamp lies between the two, so every comparison
    /// of stamps, which is all a victim choice reads, comes out the same); under SRRIP its
    /// RRPV is already 0. A search would find the same slot (the first holding `tag`): every
    /// other change of the tags or ages forgets the slot ([`SetAssoc::forget_mru`]).
    #[inline(always)]
    fn mru_hit(&self, set: usize, tag: u64) -> Option<usize> {
        let (s, t, slot) = self.mru;
        (s == set && t == tag).then_some(slot)
    }

    /// A hit (or fill) of `tag` at `slot` of `set`: its replacement state is now as a
    /// repeated hit would leave it, and a search for `tag` finds it first.
    #[inline(always)]
    fn remember(&mut self, set: usize, tag: u64, slot: usize) {
        self.mru = (set, tag, slot);
    }

    /// Tags or ages changed other than by a hit: the memorised slot may no longer be what a
    /// search finds, or a hit on it may change replacement state.
    #[inline(always)]
    fn forget_mru(&mut self) {
        self.mru = NO_MRU;
    }

    /// The slot of `set` holding `tag` with a value for which `pred` holds (structures whose
    /// entries share tags and are told apart by their contents, such as a range TLB).
    #[inline(always)]
    fn find_where(&self, set: usize, tag: u64, pred: impl Fn(&V) -> bool) -> Option<usize> {
        let base = set * self.ways;
        (base..base + self.ways).find(|&s| self.tags[s] == tag && pred(&self.values[s]))
    }

    /// Look `tag` up in `set`; a hit updates replacement state and returns the value.
    #[inline]
    pub fn lookup(&mut self, set: usize, tag: u64) -> Option<&mut V> {
        if let Some(slot) = self.mru_hit(set, tag) {
            return Some(&mut self.values[slot]);
        }
        let slot = self.find(set, tag)?;
        self.touch(slot);
        self.remember(set, tag, slot);
        Some(&mut self.values[slot])
    }

    /// [`SetAssoc::lookup`] of the tag the last lookup or probe hit ([`SetAssoc::mru_hit`])
    /// only: the hit that needs no search. `None` says nothing about `tag`.
    #[inline(always)]
    pub fn recent(&mut self, set: usize, tag: u64) -> Option<&mut V> {
        let slot = self.mru_hit(set, tag)?;
        Some(&mut self.values[slot])
    }

    /// [`SetAssoc::lookup`] of `tag` if it is at `slot` of `set`, where the caller saw it last
    /// ([`SetAssoc::last_slot`]): a search would find it there, in an array that holds a tag
    /// at most once per set (a cache). The search is skipped; the replacement update is not.
    /// `None` says nothing about `tag`.
    #[inline(always)]
    pub fn hit_at(&mut self, set: usize, tag: u64, slot: usize) -> Option<&mut V> {
        if self.tags[slot] != tag {
            return None;
        }
        debug_assert_eq!(self.find(set, tag), Some(slot));
        if self.mru_hit(set, tag).is_none() {
            self.touch(slot);
            self.remember(set, tag, slot);
        }
        Some(&mut self.values[slot])
    }

    /// The tags and values of `set`, in way order (to hint the host to cache them before a
    /// search).
    #[inline(always)]
    pub fn set_slots(&self, set: usize) -> (&[u64], &[V]) {
        let slots = set * self.ways..(set + 1) * self.ways;
        (&self.tags[slots.clone()], &self.values[slots])
    }

    /// The slot the last lookup or probe hit, or the last fill filled, if the array has not
    /// changed otherwise since.
    #[inline(always)]
    pub fn last_slot(&self) -> Option<usize> {
        let (_, _, slot) = self.mru;
        (slot != NO_MRU.2).then_some(slot)
    }

    /// Look `tag` up in `set` as [`SetAssoc::lookup`] does; a miss also says where the tag
    /// would go ([`SetAssoc::fill`]). Under LRU one pass over the set finds both the tag and
    /// the victim: a miss (most accesses of a cache level below the L1) reads each way once
    /// instead of once to search and again to choose the victim.
    #[inline]
    pub fn probe(&mut self, set: usize, tag: u64) -> Result<&mut V, Vacancy> {
        if let Some(slot) = self.mru_hit(set, tag) {
            return Ok(&mut self.values[slot]);
        }
        let found = if self.policy != Replacement::Lru {
            // SRRIP ages the set while choosing its victim: only a fill may do that.
            self.find(set, tag).ok_or(None)
        } else {
            let base = set * self.ways;
            let tags = &self.tags[base..base + self.ways];
            let ages = &self.age[base..base + self.ways];
            with_set(tags, ages, |tags, ages| find_or_oldest(tags, ages, tag))
                .map(|w| base + w)
                .map_err(|victim| Some(base + victim))
        };
        match found {
            Ok(slot) => {
                self.touch(slot);
                self.remember(set, tag, slot);
                Ok(&mut self.values[slot])
            }
            Err(slot) => Err(Vacancy { set, slot }),
        }
    }

    /// Insert `tag` with `value` where a missed [`SetAssoc::probe`] said, as
    /// [`SetAssoc::insert_absent`] would; the set must not have changed since the probe.
    /// Returns the evicted `(tag, value)` if a valid entry had to make room.
    #[inline]
    pub fn fill(&mut self, at: Vacancy, tag: u64, value: V) -> Option<(u64, V)> {
        debug_assert!(self.find(at.set, tag).is_none());
        debug_assert!(at.slot.is_none_or(|s| s == self.victim(at.set)));
        let slot = at.slot.unwrap_or_else(|| self.victim(at.set));
        let evicted = self.put(slot, tag, value);
        if self.policy == Replacement::Lru {
            // The probe missed, so this is the only slot holding `tag`, and under LRU its
            // stamp is the newest, as after a hit (under SRRIP a hit would still promote it).
            self.remember(at.set, tag, slot);
        }
        evicted
    }

    /// [`SetAssoc::lookup`] of the first entry under `tag` whose value satisfies `pred`.
    #[inline(always)]
    pub fn lookup_where(
        &mut self,
        set: usize,
        tag: u64,
        pred: impl Fn(&V) -> bool,
    ) -> Option<&mut V> {
        let slot = self.find_where(set, tag, pred)?;
        self.touch(slot);
        // Entries sharing a tag: a search for the tag alone might find another one.
        self.forget_mru();
        Some(&mut self.values[slot])
    }

    /// [`SetAssoc::peek`] of the first entry under `tag` whose value satisfies `pred`, with
    /// its way.
    pub fn peek_where(
        &self,
        set: usize,
        tag: u64,
        pred: impl Fn(&V) -> bool,
    ) -> Option<(usize, &V)> {
        self.find_where(set, tag, pred)
            .map(|s| (s - set * self.ways, &self.values[s]))
    }

    /// The way of `set` holding `tag`, if any (a structure laid out in memory, such as a
    /// POM-TLB, needs it to know which line an entry occupies).
    pub fn way_of(&self, set: usize, tag: u64) -> Option<usize> {
        self.find(set, tag).map(|slot| slot - set * self.ways)
    }

    /// Look up without disturbing replacement state (for checks and statistics).
    pub fn peek(&self, set: usize, tag: u64) -> Option<&V> {
        self.find(set, tag).map(|s| &self.values[s])
    }

    /// [`SetAssoc::peek`] for a change that is not a use (a write-back marking a line dirty).
    pub fn peek_mut(&mut self, set: usize, tag: u64) -> Option<&mut V> {
        self.find(set, tag).map(|s| &mut self.values[s])
    }

    /// The slot to fill in `set`. Empty slots carry the age that makes them the first choice
    /// (LRU stamp 0, SRRIP "distant"), so one pass over the set suffices.
    #[inline(always)]
    fn victim(&mut self, set: usize) -> usize {
        let base = set * self.ways;
        match self.policy {
            Replacement::Lru => {
                let ages = &self.age[base..base + self.ways];
                base + with_set(ages, ages, |ages, _| oldest(ages))
            }
            Replacement::Srrip => loop {
                self.forget_mru();
                let ages = &mut self.age[base..base + self.ways];
                if let Some(w) = ages.iter().position(|&a| a >= RRPV_MAX as u64) {
                    return base + w;
                }
                ages.iter_mut().for_each(|a| *a += 1);
            },
        }
    }

    fn empty_age(&self) -> u64 {
        match self.policy {
            Replacement::Lru => 0,
            Replacement::Srrip => RRPV_MAX as u64,
        }
    }

    /// Insert (or overwrite) `tag` in `set`. Returns the evicted `(tag, value)` if a valid entry
    /// had to make room.
    pub fn insert(&mut self, set: usize, tag: u64, value: V) -> Option<(u64, V)> {
        debug_assert_ne!(tag, INVALID, "tag u64::MAX is reserved for empty slots");
        if let Some(slot) = self.find(set, tag) {
            self.values[slot] = value;
            self.touch(slot);
            self.remember(set, tag, slot);
            return None;
        }
        self.insert_absent(set, tag, value)
    }

    /// Insert `tag`, known not to be in `set` (right after a missed `lookup`): skips the search.
    #[inline]
    pub fn insert_absent(&mut self, set: usize, tag: u64, value: V) -> Option<(u64, V)> {
        debug_assert!(self.find(set, tag).is_none());
        self.insert_another(set, tag, value)
    }

    /// Insert one more entry under `tag` in the replacement victim's slot, whether or not
    /// `set` holds `tag` already: for structures whose entries share tags (see
    /// [`SetAssoc::lookup_where`]).
    #[inline]
    pub fn insert_another(&mut self, set: usize, tag: u64, value: V) -> Option<(u64, V)> {
        let slot = self.victim(set);
        self.put(slot, tag, value)
    }

    /// Store `tag` and `value` in `slot`, a victim of its set, as a newly inserted entry.
    #[inline]
    fn put(&mut self, slot: usize, tag: u64, value: V) -> Option<(u64, V)> {
        debug_assert_ne!(tag, INVALID, "tag u64::MAX is reserved for empty slots");
        let evicted = (self.tags[slot] != INVALID).then(|| (self.tags[slot], self.values[slot]));
        self.forget_mru();
        self.tags[slot] = tag;
        self.values[slot] = value;
        match self.policy {
            Replacement::Lru => self.touch(slot),
            Replacement::Srrip => self.age[slot] = RRPV_INSERT as u64,
        }
        evicted
    }

    /// Remove `tag` from `set`; returns whether it was present.
    pub fn invalidate(&mut self, set: usize, tag: u64) -> bool {
        match self.find(set, tag) {
            Some(slot) => {
                self.forget_mru();
                self.tags[slot] = INVALID;
                self.age[slot] = self.empty_age();
                true
            }
            None => false,
        }
    }

    /// Remove the first entry of `set` under `tag` whose value satisfies `pred`; returns
    /// whether there was one.
    pub fn invalidate_where_in(&mut self, set: usize, tag: u64, pred: impl Fn(&V) -> bool) -> bool {
        match self.find_where(set, tag, pred) {
            Some(slot) => {
                self.forget_mru();
                self.tags[slot] = INVALID;
                self.age[slot] = self.empty_age();
                true
            }
            None => false,
        }
    }

    /// Remove every entry for which `pred(tag, value)` holds; returns how many were removed.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(u64, &V) -> bool) -> usize {
        self.forget_mru();
        let empty = self.empty_age();
        let mut n = 0;
        for ((t, v), a) in self.tags.iter_mut().zip(&self.values).zip(&mut self.age) {
            if *t != INVALID && pred(*t, v) {
                *t = INVALID;
                *a = empty;
                n += 1;
            }
        }
        n
    }

    pub fn clear(&mut self) {
        self.forget_mru();
        self.tags.fill(INVALID);
        let empty = self.empty_age();
        self.age.fill(empty);
    }

    /// Iterate over valid entries as `(tag, value)`.
    pub fn entries(&self) -> impl Iterator<Item = (u64, &V)> {
        self.tags
            .iter()
            .zip(&self.values)
            .filter(|(t, _)| **t != INVALID)
            .map(|(t, v)| (*t, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recent() {
        let mut a: SetAssoc<u32> = SetAssoc::new(1, 2, Replacement::Lru);
        a.insert(0, 1, 10);
        a.insert(0, 2, 20);
        assert_eq!(a.lookup(0, 1).copied(), Some(10));
        assert_eq!(a.insert(0, 3, 30), Some((2, 20)));
        assert!(a.peek(0, 1).is_some() && a.peek(0, 3).is_some());
    }

    #[test]
    fn srrip_prefers_never_reused_lines() {
        let mut a: SetAssoc<u32> = SetAssoc::new(1, 2, Replacement::Srrip);
        a.insert(0, 1, 1);
        a.lookup(0, 1); // 1 is now "near"
        a.insert(0, 2, 2); // 2 inserted "long"
        assert_eq!(a.insert(0, 3, 3), Some((2, 2)));
    }

    #[test]
    fn invalidate_where_removes_matching() {
        let mut a: SetAssoc<u32> = SetAssoc::new(4, 2, Replacement::Lru);
        for t in 0..8u64 {
            a.insert(a.set_of(t), t, t as u32);
        }
        assert_eq!(a.invalidate_where(|_, v| v % 2 == 0), 4);
        assert_eq!(a.entries().count(), 4);
    }
    /// True LRU, the plainest way: a last-use stamp per slot, set at every use. An empty slot
    /// has stamp 0; the victim is the first slot with the smallest stamp.
    struct StampLru {
        ways: usize,
        slots: Vec<Option<(u64, u32)>>,
        stamps: Vec<u64>,
        clock: u64,
    }

    impl StampLru {
        fn set(&self, set: usize) -> std::ops::Range<usize> {
            set * self.ways..(set + 1) * self.ways
        }
        fn find(&self, set: usize, tag: u64, pred: impl Fn(u32) -> bool) -> Option<usize> {
            self.set(set)
                .find(|&s| self.slots[s].is_some_and(|(t, v)| t == tag && pred(v)))
        }
        fn touch(&mut self, slot: usize) {
            self.clock += 1;
            self.stamps[slot] = self.clock;
        }
        fn lookup(&mut self, set: usize, tag: u64, pred: impl Fn(u32) -> bool) -> Option<u32> {
            let slot = self.find(set, tag, pred)?;
            self.touch(slot);
            self.slots[slot].map(|(_, v)| v)
        }
        fn insert_another(&mut self, set: usize, tag: u64, value: u32) -> Option<(u64, u32)> {
            let victim = self.set(set).min_by_key(|&s| self.stamps[s]).unwrap();
            let evicted = self.slots[victim].replace((tag, value));
            self.touch(victim);
            evicted
        }
        fn vacate(&mut self, slot: usize) {
            self.slots[slot] = None;
            self.stamps[slot] = 0;
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Lookup(u64),
        Probe(u64, u32),
        Insert(u64, u32),
        InsertAnother(u64, u32),
        LookupEven(u64),
        Invalidate(u64),
        InvalidateOdd,
        Clear,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        // Few tags, so that sets fill, hit, evict and empty again.
        prop_oneof![
            8 => (0u64..48).prop_map(Op::Lookup),
            8 => (0u64..48, 0u32..100).prop_map(|(t, v)| Op::Probe(t, v)),
            4 => (0u64..48, 0u32..100).prop_map(|(t, v)| Op::Insert(t, v)),
            1 => (0u64..48, 0u32..100).prop_map(|(t, v)| Op::InsertAnother(t, v)),
            1 => (0u64..48).prop_map(Op::LookupEven),
            3 => (0u64..48).prop_map(Op::Invalidate),
            1 => Just(Op::InvalidateOdd),
            1 => Just(Op::Clear),
        ]
    }

    proptest::proptest! {
        /// Under any sequence of hits, fills, evictions and invalidations, the array (with its
        /// memorised last hit, its one-pass probe and its in-place fills) evicts the entries
        /// plain LRU would, and holds the same entries in the same slots.
        #[test]
        fn lru_matches_a_plain_reference(
            ops in proptest::collection::vec(op(), 1..300),
            sets_log in 0u32..3,
            ways in proptest::sample::select(vec![1usize, 2, 3, 4, 5, 8, 12, 16]),
        ) {
            let sets = 1usize << sets_log;
            let mut a: SetAssoc<u32> = SetAssoc::new(sets, ways, Replacement::Lru);
            let mut m = StampLru {
                ways,
                slots: vec![None; sets * ways],
                stamps: vec![0; sets * ways],
                clock: 0,
            };
            for op in ops {
                match op {
                    Op::Lookup(t) => {
                        let set = a.set_of(t);
                        proptest::prop_assert_eq!(a.lookup(set, t).copied(), m.lookup(set, t, |_| true));
                    }
                    Op::Probe(t, v) => {
                        let set = a.set_of(t);
                        let got = match a.probe(set, t) {
                            Ok(v) => Ok(*v),
                            Err(at) => Err(a.fill(at, t, v)),
                        };
                        let want = match m.lookup(set, t, |_| true) {
                            Some(v) => Ok(v),
                            None => Err(m.insert_another(set, t, v)),
                        };
                        proptest::prop_assert_eq!(got, want);
                    }
                    Op::Insert(t, v) => {
                        let set = a.set_of(t);
                        let want = match m.find(set, t, |_| true) {
                            Some(slot) => {
                                m.slots[slot] = Some((t, v));
                                m.touch(slot);
                                None
                            }
                            None => m.insert_another(set, t, v),
                        };
                        proptest::prop_assert_eq!(a.insert(set, t, v), want);
                    }
                    Op::InsertAnother(t, v) => {
                        let set = a.set_of(t);
                        proptest::prop_assert_eq!(a.insert_another(set, t, v), m.insert_another(set, t, v));
                    }
                    Op::LookupEven(t) => {
                        let set = a.set_of(t);
                        let got = a.lookup_where(set, t, |v| v % 2 == 0).copied();
                        proptest::prop_assert_eq!(got, m.lookup(set, t, |v| v % 2 == 0));
                    }
                    Op::Invalidate(t) => {
                        let set = a.set_of(t);
                        let slot = m.find(set, t, |_| true);
                        slot.inspect(|&s| m.vacate(s));
                        proptest::prop_assert_eq!(a.invalidate(set, t), slot.is_some());
                    }
                    Op::InvalidateOdd => {
                        let odd: Vec<usize> = (0..sets * ways)
                            .filter(|&s| m.slots[s].is_some_and(|(t, _)| t % 2 == 1))
                            .collect();
                        odd.iter().for_each(|&s| m.vacate(s));
                        proptest::prop_assert_eq!(a.invalidate_where(|t, _| t % 2 == 1), odd.len());
                    }
                    Op::Clear => {
                        a.clear();
                        (0..sets * ways).for_each(|s| m.vacate(s));
                    }
                }
                let slots: Vec<Option<(u64, u32)>> = (0..sets * ways)
                    .map(|s| (a.tags[s] != INVALID).then(|| (a.tags[s], a.values[s])))
                    .collect();
                proptest::prop_assert_eq!(&slots, &m.slots);
            }
        }
    }
}
