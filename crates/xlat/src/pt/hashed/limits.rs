//! The largest way an ME-HPT can build with each chunk size (ME-HPT Table II), measured on a
//! real table rather than computed: one way of a 4 KiB-page table with the given config is
//! upsized again and again (each upsize allocates real chunks from a buddy allocator and real
//! L2P entries) until the table itself decides that the next upsize needs a larger chunk
//! size, because the L2P subtable (with stealing, its own 32 entries plus the unused 1 GiB
//! subtable's, §V-A) has no room for twice as many chunks. The way size reached with each
//! chunk size is that chunk size's maximum way.
//!
//! Table memory lives in host memory (`PtStore`), so a way is grown only up to `max_bytes`;
//! chunk sizes whose limit lies beyond are reported as not reached.

use super::config::{HashedConfig, HptKind};
use super::cost::CostModel;
use super::elastic::ElasticTable;
use super::l2p::L2pTable;
use super::table::params_of;
use super::way::{Env, ProcAcct};
use crate::addr::PageSize;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::pt::store::PtStore;
use crate::pt::PtContext;
use crate::rng::Rng;
use serde::Serialize;

/// What growing one way showed about one chunk size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WayLimit {
    pub chunk_bytes: u64,
    /// Largest way built with this chunk size, if the way was grown until the table moved
    /// on to a larger chunk size (or could grow no further); `None` if the limit lies beyond
    /// `max_bytes`, or the way never used this chunk size.
    pub max_way_bytes: Option<u64>,
    /// L2P entries the way used at that size (`max_way_bytes / chunk_bytes`).
    pub l2p_entries: Option<u64>,
    /// Why the growth stopped with this chunk size: "next chunk size", "cannot grow",
    /// or "beyond max_bytes".
    pub ended_by: &'static str,
}

/// Grow way 0 of an ME-HPT 4 KiB table under `cfg` up to `max_bytes` and report, for each
/// of `cfg.mehpt.chunk_sizes`, the largest way it built with that chunk size.
pub fn way_limits(cfg: &HashedConfig, max_bytes: u64) -> Result<Vec<WayLimit>> {
    cfg.validate("schemes.hashed.table")?;
    let sizes = cfg.mehpt.chunk_sizes.clone();
    // Room for the grown way, its predecessor during a chunk-size change and the other ways.
    let frames = (4 * max_bytes.max(1 << 20)).next_power_of_two() / 4096;
    let mut buddy = BuddyAllocator::new(frames);
    let mut store = PtStore::new();
    let mut l2p = L2pTable::new(cfg.ways, cfg.mehpt.l2p_entries, cfg.mehpt.stealing);
    let cost = CostModel::new(&cfg.alloc_cost);
    let mut acct = ProcAcct::default();
    let mut ctx = PtContext {
        store: &mut store,
        buddy: &mut buddy,
    };
    let mut env = Env {
        ctx: &mut ctx,
        l2p: &mut l2p,
        cost: &cost,
        acct: &mut acct,
    };
    let mut params = params_of(cfg, HptKind::Mehpt, 1);
    params.policy.chunk_sizes = Some(sizes.clone());
    params.policy.per_way = true;
    let mut table = ElasticTable::new(&mut env, params, PageSize::Size4K, Rng::new(1, 1))?;
    let mut reached: Vec<Option<u64>> = vec![None; sizes.len()];
    let mut ended: Vec<&'static str> = vec!["never used"; sizes.len()];
    let index = |c: u64| {
        sizes
            .iter()
            .position(|&s| s == c)
            .expect("a configured size")
    };
    loop {
        let chunk = table.chunk_bytes(0).expect("ME-HPT ways are chunked");
        let way = table.ways()[0].bytes();
        let i = index(chunk);
        reached[i] = Some(reached[i].unwrap_or(0).max(way));
        let next = match table.next_upsize_chunk(env.l2p, 0) {
            Ok(next) => next,
            Err(Error::OutOfMemory(_)) => {
                ended[i] = "cannot grow";
                break;
            }
            Err(e) => return Err(e),
        };
        if next != chunk {
            ended[i] = "next chunk size";
        }
        if 2 * way > max_bytes {
            if next == chunk {
                ended[i] = "beyond max_bytes";
            } else {
                // The next chunk size is used but not grown to its limit.
                let j = index(next);
                ended[j] = "beyond max_bytes";
            }
            break;
        }
        table.upsize_way_now(&mut env, 0)?;
    }
    Ok(sizes
        .iter()
        .enumerate()
        .map(|(i, &chunk_bytes)| {
            let limit = matches!(ended[i], "next chunk size" | "cannot grow");
            let max_way_bytes = if limit { reached[i] } else { None };
            WayLimit {
                chunk_bytes,
                max_way_bytes,
                l2p_entries: max_way_bytes.map(|b| b / chunk_bytes),
                ended_by: ended[i],
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(cfg: &HashedConfig, max: u64) -> Vec<(u64, Option<u64>, &'static str)> {
        way_limits(cfg, max)
            .unwrap()
            .into_iter()
            .map(|l| (l.chunk_bytes, l.max_way_bytes, l.ended_by))
            .collect()
    }

    /// Table II's maximum way sizes, from real tables grown until they change chunk size: with
    /// stealing a way holds 64 chunks (32 entries of its own and 32 of the 1 GiB subtable), so
    /// 512 KiB of 8 KiB chunks and 64 MiB of 1 MiB chunks, exactly the formula's
    /// `2 x l2p_entries x chunk`. The chunk sizes Table III marks unused (8 MiB, 64 MiB) would
    /// need 512 MiB and 4 GiB of table memory in the host and are not grown.
    #[test]
    fn real_ways_stop_at_table_ii_sizes() {
        let cfg = HashedConfig::default();
        assert_eq!(
            limits(&cfg, 64 << 20),
            vec![
                (8 << 10, Some(512 << 10), "next chunk size"),
                (1 << 20, Some(64 << 20), "next chunk size"),
                (8 << 20, None, "beyond max_bytes"),
                (64 << 20, None, "never used"),
            ]
        );
        for (l2p, stealing) in [(32, false), (4, true), (4, false)] {
            let mut cfg = HashedConfig::default();
            cfg.mehpt.l2p_entries = l2p;
            cfg.mehpt.stealing = stealing;
            let per_way = (l2p * if stealing { 2 } else { 1 }) as u64;
            let got = limits(&cfg, 64 << 20);
            for (chunk, way, _) in got.into_iter().take(2) {
                assert_eq!(way, Some(per_way * chunk), "l2p {l2p} stealing {stealing}");
            }
        }
    }

    /// With one chunk size there is no larger one to move to: the way grows until the L2P
    /// subtable is full and the table refuses.
    #[test]
    fn a_single_chunk_size_ends_when_the_l2p_is_full() {
        let mut cfg = HashedConfig::default();
        cfg.mehpt.chunk_sizes = vec![8 << 10];
        assert_eq!(
            limits(&cfg, 64 << 20),
            vec![(8 << 10, Some(512 << 10), "cannot grow")]
        );
    }
}
