//! Physical memory as an iceberg hash table (Mosaic §2.2-§2.3, §3.1).
//!
//! The pool's frames are grouped into buckets of `f + b` consecutive frames: `f` front-yard
//! slots, then `b` backyard slots. A page (ASID, VPN) may take a front-yard slot of the one
//! bucket hash 0 names, or a backyard slot of any of the `d` buckets hashes 1..=d name: `h =
//! f + d·b` frames in all, so which one it took fits in a compressed physical frame number
//! (CPFN) of about log2(h) bits. Allocation is iceberg insertion: the front-yard bucket if it
//! has room, else the least-loaded of the `d` backyard buckets (power of d choices). Pages
//! never move once placed (stability), which is why a page's CPFN stays valid until it is
//! freed.
//!
//! [`Geometry`] is the CPFN layout, [`IcebergMap`] the hash that turns (ASID, VPN, CPFN) into
//! a frame (what the TLB and the page walker decode with), and [`IcebergTable`] the OS's
//! occupancy of the pool (what the page allocator inserts into).

use super::tabulation::TabulationHash;
use crate::addr::Pfn;
use crate::rng::Rng;
use serde::Serialize;

/// Widest CPFN: a ToC holds one byte per page, in the TLB entry and in the page table's leaf.
pub const MAX_CPFN_BITS: u32 = 8;

/// Where in its candidate buckets a page sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Slot `0..f` of the front-yard bucket (hash 0).
    Front(u32),
    /// Slot `0..b` of the backyard bucket of choice `0..d` (hash `1 + choice`).
    Back { choice: u32, slot: u32 },
}

/// f, b, d and the CPFN layout they give: a leading yard bit (0 front, 1 back), then the
/// front-yard slot, or the backyard choice above the backyard slot; the all-ones code is
/// reserved for an unmapped page (§3.1: with f = 56, b = 8, d = 6, 7 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub front: u32,
    pub back: u32,
    pub choices: u32,
    /// Bits of a backyard slot (the choice sits above them).
    back_bits: u32,
    /// Bits after the yard bit.
    payload: u32,
}

/// Bits to number `n` things (`n >= 1`).
fn bits_for(n: u32) -> u32 {
    (n - 1).checked_ilog2().map_or(0, |b| b + 1)
}

