//! The DRAM model against the datasheet: closed forms for unloaded latencies, bandwidth, tRC,
//! tFAW and tWTR, properties of the data bus, and row outcomes against an open-row reference.

use super::*;
use crate::error::Error;
use proptest::prelude::*;
use serde::Deserialize;

/// The DDR4-2400 system of `docs/dram.md`.
fn ddr4() -> DramConfig {
    DramConfig {
        channels: 2,
        ranks: 2,
        banks: 16,
        bank_groups: 4,
        row_bytes: 8192,
        rows: Some(65536),
        mapping: DEFAULT_MAPPING.into(),
        bank_xor: false,
        tck_ns: 0.833,
        tcl: 17,
        tcwl: 12,
        trcd: 17,
        trp: 17,
        tras: 39,
        burst_cycles: 4,
        tccd_s: 4,
        tccd_l: 6,
        trrd_s: 4,
        trrd_l: 6,
        tfaw: 26,
        twr: 18,
        trtp: 9,
        twtr_s: 3,
        twtr_l: 9,
        rtw_turnaround: 2,
        trefi: 9363,
        trfc: 420,
        write_queue: 64,
        write_high: 48,
        write_low: 16,
        controller_ns: 20.0,
    }
}

/// A 1 GHz DRAM on a 1 GHz core with round timings, no refresh and no controller overhead, so
/// that core cycles equal DRAM cycles: hit 14, empty 24, conflict 34, tRAS 50, tRC 60.
fn simple() -> DramConfig {
    DramConfig {
        tck_ns: 1.0,
        tcl: 10,
        tcwl: 8,
        trcd: 10,
        trp: 10,
        tras: 50,
        burst_cycles: 4,
        tccd_s: 4,
        tccd_l: 6,
        trrd_s: 4,
        trrd_l: 6,
        tfaw: 30,
        twr: 15,
        trtp: 8,
        twtr_s: 3,
        twtr_l: 8,
        rtw_turnaround: 2,
        trefi: 0,
        trfc: 0,
        controller_ns: 0.0,
        rows: None,
        ..ddr4()
    }
}

fn at(d: &Dram, channel: u64, rank: u64, bank: u64, row: u64, column: u64) -> PhysAddr {
    d.encode(DramCoord {
        channel,
        rank,
        bank,
        row,
        column,
    })
}

#[test]
fn decode_default_mapping() {
    // row:rank:bank:channel:column, 2 ch, 2 ranks, 16 banks, 8 KiB rows:
    // offset [5:0], column [12:6], channel [13], bank [17:14], rank [18], row [63:19].
    let d = Dram::new(&simple(), 1.0);
    let c = d.decode(PhysAddr(0x91A6_B57F));
    assert_eq!(
        c,
        DramCoord {
            channel: 1,
            rank: 1,
            bank: 0xA,
            row: 0x1234,
            column: 0x55
        }
    );
    assert_eq!(d.encode(c), PhysAddr(0x91A6_B540));
    // The row field is unbounded when `rows` is absent.
    assert_eq!(d.decode(PhysAddr(1 << 63)).row, 1 << (63 - 19));
}

#[test]
fn decode_other_mapping() {
    // channel:rank:row:bank:column with 65536 rows:
    // offset [5:0], column [12:6], bank [16:13], row [32:17], rank [33], channel [34].
    let mut cfg = ddr4();
    cfg.mapping = "channel:rank:row:bank:column".into();
    cfg.validate("dram").unwrap();
    let d = Dram::new(&cfg, 2.6);
    let c = d.decode(PhysAddr(0x5_7DDE_6090));
    assert_eq!(
        c,
        DramCoord {
            channel: 1,
            rank: 0,
            bank: 3,
            row: 0xBEEF,
            column: 2
        }
    );
    // Capacity is 32 GiB; bit 35 is beyond it and wraps.
    assert_eq!(cfg.capacity_bytes(), Some(32 << 30));
    assert_eq!(d.decode(PhysAddr(0x5_7DDE_6090 | 1 << 35)), c);
}

#[test]
fn unloaded_latencies_are_the_sums_of_their_timings() {
    let mut d = Dram::new(&simple(), 1.0);
    let t = *d.timing();
    assert_eq!((t.row_hit(), t.row_empty(), t.row_conflict()), (14, 24, 34));
    let base = at(&d, 0, 1, 3, 7, 0);
    // Each far from the one before: an idle bank, tRAS long past.
    assert_eq!(d.access(base, 0, Requester::Data), t.trcd + t.tcl + t.burst);
    for i in 1..128u64 {
        let lat = d.access(PhysAddr(base.0 + (i << 6)), i * 1000, Requester::Data);
        assert_eq!(lat, t.tcl + t.burst, "column {i}");
    }
    let other = at(&d, 0, 1, 3, 8, 0);
    assert_eq!(
        d.access(other, 200_000, Requester::Data),
        t.trp + t.trcd + t.tcl + t.burst
    );
    let s = &d.stats().data;
    assert_eq!((s.row_empty, s.row_hits, s.row_conflicts), (1, 127, 1));
    assert_eq!(s.queue_cycles, 0);
}

