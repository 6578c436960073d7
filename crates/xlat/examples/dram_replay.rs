//! Replays a log of DRAM calls (`mem::dram::log`) on a new DRAM of a preset, to time the DRAM
//! model alone and to check that a change left its answers as they were:
//!
//! ```text
//! XLAT_DRAM_LOG=gups.dram cargo run --release -p xlat --features dram-log --example bench -- \
//!     baseline-radix gups 3000000
//! cargo run --release -p xlat --example dram_replay -- gups.dram [PRESET] [REPEATS]
//! ```
//!
//! Prints the calls, the best time of `REPEATS` replays (default 3), nanoseconds per call, and
//! checksums of every returned latency and of the final stats: equal checksums, equal model.
//!
//! With `--issue-order` it also makes the reads and writes once more in order of their issue
//! cycles (ties in call order), as a controller that saw every request the moment it was
//! issued would, and prints each requester's mean latency and queueing both ways: how much of
//! the queueing comes from the engine calling DRAM in program order rather than in time.

use std::process::ExitCode;
use xlat::mem::dram::log::{Event, EVENT_BYTES};
use xlat::mem::dram::{Dram, DramStats};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let issue_order = args.iter().any(|a| a == "--issue-order");
    args.retain(|a| a != "--issue-order");
    let Some(path) = args.first() else {
        eprintln!("usage: dram_replay LOG [PRESET] [REPEATS] [--issue-order]");
        return ExitCode::from(2);
    };
    let preset = args.get(1).map_or("baseline-radix", String::as_str);
    let repeats = match args.get(2).map(|s| s.parse::<u32>()) {
        None => 3,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("REPEATS must be a positive number");
            return ExitCode::from(2);
        }
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut events = Vec::with_capacity(bytes.len() / EVENT_BYTES);
    for (i, record) in bytes.chunks(EVENT_BYTES).enumerate() {
        let decoded = <&[u8; EVENT_BYTES]>::try_from(record)
            .ok()
            .and_then(Event::decode);
        let Some(event) = decoded else {
            eprintln!(
                "error: {path}: byte offset {}: not a DRAM log record",
                i * EVENT_BYTES
            );
            return ExitCode::FAILURE;
        };
        events.push(event);
    }
    let cfg = match xlat::SimConfig::load(preset, &[]) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut best = f64::INFINITY;
    let (mut latencies, mut stats) = (0, 0);
    for _ in 0..repeats {
        let mut dram = Dram::new(&cfg.dram, cfg.core.frequency_ghz);
        let start = std::time::Instant::now();
        latencies = replay(&mut dram, &events);
        best = best.min(start.elapsed().as_secs_f64());
        stats = fnv(format!("{:?}", dram.stats()).as_bytes());
    }
    println!(
        "calls={} best_seconds={best:.4} ns_per_call={:.1} latency_checksum={latencies:016x} \
         stats_checksum={stats:016x}",
        events.len(),
        best * 1e9 / events.len().max(1) as f64
    );
    if issue_order {
        let mut dram = Dram::new(&cfg.dram, cfg.core.frequency_ghz);
        replay(&mut dram, &events);
        print_queueing("call order", dram.stats());
        let mut dram = Dram::new(&cfg.dram, cfg.core.frequency_ghz);
        replay(&mut dram, &in_issue_order(&events));
        print_queueing("issue order", dram.stats());
    }
    ExitCode::SUCCESS
}

/// The reads and writes of `events` sorted by issue cycle (stably), each preceded by a floor
/// at its own cycle: in this order no later call is issued earlier.
fn in_issue_order(events: &[Event]) -> Vec<Event> {
    let mut calls: Vec<(u64, Event)> = events
        .iter()
        .filter_map(|&e| match e {
            Event::Floor(_) => None,
            Event::Read(_, now, _) | Event::Write(_, now) => Some((now, e)),
        })
        .collect();
    calls.sort_by_key(|&(now, _)| now);
    calls
        .into_iter()
        .flat_map(|(now, e)| [Event::Floor(now), e])
        .collect()
}

fn print_queueing(order: &str, stats: &DramStats) {
    for (name, r) in [("data", &stats.data), ("translation", &stats.translation)] {
        let per = |x: u64| x as f64 / r.reads.max(1) as f64;
        println!(
            "{order:>11}: {name:<11} reads={} mean_latency={:.1} queue_cycles={:.1} row_hits={:.3}",
            r.reads,
            per(r.total_latency),
            per(r.queue_cycles),
            r.row_hit_rate()
        );
    }
}

/// Make the calls; returns a checksum of the latencies, in order.
fn replay(dram: &mut Dram, events: &[Event]) -> u64 {
    let mut sum = 0u64;
    for &event in events {
        match event {
            Event::Floor(cycle) => dram.set_floor(cycle),
            Event::Read(addr, now, requester) => {
                let latency = dram.access(addr, now, requester);
                sum = sum.wrapping_mul(31).wrapping_add(latency);
            }
            Event::Write(addr, now) => dram.write(addr, now),
        }
    }
    sum
}

/// FNV-1a of `bytes`.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}
