//! `mosaic`: Mosaic pages (Gosakan et al., ASPLOS'23; docs/schemes/mosaic.md).
//!
//! * **Memory** ([`iceberg`], [`frames`]): a pool of physical memory managed as an iceberg
//!   hash table; each 4 KiB page takes one of `h = f + d·b` frames its (ASID, VPN) hashes to
//!   ([`tabulation`]: the tabulation hash with probing of Fig 4), so its frame is named by a
//!   compressed physical frame number (CPFN) of about log2(h) bits. The rest of memory stays
//!   with the buddy allocator (page tables, other allocations).

pub mod frames;
pub mod iceberg;
pub mod tabulation;
#[cfg(test)]
mod tests;

use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::rng::{self, Rng};
use iceberg::{Geometry, IcebergMap, IcebergTable};
use serde::{Deserialize, Serialize};

/// Share of physical memory left to the buddy allocator when `pool_bytes = 0`: page tables
/// of 4 KiB mappings take 1/512 of what they map, and fragmentation pins land here too.
pub const BUDDY_SHARE: u64 = 32;

/// `[schemes.mosaic]`: the iceberg pool.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MosaicConfig {
    /// f: frames of a bucket's front yard (§2.3: 56).
    pub front_yard_frames: u32,
    /// b: frames of a bucket's backyard (§2.3: 8).
    pub backyard_frames: u32,
    /// d: backyard buckets a page may choose from (§2.3: 6).
    pub backyard_choices: u32,
    /// Bytes of physical memory managed as the iceberg pool, at the top of memory, in whole
    /// buckets of `f + b` frames; the rest stays with the buddy allocator. 0: all of memory
    /// but 1/32 (room for page tables).
    #[serde(default)]
    pub pool_bytes: u64,
}

impl Default for MosaicConfig {
    /// §2.3 and §3.1: f = 56, b = 8, d = 6 (h = 104, 7-bit CPFNs).
    fn default() -> Self {
        MosaicConfig {
            front_yard_frames: 56,
            backyard_frames: 8,
            backyard_choices: 6,
            pool_bytes: 0,
        }
    }
}

impl MosaicConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        self.geometry(path)?;
        if !self.pool_bytes.is_multiple_of(4096) {
            return Err(Error::config(
                format!("{path}.pool_bytes"),
                format!("must be a multiple of 4096, got {}", self.pool_bytes),
            ));
        }
        Ok(())
    }

    /// The CPFN layout of f, b, d, or an error naming the key that made it too wide.
    pub fn geometry(&self, path: &str) -> Result<Geometry> {
        Geometry::new(
            self.front_yard_frames,
            self.backyard_frames,
            self.backyard_choices,
        )
        .map_err(|(key, msg)| Error::config(format!("{path}.{key}"), msg))
    }

    /// Buckets of the pool in `physmem_bytes` of memory.
    pub fn buckets(&self, physmem_bytes: u64) -> Result<u64> {
        let g = self.geometry("schemes.mosaic")?;
        let frames = physmem_bytes / 4096;
        let pool = match self.pool_bytes {
            0 => frames - frames / BUDDY_SHARE,
            bytes => bytes / 4096,
        };
        let key = "schemes.mosaic.pool_bytes";
        if pool >= frames {
            return Err(Error::config(
                key,
                format!(
                    "{} bytes leave nothing of os.physmem.bytes ({physmem_bytes}) to the buddy \
                     allocator, which page tables need",
                    self.pool_bytes
                ),
            ));
        }
        let buckets = pool / g.bucket_frames();
        if buckets < u64::from(g.choices) {
            return Err(Error::config(
                key,
                format!(
                    "the pool holds {buckets} buckets of {} frames; at least d = {} are needed",
                    g.bucket_frames(),
                    g.choices
                ),
            ));
        }
        Ok(buckets)
    }

    /// The iceberg map of a system of `physmem_bytes` run with `seed`: the pool at the top
    /// of memory, its hash drawn from the seed. Every part that decodes CPFNs builds the same
    /// one.
    pub fn map(&self, physmem_bytes: u64, seed: u64) -> Result<IcebergMap> {
        let g = self.geometry("schemes.mosaic")?;
        let buckets = self.buckets(physmem_bytes)?;
        let base = physmem_bytes / 4096 - buckets * g.bucket_frames();
        let mut rng = Rng::new(seed, rng::stream::MOSAIC_HASH);
        Ok(IcebergMap::new(
            g,
            crate::addr::Pfn(base),
            buckets,
            &mut rng,
        ))
    }

    /// The OS's occupancy of the pool: a bit per frame and two loads per bucket, some 1/50 of
    /// what `os.physmem`'s own frame state takes for the same memory. A pool of all memory
    /// (`pool_bytes = 0`) is bounded by that check; a given size is counted here.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        let Ok(g) = self.geometry(path) else { return };
        uses.once(
            format!("{path}.pool_bytes"),
            self.pool_bytes / 4096 / g.bucket_frames(),
            "buckets",
            IcebergTable::host_bytes_per_bucket(&g),
        );
    }
}