#[test]
fn ddr4_2400_at_2_6_ghz() {
    let cfg = ddr4();
    cfg.validate("dram").unwrap();
    let d = Dram::new(&cfg, 2.6);
    let t = d.timing();
    // 17 × 0.833 ns × 2.6 = 36.82 → 37; 39 × … = 84.47 → 85; 4 × … = 8.66 → 9; 20 ns → 52.
    assert_eq!(
        (t.tcl, t.trcd, t.trp, t.tras, t.burst, t.controller),
        (37, 37, 37, 85, 9, 52)
    );
    assert_eq!(
        (t.row_hit(), t.row_empty(), t.row_conflict()),
        (98, 135, 172)
    );
    // 7.8 us refresh interval, 350 ns refresh.
    assert_eq!((t.trefi, t.trfc), (20_279, 910));
    // One channel's peak: 64 B every 4 clocks of 0.833 ns.
    assert!((cfg.channel_peak_gbps() - 19.208).abs() < 0.01);
}

/// Issue `lines` reads at cycle 0 (all in flight at once); the cycle the last data returns.
fn read_all(d: &mut Dram, lines: impl Iterator<Item = PhysAddr>) -> u64 {
    lines
        .map(|a| d.access(a, 0, Requester::Data))
        .max()
        .unwrap()
}

#[test]
fn sequential_reads_reach_the_channel_peak() {
    // Consecutive lines in different bank groups and banks (ChampSim's order), one channel.
    let cfg = DramConfig {
        channels: 1,
        mapping: "row:rank:column:bank:channel".into(),
        ..simple()
    };
    let mut d = Dram::new(&cfg, 1.0);
    let t = *d.timing();
    let n = 4096u64;
    let end = read_all(&mut d, (0..n).map(|i| PhysAddr(i << 6)));
    let busy = n * t.burst;
    // At least 90% of the peak from the first request, and never above it.
    assert!(busy * 10 >= end * 9, "{n} bursts of {} took {end}", t.burst);
    assert!(busy <= end);
    assert_eq!(d.stats().data_bus_cycles, busy);
    // Within one bank group, column commands are tCCD_L apart: 4/6 of the peak.
    let mut d = Dram::new(
        &DramConfig {
            channels: 1,
            ..simple()
        },
        1.0,
    );
    let end = read_all(&mut d, (0..128u64).map(|i| PhysAddr(i << 6)));
    assert_eq!(end, t.trcd + t.tcl + t.burst + 127 * t.tccd_l);
}

#[test]
fn one_bank_between_two_rows_serves_one_request_per_trc() {
    // Every read issued at cycle 0, each to a new row of one bank (so none can hit a row in
    // the time before the next precharge): activate to activate is tRC.
    let mut d = Dram::new(&simple(), 1.0);
    let t = *d.timing();
    let ends: Vec<u64> = (0..10)
        .map(|i| d.access(at(&d, 1, 0, 5, 100 + i, 0), 0, Requester::Data))
        .collect();
    for w in ends.windows(2) {
        assert_eq!(w[1] - w[0], t.trc(), "{ends:?}");
    }
    assert_eq!(d.stats().data.row_conflicts, 9);
}

#[test]
fn activates_in_a_rank_keep_trrd_and_tfaw() {
    // 16 empty banks of one rank, every read issued at cycle 0: activates go four per tFAW,
    // tRRD_S apart within a window (consecutive banks are in different groups).
    let cfg = DramConfig {
        channels: 1,
        ranks: 1,
        ..simple()
    };
    let mut d = Dram::new(&cfg, 1.0);
    let t = *d.timing();
    let lats: Vec<u64> = (0..16)
        .map(|bank| d.access(at(&d, 0, 0, bank, 1, 0), 0, Requester::Data))
        .collect();
    for (k, &lat) in lats.iter().enumerate() {
        let k = k as u64;
        let act = k / 4 * t.tfaw + k % 4 * t.trrd_s;
        assert_eq!(lat, act + t.trcd + t.tcl + t.burst, "bank {k}: {lats:?}");
    }
    let acts = &d.rank_state[0].acts.acts;
    for w in acts.windows(5) {
        assert!(w[4].0 - w[0].0 >= t.tfaw, "{acts:?}");
    }
}

