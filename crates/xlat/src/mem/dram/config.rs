//! The `[dram]` table: geometry, address mapping and datasheet timings, and their conversion
//! to core cycles.

use crate::addr::LINE_SHIFT;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The address mapping used when a config does not name one.
pub const DEFAULT_MAPPING: &str = "row:rank:bank:channel:column";

/// Upper bound on channels × ranks × banks (the per-bank state is a flat array).
const MAX_TOTAL_BANKS: u64 = 1 << 20;

/// Upper bound on the write queue (entries are scheduled in batches of up to this many).
const MAX_WRITE_QUEUE: u32 = 1 << 12;

fn default_mapping() -> String {
    DEFAULT_MAPPING.to_string()
}
fn default_bank_groups() -> u32 {
    1
}
fn default_write_queue() -> u32 {
    64
}
fn default_write_high() -> u32 {
    48
}
fn default_write_low() -> u32 {
    16
}
fn default_rtw_turnaround() -> u32 {
    2
}

/// DRAM geometry and timing, the `[dram]` table of a system config.
///
/// Timings are in DRAM clock cycles of `tck_ns` nanoseconds; [`super::Dram::new`] converts them
/// to core cycles. Call [`DramConfig::validate`] before [`super::Dram::new`]. `docs/dram.md`
/// says what each timing constrains.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// Independent channels (power of two), each with its own command and data bus.
    pub channels: u32,
    /// Ranks per channel (power of two).
    pub ranks: u32,
    /// Banks per rank, all bank groups together (power of two; 16 for DDR4 x8).
    pub banks: u32,
    /// Bank groups per rank (power of two dividing `banks`; 4 for DDR4 x8). A bank's group is
    /// the low `log2(bank_groups)` bits of its bank number, so consecutive bank numbers
    /// alternate groups. 1 makes tCCD_L and tRRD_L apply between all banks.
    #[serde(default = "default_bank_groups")]
    pub bank_groups: u32,
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
    /// Read CAS latency: read command to first data.
    pub tcl: u32,
    /// Write CAS latency: write command to first data.
    pub tcwl: u32,
    /// Activate to read or write.
    pub trcd: u32,
    /// Precharge to activate.
    pub trp: u32,
    /// Activate to precharge of the same row.
    pub tras: u32,
    /// Clocks one 64-byte burst holds the data bus (4 for BL8 on a double-data-rate bus).
    pub burst_cycles: u32,
    /// Column command to column command, different bank groups.
    pub tccd_s: u32,
    /// Column command to column command, same bank group.
    pub tccd_l: u32,
    /// Activate to activate in one rank, different bank groups.
    pub trrd_s: u32,
    /// Activate to activate in one rank, same bank group.
    pub trrd_l: u32,
    /// Four-activate window: at most four activates in one rank within any `tfaw` clocks.
    pub tfaw: u32,
    /// Write recovery: end of write data to precharge of that bank.
    pub twr: u32,
    /// Read to precharge of that bank.
    pub trtp: u32,
    /// End of write data to a read command in the same rank, different bank groups.
    pub twtr_s: u32,
    /// End of write data to a read command in the same rank, same bank group.
    pub twtr_l: u32,
    /// Idle clocks on the data bus between a read burst and a following write burst (the bus
    /// turns around; 2 for DDR4 with a one-clock preamble).
    #[serde(default = "default_rtw_turnaround")]
    pub rtw_turnaround: u32,
    /// Average refresh interval: every `trefi` clocks each rank refreshes all its banks
    /// (closing their rows) and takes no command for `trfc`. 0 turns refresh off.
    pub trefi: u32,
    /// Refresh cycle time.
    pub trfc: u32,
    /// Write-queue entries per channel: dirty lines the LLC evicts wait here.
    #[serde(default = "default_write_queue")]
    pub write_queue: u32,
    /// A channel starts draining its write queue when it holds this many writes...
    #[serde(default = "default_write_high")]
    pub write_high: u32,
    /// ...and drains it down to this many, in one batch.
    #[serde(default = "default_write_low")]
    pub write_low: u32,
    /// Fixed queue/controller/interconnect overhead added to every read, nanoseconds (>= 0).
    pub controller_ns: f64,
}

/// One field of the DRAM address mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Field {
    Row,
    Rank,
    Bank,
    Channel,
    Column,
}

