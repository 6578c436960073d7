//! Splitting a byte range into the cache-line accesses a vectorised copy or compare makes.

use crate::addr::VirtAddr;

/// Cache-line size of the modelled machine.
pub const LINE: u64 = 64;

/// The `(address, bytes)` of every cache-line piece of `[va, va + bytes)`, in address order:
/// the first and last pieces may be partial lines.
pub fn line_pieces(va: VirtAddr, bytes: u64) -> impl Iterator<Item = (VirtAddr, u8)> {
    let end = va.0 + bytes;
    let mut at = va.0;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let next = ((at / LINE) + 1) * LINE;
        let piece = next.min(end) - at;
        let out = (VirtAddr(at), piece as u8);
        at = next;
        Some(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_range_line_by_line() {
        let p: Vec<_> = line_pieces(VirtAddr(100), 200).collect();
        assert_eq!(
            p,
            vec![
                (VirtAddr(100), 28),
                (VirtAddr(128), 64),
                (VirtAddr(192), 64),
                (VirtAddr(256), 44)
            ]
        );
        assert_eq!(line_pieces(VirtAddr(128), 64).count(), 1);
        assert_eq!(line_pieces(VirtAddr(0), 0).count(), 0);
    }
}
