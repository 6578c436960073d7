//! DRAM: channels × ranks × bank groups × banks, shared by data and translation traffic,
//! timed as the datasheet times it.
//!
//! Every request reserves, at the cycle it is issued, what a real controller would use for it
//! ([`calendar`]): its bank (row state; tRAS, tRP, tRCD, tRTP, tWR), its rank's activation
//! window (tRRD_S/L, tFAW) and refresh (tREFI, tRFC), and its channel's data bus (one burst at
//! a time, kept apart from the other bursts by the gaps between their column commands and
//! data: tCCD_L within a bank group, read/write turnarounds tWTR_S/L and `rtw_turnaround`). The
//! command bus is not booked on its own: column commands are a burst apart on the data bus,
//! and an activate or precharge meeting another command would move by one clock. A row hit
//! therefore costs its bank only a column slot, and consecutive hits stream at the bus's rate.
//!
//! Dirty lines the LLC evicts are writes ([`Dram::write`]): they wait in their channel's write
//! queue until it reaches its high watermark, and are then drained down to the low watermark
//! in one batch, grouped by bank and row (row hits first), through the same resources as reads.
//!
//! Requests are scheduled when the engine calls, but at their own issue cycle: a request
//! issued earlier than one already scheduled takes the earliest slots the scheduled ones left
//! free, and may hit a row in the time before a later request closes it (first-ready: hits go
//! first where that delays no one). What a scheduled request was promised never changes; a
//! row conflict issued before, but called after, requests already scheduled on its bank waits
//! for them (`docs/dram.md`, "Order of calls").
//!
//! Every read is tagged with a [`Requester`] so that the stats separate data from translation
//! metadata and count *interference*: row conflicts where one kind closes a row the other kind
//! opened (Utopia Figs 4 and 14). `docs/dram.md` gives each timing, what it constrains, and the
//! closed forms the tests check.

mod calendar;
mod config;
pub mod log;
#[cfg(test)]
mod tests;

pub use config::{DramConfig, DramTiming, DEFAULT_MAPPING};

use crate::addr::{PhysAddr, LINE_SHIFT};
use crate::mem::sorted::partition_point_back;
use calendar::{Calendar, Slot};
use config::{parse_mapping, Field};
use serde::Serialize;

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
    /// Sum of the cycles beyond each request's unloaded latency for its row outcome (waits
    /// for banks, buses, activation windows, refresh and write drains), core cycles.
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
    /// Dirty lines written back, drained from the write queues.
    pub writes: WriteStats,
    /// Core cycles the data buses carried bursts, over all channels (reads and writes).
    pub data_bus_cycles: u64,
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

/// Counters of the DRAM writes (dirty lines evicted from the LLC).
#[derive(Serialize, Default, Clone, Debug, PartialEq, Eq)]
pub struct WriteStats {
    /// Lines written.
    pub writes: u64,
    pub row_hits: u64,
    pub row_empty: u64,
    pub row_conflicts: u64,
    /// Batches the write queues were drained in.
    pub drains: u64,
}

/// One row's time open in a bank: activated at `act`, precharged at `close`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Episode {
    row: u64,
    /// Who activated it.
    opener: Requester,
    act: u64,
    /// The earliest precharge its accesses allow: tRTP after its latest read command and
    /// tWR after the end of its latest write data.
    pre_ready: u64,
    /// Its precharge, or [`OPEN`] for a bank's last row, open until a request for another
    /// row closes it (open-page policy). A refresh also closes it ([`Dram::same_refresh`]).
    close: u64,
}

/// A bank drops its closed rows once it keeps this many ([`Bank::trim`]).
const TRIM_AT: usize = 8;

/// Most rows a bank keeps, closed by the floor or not ([`Bank::trim`]).
const ROWS_KEPT: usize = 32;

/// Rows of a bank a request tries, from the one open at its cycle, before it goes after the
/// last: a request issued long before the rows booked on its bank (a page copy's burst ahead
/// of it) would otherwise search every gap between them.
const ROWS_TRIED: usize = 4;

/// The `close` of a row still open.
const OPEN: u64 = u64::MAX;

/// One bank's rows over time. Requests are called in program order but issued out of order
/// in time (and, on several cores, each core's requests run ahead of the others' by up to a
/// memory latency), so a request issued before rows already booked on its bank is served in
/// the time before them: as a hit in a row open then, or as a row of its own in a gap between
/// two, where the precharge, activate, access and precharge it needs fit before the next
/// row's activate. Only a request that fits in no gap waits for the rows booked after it.
#[derive(Clone, Debug, Default)]
struct Bank {
    /// In order of time, each closed before the next opens; rows closed by the floor are
    /// dropped (no request can reach them).
    rows: Vec<Episode>,
    /// The precharge of the last row dropped (0: none): the bank is closed from then until
    /// `rows[0]`.
    closed_from: u64,
}

