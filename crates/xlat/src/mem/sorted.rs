//! Searches over time-ordered lists whose queries fall near one end.
//!
//! Timing resources (MSHR intervals, DRAM bookings and activates) are kept in order of time,
//! and almost every query is for a cycle near the newest entries: requests are issued nearly in
//! order. A bisection's loads wait on each other, so the few entries at the near end are tried
//! in turn first, and a query that gets past them gallops (steps of 8, 16, 32, ... entries)
//! until it overshoots and bisects only the last step: its cost grows with how far from the
//! near end the answer lies, not with the length of the list.

/// Steps taken one at a time before galloping.
const NEAR: usize = 4;

/// How many items at the front of `items` satisfy `pred`, which holds for a prefix of them:
/// the first few are tried in turn, the rest bisected.
#[inline(always)]
pub(crate) fn count_while<T>(items: &[T], pred: impl Fn(&T) -> bool) -> usize {
    gallop(items.len(), |i| pred(&items[i]))
}

/// How many items at the back of `items` satisfy `pred`, which holds for a suffix of them.
#[inline(always)]
pub(crate) fn count_while_back<T>(items: &[T], pred: impl Fn(&T) -> bool) -> usize {
    let n = items.len();
    gallop(n, |i| pred(&items[n - 1 - i]))
}

/// The number of `i` in `0..n` for which `holds(i)`, which is true on a prefix of `0..n`:
/// `NEAR` steps one at a time, then doubling steps until one overshoots, then a bisection of
/// that step.
#[inline(always)]
fn gallop(n: usize, holds: impl Fn(usize) -> bool) -> usize {
    let near = n.min(NEAR);
    if let Some(k) = (0..near).position(|i| !holds(i)) {
        return k;
    }
    // `holds` is true below `lo`; `hi` is where it was found false, or `n`.
    let (mut lo, mut step) = (near, 2 * NEAR);
    let mut hi = loop {
        let probe = lo + step - 1;
        if probe >= n {
            break n;
        }
        if !holds(probe) {
            break probe;
        }
        lo = probe + 1;
        step *= 2;
    };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `items.partition_point(pred)` for a `pred` true on a prefix, searched from the back.
#[inline(always)]
pub(crate) fn partition_point_back<T>(items: &[T], pred: impl Fn(&T) -> bool) -> usize {
    items.len() - count_while_back(items, |x| !pred(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_either_end_agree_with_a_filter() {
        // Lengths within the near steps, and long enough for several galloping steps.
        for len in (0..40u64).chain([63, 64, 65, 100, 257]) {
            let items: Vec<u64> = (0..len).map(|i| i * 3).collect();
            for t in 0..3 * len + 2 {
                let below = items.iter().filter(|&&x| x <= t).count();
                assert_eq!(count_while(&items, |&x| x <= t), below, "{len} {t}");
                assert_eq!(count_while_back(&items, |&x| x > t), items.len() - below);
                assert_eq!(partition_point_back(&items, |&x| x <= t), below);
            }
        }
    }
}
