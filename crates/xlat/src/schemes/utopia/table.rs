//! `UtopiaTable`: the translation structures of one Utopia process. Pages in the FlexSeg are
//! mapped in an ordinary radix table (the FlexSeg walk, §5.3); pages in a RestSeg are not in
//! it but in the process's tag array (TAR) and set filter (SF) of that RestSeg (§5.2), both
//! in simulated memory at contiguous blocks whose bases the MMU holds in registers (§6.2).
//!
//! Which structure a mapping goes to follows from its frame: a frame inside a RestSeg is a
//! slot `(set, way)`, and mapping it writes the page's tag into way `way` of set `set` of the
//! TAR and rewrites the set's SF counter from the TAR.

use super::restseg::{Layout, RestSeg, TAR_VALID};
use crate::addr::{PageSize, Pfn, PhysAddr, SizeSet, VirtAddr, Vpn};
use crate::error::{Error, Result};
use crate::pt::radix::{self, RadixPageTable};
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext, ScannedPage, TableScan};
use serde::Serialize;

/// One RestSeg's structures of one process.
#[derive(Clone, Copy, Debug)]
pub struct ProcSeg {
    pub seg: RestSeg,
    /// Base of the TAR and of the SF (the two registers of §6.2).
    pub tar: PhysAddr,
    pub sf: PhysAddr,
    /// Pages of the process in the segment now.
    pages: u64,
    /// Frames allocated for the TAR and the SF.
    frames: u64,
}

impl ProcSeg {
    /// The SF counter of `set`.
    #[inline]
    pub fn sf_count(&self, store: &PtStore, set: u64) -> u64 {
        store.read_bits(self.sf, set * self.seg.sf_bits, self.seg.sf_bits)
    }

    /// The way of `set` whose TAR entry holds `tag`, if any.
    #[inline]
    pub fn find(&self, store: &PtStore, set: u64, tag: u64) -> Option<u64> {
        let want = self.seg.tar_value(tag);
        (0..self.seg.ways).find(|&w| self.tar_entry(store, set, w) == want)
    }

    #[inline]
    fn tar_bit(&self, set: u64, way: u64) -> u64 {
        (set * self.seg.tar_set_bytes() + way * self.seg.entry_bytes) * 8
    }

    fn tar_entry(&self, store: &PtStore, set: u64, way: u64) -> u64 {
        let width = self.seg.entry_bytes * 8;
        store.read_bits(self.tar, self.tar_bit(set, way), width)
    }

    fn set_tar_entry(&self, store: &mut PtStore, set: u64, way: u64, value: u64) {
        let width = self.seg.entry_bytes * 8;
        store.write_bits(self.tar, self.tar_bit(set, way), width, value);
    }

    /// Rewrite the SF counter of `set` from the TAR: the number of valid ways, saturated.
    fn refresh_sf(&self, store: &mut PtStore, set: u64) {
        let valid = (0..self.seg.ways)
            .filter(|&w| self.tar_entry(store, set, w) & TAR_VALID != 0)
            .count() as u64;
        let bits = self.seg.sf_bits;
        store.write_bits(self.sf, set * bits, bits, valid.min(self.seg.sf_max()));
    }
}

/// Sizes of one process's structures of one RestSeg (`os.pt.<pid>.restsegs`).
#[derive(Clone, Debug, Serialize)]
pub struct ProcSegStats {
    pub page: &'static str,
    pub pages: u64,
    pub tar_bytes: u64,
    pub sf_bytes: u64,
}

/// Thresholds of the PTE-based migration (§5.5): a FlexSeg page whose walks reach both moves
/// into its RestSeg. With `decay_interval` > 0 the counters age: after every `decay_interval`
/// FlexSeg walks of the process, the OS halves both counters of the PTEs in the next window
/// of its table ([`UtopiaTable::age`]), so that they count recent walks rather than all walks
/// since the page was mapped (docs/schemes/utopia.md, "Migration thresholds").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    pub walks: u64,
    pub dram_refs: u64,
    pub decay_interval: u64,
    /// The page sizes the counters migrate (`migrate_page_sizes`).
    pub sizes: SizeSet,
}

