//! Searches over time-ordered lists whose queries fall near one end.
//!
//! Timing resources (MSHR intervals, DRAM bookings and activates) are kept in order of time,
//! and almost every query is for a cycle near the newest entries: requests are issued nearly in
//! order. A bisection's loads wait on each other, so the few entries at the near end are tried
//! in turn first and only a query that gets past them bisects the rest.

/// Steps taken one at a time before bisecting.
const NEAR: usize = 4;

/// How many items at the front of `items` satisfy `pred`, which holds for a prefix of them:
/// the first few are tried in turn, the rest bisected.
#[inline(always)]
pub(crate) fn count_while<T>(items: &[T], pred: impl Fn(&T) -> bool) -> usize {
    let near = items.len().min(NEAR);
    match items[..near].iter().position(|x| !pred(x)) {
        Some(k) => k,
        None => near + items[near..].partition_point(pred),
    }
}

/// How many items at the back of `items` satisfy `pred`, which holds for a suffix of them.
#[inline(always)]
pub(crate) fn count_while_back<T>(items: &[T], pred: impl Fn(&T) -> bool) -> usize {
    let near = items.len().min(NEAR);
    let far = items.len() - near;
    match items[far..].iter().rev().position(|x| !pred(x)) {
        Some(k) => k,
        None => near + (far - items[..far].partition_point(|x| !pred(x))),
    }
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
        for len in 0..20u64 {
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
