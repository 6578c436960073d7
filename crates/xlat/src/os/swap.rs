//! Swapping: a backing store (an SSD) for pages that cannot stay in memory.
//!
//! A page is paged out when the frame policy cannot place a page without it:
//!
//! * **Memory is full** (the buddy allocator, i.e. flexible memory): before every fault the
//!   OS reclaims until at least `min_free_frames` frames are free, as Linux's direct reclaim
//!   keeps free memory above its `min` watermark, so that the faulting page and the page-table
//!   frames its mapping needs always find a frame. The victim is, by `policy`, the page that
//!   has been resident longest (`fifo`, the default: FIFO over the pages mapped to frames of
//!   the buddy allocator, in the order they were mapped, using no access information), or the
//!   least recently used (`lru`: from the low watermark up to the high one, as kswapd).
//! * **Horizon LRU** (`horizon`, Mosaic's pool only): the iceberg allocator evicts a ghost
//!   page, or a live one when all the candidates are live (Mosaic §2.4).
//!
//! With `lru` and `horizon` every reference stamps its page with the OS's access clock (a
//! count of references): the precise timestamps Horizon LRU assumes (§3.2 notes the Linux
//! prototype can only emulate them by scanning accessed bits).
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

use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::{Error, Result};

/// `[os.swap]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// Which resident pages go out (`fifo`, `lru`, `horizon`; see [`SwapPolicy`]).
    #[serde(default, skip_serializing_if = "SwapPolicy::is_fifo")]
    pub policy: SwapPolicy,
    /// `lru`: reclaim starts when fewer than this fraction of memory's frames are free
    /// (kswapd's `low` watermark)...
    #[serde(
        default = "default_low_watermark",
        skip_serializing_if = "is_default_low"
    )]
    pub low_watermark: f64,
    /// ... and pages out least-recently-used pages until this fraction is free (`high`).
    #[serde(
        default = "default_high_watermark",
        skip_serializing_if = "is_default_high"
    )]
    pub high_watermark: f64,
}

/// `os.swap.policy`: which pages go to the backing store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapPolicy {
    /// Before each fault, page out the longest-resident pages of the buddy allocator's
    /// memory until `min_free_frames` are free (no access information used).
    #[default]
    Fifo,
    /// A Linux-like global LRU: every page's last access time is kept; when free frames fall
    /// below the low watermark, the least-recently-used pages of the buddy allocator's memory
    /// go out until the high watermark is free.
    Lru,
    /// Horizon LRU (Mosaic §2.4) over the mosaic pool: pages last accessed before the
    /// horizon are ghosts whose frames the iceberg allocator reuses; an allocation whose
    /// candidate frames are all live evicts the least recently used of them and raises the
    /// horizon to its access time. Memory outside the pool is reclaimed as by `fifo`.
    Horizon,
}

impl SwapPolicy {
    fn is_fifo(&self) -> bool {
        *self == SwapPolicy::Fifo
    }

    /// Whether the OS keeps each page's last access time (every reference stamps it).
    pub fn tracks_access(&self) -> bool {
        *self != SwapPolicy::Fifo
    }
}

/// The paper (Mosaic §4.2) sees Linux start swapping its 4 GiB machine once 99.2 % of memory
/// is in use, because every zone keeps a reserve: free memory below 0.8 % wakes reclaim.
fn default_low_watermark() -> f64 {
    0.008
}

/// Linux's kswapd reclaims from `low` up to `high`, which sits `watermark_scale_factor`
/// (10 ‱ = 0.1 % of memory, its default) above `low`.
fn default_high_watermark() -> f64 {
    0.009
}

fn is_default_low(x: &f64) -> bool {
    *x == default_low_watermark()
}

fn is_default_high(x: &f64) -> bool {
    *x == default_high_watermark()
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
            policy: SwapPolicy::Fifo,
            low_watermark: default_low_watermark(),
            high_watermark: default_high_watermark(),
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
        for (key, v) in [
            ("low_watermark", self.low_watermark),
            ("high_watermark", self.high_watermark),
        ] {
            crate::config::fraction(format!("{path}.{key}"), "memory's frames kept free", v)?;
        }
        if self.high_watermark < self.low_watermark {
            return Err(Error::config(
                format!("{path}.high_watermark"),
                format!(
                    "must be at least {path}.low_watermark ({}): reclaim pages out from the \
                     low watermark up to the high one, got {}",
                    self.low_watermark, self.high_watermark
                ),
            ));
        }
        Ok(())
    }

    /// `lru`: free frames below which reclaim starts, and up to which it pages out, in a
    /// memory of `frames` frames; never below `min_free_frames` (the faulting page and its
    /// page-table pages need frames however small memory is).
    pub fn watermarks(&self, frames: u64) -> (u64, u64) {
        let at = |f: f64| ((f * frames as f64).ceil() as u64).max(self.min_free_frames);
        (at(self.low_watermark), at(self.high_watermark))
    }
}

/// `lru`: the resident pages of the buddy allocator's memory, least recently used first. Each
/// entry holds the access time the page had when it was queued; a reference does not touch
/// the queue (it only stamps the frame). Reclaim pops the oldest entry and, if the page was
/// touched since, queues it again at its newer time: what is left on top is the page whose
/// true last access is the oldest of all, since every other entry's true time is at least
/// its queued one. Ties go to the lower pid, then the lower VPN.
#[derive(Default)]
pub struct LruQueue {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u16, u64, PageSize)>>,
}

impl LruQueue {
    pub fn push(&mut self, stamp: u64, pid: u16, base: Vpn, size: PageSize) {
        self.heap
            .push(std::cmp::Reverse((stamp, pid, base.0, size)));
    }

    /// The entry with the oldest queued time: `(time, pid, base, size)`.
    pub fn pop(&mut self) -> Option<(u64, u16, Vpn, PageSize)> {
        self.heap
            .pop()
            .map(|std::cmp::Reverse((t, pid, vpn, size))| (t, pid, Vpn(vpn), size))
    }
}

/// A resident page reclaim has taken off its queue to page out: `queued` is the access time
/// it was queued with (`lru`; 0 in the FIFO).
#[derive(Clone, Copy, Debug)]
pub struct Victim {
    pub queued: u64,
    pub pid: u16,
    pub base: Vpn,
    pub size: PageSize,
    pub pfn: Pfn,
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
    /// `horizon`: of `policy_outs`, ghost pages evicted to reuse their frames (the capacity
    /// evictions of the global LRU Horizon LRU simulates); the rest of `policy_outs` were
    /// live pages evicted because all their candidate frames were live (conflicts).
    #[serde(skip_serializing_if = "is_zero")]
    pub ghost_outs: u64,
    /// Reclaims of one part of memory that a frame policy confines pages to and that filled
    /// while the rest had room (a SPARTA partition; Linux: a NUMA node): each paged out that
    /// part's pages until its share of the free target was free.
    #[serde(skip_serializing_if = "is_zero")]
    pub region_reclaims: u64,
    /// `horizon`: references to ghost pages, which made them live again without I/O.
    #[serde(skip_serializing_if = "is_zero")]
    pub revivals: u64,
    /// `lru`: the fraction of memory's frames in use when reclaim first paged out (absent
    /// before it does; the paper sees Linux start at 99.2 %).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_out_utilisation: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