/// The PTE bits x86-64 leaves to software that hold the migration counters (§5.5: "the
/// unused bits of the PTE (9 bits in x86-64)"): an access-frequency counter (walks) in bits
/// 52-55 and a cost counter (DRAM references of those walks) in bits 56-60, both saturating.
const FREQUENCY_BIT: u64 = 52;
pub const FREQUENCY_MAX: u64 = 15;
const COST_BIT: u64 = 56;
pub const COST_MAX: u64 = 31;

pub struct UtopiaTable {
    pub radix: RadixPageTable,
    pub segs: Vec<ProcSeg>,
    migration: Option<Migration>,
    /// FlexSeg walks of the process since the last aging pass: the performance counter of
    /// completed page walks whose overflow (every `decay_interval`) interrupts the OS.
    walks_since_pass: u64,
    /// The aging passes' work not yet handed to the system ([`PageTable::take_scan`]).
    scan: TableScan,
    /// Where the next aging pass starts: the virtual address after the last leaf table the
    /// previous one read.
    aging_cursor: u64,
}

impl UtopiaTable {
    /// A new, empty table: a radix table of `levels`, and a zeroed TAR and SF per RestSeg of
    /// `layout`.
    pub fn new(
        ctx: &mut PtContext,
        layout: &Layout,
        levels: u32,
        migration: Option<Migration>,
    ) -> Result<UtopiaTable> {
        let radix = RadixPageTable::new(ctx, levels)?;
        let mut segs = Vec::with_capacity(layout.segs.len());
        for &seg in &layout.segs {
            let (tar, tar_frames) = zeroed_block(ctx, seg.tar_bytes(), "TAR")?;
            let (sf, sf_frames) = zeroed_block(ctx, seg.sf_bytes(), "SF")?;
            segs.push(ProcSeg {
                seg,
                tar,
                sf,
                pages: 0,
                frames: tar_frames + sf_frames,
            });
        }
        Ok(UtopiaTable {
            radix,
            segs,
            migration,
            walks_since_pass: 0,
            scan: TableScan::default(),
            aging_cursor: 0,
        })
    }

    /// The OS's aging pass (decay of the migration counters) over the next
    /// [`AGING_WINDOW_TABLES`] page-table pages holding leaf entries, in virtual-address
    /// order from where the last pass stopped, wrapping around the address space: read each
    /// of them whole, line by line (and the upper-level entries leading to it), halve the
    /// frequency and cost counters of every leaf entry that has them, and write back the lines
    /// it changed. What it read and wrote is recorded for the system to run through the
    /// memory hierarchy ([`PageTable::take_scan`]).
    pub fn age(&mut self, store: &mut PtStore) {
        let mut leaves = Vec::new();
        leaf_tables(
            store,
            self.radix.root(),
            self.radix.levels(),
            0,
            &mut leaves,
        );
        let first = leaves.partition_point(|&(va, _, _)| va < self.aging_cursor);
        let take = leaves.len().min(AGING_WINDOW_TABLES);
        let mut pages: Vec<ScannedPage> = Vec::new();
        for k in 0..take {
            let (va, table, level) = leaves[(first + k) % leaves.len()];
            // The entries on the way down to the table: one line of each upper table.
            let mut upper = self.radix.root();
            for l in (level + 1..=self.radix.levels()).rev() {
                let at = radix::entry_addr(upper, VirtAddr(va), l);
                mark(&mut pages, upper, l, 1 << ((at.0 & 0xfff) / 64), 0);
                upper = radix::entry_frame(store.read(at));
            }
            let mut written = 0u64;
            for i in 0..512u64 {
                let at = PhysAddr(table.addr().0 + i * 8);
                let e = store.read(at);
                if e & radix::PRESENT == 0 || radix::leaf_size(e, level).is_none() {
                    continue;
                }
                let freq = (e >> FREQUENCY_BIT) & FREQUENCY_MAX;
                let cost = (e >> COST_BIT) & COST_MAX;
                if freq == 0 && cost == 0 {
                    continue;
                }
                let counters = FREQUENCY_MAX << FREQUENCY_BIT | COST_MAX << COST_BIT;
                let halved = (freq >> 1) << FREQUENCY_BIT | (cost >> 1) << COST_BIT;
                store.write(at, (e & !counters) | halved);
                self.scan.entries += 1;
                written |= 1 << (i / 8);
            }
            mark(&mut pages, table, level, u64::MAX, written);
            self.aging_cursor = va + 1;
        }
        self.scan.pages.append(&mut pages);
        self.scan.passes += 1;
    }

