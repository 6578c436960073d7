//! DRAM: channels × ranks × banks, each bank with one row buffer, shared by data and translation
//! traffic.
//!
//! The model is a per-bank open-row timing model. A request waits until its bank has finished the
//! previous request, then costs a row hit (tCL + burst), a row empty (tRCD + tCL + burst) or a row
//! conflict (tRP + tRCD + tCL + burst, with the precharge delayed until tRAS after the activation of
//! the row being closed), plus a fixed controller/interconnect overhead. Command-bus and data-bus
//! contention, refresh, and request reordering are not modelled.
//!
//! Every request is tagged with a [`Requester`] so that the stats separate data from translation
//! metadata and count *interference*: row conflicts where one kind closes a row the other kind
//! opened (Utopia Figs 4 and 14). See `docs/dram.md` for the formulas and the DDR4-2400 preset.

use crate::addr::{PhysAddr, LINE_SHIFT};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The address mapping used when a config does not name one.
pub const DEFAULT_MAPPING: &str = "row:rank:bank:channel:column";

/// Upper bound on channels × ranks × banks (the per-bank state is a flat array).
const MAX_TOTAL_BANKS: u64 = 1 << 20;

fn default_mapping() -> String {
    DEFAULT_MAPPING.to_string()
}

/// DRAM geometry and timing, the `[dram]` table of a system config.
///
/// Timings are in DRAM clock cycles of `tck_ns` nanoseconds; [`Dram::new`] converts them to core
/// cycles. Call [`DramConfig::validate`] before [`Dram::new`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// Independent channels (power of two).
    pub channels: u32,
    /// Ranks per channel (power of two).
    pub ranks: u32,
    /// Banks per rank, all bank groups together (power of two; 16 for DDR4).
    pub banks: u32,
    /// Bytes in one row of one rank (power of two, at least one 64-byte line).
    pub row_bytes: u64,
    /// Rows per bank (power of two). Optional: without it the row field is unbounded, which
    /// requires `row` to be the most significant field of `mapping`. With it, the row field is
    /// `log2(rows)` bits wide and the capacity is `channels * ranks * banks * rows * row_bytes`;
    /// addresses beyond the capacity wrap around.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    /// Address-bit order from most to least significant: the five field names `row`, `rank`,
    /// `bank`, `channel`, `column` joined by `:`. Below the least significant field are always the
    /// 6 bits of the line offset; `column` counts 64-byte lines within a row.
    #[serde(default = "default_mapping")]
    pub mapping: String,
    /// Permutation-based interleaving (Zhang, Zhu and Zhang, MICRO 2000), as memory
    /// controllers do: the bank index is the mapping's bank bits XOR the row number folded to
    /// the bank width (the XOR of its `log2(banks)`-bit groups). Addresses whose bank bits
    /// agree but whose rows differ (power-of-two strides, e.g. the ways of a Utopia RestSeg,
    /// `sets × page` apart) then spread over the banks instead of conflicting in one.
    #[serde(default)]
    pub bank_xor: bool,
    /// DRAM clock period in nanoseconds (0.833 for DDR4-2400).
    pub tck_ns: f64,
    /// CAS latency, DRAM cycles.
    pub tcl: u32,
    /// Activate-to-read delay, DRAM cycles.
    pub trcd: u32,
    /// Precharge time, DRAM cycles.
    pub trp: u32,
    /// Minimum time a row stays open after its activation, DRAM cycles.
    pub tras: u32,
    /// DRAM cycles of one data burst (4 for BL8 on a double-data-rate bus).
    pub burst_cycles: u32,
    /// Fixed queue/controller/interconnect overhead added to every access, nanoseconds (>= 0).
    pub controller_ns: f64,
}

/// One field of the DRAM address mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Row,
    Rank,
    Bank,
    Channel,
    Column,
}

impl Field {
    const ALL: [Field; 5] = [
        Field::Row,
        Field::Rank,
        Field::Bank,
        Field::Channel,
        Field::Column,
    ];