#[test]
fn a_read_after_a_write_waits_twtr() {
    // Every write drains at once.
    let cfg = DramConfig {
        write_high: 1,
        write_low: 0,
        channels: 1,
        ranks: 1,
        ..simple()
    };
    let t = DramTiming::new(&cfg, 1.0);
    for (bank, twtr, trrd) in [(1, t.twtr_s, t.trrd_s), (4, t.twtr_l, t.trrd_l)] {
        let mut d = Dram::new(&cfg, 1.0);
        // Write to bank 0 (group 0): activate at 0, write at tRCD, data until tRCD + tCWL + burst.
        d.write(at(&d, 0, 0, 0, 1, 0), 0);
        let write_end = t.trcd + t.tcwl + t.burst;
        // A read of another bank of the rank: its data waits tWTR, then tCL, after the write's.
        let lat = d.access(at(&d, 0, 0, bank, 1, 0), 0, Requester::Data);
        assert!(trrd + t.trcd + t.tcl < write_end + twtr + t.tcl);
        assert_eq!(lat, write_end + twtr + t.tcl + t.burst, "bank {bank}");
        assert_eq!(d.stats().writes.writes, 1);
    }
}

#[test]
fn writes_drain_between_the_watermarks() {
    let mut d = Dram::new(&simple(), 1.0);
    // All in channel 0 (the channel bit is bit 13).
    for i in 0..47u64 {
        d.write(PhysAddr(i << 14), i);
    }
    assert_eq!(
        d.stats().writes.writes,
        0,
        "below the high watermark nothing drains"
    );
    d.write(PhysAddr(47 << 14), 47);
    let w = &d.stats().writes;
    assert_eq!((w.writes, w.drains), (32, 1));
    assert_eq!(w.row_hits + w.row_empty + w.row_conflicts, 32);
    assert_eq!(d.channels.iter().map(|c| c.writes.len()).sum::<usize>(), 16);
}

#[test]
fn an_earlier_request_called_later_does_not_wait_behind_a_later_one() {
    let mut d = Dram::new(&simple(), 1.0);
    let t = *d.timing();
    // A read issued at 1000 is scheduled first; one issued at 0 to another bank, and one to
    // the same row issued at 0 (its row is open from 0 to well past it), are served unloaded.
    let a = at(&d, 0, 0, 0, 1, 0);
    assert_eq!(d.access(a, 1000, Requester::Data), t.row_empty());
    assert_eq!(
        d.access(at(&d, 0, 0, 5, 1, 0), 0, Requester::Data),
        t.row_empty()
    );
    let mut d = Dram::new(&simple(), 1.0);
    d.access(a, 0, Requester::Data);
    assert_eq!(
        d.access(PhysAddr(a.0 + 64), 1000, Requester::Data),
        t.row_hit()
    );
    assert_eq!(
        d.access(PhysAddr(a.0 + 128), 500, Requester::Data),
        t.row_hit()
    );
    // A row closed at 2000 still serves a hit issued before then.
    d.access(at(&d, 0, 0, 0, 2, 0), 2000, Requester::Data);
    assert_eq!(
        d.access(PhysAddr(a.0 + 192), 1500, Requester::Data),
        t.row_hit()
    );
    assert_eq!(d.stats().data.row_hits, 3);
}

#[test]
fn a_conflict_called_late_is_served_in_the_gap_before_the_rows_booked_after_it() {
    let mut d = Dram::new(&simple(), 1.0);
    let t = *d.timing();
    let rows: Vec<PhysAddr> = (0..5).map(|r| at(&d, 0, 0, 3, r, 0)).collect();
    let row = |r: usize| rows[r];
    // Row 1 opens at 0; row 2 is asked for at 5000 and booked first.
    assert_eq!(d.access(row(1), 0, Requester::Data), t.row_empty());
    assert_eq!(d.access(row(2), 5000, Requester::Data), t.row_conflict());
    // Row 3, issued at 1000 but called after: row 1 closes at 1000, row 3 opens and is
    // closed again long before row 2's activate at 5000 + tRP: an unloaded conflict.
    assert_eq!(d.access(row(3), 1000, Requester::Data), t.row_conflict());
    // Row 1 still serves a hit before 1000, row 3 one after its activate, row 2 its own.
    assert_eq!(
        d.access(PhysAddr(row(1).0 + 64), 500, Requester::Data),
        t.row_hit()
    );
    assert_eq!(
        d.access(PhysAddr(row(3).0 + 64), 2000, Requester::Data),
        t.row_hit()
    );
    assert_eq!(
        d.access(PhysAddr(row(2).0 + 64), 6000, Requester::Data),
        t.row_hit()
    );
    // Issued just before row 2's precharge-activate window, row 4 does not fit (it would
    // hold the bank tRAS + tRP): it waits for row 2 and closes it.
    let late = 5000 - t.tras;
    let lat = d.access(row(4), late, Requester::Data);
    assert!(lat > t.row_conflict() + t.tras, "{lat}");
    let s = &d.stats().data;
    assert_eq!((s.row_hits, s.row_empty, s.row_conflicts), (3, 1, 3));
    assert_eq!(s.queue_cycles, lat - t.row_conflict());
}

