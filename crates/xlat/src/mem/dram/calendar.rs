//! A resource booked over intervals of simulated time.
//!
//! The engine computes each request's issue cycle out of program order in time: a request
//! called later can be issued earlier (a younger load whose translation was quick, after an
//! older one that walked). A DRAM resource is therefore not "busy until" one cycle but a set of
//! booked intervals, and a request takes the earliest free interval at or after its own time,
//! before bookings made by earlier calls for later times if they leave room. Nothing booked
//! moves: a request called later never delays one already scheduled.

use crate::mem::sorted::partition_point_back;

/// One booking: `[start, end)` and a tag the gap rule reads (a burst's direction and rank).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Booking {
    pub start: u64,
    pub end: u64,
    pub tag: u32,
}

/// Where [`Calendar::earliest`] found room: the start, and the index the booking takes among
/// the bookings, so that booking it needs no second search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Slot {
    pub start: u64,
    index: usize,
}

/// Bookings of one length in order of time, none overlapping.
#[derive(Clone, Debug)]
pub(super) struct Calendar {
    booked: Vec<Booking>,
    /// Every booking's length.
    len: u64,
    /// The largest gap the gap rule asks for.
    max_gap: u64,
    /// Nothing may be booked before this cycle (bookings before it were dropped).
    horizon: u64,
    /// No free interval between bookings from this cycle on is a booking long: a request
    /// from here on can only go after the last booking. Under load the bookings pack, and
    /// a request then takes no scan.
    packed_from: u64,
    /// Bookings held when the next trim looks for ended ones: twice what the last trim kept,
    /// so trims cost O(1) a booking.
    trim_at: usize,
}

/// Bookings kept at least before a trim: a request's searches start from the newest
/// bookings, so a short list mostly saves the moves of inserting and the host cache.
const TRIM_MIN: usize = 64;

/// Bookings kept at most. A trim drops those that, with their largest gap, ended before every
/// core's clock (the floor): no request can be issued early enough to meet them. If the floor
/// has not moved (a page copy books thousands of lines at one cycle) and more than twice this
/// many remain, the oldest half goes, below a horizon no later request may book before. A
/// request issued that long before the latest bookings waits for the horizon: the bound costs
/// timing only in such bursts, and never lets two bookings overlap.
const KEEP: usize = 512;

/// Bookings a search passes before it gives up on the free intervals among them and goes
/// after the last: a request issued long before a burst booked at one cycle would otherwise
/// scan it all, and so would each of the burst's requests. (Searches pass about 5 on GUPS.)
const SCAN_MAX: usize = 128;

impl Calendar {
    /// An empty calendar of bookings `len` cycles long, kept at most `max_gap` cycles apart
    /// by the gap rule.
    pub fn new(len: u64, max_gap: u64) -> Calendar {
        Calendar {
            booked: Vec::new(),
            len,
            max_gap,
            horizon: 0,
            packed_from: 0,
            trim_at: TRIM_MIN,
        }
    }

    /// The earliest start `s >= at` of a booking tagged `tag` that overlaps none, where a
    /// booking tagged `a` followed by one tagged `b` must leave `gap(a, b)` idle cycles
    /// between them (at most the calendar's `max_gap`): after every booking before it, and
    /// before every booking after it. (A gap may span other bookings: tWTR and tCCD_L are a
    /// rank's and a bank group's, whatever other ranks and groups send between.) The slot
    /// also holds where the booking goes among the others: after every booking that starts
    /// by `s` (they end, with their gaps, by `s`) and before the one it fits before.
    #[inline]
    pub fn earliest(&self, at: u64, tag: u32, gap: impl Fn(u32, u32) -> u64) -> Slot {
        let b = &self.booked;
        let max_gap = self.max_gap;
        let at = at.max(self.horizon);
        let len = self.len;
        // After the last booking, and the gaps the last few (those ending within `max_gap`
        // of it) ask for.
        let after_last = |from: u64| {
            let mut s = from;
            for e in b.iter().rev() {
                if e.end + max_gap <= s {
                    break;
                }
                s = s.max(e.end + gap(e.tag, tag));
            }
            Slot {
                start: s,
                index: b.len(),
            }
        };
        if at >= self.packed_from {
            // Nothing fits before the last booking.
            return after_last(at);
        }
        // Bookings that end (with any gap) by `at` cannot constrain it: ends are in order too.
        // Most requests come after all but the last few bookings: search from the back.
        let first = partition_point_back(b, |e| e.end + max_gap <= at);
        let mut s = at;
        for (i, e) in b.iter().enumerate().skip(first) {
            if i - first == SCAN_MAX {
                // A bus booked solid far ahead (a page copy's burst): after the last booking.
                return after_last(s);
            }
            // Fits before `e` if it keeps its gap before `e` and the bookings after `e` that
            // a gap could reach; every booking before `e` was accounted for in `s`.
            // (The gap is looked up only when the burst alone fits: mostly it does not.)
            let fits_before =
                |f: &Booking| s + len <= f.start && s + len + gap(tag, f.tag) <= f.start;
            if fits_before(e)
                && b[i + 1..]
                    .iter()
                    .take_while(|f| f.start < s + len + max_gap)
                    .all(fits_before)
            {
                return Slot { start: s, index: i };
            }
            s = s.max(e.end + gap(e.tag, tag));
        }
        Slot {
            start: s,
            index: b.len(),
        }
    }

