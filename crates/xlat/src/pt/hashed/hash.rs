//! The per-way hash functions. Each way of each table generation has its own function, as
//! cuckoo hashing needs (ME-HPT §II-B). Two families, chosen by `hash` in the config:
//!
//! * `crc`: CRC-32 (the hardware hash of ME-HPT Table III, 2 cycles). CRC is linear over
//!   GF(2), so CRCs that differ only in their initial value collide on exactly the same key
//!   pairs; distinct functions therefore use distinct generator polynomials (from the `crc`
//!   crate's catalogue), and the seed only relabels slots.
//! * `city`: CityHash64 with a per-function seed (Utopia Table 1's ECH uses CITY).
//!
//! The key of a cluster in a way of `2^bits` lines is the hash masked to its low `bits` bits,
//! so an in-place resize that keeps the function and adds or drops the top bit (§IV-C) is a
//! change of mask only.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HashKind {
    Crc,
    City,
}

/// Distinct CRC-32 generator polynomials (dense ones; the sparse XFER/CD-ROM polynomials are
/// left out because their low output bits mix poorly).
static CRCS: [crc::Crc<u32>; 6] = [
    crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC),
    crc::Crc::<u32>::new(&crc::CRC_32_ISCSI),
    crc::Crc::<u32>::new(&crc::CRC_32_AUTOSAR),
    crc::Crc::<u32>::new(&crc::CRC_32_BASE91_D),
    crc::Crc::<u32>::new(&crc::CRC_32_AIXM),
    crc::Crc::<u32>::new(&crc::CRC_32_MEF),
];

/// Number of distinct CRC functions, hence the most ways a `crc` table can have.
pub const CRC_FUNCTIONS: usize = CRCS.len();

/// One hash function: a family and which member of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WayHash {
    kind: HashKind,
    /// CRC: polynomial index; City: unused.
    function: usize,
    seed: u64,
}

impl WayHash {
    /// Function number `function` of the family (`function` distinguishes ways and table
    /// generations; CRC polynomials repeat every [`CRC_FUNCTIONS`]).
    pub fn new(kind: HashKind, function: usize, seed: u64) -> WayHash {
        WayHash {
            kind,
            function: function % CRC_FUNCTIONS,
            seed: seed ^ (function as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        }
    }

    /// The full hash of a cluster number.
    #[inline]
    pub fn hash(&self, cluster: u64) -> u64 {
        let bytes = cluster.to_le_bytes();
        match self.kind {
            HashKind::Crc => (CRCS[self.function].checksum(&bytes) ^ self.seed as u32) as u64,
            HashKind::City => cityhasher::hash_with_seed::<u64>(bytes, self.seed),
        }
    }

    /// The key of `cluster` in a way of `2^bits` lines.
    #[inline]
    pub fn key(&self, cluster: u64, bits: u32) -> u64 {
        self.hash(cluster) & ((1u64 << bits) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_and_functions_differ() {
        for kind in [HashKind::Crc, HashKind::City] {
            let a = WayHash::new(kind, 0, 7);
            let b = WayHash::new(kind, 1, 7);
            assert!((0..1000).all(|c| a.key(c, 7) < 128));
            // In-place resizing: the key with one more bit extends the key with fewer.
            assert!((0..1000).all(|c| a.key(c, 8) & 127 == a.key(c, 7)));
            let same = (0..1000u64)
                .filter(|&c| a.key(c, 10) == b.key(c, 10))
                .count();
            assert!(same < 20, "{kind:?}: two ways agree on {same} of 1000 keys");
            // Different functions do not collide on the same pairs (CRC linearity trap).
            let pairs_a: Vec<(u64, u64)> = (0..300u64)
                .flat_map(|x| (x + 1..300).map(move |y| (x, y)))
                .filter(|&(x, y)| a.key(x, 6) == a.key(y, 6))
                .collect();
            let shared = pairs_a
                .iter()
                .filter(|&&(x, y)| b.key(x, 6) == b.key(y, 6))
                .count();
            assert!(
                shared * 10 < pairs_a.len(),
                "{kind:?}: {shared} of {} colliding pairs collide again",
                pairs_a.len()
            );
        }
    }
}
