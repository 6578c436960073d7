//! Sparse simulated physical memory for translation metadata.
//!
//! Only frames that hold page-table (or other translation) structures have contents; data pages
//! have none, since no scheme's behaviour depends on data values. Each stored frame is 512
//! little-endian 64-bit words, exactly as an x86-64 page-table page.

use crate::addr::{Pfn, PhysAddr};
use rustc_hash::FxHashMap;

pub const WORDS_PER_FRAME: usize = 512;

#[derive(Default)]
pub struct PtStore {
    frames: FxHashMap<u64, Box<[u64; WORDS_PER_FRAME]>>,
}

impl PtStore {
    pub fn new() -> PtStore {
        PtStore::default()
    }

    /// Give `pfn` zeroed contents (a freshly allocated table page).
    pub fn zero_frame(&mut self, pfn: Pfn) {
        self.frames.insert(pfn.0, Box::new([0; WORDS_PER_FRAME]));
    }

    pub fn release_frame(&mut self, pfn: Pfn) {
        self.frames.remove(&pfn.0);
    }

    /// Read the 8-byte word at `addr` (must be 8-byte aligned). Frames never written read as 0,
    /// i.e. a not-present entry.
    #[inline]
    pub fn read(&self, addr: PhysAddr) -> u64 {
        debug_assert_eq!(addr.0 % 8, 0);
        self.frames
            .get(&addr.pfn().0)
            .map_or(0, |f| f[((addr.0 & 0xfff) >> 3) as usize])
    }

    /// Read the eight words of the 64-byte line at `addr` (64-byte aligned) with one frame
    /// lookup: how hashed page-table lines are fetched on every walk.
    #[inline]
    pub fn read_line(&self, addr: PhysAddr) -> [u64; 8] {
        debug_assert_eq!(addr.0 % 64, 0);
        self.frames.get(&addr.pfn().0).map_or([0; 8], |f| {
            let at = ((addr.0 & 0xfff) >> 3) as usize;
            f[at..at + 8]
                .try_into()
                .expect("a line lies inside its frame")
        })
    }

    /// Write the 8-byte word at `addr`; the frame must have been given contents first.
    pub fn write(&mut self, addr: PhysAddr, value: u64) {
        let frame = self
            .frames
            .get_mut(&addr.pfn().0)
            .expect("page-table write to a frame that was never allocated as a table");
        frame[((addr.0 & 0xfff) >> 3) as usize] = value;
    }

    pub fn frames(&self) -> u64 {
        self.frames.len() as u64
    }
}
