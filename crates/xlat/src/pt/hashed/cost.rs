//! The cost of contiguity: cycles the OS spends to allocate and zero one contiguous block.
//!
//! ME-HPT §III measured 4 KiB, 8 KiB, 1 MiB, 8 MiB and 64 MiB at 0.7 FMFI on a 2 GHz server:
//! 4K, 5K, 750K, 13M and 120M cycles. Between measured sizes the cost is interpolated
//! linearly in log(bytes)-log(cycles) space (a power law per segment); outside them the
//! nearest segment's power law is extended. Whether the block exists at all is the buddy
//! allocator's answer, not this model's.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// One measured point: a block of `bytes` costs `cycles` to allocate and zero.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostPoint {
    pub bytes: u64,
    pub cycles: u64,
}

/// ME-HPT §III's measurements at 0.7 FMFI.
pub fn paper_points() -> Vec<CostPoint> {
    [
        (4 << 10, 4_000),
        (8 << 10, 5_000),
        (1 << 20, 750_000),
        (8 << 20, 13_000_000),
        (64 << 20, 120_000_000),
    ]
    .into_iter()
    .map(|(bytes, cycles)| CostPoint { bytes, cycles })
    .collect()
}

/// Validate a cost table: at least two points, sizes strictly increasing, cycles positive.
pub fn validate(points: &[CostPoint], path: &str) -> Result<()> {
    if points.len() < 2 {
        return Err(Error::config(
            path,
            "needs at least two {bytes, cycles} points",
        ));
    }
    for (i, p) in points.iter().enumerate() {
        if p.bytes == 0 || p.cycles == 0 {
            return Err(Error::config(
                format!("{path}[{i}]"),
                "bytes and cycles must be positive",
            ));
        }
        if i > 0 && p.bytes <= points[i - 1].bytes {
            return Err(Error::config(
                format!("{path}[{i}].bytes"),
                "sizes must be strictly increasing",
            ));
        }
    }
    Ok(())
}

/// Allocation cost as a function of block size.
#[derive(Clone, Debug)]
pub struct CostModel {
    /// (ln bytes, ln cycles), sorted by bytes.
    log_points: Vec<(f64, f64)>,
}

impl CostModel {
    /// A model over validated points (see [`validate`]).
    pub fn new(points: &[CostPoint]) -> CostModel {
        CostModel {
            log_points: points
                .iter()
                .map(|p| ((p.bytes as f64).ln(), (p.cycles as f64).ln()))
                .collect(),
        }
    }

    /// Cycles to allocate and zero a contiguous block of `bytes`.
    pub fn cycles(&self, bytes: u64) -> u64 {
        let x = (bytes.max(1) as f64).ln();
        let p = &self.log_points;
        // The segment containing x, or the end segment nearest to it.
        let i = p
            .windows(2)
            .position(|w| x <= w[1].0)
            .unwrap_or(p.len() - 2);
        let (x0, y0) = p[i];
        let (x1, y1) = p[i + 1];
        let y = y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        y.exp().round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_the_measurements_and_interpolates_log_log() {
        let m = CostModel::new(&paper_points());
        for p in paper_points() {
            assert_eq!(m.cycles(p.bytes), p.cycles);
        }
        // Halfway (in log size) between 1 MiB and 8 MiB is the geometric mean of the costs.
        let mid = ((1u64 << 20) as f64 * (8u64 << 20) as f64).sqrt() as u64;
        let expect = (750_000f64 * 13_000_000f64).sqrt();
        assert!((m.cycles(mid) as f64 / expect - 1.0).abs() < 1e-3);
        // Extrapolation keeps the end segments' power laws.
        assert!(m.cycles(128 << 20) > 120_000_000);
        assert!(m.cycles(2048) < 4_000);
    }

    #[test]
    fn rejects_bad_tables() {
        let one = vec![CostPoint {
            bytes: 4096,
            cycles: 1,
        }];
        assert!(validate(&one, "hpt.alloc_cost").is_err());
        let mut bad = paper_points();
        bad[2].bytes = 4096;
        let e = validate(&bad, "hpt.alloc_cost").unwrap_err().to_string();
        assert!(e.contains("hpt.alloc_cost[2].bytes"), "{e}");
    }
}