#[test]
fn refresh_blocks_the_rank_and_closes_its_rows() {
    let cfg = DramConfig {
        trefi: 1000,
        trfc: 100,
        ranks: 1,
        ..simple()
    };
    let mut d = Dram::new(&cfg, 1.0);
    let t = *d.timing();
    let a = at(&d, 0, 0, 2, 9, 0);
    // Rank 0 refreshes over [0, 100), [1000, 1100), ...: a read at 50 starts at 100.
    assert_eq!(d.access(a, 50, Requester::Data), 50 + t.row_empty());
    assert_eq!(d.access(a, 500, Requester::Data), t.row_hit());
    // After the next refresh the row is closed: empty, not a hit.
    assert_eq!(d.access(a, 1200, Requester::Data), t.row_empty());
    let s = &d.stats().data;
    assert_eq!((s.row_empty, s.row_hits, s.row_conflicts), (2, 1, 0));
}

#[test]
fn stats_split_by_requester() {
    let mut d = Dram::new(&simple(), 1.0);
    let mut now = 0;
    let mut go = |d: &mut Dram, addr, r| {
        now += 1000;
        d.access(addr, now, r)
    };
    let data_row = at(&d, 0, 0, 0, 1, 0);
    let pt_row = at(&d, 1, 0, 0, 1, 0);
    go(&mut d, data_row, Requester::Data);
    go(&mut d, data_row, Requester::Data);
    go(&mut d, data_row, Requester::Data);
    go(&mut d, pt_row, Requester::Translation);
    go(&mut d, pt_row, Requester::Translation);
    let s = d.stats().clone();
    assert_eq!(
        s.data,
        RequesterStats {
            reads: 3,
            row_hits: 2,
            row_empty: 1,
            row_conflicts: 0,
            interference: 0,
            total_latency: 24 + 14 + 14,
            queue_cycles: 0,
        }
    );
    assert_eq!(s.translation.reads, 2);
    assert_eq!(s.translation.row_hits, 1);
    assert_eq!(s.translation.row_empty, 1);
    assert_eq!(s.reads(), 5);
    assert!((s.translation.avg_latency() - 19.0).abs() < 1e-12);

    // Serialised as a tree with `data` / `translation` / `writes` subtrees.
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["data"]["row_hits"], 2);
    assert_eq!(v["translation"]["reads"], 2);
    assert_eq!(v["writes"]["writes"], 0);
    assert_eq!(v["interference"], 0);

    d.reset_stats();
    assert_eq!(*d.stats(), DramStats::default());
    // Row buffers survive the reset.
    assert_eq!(d.access(data_row, 1_000_000, Requester::Data), 14);
}

#[test]
fn interference_counts_cross_kind_conflicts() {
    let mut d = Dram::new(&simple(), 1.0);
    let a = at(&d, 0, 0, 4, 10, 0);
    let b = at(&d, 0, 0, 4, 11, 0);
    d.access(a, 0, Requester::Translation); // translation opens row 10
    d.access(a, 1000, Requester::Data); // data hits it: opener stays translation
    d.access(b, 2000, Requester::Data); // data closes a translation row: interference
    d.access(a, 3000, Requester::Data); // data closes a data row: not interference
    d.access(b, 4000, Requester::Translation); // translation closes a data row: interference
    d.access(a, 5000, Requester::Translation); // translation closes its own row
    let s = d.stats();
    assert_eq!(s.data.row_conflicts, 2);
    assert_eq!(s.data.interference, 1);
    assert_eq!(s.translation.row_conflicts, 2);
    assert_eq!(s.translation.interference, 1);
    assert_eq!(s.interference, 2);
    assert_eq!(s.data.row_hits, 1);
    assert_eq!(s.row_misses(), 5);
}