    /// The RestSeg slot mapping `vpn` in this process, if its page is in one: the segment's
    /// structures and the page's first frame.
    pub fn restseg_lookup(&self, store: &PtStore, vpn: Vpn) -> Option<(&ProcSeg, Pfn)> {
        self.segs.iter().find_map(|ps| {
            let (set, tag) = ps.seg.index(vpn);
            let way = ps.find(store, set, tag)?;
            Some((ps, ps.seg.slot_pfn(set, way)))
        })
    }
}

/// Page-table pages holding leaf entries that one aging pass reads: 128, the leaf tables of
/// 256 MiB of 4 KiB pages, as Linux's NUMA balancing scans 256 MB of a process's address
/// space per scan period by default (`numa_balancing_scan_size_mb`). A pass costs the same
/// whatever the footprint; a larger table takes more passes to age whole.
pub const AGING_WINDOW_TABLES: usize = 128;

/// The tables under `table` (of `level`, mapping from `va`) that hold leaf entries, in
/// virtual-address order: `(va of the table's first entry, frame, level)`. A table holding
/// huge-page leaves and pointers both comes before the tables it points to.
fn leaf_tables(store: &PtStore, table: Pfn, level: u32, va: u64, out: &mut Vec<(u64, Pfn, u32)>) {
    let span = 1u64 << (12 + 9 * (level - 1));
    let entry = |i: u64| store.read(PhysAddr(table.addr().0 + i * 8));
    let present = |e: u64| e & radix::PRESENT != 0;
    if level == 1
        || (0..512).any(|i| present(entry(i)) && radix::leaf_size(entry(i), level).is_some())
    {
        out.push((va, table, level));
    }
    if level == 1 {
        return;
    }
    for i in 0..512 {
        let e = entry(i);
        if present(e) && radix::leaf_size(e, level).is_none() {
            leaf_tables(store, radix::entry_frame(e), level - 1, va + i * span, out);
        }
    }
}

/// Record in `pages` that a pass read lines `read` and wrote lines `written` of `table`.
fn mark(pages: &mut Vec<ScannedPage>, table: Pfn, level: u32, read: u64, written: u64) {
    match pages.iter_mut().find(|p| p.frame == table) {
        Some(p) => {
            p.read |= read;
            p.written |= written;
        }
        None => pages.push(ScannedPage {
            frame: table,
            level,
            read,
            written,
        }),
    }
}

/// A zeroed, contiguous block of at least `bytes` for a TAR or SF: its base and frames.
fn zeroed_block(ctx: &mut PtContext, bytes: u64, what: &str) -> Result<(PhysAddr, u64)> {
    let frames = bytes.div_ceil(4096).next_power_of_two();
    let order = frames.ilog2();
    let base = ctx.buddy.alloc(order).ok_or_else(|| {
        Error::OutOfMemory(format!(
            "no free contiguous {} KiB for a RestSeg {what} (raise os.physmem.bytes)",
            frames * 4
        ))
    })?;
    for i in 0..frames {
        ctx.store.zero_frame(Pfn(base.0 + i));
    }
    Ok((base.addr(), frames))
}