impl Bank {
    /// Drop the rows that closed by `floor`, keeping at least the last. Only once there are
    /// a few: the searches start at the row open at the request's cycle (found from the
    /// newest), so rows before it cost nothing, and dropping them one at a time would move
    /// the rest on every request.
    #[inline]
    fn trim(&mut self, floor: u64) {
        if self.rows.len() < TRIM_AT {
            return;
        }
        let n = self.rows.iter().take_while(|e| e.close <= floor).count();
        // A floor that stays behind (requests issued at one cycle, as a page copy's) keeps at
        // most `ROWS_KEPT`: the oldest beyond them count as closed, so a request issued before
        // them waits for them (as every request once did for the rows booked after it).
        let n = n.max(self.rows.len().saturating_sub(ROWS_KEPT));
        let n = n.min(self.rows.len().saturating_sub(1));
        if n > 0 {
            self.closed_from = self.rows[n - 1].close;
            self.rows.drain(..n);
        }
    }
}

/// What [`Dram::open_row`] needs of a request: its row, bank group and bank, its issue cycle
/// and who asked.
#[derive(Clone, Copy, Debug)]
struct RowRequest {
    row: u64,
    group: u64,
    bank: usize,
    at: u64,
    requester: Requester,
}

/// The last data-bus slot one request's attempts found, and the cycle searched from
/// ([`Dram::earliest_cas_again`]).
#[derive(Clone, Copy, Debug, Default)]
struct FoundSlot(Option<(u64, Slot)>);

/// How a request found its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowOutcome {
    Hit,
    Empty,
    Conflict,
}

/// Runs of a drain's writes to one bank longer than this are sorted by a library sort, not by
/// insertion.
const INSERTION_RUN: usize = 16;

/// A write waiting in its channel's queue.
#[derive(Clone, Copy, Debug)]
struct QueuedWrite {
    coord: DramCoord,
    bank: usize,
    at: u64,
}

/// One channel: its data bus and write queue.
#[derive(Clone, Debug)]
struct Channel {
    /// Bursts, tagged by [`BurstGaps::tag`].
    data_bus: Calendar,
    writes: Vec<QueuedWrite>,
}

/// One burst to schedule on a channel's data bus.
#[derive(Clone, Copy, Debug)]
struct Burst {
    ch: usize,
    /// Its rank, over all channels.
    rank: usize,
    /// A write's burst (else a read's).
    write: bool,
    /// From its column command to its data: tCL or tCWL.
    data_delay: u64,
    /// [`BurstGaps::tag`].
    tag: u32,
}

/// A rank's refresh intervals: interval `k` begins at `offset + (k - 1) * trefi` with the
/// refresh itself, `trfc` long. The last interval asked about is remembered, so the division
/// that finds one is made only when time has moved into another (requests come at nearby
/// cycles).
#[derive(Clone, Debug, Default)]
struct RefreshClock {
    trefi: u64,
    trfc: u64,
    offset: u64,
    /// The last interval found.
    last: std::cell::Cell<Interval>,
}

/// One refresh interval: `[start, start + len)`, refreshing until `busy_end` (`start + trfc`;
/// 0 in interval 0, before the rank's first refresh).
#[derive(Clone, Copy, Debug, Default)]
struct Interval {
    start: u64,
    len: u64,
    busy_end: u64,
}

impl RefreshClock {
    fn new(trefi: u64, trfc: u64, offset: u64) -> RefreshClock {
        RefreshClock {
            trefi,
            trfc,
            offset,
            last: std::cell::Cell::new(if trefi == 0 {
                // No refresh: one interval, all of time, never refreshing.
                Interval {
                    start: 0,
                    len: u64::MAX,
                    busy_end: 0,
                }
            } else {
                // Nothing found yet: an empty interval holds no cycle.
                Interval::default()
            }),
        }
    }

    /// The interval holding cycle `x`. Interval 0, before the rank's first refresh, starts
    /// at 0 and holds no refresh.
    #[inline]
    fn interval(&self, x: u64) -> Interval {
        let last = self.last.get();
        if x.wrapping_sub(last.start) < last.len {
            return last;
        }
        self.find(x)
    }