fn key_of(e: Error) -> (String, String) {
    match e {
        Error::Config { key, msg } => (key, msg),
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn validation_errors_name_the_key() {
    let check = |f: &dyn Fn(&mut DramConfig), key: &str, needle: &str| {
        let mut cfg = ddr4();
        f(&mut cfg);
        let (k, msg) = key_of(cfg.validate("system.dram").unwrap_err());
        assert_eq!(k, key, "{msg}");
        assert!(msg.contains(needle), "`{msg}` does not contain `{needle}`");
    };
    check(
        &|c| c.banks = 12,
        "system.dram.banks",
        "must be a power of two, got 12",
    );
    check(&|c| c.channels = 0, "system.dram.channels", "got 0");
    check(&|c| c.ranks = 3, "system.dram.ranks", "got 3");
    check(&|c| c.bank_groups = 3, "system.dram.bank_groups", "got 3");
    check(
        &|c| c.bank_groups = 32,
        "system.dram.bank_groups",
        "cannot divide",
    );
    check(&|c| c.row_bytes = 6000, "system.dram.row_bytes", "got 6000");
    check(
        &|c| c.row_bytes = 32,
        "system.dram.row_bytes",
        "at least one 64-byte line",
    );
    check(&|c| c.rows = Some(1000), "system.dram.rows", "got 1000");
    check(
        &|c| c.mapping = "row:bank:channel:column".into(),
        "system.dram.mapping",
        "`rank` is missing",
    );
    check(
        &|c| c.mapping = "row:rank:bank:chan:column".into(),
        "system.dram.mapping",
        "unknown field `chan`",
    );
    check(
        &|c| c.mapping = "row:rank:bank:channel:column:row".into(),
        "system.dram.mapping",
        "`row` appears twice",
    );
    check(
        &|c| {
            c.rows = None;
            c.mapping = "rank:row:bank:channel:column".into();
        },
        "system.dram.rows",
        "is required",
    );
    check(&|c| c.tck_ns = 0.0, "system.dram.tck_ns", "positive");
    check(&|c| c.tck_ns = f64::NAN, "system.dram.tck_ns", "positive");
    for key in [
        "tcl",
        "tcwl",
        "trcd",
        "trp",
        "tras",
        "burst_cycles",
        "tccd_s",
        "tccd_l",
        "trrd_s",
        "trrd_l",
        "tfaw",
        "twr",
        "trtp",
        "twtr_s",
        "twtr_l",
    ] {
        let mut cfg = ddr4();
        let mut v = serde_json::to_value(&cfg).unwrap();
        v[key] = 0.into();
        cfg = serde_json::from_value(v).unwrap();
        let (k, msg) = key_of(cfg.validate("system.dram").unwrap_err());
        assert_eq!(k, format!("system.dram.{key}"), "{msg}");
        assert!(msg.contains("at least 1"), "{msg}");
    }
    check(&|c| c.tcl = 2_000_000, "system.dram.tcl", "at most");
    check(&|c| c.tccd_l = 2, "system.dram.tccd_l", "same-bank-group");
    check(&|c| c.trfc = 10_000, "system.dram.trfc", "shorter than");
    check(&|c| c.trfc = 0, "system.dram.trfc", "at least 1");
    check(&|c| c.write_queue = 0, "system.dram.write_queue", "got 0");
    check(
        &|c| c.write_low = 48,
        "system.dram.write_high",
        "write_low < write_high",
    );
    check(&|c| c.write_high = 65, "system.dram.write_high", "<= 64");
    check(
        &|c| c.controller_ns = -1.0,
        "system.dram.controller_ns",
        "non-negative",
    );
    check(
        &|c| c.rows = Some(1 << 50),
        "system.dram.mapping",
        "more than 64",
    );
    check(
        &|c| c.banks = 1 << 30,
        "system.dram.banks",
        "more than the supported",
    );
    // Whitespace around field names is tolerated; refresh may be off.
    let mut cfg = ddr4();
    cfg.mapping = "row : rank : bank : channel : column".into();
    cfg.trefi = 0;
    cfg.validate("dram").unwrap();
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapper {
    dram: DramConfig,
}

#[test]
fn docs_snippet_parses_and_matches() {
    let doc = include_str!("../../../../../docs/dram.md");
    let start = doc
        .find("```toml\n[dram]")
        .expect("docs/dram.md has a [dram] snippet")
        + 8;
    let end = start + doc[start..].find("```").unwrap();
    let w: Wrapper = toml::from_str(&doc[start..end]).unwrap();
    w.dram.validate("dram").unwrap();
    assert_eq!(
        serde_json::to_value(&w.dram).unwrap(),
        serde_json::to_value(ddr4()).unwrap()
    );
}

#[test]
fn the_presets_dram_tables_are_their_datasheets() {
    // baseline-radix's [dram] is the DDR4-2400 system of docs/dram.md.
    let preset = include_str!("../../../../../python/xlat/presets/baseline-radix.toml");
    let table: toml::Table = toml::from_str(preset).unwrap();
    let dram: DramConfig = table["dram"].clone().try_into().unwrap();
    assert_eq!(
        serde_json::to_value(&dram).unwrap(),
        serde_json::to_value(DramConfig {
            bank_xor: true,
            ..ddr4()
        })
        .unwrap()
    );
}

#[test]
fn unknown_keys_are_rejected_and_defaults_apply() {
    let base = "channels = 1\nranks = 1\nbanks = 8\nrow_bytes = 2048\ntck_ns = 1.25\n\
                tcl = 11\ntcwl = 9\ntrcd = 11\ntrp = 11\ntras = 28\nburst_cycles = 4\n\
                tccd_s = 4\ntccd_l = 5\ntrrd_s = 4\ntrrd_l = 5\ntfaw = 20\ntwr = 12\n\
                trtp = 6\ntwtr_s = 2\ntwtr_l = 6\ntrefi = 6240\ntrfc = 280\ncontroller_ns = 0\n";
    let cfg: DramConfig = toml::from_str(base).unwrap();
    assert_eq!(cfg.mapping, DEFAULT_MAPPING);
    assert_eq!(cfg.rows, None);
    assert_eq!(
        (
            cfg.bank_groups,
            cfg.write_queue,
            cfg.write_high,
            cfg.write_low
        ),
        (1, 64, 48, 16)
    );
    cfg.validate("dram").unwrap();
    let err = toml::from_str::<DramConfig>(&format!("{base}txyz = 20\n")).unwrap_err();
    assert!(err.to_string().contains("txyz"), "{err}");
    // A timing left out is an error naming it, not a silent zero.
    let err = toml::from_str::<DramConfig>(&base.replace("tfaw = 20\n", "")).unwrap_err();
    assert!(err.to_string().contains("tfaw"), "{err}");
}

/// Whether an activate of bank group `group` at `a` keeps tRRD_S/L to every activate in
/// `acts` (in order of time) and at most four in any tFAW: the definitions, checked directly.
fn activate_allowed(t: &DramTiming, acts: &[(u64, u64)], group: u64, a: u64) -> bool {
    let rrd_ok = acts.iter().all(|&(x, g)| {
        let rrd = if g == group { t.trrd_l } else { t.trrd_s };
        a.abs_diff(x) >= rrd
    });
    let mut all: Vec<u64> = acts.iter().map(|&(x, _)| x).collect();
    let p = all.partition_point(|&x| x <= a);
    all.insert(p, a);
    rrd_ok && all.windows(5).all(|w| w[4] - w[0] >= t.tfaw)
}

proptest! {
    /// The earliest activate a rank allows is the first cycle, from the request's on, that
    /// the definitions of tRRD_S/L and tFAW allow, whatever activates are booked around it.
    #[test]
    fn the_earliest_activate_is_the_first_the_definitions_allow(
        booked in prop::collection::vec((0u64..250, 0u64..4), 0..40),
        asks in prop::collection::vec((0u64..320, 0u64..4), 1..8),
    ) {
        let cfg = DramConfig { channels: 1, ranks: 1, ..simple() };
        let mut d = Dram::new(&cfg, 1.0);
        let t = *d.timing();
        // Book activates as the model books them (so the list is itself allowed), each at
        // the first allowed cycle from a random one.
        for &(from, group) in &booked {
            let a = (from..).find(|&a| activate_allowed(&t, &d.rank_state[0].acts.acts, group, a)).unwrap();
            let slot = d.rank_state[0].acts.earliest(group, from);
            prop_assert_eq!(slot.act, a);
            d.rank_state[0].acts.book(slot, group, 0);
        }
        for &(from, group) in &asks {
            let acts = &d.rank_state[0].acts;
            let want = (from..).find(|&a| activate_allowed(&t, &acts.acts, group, a)).unwrap();
            prop_assert_eq!(acts.earliest(group, from).act, want, "{:?}", acts);
        }
    }

    /// Over any stream of reads and writes, issued in any order of time: the data bus never
    /// carries two bursts at once (so never more than its peak over any window), every read
    /// takes at least its unloaded latency, and the counts add up.
    #[test]
    fn the_data_bus_never_exceeds_its_peak(
        reqs in prop::collection::vec(
            (0u64..2, 0u64..16, 0u64..6, 0u64..128, 0u64..400, 0u8..3, any::<bool>()),
            1..400,
        ),
        ddr in any::<bool>(),
    ) {
        let (cfg, ghz) = if ddr { (ddr4(), 2.6) } else { (DramConfig { trefi: 500, trfc: 50, ..simple() }, 1.0) };
        let cfg = DramConfig { write_high: 8, write_low: 2, ..cfg };
        let mut d = Dram::new(&cfg, ghz);
        let t = *d.timing();
        let mut clock = 0;
        let mut reads = 0;
        for &(rank, bank, row, column, jitter, kind, translation) in &reqs {
            clock += 3;
            // Issued around the clock, some much earlier or later than the call order says.
            let now = (clock + jitter).saturating_sub(200);
            let r = if translation { Requester::Translation } else { Requester::Data };
            let addr = at(&d, rank % 2, rank, bank, row, column);
            if kind == 0 {
                d.write(addr, now);
            } else {
                let lat = d.access(addr, now, r);
                prop_assert!(lat >= t.row_hit());
                reads += 1;
            }
        }
        // Each bank's rows follow each other: one open at a time, tRP between a precharge
        // and the next activate, only the last still open.
        for bank in &d.banks {
            for w in bank.rows.windows(2) {
                prop_assert!(w[0].act < w[0].close && w[0].close != OPEN, "{:?}", w);
                prop_assert!(w[0].close + t.trp <= w[1].act, "{:?}", w);
            }
        }
        for ch in 0..2 {
            let b = d.bursts(ch);
            for w in b.windows(2) {
                prop_assert!(w[0].end <= w[1].start, "{:?}", w);
                prop_assert!(w[0].end - w[0].start >= t.burst);
            }
        }
        let s = d.stats();
        prop_assert_eq!(s.reads(), reads);
        prop_assert_eq!(s.row_hits() + s.row_empty() + s.row_conflicts(), reads);
        let w = &s.writes;
        prop_assert_eq!(w.row_hits + w.row_empty + w.row_conflicts, w.writes);
        prop_assert_eq!(s.data_bus_cycles, (reads + w.writes) * t.burst);
        for k in [&s.data, &s.translation] {
            prop_assert!(k.interference <= k.row_conflicts);
            prop_assert!(k.total_latency >= k.reads * t.row_hit());
        }
        prop_assert_eq!(s.interference, s.data.interference + s.translation.interference);
    }

    /// Row hits, empty rows, conflicts and interference match an open-row model written
    /// from the definitions, on random streams over random geometries and mappings; with
    /// accesses far apart (idle banks, tRAS long past) each latency is exactly its class's.
    #[test]
    fn row_buffer_outcomes_match_an_open_row_reference(
        order in Just(vec!["row", "rank", "bank", "channel", "column"]).prop_shuffle(),
        log2 in (0u32..3, 0u32..2, 1u32..5, 4u32..8, prop::option::of(4u32..12)),
        reqs in prop::collection::vec((0u64..(1 << 26), any::<bool>()), 1..500),
    ) {
        let (ch_bits, rank_bits, bank_bits, col_bits, row_bits) = log2;
        let mut order = order;
        if row_bits.is_none() {
            // An unbounded row field must be the most significant.
            order.retain(|f| *f != "row");
            order.insert(0, "row");
        }
        let cfg = DramConfig {
            channels: 1 << ch_bits,
            ranks: 1 << rank_bits,
            banks: 1 << bank_bits,
            bank_groups: 1 << bank_bits.min(2),
            row_bytes: 64 << col_bits,
            rows: row_bits.map(|b| 1 << b),
            mapping: order.join(":"),
            bank_xor: false,
            ..simple()
        };
        cfg.validate("dram").unwrap();
        let mut d = Dram::new(&cfg, 1.0);
        let t = *d.timing();
        // The reference: slice the fields off above the line offset, least significant
        // first, and keep each bank's open row and who opened it.
        let width = |f: &str| match f {
            "channel" => ch_bits,
            "rank" => rank_bits,
            "bank" => bank_bits,
            "column" => col_bits,
            _ => row_bits.unwrap_or(64),
        };
        let fields = |addr: u64| {
            let mut at = 6;
            let mut value = std::collections::HashMap::new();
            for f in order.iter().rev() {
                let bits = width(f).min(64 - at);
                let v = if bits == 0 { 0 } else { (addr >> at) & (u64::MAX >> (64 - bits)) };
                value.insert(*f, v);
                at += bits;
            }
            value
        };
        let mut open: std::collections::HashMap<(u64, u64, u64), (u64, Requester)> =
            std::collections::HashMap::new();
        let mut want = [[0u64; 4]; 2]; // per requester: hits, empty, conflicts, interference
        let mut now = 0;
        for &(line, translation) in &reqs {
            now += 100_000;
            let addr = line << 6;
            let r = if translation { Requester::Translation } else { Requester::Data };
            let f = fields(addr);
            let bank = (f["channel"], f["rank"], f["bank"]);
            let w = &mut want[translation as usize];
            let class = match open.insert(bank, (f["row"], r)) {
                Some((row, opener)) if row == f["row"] => {
                    // A hit leaves the row as its activation left it.
                    open.insert(bank, (row, opener));
                    w[0] += 1;
                    t.row_hit()
                }
                None => {
                    w[1] += 1;
                    t.row_empty()
                }
                Some((_, opener)) => {
                    w[2] += 1;
                    w[3] += u64::from(opener != r);
                    t.row_conflict()
                }
            };
            prop_assert_eq!(d.access(PhysAddr(addr), now, r), class);
        }
        for (k, w) in [&d.stats().data, &d.stats().translation].into_iter().zip(want) {
            prop_assert_eq!([k.row_hits, k.row_empty, k.row_conflicts, k.interference], w);
        }
    }

    #[test]
    fn encode_inverts_decode(addr in any::<u64>(), bank_xor in any::<bool>()) {
        let d = Dram::new(&DramConfig { bank_xor, ..simple() }, 1.0);
        let line = PhysAddr(addr & !63);
        prop_assert_eq!(d.encode(d.decode(line)), line);
    }
}

#[test]
fn bank_xor_spreads_power_of_two_strides_over_the_banks() {
    // The 16 ways of one set of a 512 MiB, 16-way RestSeg of 4 KiB pages (way-major) are
    // 32 MiB apart: the same bank bits, different rows.
    let ways = |bank_xor| {
        let d = Dram::new(&DramConfig { bank_xor, ..ddr4() }, 2.6);
        let banks: std::collections::BTreeSet<_> = (0..16u64)
            .map(|w| d.decode(PhysAddr(w << 25)).bank)
            .collect();
        banks.len()
    };
    assert_eq!(ways(false), 1, "without XOR every way is in one bank");
    assert_eq!(ways(true), 16, "with XOR each way has its own bank");
    // Consecutive lines of one row still share the row and the bank.
    let d = Dram::new(
        &DramConfig {
            bank_xor: true,
            ..ddr4()
        },
        2.6,
    );
    let (a, b) = (
        d.decode(PhysAddr(0x1234_0000)),
        d.decode(PhysAddr(0x1234_0040)),
    );
    assert_eq!((a.bank, a.row), (b.bank, b.row));
}

proptest! {
    /// With `bank_xor`, the bank is its bits XOR every bank-wide group of row bits, for every
    /// bank count (the power-of-two widths fold by halving, the others group by group).
    #[test]
    fn bank_xor_folds_every_group_of_row_bits(row in any::<u64>(), bank_bits in 1u32..6) {
        let d = Dram::new(
            &DramConfig {
                bank_xor: true,
                banks: 1 << bank_bits,
                bank_groups: 1,
                rows: None,
                ..simple()
            },
            1.0,
        );
        let mask = (1u64 << bank_bits) - 1;
        let want = (0..64)
            .step_by(bank_bits as usize)
            .fold(0, |f, shift| f ^ ((row >> shift) & mask));
        prop_assert_eq!(d.row_fold(row), want);
    }
}

#[test]
fn two_cores_called_out_of_time_order_queue_about_as_long_as_in_order() {
    // Two cores' random reads, each core one every 60 cycles, called alternately while one
    // core's requests are issued 2,000 cycles after the other's (as the cores of a mix run
    // ahead of each other). Made once in call order and once sorted by issue cycle, they
    // should queue about as long: a request issued before rows booked on its bank takes the
    // gaps before them: 32.2 cycles against 30.4. (A model in which such a request waited
    // for the rows booked after it queued this stream 284 cycles in call order.)
    let mut rng = crate::rng::Rng::new(7, 0);
    let cfg = ddr4();
    let d = Dram::new(&cfg, 2.6);
    let mut calls = Vec::new();
    for i in 0..6000u64 {
        for ahead in [2000, 0] {
            let addr = at(
                &d,
                rng.below(2),
                rng.below(2),
                rng.below(16),
                rng.below(4096),
                0,
            );
            calls.push((i * 60 + ahead, i * 60, addr));
        }
    }
    let queued = |calls: &[(u64, u64, PhysAddr)]| {
        let mut d = Dram::new(&cfg, 2.6);
        for &(now, floor, addr) in calls {
            d.set_floor(floor);
            d.access(addr, now, Requester::Data);
        }
        d.stats().data.queue_cycles as f64 / d.stats().data.reads as f64
    };
    let in_calls = queued(&calls);
    let mut by_issue: Vec<_> = calls.iter().map(|&(now, _, a)| (now, now, a)).collect();
    by_issue.sort_by_key(|&(now, _, _)| now);
    let in_time = queued(&by_issue);
    assert!(in_time > 1.0, "the stream must queue at all: {in_time}");
    assert!(
        in_calls < 1.25 * in_time,
        "{in_calls} cycles in call order, {in_time} in time"
    );
}