impl PageTable for UtopiaTable {
    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        let Some(ps) = self
            .segs
            .iter_mut()
            .find(|ps| ps.seg.slot_of(pfn).is_some())
        else {
            return self.radix.map(ctx, vpn, pfn, size);
        };
        let (set, way) = ps.seg.slot_of(pfn).expect("found above");
        let (want_set, tag) = ps.seg.index(vpn);
        if ps.seg.page != size || want_set != set {
            return Err(Error::Workload(format!(
                "a {size} page at {:?} cannot take way {way} of set {set} of the {} RestSeg \
                 (its set is {want_set})",
                vpn.addr(),
                ps.seg.page
            )));
        }
        // A valid entry here is an evicted page of this process whose slot the new page
        // took; the OS moves that page to the FlexSeg next (and finds it gone from here).
        let replaced = ps.tar_entry(ctx.store, set, way) & TAR_VALID != 0;
        ps.set_tar_entry(ctx.store, set, way, ps.seg.tar_value(tag));
        ps.refresh_sf(ctx.store, set);
        ps.pages += u64::from(!replaced);
        Ok(())
    }

    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Option<Pfn> {
        for ps in self.segs.iter_mut().filter(|ps| ps.seg.page == size) {
            let (set, tag) = ps.seg.index(vpn);
            if let Some(way) = ps.find(ctx.store, set, tag) {
                ps.set_tar_entry(ctx.store, set, way, 0);
                ps.refresh_sf(ctx.store, set);
                ps.pages -= 1;
                return Some(ps.seg.slot_pfn(set, way));
            }
        }
        self.radix.unmap(ctx, vpn, size)
    }

    /// Count the walk in the PTE's frequency and cost counters; the page is costly to
    /// translate once both reach their thresholds and a RestSeg holds its page size. Every
    /// `decay_interval`-th walk of the process (any FlexSeg walk), the OS runs an aging pass
    /// first, which may halve this walk's counters too.
    fn note_walk(&mut self, ctx: &mut PtContext, vpn: Vpn, dram_refs: u32) -> bool {
        let Some(m) = self.migration else {
            return false;
        };
        let Some((at, size)) = self.radix.leaf(ctx.store, vpn.addr()) else {
            return false;
        };
        let counted = m.sizes.contains(size) && self.segs.iter().any(|ps| ps.seg.page == size);
        let (mut freq, mut cost) = (0, 0);
        if counted {
            // `at` is the PTE's word: its bits 52-60 are the counters.
            freq = (ctx.store.read_bits(at, FREQUENCY_BIT, 4) + 1).min(FREQUENCY_MAX);
            cost = (ctx.store.read_bits(at, COST_BIT, 5) + u64::from(dram_refs)).min(COST_MAX);
            ctx.store.write_bits(at, FREQUENCY_BIT, 4, freq);
            ctx.store.write_bits(at, COST_BIT, 5, cost);
        }
        if m.decay_interval > 0 {
            self.walks_since_pass += 1;
            if self.walks_since_pass == m.decay_interval {
                self.walks_since_pass = 0;
                self.age(ctx.store);
                freq = ctx.store.read_bits(at, FREQUENCY_BIT, 4);
                cost = ctx.store.read_bits(at, COST_BIT, 5);
            }
        }
        counted && freq >= m.walks && cost >= m.dram_refs
    }

    fn take_scan(&mut self, scan: &mut TableScan) {
        if !self.scan.is_empty() {
            scan.append(&mut self.scan);
        }
    }

    fn bytes(&self) -> u64 {
        self.radix.bytes() + self.segs.iter().map(|ps| ps.frames * 4096).sum::<u64>()
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let segs: Vec<ProcSegStats> = self
            .segs
            .iter()
            .map(|ps| ProcSegStats {
                page: ps.seg.page.name(),
                pages: ps.pages,
                tar_bytes: ps.seg.tar_bytes(),
                sf_bytes: ps.seg.sf_bytes(),
            })
            .collect();
        Some(serde_json::json!({ "restsegs": segs }))
    }

    /// A page in a RestSeg: its TAR entry trades places with the next way's of its set, so the
    /// RestSeg walk finds the page in the wrong slot (the SF, which counts valid ways, stays
    /// right). A page in the FlexSeg: its radix leaf names another frame.
    fn corrupt(&self, store: &mut PtStore, vpn: Vpn, size: PageSize) -> bool {
        for ps in self.segs.iter().filter(|ps| ps.seg.page == size) {
            let (set, tag) = ps.seg.index(vpn);
            if let Some(way) = ps.find(store, set, tag) {
                let next = (way + 1) % ps.seg.ways;
                if next == way {
                    return false; // one way: no other slot to move the page to
                }
                let (mine, theirs) = (
                    ps.tar_entry(store, set, way),
                    ps.tar_entry(store, set, next),
                );
                ps.set_tar_entry(store, set, way, theirs);
                ps.set_tar_entry(store, set, next, mine);
                return true;
            }
        }
        self.radix.corrupt(store, vpn, size)
    }

    fn va_bits(&self) -> u32 {
        self.radix.va_bits()
    }
}