    /// [`RefreshClock::interval`] by division (`trefi > 0`), remembered.
    #[cold]
    fn find(&self, x: u64) -> Interval {
        let k = (x + self.trefi - self.offset) / self.trefi;
        let found = if k == 0 {
            Interval {
                start: 0,
                len: self.offset,
                busy_end: 0,
            }
        } else {
            let start = self.offset + (k - 1) * self.trefi;
            Interval {
                start,
                len: self.trefi,
                busy_end: start + self.trfc,
            }
        };
        self.last.set(found);
        found
    }
}

/// One rank: its refresh and its activates.
#[derive(Clone, Debug, Default)]
struct Rank {
    refresh: RefreshClock,
    acts: Activates,
}

/// A rank's activates in order of time, with their bank groups: where tRRD_S/L and tFAW let
/// another go.
#[derive(Clone, Debug, Default)]
struct Activates {
    /// `(cycle, bank group)`.
    acts: Vec<(u64, u64)>,
    /// No activate before this cycle (older activates were dropped; see `calendar::KEEP`).
    horizon: u64,
    /// Activates held when the next trim looks for ended ones: twice what the last trim kept
    /// (at least `TRIM_MIN_ACTS`), so trims cost O(1) an activate.
    trim_at: usize,
    /// The timings that space activates (kept here, so that the searches read no more).
    t: ActTimings,
}

/// tRRD_S, tRRD_L and tFAW, in core cycles.
#[derive(Clone, Copy, Debug, Default)]
struct ActTimings {
    trrd_s: u64,
    trrd_l: u64,
    tfaw: u64,
}

/// Where [`Activates::earliest`] found room for an activate: its cycle, and the index it takes
/// among the rank's activates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ActSlot {
    act: u64,
    index: usize,
}

/// Activates kept at least before a trim.
const TRIM_MIN_ACTS: usize = 32;

/// Activates kept at most. A trim drops those a tFAW before the floor; if the floor has not
/// moved and this many remain, the oldest half goes, below a horizon (as calendars do).
const KEEP_ACTS: usize = 256;

impl Activates {
    fn new(t: &DramTiming) -> Activates {
        Activates {
            t: ActTimings {
                trrd_s: t.trrd_s,
                trrd_l: t.trrd_l,
                tfaw: t.tfaw,
            },
            ..Activates::default()
        }
    }

    /// The earliest activate at or after `at` for bank group `group` that keeps tRRD_S/L to
    /// every other activate and at most four in any tFAW.
    ///
    /// The gaps between the activates are tried in order of time from `at`'s. In a gap, the
    /// activates before it bound the activate from below (tRRD to each, tFAW to the fourth
    /// before); it fits if it then keeps tRRD to the activates after it and every window of
    /// five holding it spans tFAW. Requests mostly come after every activate: one gap, the
    /// last. The slot also holds where the activate goes among the others (after every one
    /// at or before it), so that booking it needs no second search.
    fn earliest(&self, group: u64, at: u64) -> ActSlot {
        let (acts, t) = (&self.acts, self.t);
        let rrd = |g: u64| if g == group { t.trrd_l } else { t.trrd_s };
        let mut a = at.max(self.horizon);
        // `a` goes after `acts[..p]` and before `acts[p..]`.
        let mut p = partition_point_back(acts, |&(x, _)| x <= a);
        loop {
            for &(x, g) in acts[..p].iter().rev() {
                if x + t.trrd_l <= a {
                    break;
                }
                a = a.max(x + rrd(g));
            }
            if p >= 4 {
                a = a.max(acts[p - 4].0 + t.tfaw);
            }
            if p == acts.len() {
                // After every activate: nothing after it to keep tRRD or tFAW to.
                return ActSlot { act: a, index: p };
            }
            let in_gap = acts.get(p).is_none_or(|&(x, _)| a < x);
            let rrd_after = || {
                acts[p..]
                    .iter()
                    .take_while(|&&(x, _)| x < a + t.trrd_l)
                    .all(|&(x, g)| a + rrd(g) <= x)
            };
            // The windows of five holding `a`: `4 - k` activates before it, `k` after.
            let faw_after = || {
                (1..=4usize).all(|k| {
                    if p + k > acts.len() || p + k < 4 {
                        return true;
                    }
                    let first = if k < 4 { acts[p + k - 4].0 } else { a };
                    acts[p + k - 1].0 >= first + t.tfaw
                })
            };
            if in_gap && rrd_after() && faw_after() {
                return ActSlot { act: a, index: p };
            }
            p += 1;
        }
    }