    fn name(self) -> &'static str {
        match self {
            Field::Row => "row",
            Field::Rank => "rank",
            Field::Bank => "bank",
            Field::Channel => "channel",
            Field::Column => "column",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Parse a mapping string into its fields, most significant first.
fn parse_mapping(mapping: &str) -> std::result::Result<[Field; 5], String> {
    let mut order = [Field::Row; 5];
    let mut seen = [false; 5];
    for (n, part) in mapping.split(':').enumerate() {
        let part = part.trim();
        let Some(field) = Field::ALL.iter().copied().find(|f| f.name() == part) else {
            return Err(format!(
                "unknown field `{part}` in \"{mapping}\"; expected a permutation of \
                 row, rank, bank, channel, column joined by `:`"
            ));
        };
        if seen[field.index()] {
            return Err(format!("field `{part}` appears twice in \"{mapping}\""));
        }
        // Five distinct known names fill `order`; a sixth is unknown or a repeat, caught above.
        seen[field.index()] = true;
        order[n] = field;
    }
    if let Some(missing) = Field::ALL.iter().find(|f| !seen[f.index()]) {
        return Err(format!(
            "field `{}` is missing from \"{mapping}\"; expected a permutation of \
             row, rank, bank, channel, column joined by `:`",
            missing.name()
        ));
    }
    Ok(order)
}

impl DramConfig {
    /// Check the config; errors name the offending key as `{path}.field`.
    pub fn validate(&self, path: &str) -> Result<()> {
        let pow2 = |key: &str, v: u64| -> Result<()> {
            if v.is_power_of_two() {
                Ok(())
            } else {
                Err(Error::config(
                    format!("{path}.{key}"),
                    format!("must be a power of two, got {v}"),
                ))
            }
        };
        pow2("channels", self.channels.into())?;
        pow2("ranks", self.ranks.into())?;
        pow2("banks", self.banks.into())?;
        pow2("row_bytes", self.row_bytes)?;
        if self.row_bytes < 1 << LINE_SHIFT {
            return Err(Error::config(
                format!("{path}.row_bytes"),
                format!(
                    "must be at least one {}-byte line, got {}",
                    1u64 << LINE_SHIFT,
                    self.row_bytes
                ),
            ));
        }
        if let Some(rows) = self.rows {
            pow2("rows", rows)?;
        }
        let total_banks = u64::from(self.channels) * u64::from(self.ranks) * u64::from(self.banks);
        if total_banks > MAX_TOTAL_BANKS {
            return Err(Error::config(
                format!("{path}.banks"),
                format!(
                    "channels * ranks * banks = {total_banks} is more than the supported \
                     {MAX_TOTAL_BANKS}"
                ),
            ));
        }
        let order = parse_mapping(&self.mapping)
            .map_err(|m| Error::config(format!("{path}.mapping"), m))?;
        if self.rows.is_none() && order[0] != Field::Row {
            return Err(Error::config(
                format!("{path}.rows"),
                format!(
                    "is required when `row` is not the most significant field of the mapping \
                     (mapping is \"{}\")",
                    self.mapping
                ),
            ));
        }
        let fixed_bits: u32 = LINE_SHIFT
            + Field::ALL
                .iter()
                .map(|&f| self.field_bits(f).unwrap_or(0))
                .sum::<u32>();
        let limit = if self.rows.is_some() { 64 } else { 63 };
        if fixed_bits > limit {
            return Err(Error::config(
                format!("{path}.mapping"),
                format!("the DRAM geometry needs {fixed_bits} address bits, more than 64"),
            ));
        }
        if !(self.tck_ns.is_finite() && self.tck_ns > 0.0) {
            return Err(Error::config(
                format!("{path}.tck_ns"),
                format!(
                    "must be a positive number of nanoseconds, got {}",
                    self.tck_ns
                ),
            ));
        }
        for (key, v) in [
            ("tcl", self.tcl),
            ("trcd", self.trcd),
            ("trp", self.trp),
            ("tras", self.tras),
            ("burst_cycles", self.burst_cycles),
        ] {
            if v == 0 {
                return Err(Error::config(
                    format!("{path}.{key}"),
                    "must be at least 1 DRAM cycle, got 0",
                ));
            }
        }
        if !(self.controller_ns.is_finite() && self.controller_ns >= 0.0) {
            return Err(Error::config(
                format!("{path}.controller_ns"),
                format!(
                    "must be a non-negative number of nanoseconds, got {}",
                    self.controller_ns
                ),
            ));
        }
        Ok(())
    }

    /// Total bytes, when `rows` is given.
    pub fn capacity_bytes(&self) -> Option<u64> {
        let rows = self.rows?;
        u64::from(self.channels)
            .checked_mul(self.ranks.into())?
            .checked_mul(self.banks.into())?
            .checked_mul(rows)?
            .checked_mul(self.row_bytes)
    }

    /// Width in address bits of a field; `None` for an unbounded row field.
    fn field_bits(&self, f: Field) -> Option<u32> {
        let log2 = |v: u64| v.max(1).trailing_zeros();
        match f {
            Field::Row => self.rows.map(log2),
            Field::Rank => Some(log2(self.ranks.into())),
            Field::Bank => Some(log2(self.banks.into())),
            Field::Channel => Some(log2(self.channels.into())),
            Field::Column => Some(log2(self.row_bytes >> LINE_SHIFT)),
        }
    }
}

/// Who issued a DRAM request. Every page-table or other translation-metadata read is
/// `Translation`; everything else is `Data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requester {
    Data,
    Translation,
}

impl Requester {
    /// The other kind.
    pub fn other(self) -> Requester {
        match self {
            Requester::Data => Requester::Translation,
            Requester::Translation => Requester::Data,
        }
    }
}

/// Where an address lands in DRAM. `column` counts 64-byte lines within the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DramCoord {
    pub channel: u64,
    pub rank: u64,
    pub bank: u64,
    pub row: u64,
    pub column: u64,
}

