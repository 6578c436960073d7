//! Frame policies: which physical frame a page may take. The OS asks its policy for every
//! frame it maps; a scheme that derives the frame from the VPN (a RestSeg set, an iceberg
//! bucket, a memory node) supplies its own policy instead of the buddy allocator's choice.

use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::Result;
use crate::mem::physmem::BuddyAllocator;

/// A page the frame policy displaced to make room for another: the OS moves it from `from` to
/// `to` (remap, copy, shootdown) after mapping the page that took its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eviction {
    pub pid: u16,
    /// First 4 KiB page of the evicted page.
    pub vpn: Vpn,
    pub size: PageSize,
    pub from: Pfn,
    pub to: Pfn,
}

/// A page the frame policy displaced with nowhere in memory to move it (restrictive-only
/// Utopia's full set): the OS pages it out to the backing store after mapping the page that
/// took its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageOut {
    pub pid: u16,
    /// First 4 KiB page of the page.
    pub vpn: Vpn,
    pub size: PageSize,
    /// A ghost page (Horizon LRU), evicted because its frame counts as free, rather than a
    /// live page evicted by a conflict.
    pub ghost: bool,
}

/// Chooses the frame of a new page.
pub trait FramePolicy: Send {
    /// Take the memory the policy manages itself out of `buddy` at boot, before fragmentation
    /// injection (Utopia's RestSegs). Most policies manage none.
    fn reserve(&mut self, _buddy: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    /// A free, aligned block for the `size` page at `vpn` of process `pid`, taken from
    /// `buddy`, or `None` if the policy has none (the OS then tries a smaller size or fails).
    fn frame(
        &mut self,
        buddy: &mut BuddyAllocator,
        pid: u16,
        vpn: Vpn,
        size: PageSize,
    ) -> Option<Pfn>;

    /// Whether the policy decides each page's frame from the page itself (a hash, a set, a
    /// partition), so that consecutive pages cannot share a block: eager paging then gets one
    /// frame at a time from [`FramePolicy::frame`].
    fn places_each_page(&self) -> bool {
        false
    }

    /// Eager paging: a free block of `2^order` frames, `order <= max_order`, to back the
    /// pages from `vpn` on with consecutive frames, or `None` if memory is full. The default
    /// takes the largest block the buddy allocator has, up to `max_order` (RMM's eager paging
    /// allocator), or the one frame `frame` places when the policy places each page itself.
    fn block(
        &mut self,
        buddy: &mut BuddyAllocator,
        pid: u16,
        vpn: Vpn,
        max_order: u32,
    ) -> Option<(Pfn, u32)> {
        if self.places_each_page() {
            return self
                .frame(buddy, pid, vpn, PageSize::Size4K)
                .map(|p| (p, 0));
        }
        let order = buddy.largest_free_order()?.min(max_order);
        buddy.alloc(order).map(|p| (p, order))
    }

    /// A frame of the policy's own memory for the `size` page at `vpn` of `pid`, which the OS
    /// moves there because it has become costly to translate (Utopia's PTE-based migration
    /// into a RestSeg), evicting another page if it must; `None` if the policy has no such
    /// memory or no room.
    fn promote(
        &mut self,
        _buddy: &mut BuddyAllocator,
        _pid: u16,
        _vpn: Vpn,
        _size: PageSize,
    ) -> Option<Pfn> {
        None
    }

    /// The `size` page at `pfn` was unmapped: give its frame back (to `buddy`, unless the
    /// policy manages it).
    fn free(&mut self, buddy: &mut BuddyAllocator, pfn: Pfn, size: PageSize) {
        buddy.free(pfn, size.order());
    }

    /// Why the last [`FramePolicy::frame`] gave no frame, when the reason is the policy's
    /// own rather than memory being full (Mosaic: an associativity conflict); the OS's
    /// out-of-memory error then says it.
    fn refusal(&self) -> Option<String> {
        None
    }

    /// The frames `lo..hi` the last refused [`FramePolicy::frame`] confined its page to, when
    /// the policy confines pages to parts of memory and that part is full while others may
    /// have room (a SPARTA partition, like a NUMA node an allocation is bound to): the OS
    /// reclaims pages of that part and asks again. `None` for a refusal memory as a whole
    /// explains.
    fn full_region(&self) -> Option<(u64, u64)> {
        None
    }

    /// Pages displaced by the frames chosen since the last call, for the OS to move.
    fn take_evictions(&mut self) -> Vec<Eviction> {
        Vec::new()
    }

    /// Pages displaced by the frames chosen since the last call that have nowhere to go, for
    /// the OS to page out (only a policy that may evict without a frame to move to has any).
    fn take_page_outs(&mut self) -> Vec<PageOut> {
        Vec::new()
    }

    /// Whether `pfn` is the policy's own memory (a RestSeg slot) rather than the buddy
    /// allocator's: the OS's reclaim pages out only pages of the buddy allocator's frames,
    /// since only those give it free frames.
    fn owns(&self, _pfn: Pfn) -> bool {
        false
    }

    /// The MMU translated the page whose first frame is `pfn` from a side path beside the L2
    /// TLB (Utopia: a RestSeg walk hit). A policy may count it per frame as a measurement
    /// (Utopia's reuse of a RestSeg slot before its page leaves); most ignore it.
    fn side_hit(&mut self, _pfn: Pfn) {}

    /// Slots in use of each region the policy manages itself (Utopia: each RestSeg, in
    /// `[schemes.utopia] restsegs` order); empty for policies that manage none.
    fn used_slots(&self) -> Vec<u64> {
        Vec::new()
    }

    /// Swapping with Horizon LRU (`os.swap.policy = "horizon"`): the policy keeps access
    /// times and places pages by them from now on. Returns whether it can; only Mosaic's
    /// iceberg allocator can.
    fn enable_horizon(&mut self) -> bool {
        false
    }

    /// A reference at access time `now` (the OS's clock, increasing) to the page whose first
    /// frame is `pfn` (only with `enable_horizon`). Returns whether it revived a ghost page.
    fn touched(&mut self, _pfn: Pfn, _now: u64) -> bool {
        false
    }

    /// The policy's own statistics (the `os.frames` subtree), if any.
    fn stats(&self) -> Option<serde_json::Value> {
        None
    }

    fn reset_stats(&mut self) {}
}

/// Any free block of the right order, as Linux's page allocator gives.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuddyFrames;

impl FramePolicy for BuddyFrames {
    fn frame(&mut self, buddy: &mut BuddyAllocator, _: u16, _: Vpn, size: PageSize) -> Option<Pfn> {
        buddy.alloc(size.order())
    }
}