    /// Book the activate [`Activates::earliest`] found for bank group `group`, with no
    /// activate booked since; `floor` is the cycle before which nothing will be issued.
    fn book(&mut self, slot: ActSlot, group: u64, floor: u64) {
        let t = self.t;
        let acts = &mut self.acts;
        let (act, p) = (slot.act, slot.index);
        debug_assert_eq!(p, partition_point_back(acts, |&(x, _)| x <= act));
        acts.insert(p, (act, group));
        if acts.len() >= self.trim_at.max(TRIM_MIN_ACTS) {
            let ended = acts.partition_point(|&(x, _)| x + t.tfaw <= floor);
            let drop = if acts.len() - ended >= KEEP_ACTS {
                let half = acts.len() / 2;
                self.horizon = self.horizon.max(acts[half - 1].0 + t.tfaw);
                half
            } else {
                ended
            };
            acts.drain(..drop);
            self.trim_at = 2 * acts.len();
        }
    }
}

/// Host bytes of one bank's state with its share of its rank's and channel's (a bank has at
/// most one of each): config host-memory checks.
const HOST_BYTES_PER_BANK: u64 = (std::mem::size_of::<Bank>()
    + std::mem::size_of::<Rank>()
    + std::mem::size_of::<Channel>()) as u64;

/// The idle data-bus cycles one burst must leave before another, by what the two share. A
/// burst's tag holds its direction, rank and bank group.
#[derive(Clone, Copy, Debug)]
struct BurstGaps {
    /// Indexed by [`BurstGaps::index`].
    gap: [u64; 16],
    /// The largest gap.
    max: u64,
}

impl BurstGaps {
    /// The gaps of `t`'s timings, for bursts `t.burst.max(t.tccd_s)` long.
    fn new(t: &DramTiming) -> BurstGaps {
        let len = t.burst.max(t.tccd_s);
        let mut gap = [0; 16];
        for (i, g) in gap.iter_mut().enumerate() {
            let (w0, w1) = (i & 1 == 1, i & 2 == 2);
            let (same_rank, same_group) = (i & 4 == 4, i & 12 == 12);
            let delay = |w: bool| if w { t.tcwl } else { t.tcl };
            // The data bus turns around between reads and writes: a read after a write to the
            // same rank waits tWTR (S or L by bank group) after the write data, then its CAS
            // latency.
            let turnaround = match (w0, w1) {
                (false, false) | (true, true) => 0,
                (false, true) => t.rtw_turnaround,
                (true, false) if !same_rank => t.rtw_turnaround,
                (true, false) => (if same_group { t.twtr_l } else { t.twtr_s }) + t.tcl,
            };
            // Column commands to one bank group are tCCD_L apart: the bursts, a data delay
            // after their commands, `tccd_l + delay(after) - delay(before)` apart.
            let ccd = if same_group {
                (t.tccd_l + delay(w1)).saturating_sub(delay(w0) + len)
            } else {
                0
            };
            *g = turnaround.max(ccd);
        }
        BurstGaps {
            max: gap.iter().copied().max().unwrap_or(0),
            gap,
        }
    }

    /// The tag of a burst: its direction, rank and bank group.
    #[inline]
    fn tag(write: bool, rank: usize, group: u64) -> u32 {
        (write as u32) | ((rank as u32) << 1) | ((group as u32) << 24)
    }

    /// Where the gap from a burst tagged `before` to one tagged `after` is kept: bit 0 the
    /// first's direction, bit 1 the second's, bit 2 same rank, bit 3 same rank and group.
    #[inline]
    fn index(before: u32, after: u32) -> usize {
        let differ = before ^ after;
        let same_rank = differ & 0xFF_FFFE == 0;
        let same_group = same_rank && differ >> 24 == 0;
        (before & 1) as usize
            | ((after & 1) as usize) << 1
            | (same_rank as usize) << 2
            | (same_group as usize) << 3
    }

    #[inline]
    fn between(&self, before: u32, after: u32) -> u64 {
        self.gap[BurstGaps::index(before, after)]
    }
}

