//! Tabulation hashing with probing (Mosaic §3.1, Fig 4): the hash the TLB computes to turn a
//! CPFN back into a frame, and the OS computes to choose the buckets a page may take.
//!
//! The key is the (ASID, VPN) pair as eight bytes. Each byte position has its own table of
//! 256 random words; hash 0 is the XOR of `T_j[byte_j]` over the positions. Further hash
//! functions reuse the same tables by probing: hash `i` reads entry `byte_j + i` (wrapping),
//! so the hardware needs one set of tables however many backyard choices there are, and
//! computes all of them in parallel with the TLB lookup.

use crate::rng::Rng;

/// Bytes of a key: 2 of ASID, 6 of VPN (a 57-bit virtual address has a 45-bit VPN).
const KEY_BYTES: usize = 8;

/// The tables of one tabulation hash family, filled from a seeded generator.
#[derive(Clone)]
pub struct TabulationHash {
    tables: Box<[[u64; 256]; KEY_BYTES]>,
}

impl TabulationHash {
    /// Host bytes of the tables (config host-memory checks).
    pub const BYTES: u64 = (KEY_BYTES * 256 * 8) as u64;

    /// Tables drawn from `rng`: the same generator state gives the same hash.
    pub fn new(rng: &mut Rng) -> TabulationHash {
        let mut tables = Box::new([[0u64; 256]; KEY_BYTES]);
        for table in tables.iter_mut() {
            for word in table.iter_mut() {
                *word = rng.next_u64();
            }
        }
        TabulationHash { tables }
    }

    /// The key of page `vpn` of address space `asid`.
    #[inline(always)]
    pub fn key(asid: u16, vpn: u64) -> [u8; KEY_BYTES] {
        (((asid as u64) << 48) | (vpn & ((1 << 48) - 1))).to_le_bytes()
    }

    /// Hash function `i` (0 = the front yard's, 1..=d the backyard choices') of `key`.
    #[inline(always)]
    pub fn hash(&self, key: &[u8; KEY_BYTES], i: u8) -> u64 {
        let mut h = 0;
        for (table, &byte) in self.tables.iter().zip(key) {
            h ^= table[byte.wrapping_add(i) as usize];
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probing_reads_the_next_entry_of_every_table() {
        let h = TabulationHash::new(&mut Rng::new(7, 99));
        let key = TabulationHash::key(3, 0x12_3456_789a);
        // Hash i of a key is hash 0 of the key with every byte advanced by i.
        for i in 1..=6u8 {
            let shifted = key.map(|b| b.wrapping_add(i));
            assert_eq!(h.hash(&key, i), h.hash(&shifted, 0));
        }
        // And it is the XOR of one entry per table, as Fig 4 draws it.
        let want = (0..8).fold(0, |acc, j| {
            acc ^ h.tables[j][key[j].wrapping_add(2) as usize]
        });
        assert_eq!(h.hash(&key, 2), want);
    }

    #[test]
    fn seeded_and_sensitive_to_every_byte() {
        let a = TabulationHash::new(&mut Rng::new(1, 5));
        let b = TabulationHash::new(&mut Rng::new(1, 5));
        let c = TabulationHash::new(&mut Rng::new(2, 5));
        let key = TabulationHash::key(1, 0xabcdef);
        assert_eq!(a.hash(&key, 0), b.hash(&key, 0));
        assert_ne!(a.hash(&key, 0), c.hash(&key, 0));
        // The ASID is part of the key: two address spaces' page 0xabcdef hash apart.
        assert_ne!(
            a.hash(&key, 0),
            a.hash(&TabulationHash::key(2, 0xabcdef), 0)
        );
    }
}