/// DRAM timings converted to core cycles (each rounded up separately).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DramTiming {
    pub tcl: u64,
    pub trcd: u64,
    pub trp: u64,
    pub tras: u64,
    pub burst: u64,
    pub controller: u64,
}

impl DramTiming {
    /// Latency of a row hit on an idle bank, controller overhead included.
    pub fn row_hit(&self) -> u64 {
        self.tcl + self.burst + self.controller
    }
    /// Latency of an access to an idle bank with no open row.
    pub fn row_empty(&self) -> u64 {
        self.trcd + self.row_hit()
    }
    /// Latency of a row conflict on an idle bank whose open row has been open for at least tRAS.
    pub fn row_conflict(&self) -> u64 {
        self.trp + self.row_empty()
    }
}

/// Counters of one requester kind.
#[derive(Serialize, Default, Clone, Debug, PartialEq, Eq)]
pub struct RequesterStats {
    /// Requests (each is one 64-byte line).
    pub reads: u64,
    /// Requests that found their row open.
    pub row_hits: u64,
    /// Requests that found their bank with no open row.
    pub row_empty: u64,
    /// Requests that had to close another row first.
    pub row_conflicts: u64,
    /// Row conflicts of this kind that closed a row opened by the other kind.
    pub interference: u64,
    /// Sum of the returned latencies, core cycles.
    pub total_latency: u64,
    /// Sum of the cycles spent waiting for a busy bank, core cycles.
    pub queue_cycles: u64,
}

