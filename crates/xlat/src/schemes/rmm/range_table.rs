//! The RMM range table (Karakostas et al. ISCA'15): one per process, a B-tree of range
//! translations keyed by base virtual address, kept in simulated physical memory like a page
//! table. The OS changes it as it maps and unmaps pages; the MMU's range-table walker reads
//! it from root to leaf after a page walk to fill the range TLB.
//!
//! A range translation maps the virtual pages `[base, end)` to the frames `vpn + offset`. The
//! table holds exactly the maximal runs of mapped pages that are consecutive in both spaces
//! (see [`RangeTable::add`]), so every mapped page lies in exactly one range.
//!
//! **Node format.** A node is one 4 KiB frame from the buddy allocator (as a page-table page,
//! via [`PtContext::alloc_table_frame`]) of 512 little-endian words: word 0 is the header
//! (entry count in bits 0-15, bit 63 set on leaves), entry `i` takes words `1 + 3i ..= 3 + 3i`
//! (base VA, limit VA exclusive, and offset PA - VA with the present/writable/user bits in its
//! low 12 bits, as RMM's BASE, LIMIT, OFFSET + protection), and child `j` of an inner node is
//! word `382 + j` (frame address | present). 127 entries and 128 children fill the frame.
//!
//! The tree is a classic B-tree of minimum degree `t` (Cormen et al. ch. 18): `2t - 1`
//! entries at most per node, `t - 1` at least except at the root, every leaf at one depth,
//! entries in inner nodes too. Structural changes decode the nodes they touch, change them and
//! write them back; lookups and in-place updates read and write single words.

use crate::addr::{Pfn, PhysAddr};
use crate::error::{Error, Result};
use crate::pt::store::PtStore;
use crate::pt::PtContext;

/// Most entries a 4 KiB node holds: a header, three words per entry and one child more than
/// entries, `1 + 3k + (k + 1) <= 512`.
pub const MAX_NODE_ENTRIES: usize = 127;
/// Word index of the first child pointer.
const CHILD0: usize = 1 + 3 * MAX_NODE_ENTRIES;
const LEAF: u64 = 1 << 63;
const COUNT_MASK: u64 = 0xffff;
/// Present, writable, user: the protection bits of a range (all ranges are user data).
const PROT: u64 = 0b111;
const PRESENT: u64 = 1;

/// A range translation, in 4 KiB page numbers: `[base, end)` maps to `vpn + offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Range {
    pub base: u64,
    pub end: u64,
    /// Frame minus page number, wrapping (a range may map below its virtual address).
    pub offset: u64,
}

impl Range {
    #[inline]
    pub fn contains(&self, vpn: u64) -> bool {
        self.base <= vpn && vpn < self.end
    }

    /// The frame of page `vpn` of the range.
    #[inline]
    pub fn frame(&self, vpn: u64) -> Pfn {
        Pfn(vpn.wrapping_add(self.offset))
    }

    pub fn pages(&self) -> u64 {
        self.end - self.base
    }

    fn encode(&self) -> [u64; 3] {
        [self.base << 12, self.end << 12, (self.offset << 12) | PROT]
    }

    fn decode(w: [u64; 3]) -> Range {
        Range {
            base: w[0] >> 12,
            end: w[1] >> 12,
            // Arithmetic shift: the offset is a signed byte distance.
            offset: (((w[2] & !0xfff) as i64) >> 12) as u64,
        }
    }
}

/// Address of word `i` of the node at `node`.
#[inline]
fn word(node: Pfn, i: usize) -> PhysAddr {
    PhysAddr(node.addr().0 + 8 * i as u64)
}

#[inline]
fn entry_word(i: usize) -> usize {
    1 + 3 * i
}

/// A node decoded from its frame, for structural changes.
#[derive(Debug)]
struct Node {
    leaf: bool,
    keys: Vec<Range>,
    kids: Vec<Pfn>,
}

fn load(store: &PtStore, at: Pfn) -> Node {
    let h = store.read(word(at, 0));
    let n = (h & COUNT_MASK) as usize;
    let leaf = h & LEAF != 0;
    let keys = (0..n)
        .map(|i| {
            let w = entry_word(i);
            Range::decode([
                store.read(word(at, w)),
                store.read(word(at, w + 1)),
                store.read(word(at, w + 2)),
            ])
        })
        .collect();
    let kids = if leaf {
        Vec::new()
    } else {
        (0..=n)
            .map(|j| Pfn(store.read(word(at, CHILD0 + j)) >> 12))
            .collect()
    };
    Node { leaf, keys, kids }
}

