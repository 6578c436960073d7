//! Helpers the workload tests share: draining a source, hashing a record stream, and building a
//! workload into a fresh small OS.

use crate::config;
use crate::os::Os;
use crate::trace::{Record, RecordSource};
use std::hash::{Hash, Hasher};

/// Every record of `src`, read in batches of `cap`.
pub fn drain(src: &mut dyn RecordSource, cap: usize) -> Vec<Record> {
    let mut all = Vec::new();
    let mut buf = Vec::with_capacity(cap);
    loop {
        src.fill(&mut buf).unwrap();
        if buf.is_empty() {
            return all;
        }
        all.extend_from_slice(&buf);
    }
}

/// A hash of every field of every record, to compare streams compactly.
pub fn stream_hash(recs: &[Record]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for r in recs {
        (r.vaddr.0, r.op, r.size, r.core, r.pid, r.instr_delta, r.dep).hash(&mut h);
    }
    h.finish()
}

/// An OS with the baseline preset's settings, 2 GiB of physical memory and no fragmentation.
pub fn small_os() -> Os {
    let cfg = config::load(
        "baseline-radix",
        &[
            "os.physmem.fragmentation=0.0".to_string(),
            "os.physmem.bytes=2147483648".to_string(),
        ],
    )
    .unwrap();
    Os::new(&cfg.os, cfg.pt.levels, 1).unwrap()
}

/// Bytes of virtual memory every process of `os` has allocated.
pub fn vma_bytes(os: &Os) -> u64 {
    (0..os.processes())
        .flat_map(|pid| {
            os.process(pid as u16)
                .unwrap()
                .vmas()
                .map(|v| (v.end.0 - v.start.0) * 4096)
                .collect::<Vec<_>>()
        })
        .sum()
}
