//! Frame policies: which physical frame a page may take. The OS asks its policy for every
//! frame it maps; a scheme that derives the frame from the VPN (a RestSeg set, an iceberg
//! bucket, a memory node) supplies its own policy instead of the buddy allocator's choice.

use crate::addr::{PageSize, Pfn, Vpn};
use crate::mem::physmem::BuddyAllocator;

/// Chooses the frame of a new page.
pub trait FramePolicy: Send {
    /// A free, aligned block for the `size` page at `vpn` of process `pid`, taken from
    /// `buddy`, or `None` if the policy has none (the OS then tries a smaller size or fails).
    fn frame(
        &mut self,
        buddy: &mut BuddyAllocator,
        pid: u16,
        vpn: Vpn,
        size: PageSize,
    ) -> Option<Pfn>;

    /// Eager paging: a free block of `2^order` frames, `order <= max_order`, to back the
    /// pages from `vpn` on with consecutive frames, or `None` if memory is full. The default
    /// takes the largest block the buddy allocator has, up to `max_order` (RMM's eager paging
    /// allocator); a policy that places each page itself may return single frames instead.
    fn block(
        &mut self,
        buddy: &mut BuddyAllocator,
        _pid: u16,
        _vpn: Vpn,
        max_order: u32,
    ) -> Option<(Pfn, u32)> {
        let order = buddy.largest_free_order()?.min(max_order);
        buddy.alloc(order).map(|p| (p, order))
    }
}

/// Any free block of the right order, as Linux's page allocator gives.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuddyFrames;

impl FramePolicy for BuddyFrames {
    fn frame(&mut self, buddy: &mut BuddyAllocator, _: u16, _: Vpn, size: PageSize) -> Option<Pfn> {
        buddy.alloc(size.order())
    }
}