fn save(store: &mut PtStore, at: Pfn, node: &Node) {
    debug_assert!(node.keys.len() <= MAX_NODE_ENTRIES);
    debug_assert!(node.leaf || node.kids.len() == node.keys.len() + 1);
    let leaf = if node.leaf { LEAF } else { 0 };
    store.write(word(at, 0), leaf | node.keys.len() as u64);
    for (i, k) in node.keys.iter().enumerate() {
        for (j, w) in k.encode().into_iter().enumerate() {
            store.write(word(at, entry_word(i) + j), w);
        }
    }
    for (j, kid) in node.kids.iter().enumerate() {
        store.write(word(at, CHILD0 + j), kid.addr().0 | PRESENT);
    }
}

/// A B-tree node of minimum degree `t` holds `2t - 1` entries at most: an odd number, at
/// least 3, and at most what a 4 KiB frame holds. `key` names the setting in errors.
pub fn check_node_entries(node_entries: u32, key: &str) -> Result<()> {
    let n = node_entries as usize;
    if !(3..=MAX_NODE_ENTRIES).contains(&n) || n.is_multiple_of(2) {
        return Err(Error::config(
            key,
            format!("must be odd and in 3..={MAX_NODE_ENTRIES} (a B-tree node of 4 KiB), got {n}"),
        ));
    }
    Ok(())
}

/// Where an entry lives: its node and index, for in-place updates.
#[derive(Clone, Copy, Debug)]
struct Slot {
    node: Pfn,
    index: usize,
}

/// Shape counters of a range table.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RangeTableStats {
    pub ranges: u64,
    pub nodes: u64,
    pub depth: u32,
    /// Pages the ranges cover.
    pub pages: u64,
}

pub struct RangeTable {
    root: Pfn,
    /// Minimum degree: nodes hold `t - 1 ..= 2t - 1` entries.
    t: usize,
    stats: RangeTableStats,
}

impl RangeTable {
    /// An empty table whose nodes hold at most `node_entries` entries (odd, 3..=127).
    pub fn new(ctx: &mut PtContext, node_entries: u32) -> Result<RangeTable> {
        check_node_entries(node_entries, "schemes.rmm.node_entries")?;
        let n = node_entries as usize;
        let root = ctx.alloc_table_frame()?;
        save(
            ctx.store,
            root,
            &Node {
                leaf: true,
                keys: Vec::new(),
                kids: Vec::new(),
            },
        );
        Ok(RangeTable {
            root,
            t: n.div_ceil(2),
            stats: RangeTableStats {
                nodes: 1,
                depth: 1,
                ..Default::default()
            },
        })
    }

    pub fn stats(&self) -> RangeTableStats {
        self.stats
    }

    /// Bytes of memory the nodes take.
    pub fn bytes(&self) -> u64 {
        self.stats.nodes * 4096
    }

    fn max_keys(&self) -> usize {
        2 * self.t - 1
    }

