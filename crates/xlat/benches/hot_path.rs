//! Benchmarks of the reference hot path: one TLB lookup, and one full simulated reference
//! (translation + data access + core model) on baseline-radix for GUPS and STREAM, and one
//! DRAM request on its own.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use xlat::addr::{PageSize, Pfn, VirtAddr};
use xlat::mmu::tlb::Tlb;
use xlat::schemes::radix::Radix;
use xlat::sim::system::System;
use xlat::trace::Record;

fn tlb_lookup(c: &mut Criterion) {
    let cfg = xlat::SimConfig::load("baseline-radix", &[]).unwrap();
    let mut tlb = Tlb::new(&cfg.mmu.l2tlb["unified"]);
    for p in 0..1536u64 {
        tlb.insert(VirtAddr(p << 12), 0, Pfn(p), PageSize::Size4K);
    }
    let mut i = 0u64;
    c.bench_function("l2tlb_lookup_hit", |b| {
        b.iter(|| {
            i = (i + 7) % 1536;
            black_box(tlb.lookup(VirtAddr(i << 12), 0))
        })
    });
}

fn full_reference(c: &mut Criterion) {
    for workload in ["gups", "stream"] {
        let cfg = xlat::SimConfig::load(
            "baseline-radix",
            &[
                format!("workload.name={workload}"),
                "workload.references=1000000000".into(),
            ],
        )
        .unwrap();
        // The system itself (static dispatch, as the run loop has), fed by a separate
        // generator instance with the same process layout (pid 0, same mmaps).
        let (generator, seed) = (cfg.workload.clone(), cfg.seed);
        let mut sim = System::<Radix>::new(cfg.clone(), |os| {
            xlat::workload::build(&generator, os, seed)
        })
        .unwrap();
        let mut os = xlat::sim::boot_os(&cfg).unwrap();
        let mut source = xlat::workload::build(&cfg.workload, os.as_mut(), cfg.seed).unwrap();
        let mut buf: Vec<Record> = Vec::with_capacity(4096);
        let mut at = 0;
        c.bench_function(&format!("reference_{workload}"), |b| {
            b.iter(|| {
                if at == buf.len() {
                    source.fill(&mut buf).unwrap();
                    at = 0;
                }
                sim.step(&buf[at]).unwrap();
                at += 1;
            })
        });
    }
}

/// One DRAM request of a GUPS-like stream on baseline-radix's DRAM: random lines over 4 GiB
/// issued about 40 cycles apart. `in_order`: reads only, each at its call's cycle; `gups`: a
/// write-back for every second read (a dirty victim), and reads issued up to 400 cycles early
/// (the out-of-order window of a core's loads).
fn dram_request(c: &mut Criterion) {
    use xlat::addr::PhysAddr;
    use xlat::mem::dram::{Dram, Requester};
    let cfg = xlat::SimConfig::load("baseline-radix", &[]).unwrap();
    for (name, writes, jitter) in [("in_order", false, 1), ("gups", true, 400)] {
        let mut dram = Dram::new(&cfg.dram, cfg.core.frequency_ghz);
        let mut rng = xlat::rng::Rng::new(7, 0);
        let mut now = 1000u64;
        let mut n = 0u64;
        c.bench_function(&format!("dram_request_{name}"), |b| {
            b.iter(|| {
                n += 1;
                now += 40;
                let line = PhysAddr(rng.below(1 << 26) << 6);
                if writes && n.is_multiple_of(3) {
                    dram.write(line, now);
                } else {
                    let at = now - rng.below(jitter);
                    black_box(dram.access(line, at, Requester::Data));
                }
                if n.is_multiple_of(64) {
                    dram.set_floor(now - 1000);
                }
            })
        });
    }
}

criterion_group!(benches, tlb_lookup, full_reference, dram_request);
criterion_main!(benches);
