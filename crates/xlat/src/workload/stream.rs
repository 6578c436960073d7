//! STREAM triad: `a[i] = b[i] + q * c[i]` over three arrays of 8-byte doubles, repeated.
//! Sequential: one TLB miss per page per array, the opposite corner from GUPS.

use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::trace::{Op, Record, RecordSource};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamConfig {
    /// Bytes per array (three arrays).
    #[serde(default = "default_array")]
    pub array_bytes: u64,
    /// Memory references to emit (three per element).
    #[serde(default = "default_refs")]
    pub references: u64,
    /// Map the memory before the first reference, as the benchmark's initialisation loop does,
    /// so page faults are not part of the measured run.
    #[serde(default = "default_populate")]
    pub populate: bool,
    /// Back the memory with explicit 1 GiB pages (`MAP_HUGETLB | MAP_HUGE_1GB`); falls back to
    /// smaller pages where no free 1 GiB block exists.
    #[serde(default)]
    pub hugetlb_1g: bool,
}

fn default_populate() -> bool {
    true
}

fn default_array() -> u64 {
    1 << 28
}
fn default_refs() -> u64 {
    30_000_000
}

impl StreamConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.array_bytes < 8 || !self.array_bytes.is_multiple_of(8) {
            return Err(Error::config(
                format!("{path}.array_bytes"),
                format!("must be a positive multiple of 8, got {}", self.array_bytes),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }
}

pub struct Stream {
    arrays: [VirtAddr; 3], // a, b, c
    elements: u64,
    i: u64,
    phase: u8,
    remaining: u64,
    total: u64,
    pid: u16,
}

impl Stream {
    pub fn new(cfg: &StreamConfig, os: &mut dyn AddressSpaces, pid: u16) -> Result<Stream> {
        let mut arrays = [VirtAddr(0); 3];
        for a in &mut arrays {
            *a = os.mmap(
                pid,
                cfg.array_bytes,
                if cfg.hugetlb_1g {
                    MapKind::Huge1G
                } else {
                    MapKind::Anon
                },
            )?;
            if cfg.populate {
                os.populate(pid, *a, cfg.array_bytes)?;
            }
        }
        Ok(Stream {
            arrays,
            elements: cfg.array_bytes / 8,
            i: 0,
            phase: 0,
            remaining: cfg.references,
            total: cfg.references,
            pid,
        })
    }
}

impl RecordSource for Stream {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        buf.clear();
        while buf.len() < buf.capacity() && self.remaining > 0 {
            self.remaining -= 1;
            let off = self.i * 8;
            // load b[i]; load c[i]; fma; store a[i]; index increment, compare and branch.
            let (array, op, instr_delta) = match self.phase {
                0 => (1, Op::Load, 2),
                1 => (2, Op::Load, 0),
                _ => (0, Op::Store, 1),
            };
            buf.push(Record {
                vaddr: VirtAddr(self.arrays[array].0 + off),
                op,
                size: 8,
                pid: self.pid,
                instr_delta,
                ..Default::default()
            });
            self.phase = (self.phase + 1) % 3;
            if self.phase == 0 {
                self.i = (self.i + 1) % self.elements;
            }
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total)
    }
}
