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
}

/// Any free block of the right order, as Linux's page allocator gives.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuddyFrames;

impl FramePolicy for BuddyFrames {
    fn frame(&mut self, buddy: &mut BuddyAllocator, _: u16, _: Vpn, size: PageSize) -> Option<Pfn> {
        buddy.alloc(size.order())
    }
}
