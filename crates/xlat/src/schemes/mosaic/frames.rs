//! The Mosaic page allocator (§2.3, §3.2): the OS's frame policy. At boot it takes the pool
//! out of the buddy allocator, as the Linux prototype reserves its 4 GiB at boot; every 4 KiB
//! page then takes its frame by iceberg insertion of (ASID, VPN). Page tables and anything
//! else the OS allocates stay with the buddy allocator in the memory outside the pool.
//!
//! Only 4 KiB pages are placed (a mosaic page is made of base pages): the OS's huge-page
//! attempts get no frame and fall back to 4 KiB. An associativity conflict (every candidate
//! slot taken) gets no frame either; without swapping that ends the run with an
//! out-of-memory error, after the conflict is counted. With Horizon LRU
//! (`os.swap.policy = "horizon"`) an allocation always gets a frame: a ghost's, or on a
//! conflict the least recently used candidate's, whose page the OS then pages out.

use super::iceberg::{IcebergCounters, IcebergTable, UtilisationSeries};
use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::{Error, Result};
use crate::mem::physmem::{BuddyAllocator, MAX_ORDER};
use crate::os::{FramePolicy, PageOut};
use serde::Serialize;

pub struct IcebergFrames {
    table: IcebergTable,
    /// The config key of the pool's size, for errors.
    key: &'static str,
}

/// The `os.frames` stats subtree.
#[derive(Serialize)]
struct FramesStats<'a> {
    /// Frames of the pool, and in use now.
    pool_frames: u64,
    used_frames: u64,
    utilisation: f64,
    /// Utilisation when the first associativity conflict happened (null: none yet).
    first_conflict_utilisation: Option<f64>,
    /// Frames in use as allocation went on: `[allocations, used]` pairs.
    utilisation_series: &'a UtilisationSeries,
    /// Horizon LRU: mean utilisation from the first conflict to the end of the run over the
    /// access clock (ghosts count as in use: Table 3's steady state), the horizon, and ghost
    /// pages resident now.
    #[serde(skip_serializing_if = "Option::is_none")]
    steady_state_utilisation: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    horizon: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ghost_frames: Option<u64>,
    #[serde(flatten)]
    counters: &'a IcebergCounters,
}

impl IcebergFrames {
    pub fn new(table: IcebergTable, key: &'static str) -> IcebergFrames {
        IcebergFrames { table, key }
    }

    pub fn table(&self) -> &IcebergTable {
        &self.table
    }
}

/// `[start, end)` as the largest aligned buddy blocks that tile it.
pub fn aligned_blocks(start: u64, end: u64) -> Vec<(Pfn, u32)> {
    let mut blocks = Vec::new();
    let mut at = start;
    while at < end {
        let align = if at == 0 {
            MAX_ORDER
        } else {
            at.trailing_zeros()
        };
        let order = align.min((end - at).ilog2()).min(MAX_ORDER);
        blocks.push((Pfn(at), order));
        at += 1 << order;
    }
    blocks
}

impl FramePolicy for IcebergFrames {
    fn reserve(&mut self, buddy: &mut BuddyAllocator) -> Result<()> {
        let map = &self.table.map;
        let (start, end) = (map.base().0, map.base().0 + map.frames());
        for (pfn, order) in aligned_blocks(start, end) {
            if !buddy.alloc_at(pfn, order) {
                return Err(Error::config(
                    self.key,
                    format!(
                        "the pool's block at frame {pfn:?} (order {order}) is not free at boot"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn frame(&mut self, _: &mut BuddyAllocator, pid: u16, vpn: Vpn, size: PageSize) -> Option<Pfn> {
        if size != PageSize::Size4K {
            return None;
        }
        self.table.insert(pid, vpn.0).map(|(pfn, _)| pfn)
    }

    /// The hash scatters consecutive pages over the pool.
    fn places_each_page(&self) -> bool {
        true
    }

    fn free(&mut self, buddy: &mut BuddyAllocator, pfn: Pfn, size: PageSize) {
        if self.table.map.contains(pfn) {
            let freed = self.table.remove(pfn);
            debug_assert!(freed, "freeing a pool frame not in use: {pfn:?}");
        } else {
            buddy.free(pfn, size.order());
        }
    }

    fn refusal(&self) -> Option<String> {
        let t = &self.table;
        let g = t.map.geometry;
        t.first_conflict().map(|first| {
            format!(
                "associativity conflict: all {} frames the page may take are in use, with the \
                 pool {:.2}% full ({} conflicts so far, the first at {:.2}%); shrink the \
                 footprint, enlarge {}, or swap (os.swap.enabled = true with \
                 os.swap.policy = \"horizon\")",
                g.associativity(),
                100.0 * t.utilisation(),
                t.counters.conflicts,
                100.0 * first,
                self.key
            )
        })
    }

    fn enable_horizon(&mut self) -> bool {
        self.table.enable_horizon();
        true
    }

    #[inline]
    fn touched(&mut self, pfn: Pfn, now: u64) -> bool {
        self.table.touch(pfn, now)
    }

    fn take_page_outs(&mut self) -> Vec<PageOut> {
        self.table
            .take_evicted()
            .into_iter()
            .map(|(pid, vpn, ghost)| PageOut {
                pid,
                vpn: Vpn(vpn),
                size: PageSize::Size4K,
                ghost,
            })
            .collect()
    }

    fn owns(&self, pfn: Pfn) -> bool {
        self.table.map.contains(pfn)
    }

    fn used_slots(&self) -> Vec<u64> {
        vec![self.table.used_frames()]
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let t = &self.table;
        let stats = FramesStats {
            pool_frames: t.map.frames(),
            used_frames: t.used_frames(),
            utilisation: t.utilisation(),
            first_conflict_utilisation: t.first_conflict(),
            utilisation_series: t.series(),
            steady_state_utilisation: t.steady_state(),
            horizon: t.horizon(),
            ghost_frames: t.horizon().map(|_| t.ghost_frames()),
            counters: &t.counters,
        };
        Some(serde_json::to_value(stats).expect("stats always serialise"))
    }

    /// Counters restart; the pool's contents, its utilisation series and the first conflict
    /// are the state of memory and stay.
    fn reset_stats(&mut self) {
        self.table.counters = IcebergCounters::default();
    }
}
