//! Swapping: a backing store (an SSD) for pages that cannot stay in memory.
//!
//! A page is paged out when the frame policy cannot place a page without it:
//!
//! * **Memory is full** (the buddy allocator, i.e. flexible memory): before every fault the
//!   OS reclaims until at least `min_free_frames` frames are free, as Linux's direct reclaim
//!   keeps free memory above its `min` watermark, so that the faulting page and the page-table
//!   frames its mapping needs always find a frame. The victim is the page that has been
//!   resident longest (FIFO over the pages mapped to frames of the buddy allocator, in the
//!   order they were mapped): the hardware reports no accessed bits to the OS in this model,
//!   so there is nothing for a clock or LRU to see.
//! * **The frame policy evicts a page to nowhere** (restrictive-only Utopia: a full RestSeg
//!   set's DRRIP victim, with no FlexSeg to move it to): the policy names the victim and the
//!   OS pages it out after mapping the page that took its slot.
//!
//! A paged-out page is unmapped (its mapping removed from the page table and the ground
//! truth, its TLB entries shot down) and remembered as swapped. Touching it again faults; the
//! fault is **major**: it reads the page back (`page_in_cycles`) into whatever frame the
//! policy gives, which may page out another. Both transfers are synchronous in the faulting
//! core's fault handler (direct reclaim, a blocking swap-in), each charged per 4 KiB moved.
//! Page contents are not stored by the engine (only translations are), so a page that comes
//! back is correct when its new translation is: `sim.verify` checks that.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// `[os.swap]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapConfig {
    /// Swapping on: pages that cannot stay in memory go to the backing store. Off (the
    /// default), a footprint beyond memory is an out-of-memory error.
    #[serde(default)]
    pub enabled: bool,
    /// Cycles the faulting core waits to write one 4 KiB page to the backing store.
    #[serde(default = "default_page_out_cycles")]
    pub page_out_cycles: u64,
    /// Cycles the faulting core waits to read one 4 KiB page back (a major fault's I/O,
    /// beside `os.minor_fault_cycles` for the handler itself).
    #[serde(default = "default_page_in_cycles")]
    pub page_in_cycles: u64,
    /// Free frames the OS keeps before each fault by paging out resident pages (Linux's `min`
    /// watermark): room for the faulting page and the page-table frames it needs.
    #[serde(default = "default_min_free_frames")]
    pub min_free_frames: u64,
}

/// A 4 KiB random read from an NVMe SSD takes on the order of 10 us end to end (device
/// latency plus the block layer); 26 000 cycles is 10 us at the presets' 2.6 GHz core clock.
/// An estimate, not a measurement: tune it for another device or clock.
fn default_page_in_cycles() -> u64 {
    26_000
}

/// A 4 KiB write to an NVMe SSD completes into its write cache in roughly the same ~10 us;
/// the same 26 000 cycles at 2.6 GHz.
fn default_page_out_cycles() -> u64 {
    26_000
}

/// 64 frames (256 KiB): a fault maps one data page and at most a few page-table pages (four
/// with 5-level radix tables), and Utopia may move one evicted page to a flexible frame.
fn default_min_free_frames() -> u64 {
    64
}

impl Default for SwapConfig {
    fn default() -> Self {
        SwapConfig {
            enabled: false,
            page_out_cycles: default_page_out_cycles(),
            page_in_cycles: default_page_in_cycles(),
            min_free_frames: default_min_free_frames(),
        }
    }
}

impl SwapConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.enabled && self.min_free_frames == 0 {
            return Err(Error::config(
                format!("{path}.min_free_frames"),
                "must be at least 1 with swapping on (the faulting page needs a frame)".to_string(),
            ));
        }
        if self.min_free_frames > 1 << 20 {
            return Err(Error::config(
                format!("{path}.min_free_frames"),
                format!("must be at most 2^20 (4 GiB), got {}", self.min_free_frames),
            ));
        }
        Ok(())
    }
}

/// `os.swap`: what went to the backing store and back (present when swapping is on).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SwapStats {
    /// Pages written to the backing store (of any size).
    pub outs: u64,
    /// Pages read back by major faults.
    pub ins: u64,
    /// Of `outs`: pages the frame policy evicted to nowhere (a full RestSeg set of
    /// restrictive-only Utopia); the rest were reclaimed because memory was full.
    pub policy_outs: u64,
    /// Cycles the faulting cores waited for page-outs and for page-ins (part of
    /// `os.faults.cycles`).
    pub out_cycles: u64,
    pub in_cycles: u64,
    /// Pages in the backing store at the end of the run (of any size).
    pub swapped: u64,
}