    /// Book the slot [`Calendar::earliest`] found for `tag`, with no booking made since.
    #[inline]
    pub fn book(&mut self, slot: Slot, tag: u32, floor: u64) {
        let b = &mut self.booked;
        let (start, at) = (slot.start, slot.index);
        debug_assert_eq!(at, partition_point_back(b, |e| e.start <= start));
        if at == b.len() && b.last().is_none_or(|l| start >= l.end + self.len) {
            // A new last booking after room for another: the packed bookings begin with it.
            // (A booking between others only narrows a free interval.)
            self.packed_from = start;
        }
        b.insert(
            at,
            Booking {
                start,
                end: start + self.len,
                tag,
            },
        );
        if b.len() >= self.trim_at {
            let ended = b.partition_point(|e| e.end + self.max_gap <= floor);
            let drop = if b.len() - ended >= 2 * KEEP {
                let half = b.len() / 2;
                self.horizon = self.horizon.max(b[half - 1].end + self.max_gap);
                half
            } else {
                ended
            };
            b.drain(..drop);
            self.trim_at = TRIM_MIN.max(2 * b.len());
        }
    }

    /// The bookings, in order (for tests and the bandwidth check).
    #[cfg(test)]
    pub fn bookings(&self) -> &[Booking] {
        &self.booked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn takes_the_first_gap_that_fits() {
        let mut c = Calendar::new(4, 3);
        let none = |_: u32, _: u32| 0;
        assert_eq!(c.earliest(10, 0, none).start, 10);
        c.book(c.earliest(10, 0, none), 0, 0);
        c.book(c.earliest(20, 0, none), 0, 0);
        // Before, between (a 6-cycle gap holds a 4-cycle booking), after.
        assert_eq!(c.earliest(0, 0, none).start, 0);
        assert_eq!(c.earliest(8, 0, none).start, 14);
        assert_eq!(c.earliest(15, 0, none).start, 15);
        assert_eq!(c.earliest(17, 0, none).start, 24);
        // A gap rule: tag 1 after tag 0 needs 3 idle cycles.
        let rule = |a: u32, b: u32| if a == 0 && b == 1 { 3 } else { 0 };
        assert_eq!(c.earliest(14, 1, rule).start, 27);
        c.book(c.earliest(14, 0, none), 0, 0);
        assert_eq!(
            c.bookings().iter().map(|b| b.start).collect::<Vec<_>>(),
            [10, 14, 20]
        );
        // Packed from 14 on: a request at 15 goes after the last booking, 24.
        assert_eq!(c.earliest(15, 0, none).start, 24);
        assert_eq!(c.earliest(15, 1, rule).start, 27);
    }

    #[test]
    fn old_bookings_are_dropped_in_order() {
        let mut c = Calendar::new(5, 0);
        for i in 0..(4 * KEEP as u64) {
            c.book(c.earliest(i * 10, 0, |_, _| 0), 0, i * 10);
            assert!(c.bookings().len() < 2 * KEEP);
        }
        // With the floor held at 0, the oldest half goes, below a horizon nothing may book
        // before.
        let mut held = Calendar::new(5, 0);
        for i in 0..(4 * KEEP as u64) {
            let slot = held.earliest(i * 10, 0, |_, _| 0);
            assert_eq!(slot.start, i * 10);
            held.book(slot, 0, 0);
            assert!(held.bookings().len() < 2 * KEEP);
        }
        let first = held.bookings()[0].start;
        assert!(first > 0);
        assert!(held.earliest(0, 0, |_, _| 0).start >= first - 5);
        let b = c.bookings();
        assert!(b.windows(2).all(|w| w[0].end <= w[1].start));
        assert_eq!(b.last().unwrap().start, (4 * KEEP as u64 - 1) * 10);
    }

    proptest! {
        /// Every request gets the first start, from its own cycle on, that keeps its gap
        /// after every booking before it and before every booking after it: the
        /// definition, checked start by start.
        #[test]
        fn each_request_gets_the_first_start_the_rules_allow(
            len in 1u64..6,
            rule in prop::collection::vec(0u64..8, 9),
            asks in prop::collection::vec((0u64..400, 0u32..3), 1..120),
        ) {
            let gap = |a: u32, b: u32| rule[(a * 3 + b) as usize];
            let max_gap = *rule.iter().max().unwrap();
            let mut c = Calendar::new(len, max_gap);
            for &(at, tag) in &asks {
                let allowed = |s: u64| {
                    c.bookings().iter().all(|e| {
                        e.end + gap(e.tag, tag) <= s || s + len + gap(tag, e.tag) <= e.start
                    })
                };
                let want = (at..).find(|&s| allowed(s)).unwrap();
                let slot = c.earliest(at, tag, gap);
                prop_assert_eq!(slot.start, want);
                c.book(slot, tag, 0);
            }
        }

        /// Trimming drops only bookings no request from the floor on can meet: with a floor
        /// that rises and requests at or after it, a trimmed calendar gives every request the
        /// start an untrimmed one gives.
        #[test]
        fn trimming_never_changes_an_answer_from_the_floor_on(
            rule in prop::collection::vec(0u64..12, 9),
            asks in prop::collection::vec((0u64..40, 0u64..30, 0u32..3), 1..600),
        ) {
            let gap = |a: u32, b: u32| rule[(a * 3 + b) as usize];
            let max_gap = *rule.iter().max().unwrap();
            let mut trimmed = Calendar::new(4, max_gap);
            let mut whole = Calendar::new(4, max_gap);
            let mut floor = 0;
            for &(rise, ahead, tag) in &asks {
                floor += rise / 8;
                let at = floor + ahead;
                let want = whole.earliest(at, tag, gap);
                let got = trimmed.earliest(at, tag, gap);
                prop_assert_eq!(got.start, want.start);
                whole.book(want, tag, 0);
                trimmed.book(got, tag, floor);
            }
            prop_assert!(trimmed.bookings().len() <= whole.bookings().len());
        }
    }
}
