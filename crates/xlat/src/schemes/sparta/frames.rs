//! SPARTA's physical page allocation (§5, Algorithm 1): a page's frame comes from the
//! partition its virtual address names, anywhere in that partition. A full partition refuses
//! (the OS then reclaims that partition's pages, or reports out of memory for it) even when
//! others have room: faults and out-of-memory are per partition.

use super::layout::Layout;
use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::os::FramePolicy;

pub struct PartitionFrames {
    layout: Layout,
    /// Frames handed out, by partition.
    allocated: Vec<u64>,
    /// Requests refused because the page's partition was full, by partition.
    refused: Vec<u64>,
    /// Requests for a huge page that spans partitions (`shift` below the page's size),
    /// refused so that the OS maps it with base pages.
    spanning: u64,
    last_refusal: Option<u64>,
}

impl PartitionFrames {
    pub fn new(layout: Layout) -> PartitionFrames {
        let n = layout.partitions as usize;
        PartitionFrames {
            layout,
            allocated: vec![0; n],
            refused: vec![0; n],
            spanning: 0,
            last_refusal: None,
        }
    }
}

impl FramePolicy for PartitionFrames {
    /// Each partition's table takes the first frames of the partition, before anything else
    /// is allocated.
    fn reserve(&mut self, buddy: &mut BuddyAllocator) -> Result<()> {
        let l = self.layout;
        for p in 0..l.partitions {
            let (lo, _) = l.frames(p);
            if !buddy.alloc_range(lo, l.table_frames) {
                return Err(Error::config(
                    "schemes.sparta.partitions",
                    format!(
                        "frames {lo}..{} for partition {p}'s page table are not free at boot",
                        lo + l.table_frames
                    ),
                ));
            }
        }
        Ok(())
    }

    fn frame(
        &mut self,
        buddy: &mut BuddyAllocator,
        _: u16,
        vpn: Vpn,
        size: PageSize,
    ) -> Option<Pfn> {
        self.last_refusal = None;
        if !self.layout.holds_whole(size) {
            self.spanning += 1;
            return None;
        }
        let p = self.layout.partition_of_vpn(vpn);
        let (lo, hi) = self.layout.frames(p);
        match buddy.alloc_in(size.order(), lo, hi) {
            Some(pfn) => {
                self.allocated[p as usize] += size.base_pages();
                Some(pfn)
            }
            None => {
                self.refused[p as usize] += 1;
                self.last_refusal = Some(p);
                None
            }
        }
    }

    /// Each page goes to its own partition.
    fn places_each_page(&self) -> bool {
        true
    }

    fn free(&mut self, buddy: &mut BuddyAllocator, pfn: Pfn, size: PageSize) {
        let p = self.layout.partition_of_frame(pfn.0) as usize;
        self.allocated[p] = self.allocated[p].saturating_sub(size.base_pages());
        buddy.free(pfn, size.order());
    }

    fn refusal(&self) -> Option<String> {
        let p = self.last_refusal?;
        let (lo, hi) = self.layout.frames(p);
        Some(format!(
            "SPARTA partition {p} (frames {lo}..{hi}) is full: a page goes only to the \
             partition its virtual address names (schemes.sparta.partitions, shift)"
        ))
    }

    /// A full partition is reclaimed on its own, as Linux reclaims a node.
    fn full_region(&self) -> Option<(u64, u64)> {
        self.last_refusal.map(|p| self.layout.frames(p))
    }

    fn stats(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "partitions": self.layout.partitions,
            "frames_by_partition": self.allocated,
            "refused_by_partition": self.refused,
            "huge_pages_spanning_partitions": self.spanning,
        }))
    }
}