impl RequesterStats {
    /// Row misses as Utopia Fig 14 counts them: conflicts plus empty rows.
    pub fn row_misses(&self) -> u64 {
        self.row_empty + self.row_conflicts
    }
    /// Fraction of requests that hit the open row (0 with no requests).
    pub fn row_hit_rate(&self) -> f64 {
        ratio(self.row_hits, self.reads)
    }
    /// Mean latency in core cycles (0 with no requests).
    pub fn avg_latency(&self) -> f64 {
        ratio(self.total_latency, self.reads)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// DRAM stats, serialised as `data.*`, `translation.*` and `interference` (the total of both
/// directions).
#[derive(Serialize, Default, Clone, Debug, PartialEq, Eq)]
pub struct DramStats {
    pub data: RequesterStats,
    pub translation: RequesterStats,
    /// Row conflicts where the closed row was opened by the other requester kind.
    pub interference: u64,
}

impl DramStats {
    pub fn of(&self, r: Requester) -> &RequesterStats {
        match r {
            Requester::Data => &self.data,
            Requester::Translation => &self.translation,
        }
    }
    pub fn reads(&self) -> u64 {
        self.data.reads + self.translation.reads
    }
    pub fn row_hits(&self) -> u64 {
        self.data.row_hits + self.translation.row_hits
    }
    pub fn row_empty(&self) -> u64 {
        self.data.row_empty + self.translation.row_empty
    }
    pub fn row_conflicts(&self) -> u64 {
        self.data.row_conflicts + self.translation.row_conflicts
    }
    /// Conflicts plus empty rows, both kinds.
    pub fn row_misses(&self) -> u64 {
        self.data.row_misses() + self.translation.row_misses()
    }
    /// Fraction of all requests that hit the open row (0 with no requests).
    pub fn row_hit_rate(&self) -> f64 {
        ratio(self.row_hits(), self.reads())
    }
}

/// No row open in a bank. Row numbers are address bits shifted right by at least 6, so they
/// never reach this value.
const NO_ROW: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct Bank {
    open_row: u64,
    /// Who activated the open row.
    opener: Requester,
    /// Core cycle at which the open row was activated.
    activated_at: u64,
    /// Core cycle at which the bank finishes its last data burst.
    busy_until: u64,
}

/// Shift and mask extracting one field from a physical address.
#[derive(Clone, Copy, Debug, Default)]
struct FieldDecode {
    shift: u32,
    mask: u64,
}

impl FieldDecode {
    #[inline]
    fn get(self, addr: u64) -> u64 {
        (addr >> self.shift) & self.mask
    }
    #[inline]
    fn put(self, value: u64) -> u64 {
        (value & self.mask) << self.shift
    }
}

/// The DRAM of a system: decoding, per-bank row-buffer state, timing and stats.
#[derive(Clone, Debug)]
pub struct Dram {
    timing: DramTiming,
    ranks: u64,
    banks_per_rank: u64,
    /// Indexed by `Field::index()`.
    fields: [FieldDecode; 5],
    /// `banks_per_rank - 1` with `bank_xor` (the row bits folded into the bank), else 0.
    bank_xor_mask: u64,
    /// `log2(banks_per_rank)`: the width of one folded group of row bits.
    bank_bits: u32,
    /// Flat `channel × rank × bank` array.
    banks: Vec<Bank>,
    stats: DramStats,
}

/// `dram_cycles` of `tck_ns` each, in cycles of a `core_ghz` clock, rounded up. The small slack
/// keeps products that are integers on paper (20 ns × 2.6 GHz) from rounding up past them.
fn to_core_cycles(ns: f64, core_ghz: f64) -> u64 {
    let c = ns * core_ghz;
    (c - 1e-6).ceil().max(0.0) as u64
}

impl Dram {
    /// Build the DRAM of a validated config for a core clocked at `core_ghz` GHz.
    ///
    /// Panics if `cfg` does not pass [`DramConfig::validate`] or `core_ghz` is not positive;
    /// both are checked by the config layer before the system is built.
    pub fn new(cfg: &DramConfig, core_ghz: f64) -> Dram {
        assert!(
            core_ghz.is_finite() && core_ghz > 0.0,
            "core frequency must be positive, got {core_ghz}"
        );
        let order = parse_mapping(&cfg.mapping)
            .expect("DramConfig::validate must accept the config before Dram::new");
        let mut fields = [FieldDecode::default(); 5];
        let mut shift = LINE_SHIFT;
        for &f in order.iter().rev() {
            let decode = match cfg.field_bits(f) {
                Some(bits) => {
                    assert!(shift + bits <= 64, "DRAM geometry exceeds 64 address bits");
                    let d = FieldDecode {
                        shift: shift.min(63),
                        mask: if bits == 0 {
                            0
                        } else {
                            u64::MAX >> (64 - bits)
                        },
                    };
                    shift += bits;
                    d
                }
                None => {
                    // Unbounded row field: validation guarantees it is the most significant.
                    assert!(shift < 64, "DRAM geometry exceeds 64 address bits");
                    FieldDecode {
                        shift,
                        mask: u64::MAX >> shift,
                    }
                }
            };
            fields[f.index()] = decode;
        }
        let cycles =
            |dram_cycles: u32| to_core_cycles(f64::from(dram_cycles) * cfg.tck_ns, core_ghz);
        let timing = DramTiming {
            tcl: cycles(cfg.tcl),
            trcd: cycles(cfg.trcd),
            trp: cycles(cfg.trp),
            tras: cycles(cfg.tras),
            burst: cycles(cfg.burst_cycles),
            controller: to_core_cycles(cfg.controller_ns, core_ghz),
        };
        let total = cfg.channels as usize * cfg.ranks as usize * cfg.banks as usize;
        Dram {
            timing,
            ranks: cfg.ranks.into(),
            banks_per_rank: cfg.banks.into(),
            fields,
            bank_bits: cfg.banks.trailing_zeros(),
            bank_xor_mask: if cfg.bank_xor {
                u64::from(cfg.banks) - 1
            } else {
                0
            },
            banks: vec![
                Bank {
                    open_row: NO_ROW,
                    opener: Requester::Data,
                    activated_at: 0,
                    busy_until: 0,
                };
                total
            ],
            stats: DramStats::default(),
        }
    }

    /// The timings in core cycles.
    pub fn timing(&self) -> &DramTiming {
        &self.timing
    }

    /// Total number of banks (channels × ranks × banks per rank).
    pub fn num_banks(&self) -> usize {
        self.banks.len()
    }

    /// Where `addr` lands.
    #[inline]
    pub fn decode(&self, addr: PhysAddr) -> DramCoord {
        let a = addr.0;
        let f = &self.fields;
        let row = f[Field::Row.index()].get(a);
        DramCoord {
            channel: f[Field::Channel.index()].get(a),
            rank: f[Field::Rank.index()].get(a),
            bank: f[Field::Bank.index()].get(a) ^ self.row_fold(row),
            row,
            column: f[Field::Column.index()].get(a),
        }
    }

    /// The line address of a coordinate (inverse of [`Dram::decode`] for in-range coordinates;
    /// out-of-range field values are truncated to the field width).
    pub fn encode(&self, c: DramCoord) -> PhysAddr {
        let f = &self.fields;
        PhysAddr(
            f[Field::Channel.index()].put(c.channel)
                | f[Field::Rank.index()].put(c.rank)
                | f[Field::Bank.index()].put(c.bank ^ self.row_fold(c.row))
                | f[Field::Row.index()].put(c.row)
                | f[Field::Column.index()].put(c.column),
        )
    }

    /// What `bank_xor` XORs into the bank bits: the row's bank-wide bit groups XORed
    /// together (0 without `bank_xor`).
    #[inline]
    fn row_fold(&self, mut row: u64) -> u64 {
        if self.bank_xor_mask == 0 {
            return 0;
        }
        let mut fold = 0;
        while row != 0 {
            fold ^= row & self.bank_xor_mask;
            row >>= self.bank_bits;
        }
        fold
    }

    #[inline]
    fn bank_index(&self, c: &DramCoord) -> usize {
        ((c.channel * self.ranks + c.rank) * self.banks_per_rank + c.bank) as usize
    }

    /// Read the line at `addr` for a request issued at core cycle `now`; returns the latency in
    /// core cycles until the data is back, and updates the bank state and stats.
    #[inline]
    pub fn access(&mut self, addr: PhysAddr, now: u64, requester: Requester) -> u64 {
        let c = self.decode(addr);
        let idx = self.bank_index(&c);
        let t = self.timing;
        let bank = &mut self.banks[idx];
        let st = match requester {
            Requester::Data => &mut self.stats.data,
            Requester::Translation => &mut self.stats.translation,
        };

        let start = now.max(bank.busy_until);
        let done = if bank.open_row == c.row {
            st.row_hits += 1;
            start + t.tcl + t.burst
        } else {
            let activate = if bank.open_row == NO_ROW {
                st.row_empty += 1;
                start
            } else {
                st.row_conflicts += 1;
                if bank.opener != requester {
                    st.interference += 1;
                    self.stats.interference += 1;
                }
                let precharge = start.max(bank.activated_at + t.tras);
                precharge + t.trp
            };
            bank.open_row = c.row;
            bank.opener = requester;
            bank.activated_at = activate;
            activate + t.trcd + t.tcl + t.burst
        };
        bank.busy_until = done;

        let latency = done - now + t.controller;
        st.reads += 1;
        st.queue_cycles += start - now;
        st.total_latency += latency;
        latency
    }

    pub fn stats(&self) -> &DramStats {
        &self.stats
    }

    /// Zero the stats (end of warm-up); the row buffers and bank timing are kept.
    pub fn reset_stats(&mut self) {
        self.stats = DramStats::default();
    }

    /// Fraction of all requests so far that hit the open row.
    pub fn row_hit_rate(&self) -> f64 {
        self.stats.row_hit_rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The DDR4-2400 system of `docs/dram.md`.
    fn ddr4() -> DramConfig {
        DramConfig {
            channels: 2,
            ranks: 2,
            banks: 16,
            row_bytes: 8192,
            rows: Some(65536),
            mapping: DEFAULT_MAPPING.into(),
            bank_xor: false,
            tck_ns: 0.833,
            tcl: 17,
            trcd: 17,
            trp: 17,
            tras: 39,
            burst_cycles: 4,
            controller_ns: 20.0,
        }
    }

    /// A 1 GHz DRAM on a 1 GHz core with round timings and no controller overhead, so that
    /// core cycles equal DRAM cycles: hit 14, empty 24, conflict 34, tRAS 50.
    fn simple() -> DramConfig {
        DramConfig {
            channels: 2,
            ranks: 2,
            banks: 16,
            row_bytes: 8192,
            rows: None,
            mapping: DEFAULT_MAPPING.into(),
            bank_xor: false,
            tck_ns: 1.0,
            tcl: 10,
            trcd: 10,
            trp: 10,
            tras: 50,
            burst_cycles: 4,
            controller_ns: 0.0,
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
    fn consecutive_lines_in_a_row_hit() {
        let mut d = Dram::new(&simple(), 1.0);
        let base = at(&d, 0, 0, 3, 7, 0).0;
        let mut now = 0;
        let first = d.access(PhysAddr(base), now, Requester::Data);
        assert_eq!(first, 24);
        now += 1000;
        for i in 1..128 {
            // Column i of the same row, well after the bank is free.
            let lat = d.access(PhysAddr(base + (i << 6)), now, Requester::Data);
            assert_eq!(lat, 14);
            now += 1000;
        }
        let s = &d.stats().data;
        assert_eq!((s.row_empty, s.row_hits, s.row_conflicts), (1, 127, 0));
        assert_eq!(s.queue_cycles, 0);
        assert!((d.row_hit_rate() - 127.0 / 128.0).abs() < 1e-12);
    }

    #[test]
    fn alternating_rows_in_one_bank_conflict() {
        let mut d = Dram::new(&simple(), 1.0);
        let a = at(&d, 1, 0, 5, 100, 0);
        let b = at(&d, 1, 0, 5, 200, 0);
        assert_eq!(d.access(a, 0, Requester::Data), 24);
        let mut now = 1000;
        for i in 0..10 {
            let addr = if i % 2 == 0 { b } else { a };
            assert_eq!(d.access(addr, now, Requester::Data), 34);
            now += 1000;
        }
        let s = &d.stats().data;
        assert_eq!((s.row_empty, s.row_hits, s.row_conflicts), (1, 0, 10));
        assert_eq!(d.stats().interference, 0);
    }

    #[test]
    fn different_banks_do_not_conflict() {
        let mut d = Dram::new(&simple(), 1.0);
        // Same row number in every bank of every rank and channel: all empty, then all hits,
        // even when issued at the same cycle (banks are independent).
        for round in 0..2u64 {
            for ch in 0..2 {
                for rk in 0..2 {
                    for bk in 0..16 {
                        let lat =
                            d.access(at(&d, ch, rk, bk, 9, round), round * 100, Requester::Data);
                        assert_eq!(lat, if round == 0 { 24 } else { 14 });
                    }
                }
            }
        }
        let s = &d.stats().data;
        assert_eq!((s.row_empty, s.row_hits, s.row_conflicts), (64, 64, 0));
        assert_eq!(s.queue_cycles, 0);
        // Different rows in different banks: still no conflicts.
        let mut d = Dram::new(&simple(), 1.0);
        for bk in 0..16 {
            d.access(at(&d, 0, 0, bk, bk * 3, 0), 0, Requester::Data);
        }
        assert_eq!(d.stats().row_conflicts(), 0);
        assert_eq!(d.num_banks(), 64);
    }

    #[test]
    fn busy_bank_makes_requests_wait() {
        let mut d = Dram::new(&simple(), 1.0);
        let a = at(&d, 0, 1, 2, 40, 0);
        let a2 = at(&d, 0, 1, 2, 40, 1);
        assert_eq!(d.access(a, 0, Requester::Data), 24); // busy until 24
                                                         // Hit issued at 10 waits 14 cycles, then takes 14.
        assert_eq!(d.access(a2, 10, Requester::Translation), 28);
        let s = d.stats();
        assert_eq!(s.translation.queue_cycles, 14);
        assert_eq!(s.translation.row_hits, 1);
        assert_eq!(s.data.queue_cycles, 0);
        // Bank is now busy until 38; a request at 38 does not wait.
        assert_eq!(d.access(a, 38, Requester::Data), 14);
        assert_eq!(d.stats().data.queue_cycles, 0);
    }

    #[test]
    fn tras_delays_precharge() {
        let mut d = Dram::new(&simple(), 1.0);
        let a = at(&d, 0, 0, 0, 1, 0);
        let b = at(&d, 0, 0, 0, 2, 0);
        // Row 1 activated at 0, data back at 24.
        assert_eq!(d.access(a, 0, Requester::Data), 24);
        // Conflict at 24: precharge waits for tRAS (50), activate at 60, data at 84.
        assert_eq!(d.access(b, 24, Requester::Data), 60);
        // Row 2 was activated at 60; a conflict at 200 is past tRAS and costs the plain 34.
        assert_eq!(d.access(a, 200, Requester::Data), 34);
        // tRAS waits are not queue cycles.
        assert_eq!(d.stats().data.queue_cycles, 0);
    }

    #[test]
    fn ddr4_2400_at_2_6_ghz() {
        let cfg = ddr4();
        cfg.validate("dram").unwrap();
        let d = Dram::new(&cfg, 2.6);
        // 17 × 0.833 ns × 2.6 = 36.82 → 37; 39 × … = 84.47 → 85; 4 × … = 8.66 → 9; 20 ns → 52.
        assert_eq!(
            *d.timing(),
            DramTiming {
                tcl: 37,
                trcd: 37,
                trp: 37,
                tras: 85,
                burst: 9,
                controller: 52
            }
        );
        assert_eq!(d.timing().row_hit(), 98);
        assert_eq!(d.timing().row_empty(), 135);
        assert_eq!(d.timing().row_conflict(), 172);

        let mut d = d;
        let a = at(&d, 0, 0, 0, 1, 0);
        let a2 = at(&d, 0, 0, 0, 1, 1);
        let b = at(&d, 0, 0, 0, 2, 0);
        assert_eq!(d.access(a, 0, Requester::Data), 135);
        assert_eq!(d.access(a2, 1000, Requester::Data), 98);
        assert_eq!(d.access(b, 2000, Requester::Data), 172);
        // Conflict right after the activation: busy until 2000+37+37+37+9 = 2120, row
        // activated at 2037, so precharge at max(2120, 2037+85 = 2122), data at
        // 2122+37+37+37+9 = 2242: two cycles more than an unconstrained conflict.
        assert_eq!(d.access(a, 2120, Requester::Data), 2242 - 2120 + 52);
        assert_eq!(2242 - 2120 + 52, d.timing().row_conflict() + 2);
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

        // Serialised as a tree with `data` / `translation` subtrees.
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["data"]["row_hits"], 2);
        assert_eq!(v["translation"]["reads"], 2);
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
        let t0 = 0;
        d.access(a, t0, Requester::Translation); // translation opens row 10
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
        check(&|c| c.tcl = 0, "system.dram.tcl", "at least 1");
        check(&|c| c.trcd = 0, "system.dram.trcd", "at least 1");
        check(&|c| c.trp = 0, "system.dram.trp", "at least 1");
        check(&|c| c.tras = 0, "system.dram.tras", "at least 1");
        check(
            &|c| c.burst_cycles = 0,
            "system.dram.burst_cycles",
            "at least 1",
        );
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
        // Whitespace around field names is tolerated.
        let mut cfg = ddr4();
        cfg.mapping = "row : rank : bank : channel : column".into();
        cfg.validate("dram").unwrap();
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Wrapper {
        dram: DramConfig,
    }

    #[test]
    fn docs_snippet_parses_and_matches() {
        let doc = include_str!("../../../../docs/dram.md");
        let start = doc
            .find("```toml\n[dram]")
            .expect("docs/dram.md has a [dram] snippet")
            + 8;
        let end = start + doc[start..].find("```").unwrap();
        let w: Wrapper = toml::from_str(&doc[start..end]).unwrap();
        w.dram.validate("dram").unwrap();
        let d = ddr4();
        assert_eq!(
            serde_json::to_value(&w.dram).unwrap(),
            serde_json::to_value(&d).unwrap()
        );
    }

    #[test]
    fn unknown_keys_are_rejected_and_mapping_defaults() {
        let base = "channels = 1\nranks = 1\nbanks = 8\nrow_bytes = 2048\ntck_ns = 1.25\n\
                    tcl = 11\ntrcd = 11\ntrp = 11\ntras = 28\nburst_cycles = 4\ncontroller_ns = 0\n";
        let cfg: DramConfig = toml::from_str(base).unwrap();
        assert_eq!(cfg.mapping, DEFAULT_MAPPING);
        assert_eq!(cfg.rows, None);
        cfg.validate("dram").unwrap();
        let err = toml::from_str::<DramConfig>(&format!("{base}tfaw = 20\n")).unwrap_err();
        assert!(err.to_string().contains("tfaw"), "{err}");
    }

    proptest! {
        #[test]
        fn latency_bounds_and_counts(
            reqs in prop::collection::vec(
                (0u64..4, 0u64..2, 0u64..4, 0u64..128, 0u64..300, any::<bool>()),
                1..400,
            ),
            ddr in any::<bool>(),
        ) {
            let (cfg, ghz) = if ddr { (ddr4(), 2.6) } else { (simple(), 1.0) };
            let mut d = Dram::new(&cfg, ghz);
            let t = *d.timing();
            let mut now = 0;
            for &(bank, channel, row, column, gap, translation) in &reqs {
                now += gap;
                let r = if translation { Requester::Translation } else { Requester::Data };
                let addr = at(&d, channel, 0, bank, row, column);
                let before = d.stats().of(r).queue_cycles;
                let lat = d.access(addr, now, r);
                let queued = d.stats().of(r).queue_cycles - before;
                prop_assert!(lat >= t.row_hit());
                prop_assert!(lat >= queued + t.row_hit());
                // A conflict waits at most tRAS for the precharge.
                prop_assert!(lat <= queued + t.row_conflict() + t.tras);
            }
            let s = d.stats();
            let n = reqs.len() as u64;
            prop_assert_eq!(s.reads(), n);
            prop_assert_eq!(s.row_hits() + s.row_empty() + s.row_conflicts(), n);
            for k in [&s.data, &s.translation] {
                prop_assert_eq!(k.row_hits + k.row_empty + k.row_conflicts, k.reads);
                prop_assert!(k.interference <= k.row_conflicts);
                prop_assert!(k.total_latency >= k.reads * t.row_hit());
            }
            prop_assert_eq!(s.interference, s.data.interference + s.translation.interference);
            // At most one empty access per bank touched.
            prop_assert!(s.row_empty() <= 4 * 2);
        }

        /// Row hits, empty rows, conflicts and interference match an open-row model written
        /// from the definitions, on random streams over random geometries and mappings; with
        /// accesses far apart (idle banks, tRAS long past) each latency is exactly its class's.
        #[test]
        fn row_buffer_outcomes_match_an_open_row_reference(
            order in Just(vec!["row", "rank", "bank", "channel", "column"]).prop_shuffle(),
            log2 in (0u32..3, 0u32..2, 1u32..5, 4u32..8, prop::option::of(4u32..12)),
            reqs in prop::collection::vec((0u64..(1 << 26), any::<bool>(), 0u64..60), 1..500),
            apart in any::<bool>(),
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
            for &(line, translation, gap) in &reqs {
                now += if apart { 100_000 } else { gap };
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
                let latency = d.access(PhysAddr(addr), now, r);
                if apart {
                    prop_assert_eq!(latency, class + t.controller);
                }
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
}