/// The DRAM of a system: decoding, per-bank row state, the timing resources and stats.
#[derive(Clone, Debug)]
pub struct Dram {
    timing: DramTiming,
    ranks: u64,
    banks_per_rank: u64,
    /// `bank_groups - 1`: a bank's group is its low bits.
    group_mask: u64,
    /// Indexed by `Field::index()`.
    fields: [FieldDecode; 5],
    /// `banks_per_rank - 1` with `bank_xor` (the row bits folded into the bank), else 0.
    bank_xor_mask: u64,
    /// `log2(banks_per_rank)`: the width of one folded group of row bits.
    bank_bits: u32,
    /// Flat `channel × rank × bank` array.
    banks: Vec<Bank>,
    /// Flat `channel × rank`.
    rank_state: Vec<Rank>,
    channels: Vec<Channel>,
    /// The gaps the data bus keeps between bursts.
    gaps: BurstGaps,
    write_high: usize,
    write_low: usize,
    /// A drain's counts of writes by bank of its channel, one more than the channel's banks
    /// (kept between drains so that a drain allocates nothing).
    drain_runs: Vec<u32>,
    /// The order a drain serves its writes in ([`Dram::order_drain`]).
    drain_order: Vec<u16>,
    /// No request is issued before this cycle (every core's clock has passed it).
    floor: u64,
    stats: DramStats,
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
        let timing = DramTiming::new(cfg, core_ghz);
        let gaps = BurstGaps::new(&timing);
        let channels = cfg.channels as usize;
        let ranks = channels * cfg.ranks as usize;
        let rank_state = (0..ranks)
            .map(|r| Rank {
                acts: Activates::new(&timing),
                // Ranks of a channel refresh in turn, spread over the interval.
                refresh: RefreshClock::new(
                    timing.trefi,
                    timing.trfc,
                    (r as u64 % u64::from(cfg.ranks)) * timing.trefi / u64::from(cfg.ranks),
                ),
            })
            .collect();
        Dram {
            timing,
            ranks: cfg.ranks.into(),
            banks_per_rank: cfg.banks.into(),
            group_mask: u64::from(cfg.bank_groups) - 1,
            fields,
            bank_bits: cfg.banks.trailing_zeros(),
            bank_xor_mask: if cfg.bank_xor {
                u64::from(cfg.banks) - 1
            } else {
                0
            },
            banks: vec![Bank::default(); ranks * cfg.banks as usize],
            rank_state,
            gaps,
            channels: vec![
                Channel {
                    data_bus: Calendar::new(timing.burst.max(timing.tccd_s), gaps.max),
                    writes: Vec::new(),
                };
                channels
            ],
            write_high: cfg.write_high as usize,
            write_low: cfg.write_low as usize,
            drain_runs: vec![0; cfg.ranks as usize * cfg.banks as usize + 1],
            drain_order: Vec::with_capacity(cfg.write_queue as usize),
            floor: 0,
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

    /// No request will be issued before `cycle` (every core's clock has passed it): bookings
    /// that ended by then may be forgotten.
    #[inline]
    pub fn set_floor(&mut self, cycle: u64) {
        #[cfg(feature = "dram-log")]
        if cycle != self.floor {
            log::record(log::Event::Floor(cycle));
        }
        self.floor = cycle;
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
        let bits = self.bank_bits;
        if bits.is_power_of_two() {
            // Every shift below is a multiple of the group width: halving the word XORs
            // aligned groups together, down to one group.
            for shift in [32, 16, 8, 4, 2, 1] {
                if shift < bits {
                    break;
                }
                row ^= row >> shift;
            }
            return row & self.bank_xor_mask;
        }
        let mut fold = 0;
        while row != 0 {
            fold ^= row & self.bank_xor_mask;
            row >>= self.bank_bits;
        }
        fold
    }

    #[inline]
    fn rank_index(&self, c: &DramCoord) -> usize {
        (c.channel * self.ranks + c.rank) as usize
    }

    #[inline]
    fn bank_index(&self, c: &DramCoord) -> usize {
        self.rank_index(c) * self.banks_per_rank as usize + c.bank as usize
    }

    /// Read the line at `addr` for a request issued at core cycle `now`; returns the latency in
    /// core cycles until the data is back, and updates the bank state and stats.
    #[inline]
    pub fn access(&mut self, addr: PhysAddr, now: u64, requester: Requester) -> u64 {
        #[cfg(feature = "dram-log")]
        log::record(log::Event::Read(addr, now, requester));
        let c = self.decode(addr);
        let bank = self.bank_index(&c);
        let (data_end, outcome, closed) = self.schedule(&c, bank, now, false, requester);
        let t = self.timing;
        let unloaded = match outcome {
            RowOutcome::Hit => t.row_hit(),
            RowOutcome::Empty => t.row_empty(),
            RowOutcome::Conflict => t.row_conflict(),
        };
        let latency = data_end - now + t.controller;
        let st = match requester {
            Requester::Data => &mut self.stats.data,
            Requester::Translation => &mut self.stats.translation,
        };
        st.reads += 1;
        match outcome {
            RowOutcome::Hit => st.row_hits += 1,
            RowOutcome::Empty => st.row_empty += 1,
            RowOutcome::Conflict => {
                st.row_conflicts += 1;
                if closed != Some(requester) {
                    st.interference += 1;
                    self.stats.interference += 1;
                }
            }
        }
        st.queue_cycles += latency.saturating_sub(unloaded);
        st.total_latency += latency;
        latency
    }

    /// A dirty line written back to `addr` at core cycle `now` (an LLC eviction). It waits in
    /// its channel's write queue; reaching the high watermark drains the queue to the low one.
    /// Writes are posted: nothing waits for them but the reads whose resources they take.
    pub fn write(&mut self, addr: PhysAddr, now: u64) {
        #[cfg(feature = "dram-log")]
        log::record(log::Event::Write(addr, now));
        let coord = self.decode(addr);
        let bank = self.bank_index(&coord);
        let ch = coord.channel as usize;
        self.channels[ch].writes.push(QueuedWrite {
            coord,
            bank,
            at: now,
        });
        if self.channels[ch].writes.len() >= self.write_high {
            self.drain(ch, now);
        }
    }

    /// Drain channel `ch`'s write queue down to the low watermark from cycle `now`: the oldest
    /// writes, grouped by bank and row so that writes to one row follow each other.
    #[cold]
    fn drain(&mut self, ch: usize, now: u64) {
        let mut writes = std::mem::take(&mut self.channels[ch].writes);
        let n = writes.len() - self.write_low;
        let mut order = std::mem::take(&mut self.drain_order);
        self.order_drain(ch, &writes[..n], &mut order);
        for &i in &order {
            let w = &writes[i as usize];
            let (_, outcome, _) =
                self.schedule(&w.coord, w.bank, now.max(w.at), true, Requester::Data);
            let s = &mut self.stats.writes;
            s.writes += 1;
            match outcome {
                RowOutcome::Hit => s.row_hits += 1,
                RowOutcome::Empty => s.row_empty += 1,
                RowOutcome::Conflict => s.row_conflicts += 1,
            }
        }
        self.stats.writes.drains += 1;
        writes.drain(..n);
        self.channels[ch].writes = writes;
        self.drain_order = order;
    }

    /// The order in which a drain of `writes` (queued on channel `ch`) serves them, as indices
    /// into `writes`: by bank, then row, then cycle queued. Writes alike in all three are
    /// served alike, so their order among themselves does not matter. A counting pass over
    /// the channel's banks places each write in its bank's run (a drain is a few dozen writes
    /// over a few dozen banks: most runs hold one or two), and an insertion sort orders each
    /// run by row and cycle: no write is moved, only its index.
    fn order_drain(&mut self, ch: usize, writes: &[QueuedWrite], order: &mut Vec<u16>) {
        let per_channel = self.drain_runs.len() - 1;
        let first_bank = ch * per_channel;
        let runs = &mut self.drain_runs;
        runs.fill(0);
        for w in writes {
            runs[w.bank - first_bank + 1] += 1;
        }
        for b in 1..runs.len() {
            runs[b] += runs[b - 1];
        }
        // `runs[b]` is now where bank `b`'s run begins; each write takes the next place in it.
        order.clear();
        order.resize(writes.len(), 0);
        for (i, w) in writes.iter().enumerate() {
            let at = &mut runs[w.bank - first_bank];
            order[*at as usize] = i as u16;
            *at += 1;
        }
        // Each bank's run, in queue order, sorted by (row, cycle); runs[b] is its end.
        let key = |i: u16| {
            let w = &writes[i as usize];
            (w.coord.row, w.at)
        };
        let mut start = 0;
        for &end in runs[..per_channel].iter() {
            let end = end as usize;
            if end - start > INSERTION_RUN {
                // A long run (writes crowding one bank): no quadratic sort.
                order[start..end].sort_unstable_by_key(|&i| key(i));
                start = end;
                continue;
            }
            for j in start + 1..end {
                let i = order[j];
                let k = key(i);
                let mut p = j;
                while p > start && key(order[p - 1]) > k {
                    order[p] = order[p - 1];
                    p -= 1;
                }
                order[p] = i;
            }
            start = end;
        }
    }

    /// `x` moved past the refresh window of rank `rank` it falls in, if any.
    #[inline]
    fn after_refresh(&self, rank: usize, x: u64) -> u64 {
        x.max(self.rank_state[rank].refresh.interval(x).busy_end)
    }

    /// Whether no refresh of rank `rank` falls in `(earlier, later]` (`earlier <= later`): a
    /// row opened at `earlier` is still open at `later`. Only `later`'s interval is looked
    /// up; it is the recent one, which the refresh clock has at hand.
    #[inline]
    fn same_refresh(&self, rank: usize, earlier: u64, later: u64) -> bool {
        earlier >= self.rank_state[rank].refresh.interval(later).start
    }

    /// Schedule one column access (a read, or a write of a drain) to `c` in bank `bank`,
    /// issued at `at`: returns the cycle its data burst ends, how it found its row, and, for
    /// a conflict, who had opened the row it closed.
    ///
    /// The bank's rows are tried in order of time from the one open (or last closed) at `at`:
    /// a hit in a row of `c`'s if the access fits before that row's precharge, else a row of
    /// its own after that one if it fits before the next ([`Dram::open_row`]). After the
    /// bank's last row it always fits. So a request waits for rows booked after it in time
    /// only when none of the gaps before them holds it.
    fn schedule(
        &mut self,
        c: &DramCoord,
        bank: usize,
        at: u64,
        write: bool,
        requester: Requester,
    ) -> (u64, RowOutcome, Option<Requester>) {
        let t = self.timing;
        let rank = self.rank_index(c);
        let data_delay = if write { t.tcwl } else { t.tcl };
        let group = c.bank & self.group_mask;
        let burst = Burst {
            ch: c.channel as usize,
            rank,
            write,
            data_delay,
            tag: BurstGaps::tag(write, rank, group),
        };
        self.banks[bank].trim(self.floor);
        let mut found = FoundSlot::default();
        let req = RowRequest {
            row: c.row,
            group,
            bank,
            at,
            requester,
        };
        // The rows activated by `at`, counted from the newest (most requests come after it).
        let rows = &self.banks[bank].rows;
        let n = rows.len();
        let mut first = n;
        while first > 0 && rows[first - 1].act > at {
            first -= 1;
        }
        if first == 0 {
            if let Some(done) = self.open_row(&req, 0, &burst, &mut found) {
                return done;
            }
        }
        let start = first.saturating_sub(1);
        for k in start..n {
            if k - start >= ROWS_TRIED && k + 1 < n {
                // Past the rows a request may try: after the last.
                continue;
            }
            let e = self.banks[bank].rows[k];
            if e.row == c.row && e.close > at {
                let slot = self.earliest_cas_again(&burst, at.max(e.act + t.trcd), &mut found);
                let cas = slot.start - data_delay;
                let pre = t.pre_after(cas, write);
                if self.same_refresh(rank, e.act, cas) && (e.close == OPEN || pre <= e.close) {
                    self.book_cas(&burst, slot);
                    let e = &mut self.banks[bank].rows[k];
                    e.pre_ready = e.pre_ready.max(pre);
                    return (cas + data_delay + t.burst, RowOutcome::Hit, None);
                }
            }
            if let Some(done) = self.open_row(&req, k + 1, &burst, &mut found) {
                return done;
            }
        }
        unreachable!("a row after a bank's last always fits")
    }

    /// Open `c`'s row for an access issued at `at` as row `pos` of the bank: after the row
    /// before it (precharging that one unless it has closed; none: the bank is closed since
    /// `closed_from`) and precharged again in time for the next row's activate, if there is
    /// one. Books it and returns what [`Dram::schedule`] returns, or `None` if it does not
    /// fit before the next row.
    #[inline(always)]
    fn open_row(
        &mut self,
        req: &RowRequest,
        pos: usize,
        burst: &Burst,
        found: &mut FoundSlot,
    ) -> Option<(u64, RowOutcome, Option<Requester>)> {
        let t = self.timing;
        let (rank, write) = (burst.rank, burst.write);
        let &RowRequest {
            row,
            group,
            bank,
            at,
            requester,
        } = req;
        let b = &self.banks[bank];
        let next_act = b.rows.get(pos).map(|e| e.act);
        // The row before: precharged for this one if it is still open then (a conflict),
        // or already closed by its own precharge or a refresh (an empty bank).
        // `close`: when the row before closes, if this one sets it.
        let (outcome, closed, act_from, close) = match pos.checked_sub(1).map(|i| b.rows[i]) {
            None if b.closed_from == 0 => (RowOutcome::Empty, None, at, None),
            None => (RowOutcome::Empty, None, at.max(b.closed_from + t.trp), None),
            Some(e) => {
                let from = at.max(e.act);
                if from < e.close && self.same_refresh(rank, e.act, from) {
                    let ready = from.max(e.act + t.tras).max(e.pre_ready);
                    let pre = self.after_refresh(rank, ready);
                    if pre < e.close {
                        (RowOutcome::Conflict, Some(e.opener), pre + t.trp, Some(pre))
                    } else {
                        // Its precharge is booked before then: the bank is closed after it.
                        (RowOutcome::Empty, None, from.max(e.close + t.trp), None)
                    }
                } else if from >= e.close {
                    (RowOutcome::Empty, None, from.max(e.close + t.trp), None)
                } else {
                    // A refresh closed it, when the interval holding `from` began.
                    let refreshed = self.rank_state[rank].refresh.interval(from).start;
                    (RowOutcome::Empty, None, from, Some(refreshed))
                }
            }
        };
        // The least a row of its own holds the bank (activate to access, or tRAS, then a
        // precharge): no search when the gap is shorter.
        let least = t.tras.max(t.trcd + t.tcl.min(t.tcwl)) + t.trp;
        if next_act.is_some_and(|next| act_from + least > next) {
            return None;
        }
        let mut act_from = act_from;
        let (slot, cas) = loop {
            let mut act = act_from;
            let slot = loop {
                let free = self.rank_state[rank].acts.earliest(group, act);
                act = self.after_refresh(rank, free.act);
                if act == free.act {
                    break free;
                }
            };
            let cas = self.earliest_cas_again(burst, act + t.trcd, found);
            if self.same_refresh(rank, act, cas.start - burst.data_delay) {
                break (slot, cas);
            }
            // A refresh would close the row between its activate and the access: after it.
            act_from = self.after_refresh(rank, cas.start - burst.data_delay);
        };
        let act = slot.act;
        let pre_ready = t.pre_after(cas.start - burst.data_delay, write);
        // As the latest read at 0 and write data ending at 0 (none) bound it too.
        let pre_ready = pre_ready.max(if write { t.trtp } else { t.twr });
        if next_act.is_some_and(|next| pre_ready.max(act + t.tras) + t.trp > next) {
            return None;
        }
        self.rank_state[rank].acts.book(slot, group, self.floor);
        let cas = self.book_cas(burst, cas);
        let b = &mut self.banks[bank];
        if let Some(close) = close {
            b.rows[pos - 1].close = close;
        }
        let row = Episode {
            row,
            opener: requester,
            act,
            pre_ready,
            close: next_act.map_or(OPEN, |next| next - t.trp),
        };
        if pos == b.rows.len() {
            b.rows.push(row);
        } else {
            b.rows.insert(pos, row);
        }
        Some((cas + burst.data_delay + t.burst, outcome, closed))
    }

    /// The earliest column command at or after `at` of a burst tagged `tag` in `rank` of
    /// its channel: outside a refresh, with a data-bus slot `data_delay` later that keeps its
    /// gaps to the bursts around it. Returns the burst's slot (the command is `data_delay`
    /// before its start).
    #[inline]
    fn earliest_cas(&self, burst: &Burst, at: u64) -> Slot {
        let gaps = &self.gaps;
        let data_bus = &self.channels[burst.ch].data_bus;
        let mut cas = at;
        loop {
            let slot =
                data_bus.earliest(cas + burst.data_delay, burst.tag, |a, b| gaps.between(a, b));
            let free = slot.start - burst.data_delay;
            cas = self.after_refresh(burst.rank, free);
            if cas == free {
                return slot;
            }
        }
    }

    /// [`Dram::earliest_cas`] for one of a request's attempts: nothing is booked between
    /// them, so an attempt from a cycle between an earlier one's and the slot it found gets
    /// that slot again without a search (a data bus booked far ahead would be scanned anew
    /// by every gap and row the request tries).
    #[inline]
    fn earliest_cas_again(&self, burst: &Burst, at: u64, found: &mut FoundSlot) -> Slot {
        if let Some((from, slot)) = found.0 {
            if from <= at && at + burst.data_delay <= slot.start {
                return slot;
            }
        }
        let slot = self.earliest_cas(burst, at);
        found.0 = Some((at, slot));
        slot
    }

    /// Book the burst [`Dram::earliest_cas`] found; returns its column command's cycle.
    #[inline(always)]
    fn book_cas(&mut self, burst: &Burst, slot: Slot) -> u64 {
        let floor = self.floor;
        self.channels[burst.ch]
            .data_bus
            .book(slot, burst.tag, floor);
        self.stats.data_bus_cycles += self.timing.burst;
        slot.start - burst.data_delay
    }

    pub fn stats(&self) -> &DramStats {
        &self.stats
    }

    /// Zero the stats (end of warm-up); the row buffers and bank timing are kept.
    pub fn reset_stats(&mut self) {
        self.stats = DramStats::default();
    }

    /// Fraction of all reads so far that hit the open row.
    pub fn row_hit_rate(&self) -> f64 {
        self.stats.row_hit_rate()
    }

    /// Data-bus bookings of channel `ch`, for the bandwidth tests.
    #[cfg(test)]
    fn bursts(&self, ch: usize) -> &[calendar::Booking] {
        self.channels[ch].data_bus.bookings()
    }
}
