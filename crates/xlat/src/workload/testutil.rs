//! Helpers the workload unit tests share: a small OS, draining a source, hashing a record
//! stream, the virtual footprint of a process, and a model check of index structures.

use super::emit::{Emitter, Stop, ThreadedSource};
use crate::os::{AddressSpaces, Os};
use crate::pt::radix::RadixPageTable;
use crate::trace::{Record, RecordSource};
use std::hash::{Hash, Hasher};

/// An OS with `mib` MiB of unfragmented physical memory and a 4-level page table.
pub fn os(mib: u64) -> Os<RadixPageTable> {
    crate::os::testing::radix_os(&crate::os::testing::config(mib), 1)
}

/// An OS with 2 GiB of unfragmented physical memory.
pub fn small_os() -> Os<RadixPageTable> {
    os(2048)
}

/// `small_os` without address-space randomisation: every process is laid out alike, whatever
/// its pid, so a program built into any process of it gets the same addresses.
pub fn unrandomised_os() -> Os<RadixPageTable> {
    let mut cfg = crate::os::testing::config(2048);
    cfg.aslr = false;
    crate::os::testing::radix_os(&cfg, 1)
}

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

/// Every record of `src` (taken by value).
pub fn drain_owned(mut src: impl RecordSource) -> Vec<Record> {
    drain(&mut src, 4096)
}

/// Run `f` as a generator and collect everything it emits.
pub fn run<F>(f: F) -> Vec<Record>
where
    F: FnOnce(&mut Emitter) -> Result<(), Stop> + Send + 'static,
{
    drain_owned(ThreadedSource::spawn(0, u64::MAX, f))
}

pub fn addrs(recs: &[Record]) -> Vec<u64> {
    recs.iter().map(|r| r.vaddr.0).collect()
}

/// A hash of every field of every record, to compare streams compactly.
pub fn stream_hash(recs: &[Record]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for r in recs {
        (r.vaddr.0, r.op, r.size, r.core, r.pid, r.instr_delta, r.dep).hash(&mut h);
    }
    h.finish()
}

/// Bytes of virtual memory process `pid` has mapped for its data (its heap and mappings, not
/// its binary, libraries or stacks).
pub fn footprint(os: &dyn AddressSpaces, pid: u16) -> u64 {
    os.vmas(pid)
        .unwrap()
        .iter()
        .filter(|v| v.role.is_data())
        .map(|v| (v.end.0 - v.start.0) * 4096)
        .sum()
}

/// Bytes of virtual memory every process of `os` has mapped.
pub fn vma_bytes(os: &dyn AddressSpaces) -> u64 {
    (0..os.processes())
        .map(|pid| footprint(os, pid as u16))
        .sum()
}

/// Run `ops` random inserts/deletes/lookups (keys in `0..universe`) on `s` next to a `BTreeSet`
/// model, starting from `initial`: every result must match the model, and afterwards every key of
/// the universe must be found exactly when the model holds it.
pub fn check_against_set<S>(mut s: S, initial: Vec<u64>, universe: u64, ops: usize, seed: u64)
where
    S: super::index::IndexStructure + Send + 'static,
{
    run(move |e| {
        let mut model: std::collections::BTreeSet<u64> = initial.into_iter().collect();
        let mut rng = crate::rng::Rng::new(seed, 99);
        for _ in 0..ops {
            let k = rng.below(universe);
            match rng.below(3) {
                0 => assert_eq!(s.insert(e, k)?, model.insert(k), "insert {k}"),
                1 => assert_eq!(s.remove(e, k)?, model.remove(&k), "remove {k}"),
                _ => assert_eq!(s.lookup(e, k)?, model.contains(&k), "lookup {k}"),
            }
        }
        for k in 0..universe {
            assert_eq!(s.lookup(e, k)?, model.contains(&k), "final lookup {k}");
        }
        Ok(())
    });
}

/// A stream of one thread's records cut into operations, as address lists: an operation starts
/// with the record that carries at least `first_instrs` instructions (the harness's work before
/// it; every record inside an operation follows fewer).
pub fn operations(recs: &[Record], first_instrs: u32) -> Vec<Vec<u64>> {
    let mut out: Vec<Vec<u64>> = Vec::new();
    for r in recs {
        if r.instr_delta >= first_instrs || out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().unwrap().push(r.vaddr.0);
    }
    out
}

/// Each core's records, in order, with their positions in the merged stream.
pub fn per_core(recs: &[Record]) -> std::collections::BTreeMap<u8, Vec<(usize, Record)>> {
    let mut by_core = std::collections::BTreeMap::<u8, Vec<(usize, Record)>>::new();
    for (k, r) in recs.iter().enumerate() {
        by_core.entry(r.core).or_default().push((k, *r));
    }
    by_core
}

/// How far one thread's records ran ahead of another's in the merged stream: the most records a
/// thread has emitted beyond a thread that still has records to come, counted from the last
/// barrier (`barriers`: where in the stream each opened; a thread waiting at a barrier is not
/// behind, it is done with the phase).
pub fn max_lead(recs: &[Record], barriers: &[u64]) -> u64 {
    let mut bounds: Vec<usize> = barriers.iter().map(|&b| b as usize).collect();
    bounds.push(recs.len());
    let mut lead = 0;
    let mut from = 0;
    for to in bounds {
        let phase = &recs[from..to.max(from)];
        let mut left = [0u64; 256];
        for r in phase {
            left[r.core as usize] += 1;
        }
        let mut done = [0u64; 256];
        for r in phase {
            done[r.core as usize] += 1;
            left[r.core as usize] -= 1;
            let cores = 0..256;
            let ahead = cores.clone().map(|c| done[c]).max().unwrap_or(0);
            let behind = cores.filter(|&c| left[c] > 0).map(|c| done[c]).min();
            if let Some(behind) = behind {
                lead = lead.max(ahead - behind);
            }
        }
        from = to;
    }
    lead
}