/// Why a geometry is refused: the key (`front_yard_frames`, `backyard_frames`,
/// `backyard_choices`) and the reason.
pub type GeometryError = (&'static str, String);

impl Geometry {
    /// The layout for front yards of `f`, backyards of `b` and `d` backyard choices.
    pub fn new(f: u32, b: u32, d: u32) -> Result<Geometry, GeometryError> {
        for (key, v) in [
            ("front_yard_frames", f),
            ("backyard_frames", b),
            ("backyard_choices", d),
        ] {
            if v == 0 {
                return Err((key, "must be at least 1".into()));
            }
        }
        let (front_bits, choice_bits, back_bits) = (bits_for(f), bits_for(d), bits_for(b));
        let mut payload = front_bits.max(choice_bits + back_bits);
        // All ones after the yard bit is the last backyard code when both fields are full
        // powers of two: then one more bit keeps the unmapped code free.
        if choice_bits + back_bits == payload && d.is_power_of_two() && b.is_power_of_two() {
            payload += 1;
        }
        let bits = 1 + payload;
        if bits > MAX_CPFN_BITS {
            // Name the parameter that made the encoding wide.
            let key = if front_bits >= choice_bits + back_bits {
                "front_yard_frames"
            } else if choice_bits >= back_bits {
                "backyard_choices"
            } else {
                "backyard_frames"
            };
            return Err((
                key,
                format!(
                    "f = {f}, b = {b}, d = {d} need a {bits}-bit CPFN (yard bit, {front_bits}-bit \
                     front slot or {choice_bits}-bit choice + {back_bits}-bit backyard slot, \
                     all-ones reserved); a ToC holds at most {MAX_CPFN_BITS} bits per page"
                ),
            ));
        }
        Ok(Geometry {
            front: f,
            back: b,
            choices: d,
            back_bits,
            payload,
        })
    }

    /// Bits of a CPFN.
    pub fn cpfn_bits(&self) -> u32 {
        1 + self.payload
    }

    /// The CPFN of an unmapped page: all ones.
    pub fn unmapped(&self) -> u8 {
        ((1u32 << self.cpfn_bits()) - 1) as u8
    }

    /// Frames a page may take: `h = f + d·b`.
    pub fn associativity(&self) -> u32 {
        self.front + self.choices * self.back
    }

    /// Frames of one bucket (front yard and backyard).
    pub fn bucket_frames(&self) -> u64 {
        u64::from(self.front + self.back)
    }

    pub fn encode(&self, slot: Slot) -> u8 {
        match slot {
            Slot::Front(s) => s as u8,
            Slot::Back { choice, slot } => {
                ((1 << self.payload) | (choice << self.back_bits) | slot) as u8
            }
        }
    }

    /// The slot a CPFN names, or `None` for the unmapped code and codes no page can have.
    pub fn decode(&self, cpfn: u8) -> Option<Slot> {
        let cpfn = u32::from(cpfn);
        if cpfn >> self.payload == 0 {
            return (cpfn < self.front).then_some(Slot::Front(cpfn));
        }
        let rest = cpfn & ((1 << self.payload) - 1);
        let (choice, slot) = (rest >> self.back_bits, rest & ((1 << self.back_bits) - 1));
        (cpfn >> self.payload == 1 && choice < self.choices && slot < self.back)
            .then_some(Slot::Back { choice, slot })
    }
}

/// The hash side of the table: which frames a page may take and which frame a CPFN names.
/// The page allocator, the page table and the TLB each hold a copy built from the same seed,
/// so they agree as hardware and OS sharing one hash circuit's tables would.
#[derive(Clone)]
pub struct IcebergMap {
    pub geometry: Geometry,
    hash: TabulationHash,
    /// First frame of the pool and its number of buckets.
    base: u64,
    buckets: u64,
}

impl IcebergMap {
    /// The map of a pool of `buckets` buckets from frame `base`, its hash drawn from `rng`.
    pub fn new(geometry: Geometry, base: Pfn, buckets: u64, rng: &mut Rng) -> IcebergMap {
        assert!(buckets > 0, "a pool has at least one bucket (validated)");
        IcebergMap {
            geometry,
            hash: TabulationHash::new(rng),
            base: base.0,
            buckets,
        }
    }

    pub fn buckets(&self) -> u64 {
        self.buckets
    }

    /// Frames of the pool (whole buckets).
    pub fn frames(&self) -> u64 {
        self.buckets * self.geometry.bucket_frames()
    }

    pub fn base(&self) -> Pfn {
        Pfn(self.base)
    }

    pub fn contains(&self, pfn: Pfn) -> bool {
        (self.base..self.base + self.frames()).contains(&pfn.0)
    }

    /// Hash `i` of page `vpn` of `asid` (0: front yard; 1..=d: backyard).
    #[inline(always)]
    fn hash(&self, asid: u16, vpn: u64, i: u32) -> u64 {
        self.hash.hash(&TabulationHash::key(asid, vpn), i as u8)
    }

    /// The bucket of hash `h`: multiply-shift onto 0..buckets (its high bits; uniform for any
    /// bucket count, no division).
    #[inline(always)]
    fn bucket_of(&self, h: u64) -> u64 {
        ((h as u128 * self.buckets as u128) >> 64) as u64
    }

    /// The bucket hash `i` sends page `vpn` of `asid` to (0: front yard; 1..=d: backyard).
    #[inline(always)]
    pub fn bucket(&self, asid: u16, vpn: u64, i: u32) -> u64 {
        self.bucket_of(self.hash(asid, vpn, i))
    }

    /// The bucket hash `i` sends the page to, and the slot of a yard of `len` where the
    /// allocator starts looking for a free one (from the hash's low bits).
    fn bucket_and_start(&self, asid: u16, vpn: u64, i: u32, len: u32) -> (u64, u32) {
        let h = self.hash(asid, vpn, i);
        (self.bucket_of(h), (h as u32) % len)
    }

    /// The first frame of bucket `bucket`.
    fn bucket_base(&self, bucket: u64) -> u64 {
        self.base + bucket * self.geometry.bucket_frames()
    }

    /// The frame `slot` of page `vpn` of `asid` names.
    #[inline]
    pub fn frame(&self, asid: u16, vpn: u64, slot: Slot) -> Pfn {
        Pfn(match slot {
            Slot::Front(s) => self.bucket_base(self.bucket(asid, vpn, 0)) + u64::from(s),
            Slot::Back { choice, slot } => {
                self.bucket_base(self.bucket(asid, vpn, 1 + choice))
                    + u64::from(self.geometry.front + slot)
            }
        })
    }

    /// The frame `cpfn` names for page `vpn` of `asid` (the TLB's decode), or `None` if it
    /// is the unmapped code.
    #[inline]
    pub fn decode(&self, asid: u16, vpn: u64, cpfn: u8) -> Option<Pfn> {
        self.geometry
            .decode(cpfn)
            .map(|slot| self.frame(asid, vpn, slot))
    }

    /// The CPFN of `pfn` for page `vpn` of `asid`, or `None` if the frame is not one the page
    /// may take. When two backyard choices name one bucket, the first is given (both decode
    /// to the same frame).
    pub fn encode(&self, asid: u16, vpn: u64, pfn: Pfn) -> Option<u8> {
        let g = &self.geometry;
        let front = self.bucket_base(self.bucket(asid, vpn, 0));
        if (front..front + u64::from(g.front)).contains(&pfn.0) {
            return Some(g.encode(Slot::Front((pfn.0 - front) as u32)));
        }
        (0..g.choices).find_map(|choice| {
            let yard = self.bucket_base(self.bucket(asid, vpn, 1 + choice)) + u64::from(g.front);
            (yard..yard + u64::from(g.back)).contains(&pfn.0).then(|| {
                g.encode(Slot::Back {
                    choice,
                    slot: (pfn.0 - yard) as u32,
                })
            })
        })
    }
}

/// Utilisation samples kept at most: past this, every other sample is dropped and the
/// sampling interval doubles, so a long run keeps a bounded, evenly spaced series.
const MAX_SAMPLES: usize = 256;

/// Utilisation over time: `(allocations so far, frames in use)` every `every` allocations.
#[derive(Clone, Debug, Serialize)]
pub struct UtilisationSeries {
    pub every: u64,
    pub samples: Vec<(u64, u64)>,
}

/// Counters of the page allocator (`os.frames`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct IcebergCounters {
    /// Pages placed, in a front yard, in a backyard.
    pub allocations: u64,
    pub front_yard: u64,
    pub backyard: u64,
    pub frees: u64,
    /// Allocations that found every candidate slot taken (associativity conflicts); with
    /// Horizon LRU, every candidate held a live page.
    pub conflicts: u64,
    /// Horizon LRU: allocations that evicted a ghost page to take its frame, and that evicted
    /// the least recently used live candidate (one per conflict).
    #[serde(skip_serializing_if = "is_zero")]
    pub ghost_evictions: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub live_evictions: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Horizon LRU's state (Mosaic §2.4): every pool frame's page's last access time and owner,
/// and the horizon, the highest access time of a live page it evicted. A resident page last
/// accessed before the horizon is a *ghost*: still mapped, but its frame counts as free.
pub struct Horizon {
    /// Last access time of the page in each pool frame (set when it is placed, then at every
    /// reference).
    stamps: Vec<u64>,
    /// The page in each pool frame: ASID above bit 48, VPN below (a VPN has at most 45 bits).
    owners: Vec<u64>,
    horizon: u64,
    /// The access clock's latest value seen.
    now: u64,
    /// Pages evicted by insertions since the last [`IcebergTable::take_evicted`]: ASID, VPN,
    /// and whether it was a ghost.
    evicted: Vec<(u16, u64, bool)>,
    /// Steady state: from the first conflict on, the integral over the access clock of the
    /// frames in use, up to `last` (the time it was brought up to date).
    steady_from: Option<u64>,
    steady_area: u128,
    steady_last: u64,
}

impl Horizon {
    fn owner(asid: u16, vpn: u64) -> u64 {
        u64::from(asid) << 48 | vpn
    }
}

/// The OS's view of the pool: which frames hold a page, and each bucket's load per yard.
pub struct IcebergTable {
    pub map: IcebergMap,
    /// One bit per pool frame: in use.
    used: Vec<u64>,
    front_load: Vec<u8>,
    back_load: Vec<u8>,
    used_frames: u64,
    pub counters: IcebergCounters,
    /// Utilisation (used / pool frames) when the first associativity conflict happened.
    first_conflict: Option<f64>,
    series: UtilisationSeries,
    /// Horizon LRU, when swapping uses it.
    horizon: Option<Horizon>,
}

impl IcebergTable {
    /// Host bytes per bucket: its loads and its frames' bits (config host-memory checks).
    pub fn host_bytes_per_bucket(geometry: &Geometry) -> u64 {
        2 + geometry.bucket_frames().div_ceil(8)
    }

    pub fn new(map: IcebergMap) -> IcebergTable {
        let buckets = map.buckets() as usize;
        let frames = map.frames();
        IcebergTable {
            used: vec![0; frames.div_ceil(64) as usize],
            front_load: vec![0; buckets],
            back_load: vec![0; buckets],
            used_frames: 0,
            counters: IcebergCounters::default(),
            first_conflict: None,
            // One sample per 1/64 of the pool allocated, until the series is full.
            series: UtilisationSeries {
                every: (frames / 64).max(1),
                samples: Vec::new(),
            },
            horizon: None,
            map,
        }
    }

    /// Place pages by Horizon LRU from now on (the pool must be empty: owners are recorded
    /// from the first placement).
    pub fn enable_horizon(&mut self) {
        assert_eq!(self.used_frames, 0, "Horizon LRU starts with an empty pool");
        let frames = self.map.frames() as usize;
        self.horizon = Some(Horizon {
            stamps: vec![0; frames],
            owners: vec![0; frames],
            horizon: 0,
            now: 0,
            evicted: Vec::new(),
            steady_from: None,
            steady_area: 0,
            steady_last: 0,
        });
    }

    /// Horizon LRU's horizon (`None` without it).
    pub fn horizon(&self) -> Option<u64> {
        self.horizon.as_ref().map(|h| h.horizon)
    }

    /// A reference at access time `now` to the page in pool frame `pfn` (any frame: the
    /// clock is noted even if it is not the pool's). Returns whether the page was a ghost,
    /// which is now live again without I/O.
    #[inline]
    pub fn touch(&mut self, pfn: Pfn, now: u64) -> bool {
        let used = self.is_used(pfn);
        let Some(h) = &mut self.horizon else {
            return false;
        };
        h.now = now;
        if !used {
            return false;
        }
        let stamp = &mut h.stamps[(pfn.0 - self.map.base) as usize];
        let revived = *stamp < h.horizon;
        *stamp = now;
        revived
    }

    /// Whether pool frame `pfn` holds a ghost page (Horizon LRU).
    pub fn is_ghost(&self, pfn: Pfn) -> bool {
        self.is_used(pfn)
            && self
                .horizon
                .as_ref()
                .is_some_and(|h| h.stamps[(pfn.0 - self.map.base) as usize] < h.horizon)
    }

    /// Ghost pages resident now (a scan of the pool).
    pub fn ghost_frames(&self) -> u64 {
        let base = self.map.base;
        (base..base + self.map.frames())
            .filter(|&f| self.is_ghost(Pfn(f)))
            .count() as u64
    }

    /// Pages Horizon LRU evicted since the last call: ASID, VPN, and whether each was a ghost.
    pub fn take_evicted(&mut self) -> Vec<(u16, u64, bool)> {
        self.horizon
            .as_mut()
            .map_or_else(Vec::new, |h| std::mem::take(&mut h.evicted))
    }

    /// Mean utilisation from the first conflict to now over the access clock (Table 3's
    /// steady state), with Horizon LRU after a conflict; `None` otherwise.
    pub fn steady_state(&self) -> Option<f64> {
        let h = self.horizon.as_ref()?;
        let from = h.steady_from?;
        let span = h.now - from;
        if span == 0 {
            return Some(self.utilisation());
        }
        let area = h.steady_area + u128::from(self.used_frames) * u128::from(h.now - h.steady_last);
        Some(area as f64 / (span as f64 * self.map.frames() as f64))
    }

    /// Bring the steady-state integral up to now (before the frames in use change).
    fn account(&mut self) {
        if let Some(h) = &mut self.horizon {
            if h.steady_from.is_some() {
                h.steady_area += u128::from(self.used_frames) * u128::from(h.now - h.steady_last);
                h.steady_last = h.now;
            }
        }
    }

    pub fn used_frames(&self) -> u64 {
        self.used_frames
    }

    /// Fraction of the pool's frames in use.
    pub fn utilisation(&self) -> f64 {
        self.used_frames as f64 / self.map.frames() as f64
    }

    /// Utilisation at the first associativity conflict, if one has happened.
    pub fn first_conflict(&self) -> Option<f64> {
        self.first_conflict
    }

    pub fn series(&self) -> &UtilisationSeries {
        &self.series
    }

    pub fn is_used(&self, pfn: Pfn) -> bool {
        self.map.contains(pfn) && {
            let i = pfn.0 - self.map.base;
            self.used[(i / 64) as usize] >> (i % 64) & 1 == 1
        }
    }

    fn set_used(&mut self, pfn: u64, used: bool) {
        let i = pfn - self.map.base;
        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        if used {
            self.used[word] |= bit;
        } else {
            self.used[word] &= !bit;
        }
    }

    /// The first free frame of the `len` frames from `first`, looking from slot `start` on
    /// (wrapping), if any.
    fn free_in(&self, first: u64, len: u32, start: u32) -> Option<u64> {
        (0..len)
            .map(|i| first + u64::from((start + i) % len))
            .find(|&f| !self.is_used(Pfn(f)))
    }

    /// Place page `vpn` of `asid` (§2.3): a front-yard slot of its hash-0 bucket if one is
    /// free, else a backyard slot of the least-loaded of its `d` backyard buckets (the first
    /// of equals). Returns the frame and its CPFN, or `None` on an associativity conflict
    /// (every candidate slot is taken), which is counted.
    ///
    /// Which free slot of the yard a page takes is the allocator's choice (the prototype
    /// keeps a free list per bucket): the first free one from a slot its hash gives. Taking
    /// the lowest free slot instead would put the pages of a lightly used pool in the first
    /// slots of every bucket, frames whose low address bits agree, and so crowd them into a
    /// few sets of every physically indexed cache.
    pub fn insert(&mut self, asid: u16, vpn: u64) -> Option<(Pfn, u8)> {
        if self.horizon.is_some() {
            return Some(self.insert_horizon(asid, vpn));
        }
        let g = self.map.geometry;
        let (front, start) = self.map.bucket_and_start(asid, vpn, 0, g.front);
        let slot = if u32::from(self.front_load[front as usize]) < g.front {
            let first = self.map.bucket_base(front);
            let pfn = self
                .free_in(first, g.front, start)
                .expect("the load counts the used slots");
            self.front_load[front as usize] += 1;
            self.counters.front_yard += 1;
            (pfn, Slot::Front((pfn - first) as u32))
        } else {
            let (choice, bucket) = (0..g.choices)
                .map(|c| (c, self.map.bucket(asid, vpn, 1 + c)))
                .min_by_key(|&(c, b)| (self.back_load[b as usize], c))
                .expect("at least one choice (validated)");
            if u32::from(self.back_load[bucket as usize]) >= g.back {
                self.conflict();
                return None;
            }
            let first = self.map.bucket_base(bucket) + u64::from(g.front);
            let (_, start) = self.map.bucket_and_start(asid, vpn, 1 + choice, g.back);
            let pfn = self
                .free_in(first, g.back, start)
                .expect("the load counts the used slots");
            self.back_load[bucket as usize] += 1;
            self.counters.backyard += 1;
            let slot = (pfn - first) as u32;
            (pfn, Slot::Back { choice, slot })
        };
        self.set_used(slot.0, true);
        self.used_frames += 1;
        self.allocated();
        Some((Pfn(slot.0), g.encode(slot.1)))
    }

    fn allocated(&mut self) {
        self.counters.allocations += 1;
        if self.counters.allocations.is_multiple_of(self.series.every) {
            self.sample();
        }
    }

    fn conflict(&mut self) {
        self.counters.conflicts += 1;
        if self.first_conflict.is_none() {
            self.first_conflict = Some(self.utilisation());
            if let Some(h) = &mut self.horizon {
                h.steady_from = Some(h.now);
                h.steady_last = h.now;
            }
        }
    }

    /// Pool frame index of `pfn` (Horizon's arrays).
    fn index(&self, pfn: u64) -> usize {
        (pfn - self.map.base) as usize
    }

    /// Horizon LRU: room for a page in the `len` frames from `first`: the first free frame
    /// from slot `start` on, else the ghost accessed longest ago (the first of equals);
    /// returns it and whether it holds a ghost.
    fn room_in(&self, first: u64, len: u32, start: u32) -> Option<(u64, bool)> {
        if let Some(free) = self.free_in(first, len, start) {
            return Some((free, false));
        }
        let h = self.horizon.as_ref().expect("Horizon LRU is on");
        (0..len)
            .map(|i| first + u64::from((start + i) % len))
            .filter(|&f| h.stamps[self.index(f)] < h.horizon)
            .min_by_key(|&f| h.stamps[self.index(f)])
            .map(|f| (f, true))
    }

    /// Live (used, not ghost) frames of the `len` frames from `first`.
    fn live_in(&self, first: u64, len: u32) -> u32 {
        let h = self.horizon.as_ref().expect("Horizon LRU is on");
        (first..first + u64::from(len))
            .filter(|&f| self.is_used(Pfn(f)) && h.stamps[self.index(f)] >= h.horizon)
            .count() as u32
    }

    /// Place page `vpn` of `asid` by Horizon LRU (§2.4). As [`IcebergTable::insert`], but
    /// ghost pages' frames count as free: the front yard takes a free slot, else its oldest
    /// ghost's; then the backyard bucket with the fewest live pages (the first of equals)
    /// does the same. If every candidate is live (a conflict), the least recently used of
    /// them is evicted and the horizon rises to its access time, making every page accessed
    /// before it a ghost. An evicted page keeps its frame's used bit and its yard's load
    /// (the new page takes its place) and waits in [`IcebergTable::take_evicted`].
    fn insert_horizon(&mut self, asid: u16, vpn: u64) -> (Pfn, u8) {
        let g = self.map.geometry;
        let (front, start) = self.map.bucket_and_start(asid, vpn, 0, g.front);
        let front_first = self.map.bucket_base(front);
        let (pfn, slot, ghost) = match self.room_in(front_first, g.front, start) {
            Some((pfn, ghost)) => {
                self.counters.front_yard += 1;
                (pfn, Slot::Front((pfn - front_first) as u32), ghost)
            }
            None => self.horizon_backyard(asid, vpn),
        };
        if ghost {
            self.counters.ghost_evictions += 1;
        }
        let i = self.index(pfn);
        if self.is_used(Pfn(pfn)) {
            let h = self.horizon.as_mut().expect("Horizon LRU is on");
            let owner = h.owners[i];
            h.evicted
                .push(((owner >> 48) as u16, owner & ((1 << 48) - 1), ghost));
        } else {
            self.account();
            let bucket = (i as u64 / g.bucket_frames()) as usize;
            match slot {
                Slot::Front(_) => self.front_load[bucket] += 1,
                Slot::Back { .. } => self.back_load[bucket] += 1,
            }
            self.set_used(pfn, true);
            self.used_frames += 1;
        }
        let h = self.horizon.as_mut().expect("Horizon LRU is on");
        h.owners[i] = Horizon::owner(asid, vpn);
        h.stamps[i] = h.now;
        self.allocated();
        (Pfn(pfn), g.encode(slot))
    }

    /// Horizon LRU past a front yard with no room: a backyard slot, or the conflict's victim
    /// among all candidates. Returns the frame, its slot, and whether it holds a ghost.
    fn horizon_backyard(&mut self, asid: u16, vpn: u64) -> (u64, Slot, bool) {
        let g = self.map.geometry;
        let yard = |t: &Self, c: u32| {
            t.map.bucket_base(t.map.bucket(asid, vpn, 1 + c)) + u64::from(g.front)
        };
        let (choice, live) = (0..g.choices)
            .map(|c| (c, self.live_in(yard(self, c), g.back)))
            .min_by_key(|&(c, live)| (live, c))
            .expect("at least one choice (validated)");
        if live < g.back {
            let (_, start) = self.map.bucket_and_start(asid, vpn, 1 + choice, g.back);
            let first = yard(self, choice);
            let (pfn, ghost) = self
                .room_in(first, g.back, start)
                .expect("fewer live pages than slots");
            self.counters.backyard += 1;
            let slot = (pfn - first) as u32;
            return (pfn, Slot::Back { choice, slot }, ghost);
        }
        // A conflict: every candidate is live. Evict the least recently used (the first of
        // equals, front yard first, then by choice).
        self.conflict();
        self.counters.live_evictions += 1;
        let (front, _) = self.map.bucket_and_start(asid, vpn, 0, g.front);
        let front_first = self.map.bucket_base(front);
        let candidates = (0..g.front)
            .map(|s| (front_first + u64::from(s), Slot::Front(s)))
            .chain((0..g.choices).flat_map(|choice| {
                let first = yard(self, choice);
                (0..g.back).map(move |slot| (first + u64::from(slot), Slot::Back { choice, slot }))
            }));
        let h = self.horizon.as_ref().expect("Horizon LRU is on");
        let (pfn, slot) = candidates
            .min_by_key(|&(f, _)| h.stamps[self.index(f)])
            .expect("a page has candidates");
        let stamp = h.stamps[self.index(pfn)];
        let h = self.horizon.as_mut().expect("Horizon LRU is on");
        h.horizon = h.horizon.max(stamp);
        if matches!(slot, Slot::Front(_)) {
            self.counters.front_yard += 1;
        } else {
            self.counters.backyard += 1;
        }
        (pfn, slot, false)
    }

    fn sample(&mut self) {
        let s = &mut self.series;
        s.samples
            .push((self.counters.allocations, self.used_frames));
        if s.samples.len() > MAX_SAMPLES {
            // Keep the samples at multiples of the doubled interval.
            s.every *= 2;
            let every = s.every;
            s.samples.retain(|&(at, _)| at.is_multiple_of(every));
        }
    }

    /// Free the pool frame `pfn`; returns whether it was in use.
    pub fn remove(&mut self, pfn: Pfn) -> bool {
        if !self.is_used(pfn) {
            return false;
        }
        let i = pfn.0 - self.map.base;
        let bucket = (i / self.map.geometry.bucket_frames()) as usize;
        if i % self.map.geometry.bucket_frames() < u64::from(self.map.geometry.front) {
            self.front_load[bucket] -= 1;
        } else {
            self.back_load[bucket] -= 1;
        }
        self.account();
        self.set_used(pfn.0, false);
        self.used_frames -= 1;
        self.counters.frees += 1;
        true
    }

    /// Loads of bucket `bucket`: (front yard, backyard).
    pub fn loads(&self, bucket: u64) -> (u32, u32) {
        (
            u32::from(self.front_load[bucket as usize]),
            u32::from(self.back_load[bucket as usize]),
        )
    }
}