    /// The range with the greatest base `<= vpn` and where it lives, searching from the root
    /// as the range-table walker does: in each node a binary search over the bases, then the
    /// entry's limit and offset, then the child pointer. `read` sees the address of every word
    /// read, in order. Stops at the first range containing `vpn` (ranges are disjoint, so no
    /// other can).
    fn search(
        &self,
        store: &PtStore,
        vpn: u64,
        read: &mut impl FnMut(PhysAddr),
    ) -> Option<(Range, Slot)> {
        let mut rd = |node: Pfn, i: usize| {
            let a = word(node, i);
            read(a);
            store.read(a)
        };
        let mut node = self.root;
        let mut best = None;
        for _ in 0..self.stats.depth {
            let h = rd(node, 0);
            let n = ((h & COUNT_MASK) as usize).min(MAX_NODE_ENTRIES);
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if rd(node, entry_word(mid)) >> 12 <= vpn {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo > 0 {
                let w = entry_word(lo - 1);
                let r = Range::decode([rd(node, w), rd(node, w + 1), rd(node, w + 2)]);
                let slot = Slot {
                    node,
                    index: lo - 1,
                };
                if r.contains(vpn) {
                    return Some((r, slot));
                }
                best = Some((r, slot));
            }
            if h & LEAF != 0 {
                break;
            }
            node = Pfn(rd(node, CHILD0 + lo) >> 12);
        }
        best
    }

    /// The range containing `vpn`, if any (no timing).
    pub fn lookup(&self, store: &PtStore, vpn: u64) -> Option<Range> {
        self.search(store, vpn, &mut |_| {})
            .map(|(r, _)| r)
            .filter(|r| r.contains(vpn))
    }

    /// The range-table walk for `vpn`: the range containing it, if any, with the 64-byte lines
    /// the walker reads appended to `lines` in order (each line once: the walker keeps the
    /// lines of the node it is searching).
    pub fn walk(&self, store: &PtStore, vpn: u64, lines: &mut Vec<PhysAddr>) -> Option<Range> {
        let found = self.search(store, vpn, &mut |a| {
            let line = PhysAddr(a.0 & !63);
            if !lines.contains(&line) {
                lines.push(line);
            }
        });
        found.map(|(r, _)| r).filter(|r| r.contains(vpn))
    }

    /// Fault injection ([`crate::pt::PageTable::corrupt`]): shift the range containing `vpn`
    /// two frames on, so that each of its pages translates to the wrong frame. Returns whether
    /// a range contains `vpn`.
    pub fn corrupt(&self, store: &mut PtStore, vpn: u64) -> bool {
        match self.search(store, vpn, &mut |_| {}) {
            Some((r, slot)) if r.contains(vpn) => {
                let wrong = crate::pt::misdirected(r.frame(vpn), crate::addr::PageSize::Size4K);
                let offset = wrong.0.wrapping_sub(vpn);
                self.set(store, slot, Range { offset, ..r });
                true
            }
            _ => false,
        }
    }

    fn set(&self, store: &mut PtStore, slot: Slot, r: Range) {
        for (j, w) in r.encode().into_iter().enumerate() {
            store.write(word(slot.node, entry_word(slot.index) + j), w);
        }
    }

    /// The pages `[start, end)` were mapped to the frames `vpn + offset`: extend the range they
    /// continue (its end, or its start, with the same offset), join the two ranges they bridge,
    /// or start a new range. Ranges they overlap (a remap) are cut back first.
    pub fn add(&mut self, ctx: &mut PtContext, start: u64, end: u64, offset: u64) -> Result<()> {
        debug_assert!(start < end);
        self.remove(ctx, start, end)?;
        self.stats.pages += end - start;
        let prev = start.checked_sub(1).and_then(|p| {
            self.search(ctx.store, p, &mut |_| {})
                .filter(|(r, _)| r.end == start && r.offset == offset)
        });
        let next = self
            .search(ctx.store, end, &mut |_| {})
            .filter(|(r, _)| r.base == end && r.offset == offset);
        match (prev, next) {
            (Some((p, ps)), Some((n, _))) => {
                // Write the joined range first: deleting `n` may move entries, and moves copy
                // what is in memory.
                self.set(ctx.store, ps, Range { end: n.end, ..p });
                self.delete(ctx, n.base)
            }
            (Some((p, ps)), None) => {
                self.set(ctx.store, ps, Range { end, ..p });
                Ok(())
            }
            // The new base stays between its neighbours' (the previous range ends at or
            // before `start`), so the entry keeps its place in the tree.
            (None, Some((n, ns))) => {
                self.set(ctx.store, ns, Range { base: start, ..n });
                Ok(())
            }
            (None, None) => self.insert(
                ctx,
                Range {
                    base: start,
                    end,
                    offset,
                },
            ),
        }
    }

    /// The pages `[start, end)` were unmapped: shrink, split or delete the ranges covering
    /// them.
    pub fn remove(&mut self, ctx: &mut PtContext, start: u64, end: u64) -> Result<()> {
        // The range with the greatest base below `end` is the last that can overlap; ranges
        // before it end at or before its base.
        while let Some((r, slot)) = self
            .search(ctx.store, end - 1, &mut |_| {})
            .filter(|(r, _)| r.end > start)
        {
            let lo = r.base.max(start);
            let hi = r.end.min(end);
            self.stats.pages -= hi - lo;
            let left = (r.base < start).then_some(Range { end: start, ..r });
            let right = (end < r.end).then_some(Range { base: end, ..r });
            match (left, right) {
                (Some(l), Some(rt)) => {
                    self.set(ctx.store, slot, l);
                    return self.insert(ctx, rt);
                }
                (Some(l), None) => {
                    self.set(ctx.store, slot, l);
                    return Ok(());
                }
                (None, Some(rt)) => self.set(ctx.store, slot, rt),
                (None, None) => self.delete(ctx, r.base)?,
            }
        }
        Ok(())
    }

    /// Insert `r` (disjoint from every range), splitting full nodes on the way down.
    fn insert(&mut self, ctx: &mut PtContext, r: Range) -> Result<()> {
        if load(ctx.store, self.root).keys.len() == self.max_keys() {
            let top = ctx.alloc_table_frame()?;
            self.stats.nodes += 1;
            self.stats.depth += 1;
            let node = Node {
                leaf: false,
                keys: Vec::new(),
                kids: vec![self.root],
            };
            save(ctx.store, top, &node);
            self.root = top;
            self.split_child(ctx, top, 0)?;
        }
        let mut at = self.root;
        loop {
            let mut x = load(ctx.store, at);
            let mut i = x.keys.partition_point(|k| k.base < r.base);
            if x.leaf {
                x.keys.insert(i, r);
                save(ctx.store, at, &x);
                self.stats.ranges += 1;
                return Ok(());
            }
            if load(ctx.store, x.kids[i]).keys.len() == self.max_keys() {
                self.split_child(ctx, at, i)?;
                x = load(ctx.store, at);
                if r.base > x.keys[i].base {
                    i += 1;
                }
            }
            at = x.kids[i];
        }
    }

    /// Split the full child `i` of `parent` around its median, which moves up into `parent`.
    fn split_child(&mut self, ctx: &mut PtContext, parent: Pfn, i: usize) -> Result<()> {
        let t = self.t;
        let mut p = load(ctx.store, parent);
        let y_at = p.kids[i];
        let mut y = load(ctx.store, y_at);
        let z_at = ctx.alloc_table_frame()?;
        self.stats.nodes += 1;
        let z = Node {
            leaf: y.leaf,
            keys: y.keys.split_off(t),
            kids: if y.leaf {
                Vec::new()
            } else {
                y.kids.split_off(t)
            },
        };
        let median = y.keys.pop().expect("a full node has a median");
        p.keys.insert(i, median);
        p.kids.insert(i + 1, z_at);
        save(ctx.store, y_at, &y);
        save(ctx.store, z_at, &z);
        save(ctx.store, parent, &p);
        Ok(())
    }

    /// Delete the range based at `base`, in one pass down from the root: every node the
    /// descent enters has at least `t` entries, so removing one never underflows it.
    fn delete(&mut self, ctx: &mut PtContext, base: u64) -> Result<()> {
        let t = self.t;
        let mut at = self.root;
        let mut key = base;
        loop {
            let mut x = load(ctx.store, at);
            let i = x.keys.partition_point(|k| k.base < key);
            let here = i < x.keys.len() && x.keys[i].base == key;
            if x.leaf {
                if here {
                    x.keys.remove(i);
                    save(ctx.store, at, &x);
                    self.stats.ranges -= 1;
                }
                break;
            }
            if here {
                let (y, z) = (x.kids[i], x.kids[i + 1]);
                if load(ctx.store, y).keys.len() >= t {
                    // Replace the entry by its predecessor, then delete that from the left.
                    let pred = self.extreme(ctx.store, y, true);
                    x.keys[i] = pred;
                    save(ctx.store, at, &x);
                    (at, key) = (y, pred.base);
                } else if load(ctx.store, z).keys.len() >= t {
                    let succ = self.extreme(ctx.store, z, false);
                    x.keys[i] = succ;
                    save(ctx.store, at, &x);
                    (at, key) = (z, succ.base);
                } else {
                    // Both children are minimal: merge them around the entry and go on there.
                    self.merge(ctx, at, i);
                    at = y;
                }
                continue;
            }
            // Descend into child i, first giving it a t-th entry if it has only t - 1.
            let mut c = x.kids[i];
            if load(ctx.store, c).keys.len() < t {
                let left_rich = i > 0 && load(ctx.store, x.kids[i - 1]).keys.len() >= t;
                let right = i + 1 < x.kids.len();
                if left_rich {
                    self.rotate_right(ctx.store, at, i);
                } else if right && load(ctx.store, x.kids[i + 1]).keys.len() >= t {
                    self.rotate_left(ctx.store, at, i);
                } else if right {
                    self.merge(ctx, at, i);
                } else {
                    self.merge(ctx, at, i - 1);
                    c = x.kids[i - 1];
                }
            }
            at = c;
        }
        // A merge at the root can leave it empty with one child: the tree loses a level.
        let root = load(ctx.store, self.root);
        if root.keys.is_empty() && !root.leaf {
            let old = self.root;
            self.root = root.kids[0];
            self.free_node(ctx, old);
            self.stats.depth -= 1;
        }
        Ok(())
    }

    /// The greatest (`max`) or least entry of the subtree at `at`.
    fn extreme(&self, store: &PtStore, mut at: Pfn, max: bool) -> Range {
        loop {
            let x = load(store, at);
            if x.leaf {
                let k = if max { x.keys.last() } else { x.keys.first() };
                return *k.expect("a non-root node is never empty");
            }
            at = if max { x.kids[x.keys.len()] } else { x.kids[0] };
        }
    }

    /// Merge child `i + 1` of `parent` and the entry between into child `i`; free child `i + 1`.
    fn merge(&mut self, ctx: &mut PtContext, parent: Pfn, i: usize) {
        let mut p = load(ctx.store, parent);
        let (y_at, z_at) = (p.kids[i], p.kids[i + 1]);
        let mut y = load(ctx.store, y_at);
        let z = load(ctx.store, z_at);
        y.keys.push(p.keys.remove(i));
        y.keys.extend(z.keys);
        y.kids.extend(z.kids);
        p.kids.remove(i + 1);
        save(ctx.store, y_at, &y);
        save(ctx.store, parent, &p);
        self.free_node(ctx, z_at);
    }

    /// Move the last entry of child `i - 1` up into `parent` and the entry between down to the
    /// front of child `i`.
    fn rotate_right(&self, store: &mut PtStore, parent: Pfn, i: usize) {
        let mut p = load(store, parent);
        let (s_at, c_at) = (p.kids[i - 1], p.kids[i]);
        let (mut s, mut c) = (load(store, s_at), load(store, c_at));
        c.keys.insert(0, p.keys[i - 1]);
        p.keys[i - 1] = s.keys.pop().expect("a rich sibling");
        if !s.leaf {
            c.kids
                .insert(0, s.kids.pop().expect("an inner node has children"));
        }
        save(store, s_at, &s);
        save(store, c_at, &c);
        save(store, parent, &p);
    }

    /// Move the first entry of child `i + 1` up into `parent` and the entry between down to
    /// the end of child `i`.
    fn rotate_left(&self, store: &mut PtStore, parent: Pfn, i: usize) {
        let mut p = load(store, parent);
        let (c_at, s_at) = (p.kids[i], p.kids[i + 1]);
        let (mut c, mut s) = (load(store, c_at), load(store, s_at));
        c.keys.push(p.keys[i]);
        p.keys[i] = s.keys.remove(0);
        if !s.leaf {
            c.kids.push(s.kids.remove(0));
        }
        save(store, s_at, &s);
        save(store, c_at, &c);
        save(store, parent, &p);
    }

    fn free_node(&mut self, ctx: &mut PtContext, at: Pfn) {
        ctx.store.release_frame(at);
        ctx.buddy.free(at, 0);
        self.stats.nodes -= 1;
    }

    /// Every range in order, checking the B-tree's invariants on the way (tests): entries
    /// sorted and disjoint, node sizes within bounds, all leaves at one depth, counters right.
    #[cfg(test)]
    pub fn check(&self, store: &PtStore) -> Vec<Range> {
        fn visit(
            t: &RangeTable,
            store: &PtStore,
            at: Pfn,
            depth: u32,
            out: &mut Vec<Range>,
            nodes: &mut u64,
        ) {
            *nodes += 1;
            let x = load(store, at);
            let root = at == t.root;
            assert!(x.keys.len() <= t.max_keys(), "node overfull");
            assert!(root || x.keys.len() >= t.t - 1, "node underfull");
            if x.leaf {
                assert_eq!(depth, t.stats.depth, "leaves at different depths");
                out.extend(&x.keys);
                return;
            }
            for (j, kid) in x.kids.iter().enumerate() {
                visit(t, store, *kid, depth + 1, out, nodes);
                if let Some(k) = x.keys.get(j) {
                    out.push(*k);
                }
            }
        }
        let mut out = Vec::new();
        let mut nodes = 0;
        visit(self, store, self.root, 1, &mut out, &mut nodes);
        assert!(out.iter().all(|r| r.base < r.end), "empty range");
        assert!(
            out.windows(2).all(|w| w[0].end <= w[1].base),
            "ranges unsorted or overlapping"
        );
        assert_eq!(nodes, self.stats.nodes, "node count");
        assert_eq!(out.len() as u64, self.stats.ranges, "range count");
        assert_eq!(
            out.iter().map(Range::pages).sum::<u64>(),
            self.stats.pages,
            "page count"
        );
        out
    }
}