impl Field {
    pub(super) const ALL: [Field; 5] = [
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

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// Parse a mapping string into its fields, most significant first.
pub(super) fn parse_mapping(mapping: &str) -> std::result::Result<[Field; 5], String> {
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
    /// The state of every bank (and of the ranks, bank groups and channels).
    pub fn host_uses(&self, path: &str, uses: &mut crate::config::HostUses) {
        let banks = u64::from(self.channels) * u64::from(self.ranks) * u64::from(self.banks);
        uses.once(
            format!("{path}.banks"),
            banks,
            "banks in all",
            super::HOST_BYTES_PER_BANK,
        );
    }

    /// Check the config; errors name the offending key as `{path}.field`.
    pub fn validate(&self, path: &str) -> Result<()> {
        let err = |key: &str, msg: String| Error::config(format!("{path}.{key}"), msg);
        let pow2 = |key: &str, v: u64| -> Result<()> {
            if v.is_power_of_two() {
                Ok(())
            } else {
                Err(err(key, format!("must be a power of two, got {v}")))
            }
        };
        pow2("channels", self.channels.into())?;
        pow2("ranks", self.ranks.into())?;
        pow2("banks", self.banks.into())?;
        pow2("bank_groups", self.bank_groups.into())?;
        if self.bank_groups > self.banks {
            return Err(err(
                "bank_groups",
                format!(
                    "{} bank groups cannot divide {} banks",
                    self.bank_groups, self.banks
                ),
            ));
        }
        pow2("row_bytes", self.row_bytes)?;
        if self.row_bytes < 1 << LINE_SHIFT {
            return Err(err(
                "row_bytes",
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
            return Err(err(
                "banks",
                format!(
                    "channels * ranks * banks = {total_banks} is more than the supported \
                     {MAX_TOTAL_BANKS}"
                ),
            ));
        }
        let order = parse_mapping(&self.mapping).map_err(|m| err("mapping", m))?;
        if self.rows.is_none() && order[0] != Field::Row {
            return Err(err(
                "rows",
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
            return Err(err(
                "mapping",
                format!("the DRAM geometry needs {fixed_bits} address bits, more than 64"),
            ));
        }
        // A clock of less than a picosecond or more than a millisecond is a unit mistake.
        if !(self.tck_ns.is_finite() && (1e-3..=1e6).contains(&self.tck_ns)) {
            return Err(err(
                "tck_ns",
                format!(
                    "must be a positive number of nanoseconds (0.001 to 1e6), got {}",
                    self.tck_ns
                ),
            ));
        }
        for (key, v) in [
            ("tcl", self.tcl),
            ("tcwl", self.tcwl),
            ("trcd", self.trcd),
            ("trp", self.trp),
            ("tras", self.tras),
            ("burst_cycles", self.burst_cycles),
            ("tccd_s", self.tccd_s),
            ("tccd_l", self.tccd_l),
            ("trrd_s", self.trrd_s),
            ("trrd_l", self.trrd_l),
            ("tfaw", self.tfaw),
            ("twr", self.twr),
            ("trtp", self.trtp),
            ("twtr_s", self.twtr_s),
            ("twtr_l", self.twtr_l),
        ] {
            if v == 0 {
                return Err(err(key, "must be at least 1 DRAM cycle, got 0".into()));
            }
            // Timings are tens of clocks; a million is a unit mistake that would make every
            // access take seconds of simulated time.
            if v > 1_000_000 {
                return Err(err(
                    key,
                    format!("must be at most 1000000 DRAM cycles, got {v}"),
                ));
            }
        }
        for (key, v) in [
            ("rtw_turnaround", self.rtw_turnaround),
            ("trfc", self.trfc),
            ("trefi", self.trefi),
        ] {
            if v > 100_000_000 {
                return Err(err(
                    key,
                    format!("must be at most 1e8 DRAM cycles, got {v}"),
                ));
            }
        }
        if self.tccd_l < self.tccd_s || self.trrd_l < self.trrd_s || self.twtr_l < self.twtr_s {
            return Err(err(
                "tccd_l",
                "the same-bank-group timings (tccd_l, trrd_l, twtr_l) must be at least the \
                 different-group ones (tccd_s, trrd_s, twtr_s)"
                    .into(),
            ));
        }
        if self.trefi > 0 && self.trfc == 0 {
            return Err(err(
                "trfc",
                "must be at least 1 DRAM cycle when trefi > 0".into(),
            ));
        }
        if self.trefi > 0 && self.trfc >= self.trefi {
            return Err(err(
                "trfc",
                format!(
                    "a refresh ({}) must be shorter than the refresh interval trefi ({})",
                    self.trfc, self.trefi
                ),
            ));
        }
        if self.write_queue == 0 || self.write_queue > MAX_WRITE_QUEUE {
            return Err(err(
                "write_queue",
                format!(
                    "must be 1 to {MAX_WRITE_QUEUE} entries, got {}",
                    self.write_queue
                ),
            ));
        }
        if !(self.write_low < self.write_high && self.write_high <= self.write_queue) {
            return Err(err(
                "write_high",
                format!(
                    "needs write_low < write_high <= write_queue, got {} < {} <= {}",
                    self.write_low, self.write_high, self.write_queue
                ),
            ));
        }
        if !(self.controller_ns.is_finite() && (0.0..=1e6).contains(&self.controller_ns)) {
            return Err(err(
                "controller_ns",
                format!(
                    "must be a non-negative number of nanoseconds (at most 1e6), got {}",
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
    pub(super) fn field_bits(&self, f: Field) -> Option<u32> {
        let log2 = |v: u64| v.max(1).trailing_zeros();
        match f {
            Field::Row => self.rows.map(log2),
            Field::Rank => Some(log2(self.ranks.into())),
            Field::Bank => Some(log2(self.banks.into())),
            Field::Channel => Some(log2(self.channels.into())),
            Field::Column => Some(log2(self.row_bytes >> LINE_SHIFT)),
        }
    }

    /// Peak data bandwidth of one channel in bytes per nanosecond (GB/s): one 64-byte burst
    /// every `burst_cycles` clocks.
    pub fn channel_peak_gbps(&self) -> f64 {
        64.0 / (f64::from(self.burst_cycles) * self.tck_ns)
    }
}

/// DRAM timings converted to core cycles (each rounded up separately).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DramTiming {
    pub tcl: u64,
    pub tcwl: u64,
    pub trcd: u64,
    pub trp: u64,
    pub tras: u64,
    pub burst: u64,
    pub tccd_s: u64,
    pub tccd_l: u64,
    pub trrd_s: u64,
    pub trrd_l: u64,
    pub tfaw: u64,
    pub twr: u64,
    pub trtp: u64,
    pub twtr_s: u64,
    pub twtr_l: u64,
    pub rtw_turnaround: u64,
    pub trefi: u64,
    pub trfc: u64,
    pub controller: u64,
}

/// `ns` nanoseconds in cycles of a `core_ghz` clock, rounded up. The small slack keeps
/// products that are integers on paper (20 ns × 2.6 GHz) from rounding up past them.
pub(super) fn to_core_cycles(ns: f64, core_ghz: f64) -> u64 {
    let c = ns * core_ghz;
    (c - 1e-6).ceil().max(0.0) as u64
}

impl DramTiming {
    /// The timings of a validated `cfg` in cycles of a `core_ghz` clock.
    pub fn new(cfg: &DramConfig, core_ghz: f64) -> DramTiming {
        let cycles = |n: u32| to_core_cycles(f64::from(n) * cfg.tck_ns, core_ghz);
        DramTiming {
            tcl: cycles(cfg.tcl),
            tcwl: cycles(cfg.tcwl),
            trcd: cycles(cfg.trcd),
            trp: cycles(cfg.trp),
            tras: cycles(cfg.tras),
            burst: cycles(cfg.burst_cycles).max(1),
            tccd_s: cycles(cfg.tccd_s),
            tccd_l: cycles(cfg.tccd_l),
            trrd_s: cycles(cfg.trrd_s),
            trrd_l: cycles(cfg.trrd_l),
            tfaw: cycles(cfg.tfaw),
            twr: cycles(cfg.twr),
            trtp: cycles(cfg.trtp),
            twtr_s: cycles(cfg.twtr_s),
            twtr_l: cycles(cfg.twtr_l),
            rtw_turnaround: cycles(cfg.rtw_turnaround),
            trefi: cycles(cfg.trefi),
            trfc: cycles(cfg.trfc),
            controller: to_core_cycles(cfg.controller_ns, core_ghz),
        }
    }

    /// Latency of a read that hits the open row of an idle bank, controller overhead included.
    pub fn row_hit(&self) -> u64 {
        self.tcl + self.burst + self.controller
    }
    /// Latency of a read to an idle bank with no open row.
    pub fn row_empty(&self) -> u64 {
        self.trcd + self.row_hit()
    }
    /// Latency of a read that must close another row of an idle bank, open for at least tRAS.
    pub fn row_conflict(&self) -> u64 {
        self.trp + self.row_empty()
    }
    /// Row cycle time: activate to activate of one bank (tRAS + tRP).
    pub fn trc(&self) -> u64 {
        self.tras + self.trp
    }
    /// The earliest precharge a column command at `cas` allows its row: tRTP after a read,
    /// tWR after the end of a write's data.
    pub fn pre_after(&self, cas: u64, write: bool) -> u64 {
        if write {
            cas + self.tcwl + self.burst + self.twr
        } else {
            cas + self.trtp
        }
    }
}
