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

/// Bookings in order of time, none overlapping.
#[derive(Clone, Debug, Default)]
pub(super) struct Calendar {
    booked: Vec<Booking>,
    /// Nothing may be booked before this cycle (bookings before it were dropped).
    horizon: u64,
}

/// Bookings kept: past twice this many, those that ended before every core's clock (the
/// floor) are dropped, and if the floor has not moved (a page copy books thousands of lines
/// at one cycle), the oldest half, below a horizon no later request may book before. A
/// request issued that long before the latest bookings waits for the horizon: the bound
/// costs timing only in such bursts, and never lets two bookings overlap.
const KEEP: usize = 512;
impl Calendar {
    /// The earliest start `s >= at` of a booking `len` long tagged `tag` that overlaps none,
    /// where a booking tagged `a` followed by one tagged `b` must leave `gap(a, b)` idle
    /// cycles between them (at most `max_gap`).
    #[inline]
    pub fn earliest(
        &self,
        at: u64,
        len: u64,
        tag: u32,
        max_gap: u64,
        gap: impl Fn(u32, u32) -> u64,
    ) -> u64 {
        let b = &self.booked;
        let at = at.max(self.horizon);
        // Bookings that end (with any gap) by `at` cannot constrain it: ends are in order too.
        // Most requests come after all but the last few bookings: search from the back.
        let first = partition_point_back(b, |e| e.end + max_gap <= at);
        let mut s = at;
        // At most 2 * KEEP bookings: the scan is bounded by what is kept.
        for e in &b[first..] {
            if e.start >= s + len + gap(tag, e.tag) {
                // Fits before `e`; every booking before `e` was accounted for below.
                return s;
            }
            if e.end + gap(e.tag, tag) > s {
                s = e.end + gap(e.tag, tag);
            }
        }
        s
    }

    /// Book `[start, start + len)`, which [`Calendar::earliest`] found free.
    #[inline]
    pub fn book(&mut self, start: u64, len: u64, tag: u32, floor: u64) {
        let b = &mut self.booked;
        let at = partition_point_back(b, |e| e.start <= start);
        b.insert(
            at,
            Booking {
                start,
                end: start + len,
                tag,
            },
        );
        if b.len() >= 2 * KEEP {
            let ended = b.partition_point(|e| e.end <= floor);
            let drop = if b.len() - ended >= 2 * KEEP {
                let half = b.len() / 2;
                self.horizon = self.horizon.max(b[half - 1].end);
                half
            } else {
                ended
            };
            b.drain(..drop);
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

    #[test]
    fn takes_the_first_gap_that_fits() {
        let mut c = Calendar::default();
        let none = |_: u32, _: u32| 0;
        assert_eq!(c.earliest(10, 4, 0, 0, none), 10);
        c.book(10, 4, 0, 0);
        c.book(20, 4, 0, 0);
        // Before, between (a 6-cycle gap holds a 4-cycle booking), after.
        assert_eq!(c.earliest(0, 4, 0, 0, none), 0);
        assert_eq!(c.earliest(8, 4, 0, 0, none), 14);
        assert_eq!(c.earliest(15, 4, 0, 0, none), 15);
        assert_eq!(c.earliest(17, 4, 0, 0, none), 24);
        assert_eq!(c.earliest(12, 7, 0, 0, none), 24);
        // A gap rule: tag 1 after tag 0 needs 3 idle cycles.
        let rule = |a: u32, b: u32| if a == 0 && b == 1 { 3 } else { 0 };
        assert_eq!(c.earliest(14, 2, 1, 3, rule), 17);
        assert_eq!(c.earliest(14, 4, 1, 3, rule), 27);
        c.book(14, 4, 0, 0);
        assert_eq!(
            c.bookings().iter().map(|b| b.start).collect::<Vec<_>>(),
            [10, 14, 20]
        );
    }

    #[test]
    fn old_bookings_are_dropped_in_order() {
        let mut c = Calendar::default();
        for i in 0..(4 * KEEP as u64) {
            c.book(i * 10, 5, 0, i * 10);
            assert!(c.bookings().len() < 2 * KEEP);
        }
        // With the floor held at 0, the oldest half goes, below a horizon nothing may book
        // before.
        let mut held = Calendar::default();
        for i in 0..(4 * KEEP as u64) {
            held.book(i * 10, 5, 0, 0);
            assert!(held.bookings().len() < 2 * KEEP);
        }
        let first = held.bookings()[0].start;
        assert!(first > 0);
        assert!(held.earliest(0, 1, 0, 0, |_, _| 0) >= first - 5);
        let b = c.bookings();
        assert!(b.windows(2).all(|w| w[0].end <= w[1].start));
        assert_eq!(b.last().unwrap().start, (4 * KEEP as u64 - 1) * 10);
    }
}
