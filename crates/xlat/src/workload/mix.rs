//! A multi-programmed mix: several workloads, each in its own process (own pid, own address
//! space and page table), as Mosaic pages and SPARTA run co-located programs.
//!
//! Each member is a complete `[workload]` table (any built-in generator or a trace) built into
//! its own process with a seed derived from the run seed and its position. Member `i`'s
//! records carry core `i`. Members are single-threaded: a member's `threads` must be 1.
//!
//! **A core per member.** A system with at least as many cores as members (and more than one)
//! takes the members as programs of their own ([`RecordSource::programs`]): each core reads its
//! member's stream on its own clock, each member runs `references / members` records (its
//! quota) from its own region of interest, and a member whose stream ends starts it again
//! ([`RecordSource::restart`]: built again with its seed, in the memory it has, each `mmap`
//! answered with the address its first build got). The system does the rest
//! (`sim/system/programs.rs`).
//!
//! **One core.** Otherwise the mix is one stream, time-sharing core 0: the scheduler gives each
//! member a slice of `quantum` instructions (its records' `instr_delta` plus one for the
//! memory instruction itself, none for a further operand of one; a slice ends after the record
//! that reaches the quantum, or after the last operand of its instruction), then
//! switches to the next member that still has records. Members that run out leave the rotation;
//! the mix ends when all have, or after `references` records in total. The mix's region of
//! interest begins once every member has reached its own (a member without set-up is there
//! from its first record), and `references` counts from there: members that set up their data
//! (the graph kernels) are fast-forwarded through it together.

use super::WorkloadConfig;
use crate::addr::{PageSize, VirtAddr, Vpn};
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind, Vma};
use crate::rng::{self, Rng};
use crate::trace::{Program, Record, RecordSource, Roi};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixConfig {
    /// The programs, each a full workload table (`[[workload.members]]`, with its `name`).
    #[serde(default = "default_members")]
    pub members: Vec<WorkloadConfig>,
    /// Instructions per time slice (on one core).
    #[serde(default = "default_quantum")]
    pub quantum: u64,
    /// Memory references over all members: on a core per member, each runs its share (its
    /// quota); on one core, the interleaved stream's records.
    #[serde(default = "default_refs")]
    pub references: u64,
    /// When false, no member maps its memory at build time (overrides the members' own
    /// `populate`); when true each member's own setting applies.
    #[serde(default = "default_populate")]
    pub populate: bool,
}

/// A random-access and a streaming program: the classic translation-interference pair.
fn default_members() -> Vec<WorkloadConfig> {
    ["name = 'gups'", "name = 'stream'"]
        .iter()
        .map(|t| toml::from_str(t).expect("built-in default member parses"))
        .collect()
}
fn default_quantum() -> u64 {
    1_000_000
}
fn default_refs() -> u64 {
    20_000_000
}
fn default_populate() -> bool {
    true
}

impl MixConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.members.is_empty() {
            return Err(Error::config(
                format!("{path}.members"),
                "must list at least one workload",
            ));
        }
        if self.members.len() > MAX_MEMBERS {
            return Err(Error::config(
                format!("{path}.members"),
                format!(
                    "lists {} workloads; at most {MAX_MEMBERS} (a record names its core, one per \
                     member, in a byte)",
                    self.members.len()
                ),
            ));
        }
        for (i, m) in self.members.iter().enumerate() {
            let at = format!("{path}.members[{i}]");
            if let WorkloadConfig::Mix(_) = m {
                return Err(Error::config(
                    format!("{at}.name"),
                    "a mix cannot contain another mix (list its members here instead)",
                ));
            }
            m.validate(&at)?;
            // The member's core number is its index, and its records' dependences count in
            // that one stream: a member has one thread.
            if m.cores() > 1 {
                return Err(Error::config(
                    format!("{at}.threads"),
                    "a mix member runs single-threaded (its core is its position in the mix)",
                ));
            }
        }
        super::nonzero(format!("{path}.quantum"), self.quantum)?;
        super::nonzero(format!("{path}.references"), self.references)
    }
}

/// The seed of member `index` under the run `seed`: independent streams per member, so adding a
/// member does not change the others' records.
pub fn member_seed(seed: u64, index: usize) -> u64 {
    Rng::new(
        seed,
        rng::stream::WORKLOAD.wrapping_add((index as u64 + 1) << 32),
    )
    .next_u64()
}

/// `cfg` with `populate = false`, for workloads that have the key (traces do not).
fn without_populate(cfg: &WorkloadConfig) -> Result<WorkloadConfig> {
    let bad = |e: String| Error::Workload(format!("mix member `{}`: {e}", cfg.name()));
    let mut v = toml::Value::try_from(cfg).map_err(|e| bad(e.to_string()))?;
    if let Some(p) = v.as_table_mut().and_then(|t| t.get_mut("populate")) {
        *p = toml::Value::Boolean(false);
    }
    v.try_into()
        .map_err(|e: toml::de::Error| bad(e.to_string()))
}

/// Builds every member into its own new process and returns the interleaved stream.
pub fn build(cfg: &MixConfig, os: &mut dyn AddressSpaces, seed: u64) -> Result<Mix> {
    let mut members = Vec::with_capacity(cfg.members.len());
    for (i, m) in cfg.members.iter().enumerate() {
        let m = if cfg.populate {
            m.clone()
        } else {
            without_populate(m)?
        };
        let pid = os.spawn()?;
        let seed = member_seed(seed, i);
        let mut recorder = Recorder {
            os,
            maps: Vec::new(),
        };
        let source = super::build_into(&m, &mut recorder, pid, seed)?;
        let maps = recorder.maps;
        members.push(Member {
            // A source without set-up says so before it is read.
            in_roi: source.roi() == Roi::At(0),
            source,
            rebuild: Rebuild { cfg: m, seed, maps },
            pid,
            buf: Vec::with_capacity(MEMBER_BATCH),
            pos: 0,
            taken: 0,
            done: false,
        });
    }
    let roi = if members.iter().all(|m| m.in_roi) {
        Roi::At(0)
    } else {
        Roi::NotYet
    };
    Ok(Mix {
        members,
        current: 0,
        in_slice: false,
        slice_instr: 0,
        quantum: cfg.quantum,
        emitted: 0,
        budget: cfg.references,
        roi,
    })
}

/// Most members: each gets its own core number, and a record's core is a byte.
const MAX_MEMBERS: usize = 256;
/// Records read from a member at a time.
const MEMBER_BATCH: usize = 4096;

/// What building a member asked of the OS for memory, `mmap` or `sbrk` of `(pid, bytes,
/// kind)`, and the address it got, in order.
type Maps = Vec<(Call, u16, u64, MapKind, Option<VirtAddr>)>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Mmap,
    Sbrk,
}

/// The address spaces as a member's build sees them, noting its mappings (to restart it).
struct Recorder<'a> {
    os: &'a mut dyn AddressSpaces,
    maps: Maps,
}

impl AddressSpaces for Recorder<'_> {
    fn spawn(&mut self) -> Result<u16> {
        self.os.spawn()
    }
    fn mmap(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<VirtAddr> {
        let va = self.os.mmap(pid, bytes, kind)?;
        self.maps.push((Call::Mmap, pid, bytes, kind, Some(va)));
        Ok(va)
    }
    fn sbrk(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<Option<VirtAddr>> {
        let va = self.os.sbrk(pid, bytes, kind)?;
        self.maps.push((Call::Sbrk, pid, bytes, kind, va));
        Ok(va)
    }
    fn start_thread(&mut self, pid: u16) -> Result<()> {
        self.os.start_thread(pid)
    }
    fn populate(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<()> {
        self.os.populate(pid, va, bytes)
    }
    fn map_everything(&mut self, pid: u16) -> Result<()> {
        self.os.map_everything(pid)
    }
    fn munmap(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<Vec<(Vpn, PageSize)>> {
        self.os.munmap(pid, va, bytes)
    }
    fn processes(&self) -> usize {
        self.os.processes()
    }
    fn vmas(&self, pid: u16) -> Result<Vec<Vma>> {
        self.os.vmas(pid)
    }
    fn mapped_pages(&self, pid: u16) -> Result<[u64; 3]> {
        self.os.mapped_pages(pid)
    }
}

/// The address spaces as a restarting member's build sees them: its memory is there already.
/// Each `mmap` returns the address the first build got for the same request; mapping pages
/// (populate, a trace's whole address space) leaves them as they are now (a page the OS
/// has swapped out stays out until touched).
struct Replay<'a> {
    maps: &'a Maps,
    next: usize,
    name: &'static str,
}

impl Replay<'_> {
    /// The address the first build got for the same request, next in order.
    fn replay(
        &mut self,
        call: Call,
        pid: u16,
        bytes: u64,
        kind: MapKind,
    ) -> Result<Option<VirtAddr>> {
        match self.maps.get(self.next) {
            Some(&(c, p, b, k, va)) if (c, p, b, k) == (call, pid, bytes, kind) => {
                self.next += 1;
                Ok(va)
            }
            _ => Err(self.differs(&format!(
                "for other memory ({call:?} of {bytes} bytes, {kind:?})"
            ))),
        }
    }

    fn differs(&self, what: &str) -> Error {
        Error::Workload(format!(
            "mix member `{}` cannot restart: its build asks {what}, which its first build did \
             not",
            self.name
        ))
    }
}

impl AddressSpaces for Replay<'_> {
    fn spawn(&mut self) -> Result<u16> {
        Err(self.differs("for a new process"))
    }
    fn mmap(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<VirtAddr> {
        self.replay(Call::Mmap, pid, bytes, kind)?
            .ok_or_else(|| self.differs("for a mapping"))
    }
    fn sbrk(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<Option<VirtAddr>> {
        self.replay(Call::Sbrk, pid, bytes, kind)
    }
    fn start_thread(&mut self, _: u16) -> Result<()> {
        Ok(()) // its stack is there already
    }
    fn populate(&mut self, _: u16, _: VirtAddr, _: u64) -> Result<()> {
        Ok(())
    }
    fn map_everything(&mut self, _: u16) -> Result<()> {
        Ok(())
    }
    fn munmap(&mut self, _: u16, _: VirtAddr, _: u64) -> Result<Vec<(Vpn, PageSize)>> {
        Err(self.differs("to unmap memory"))
    }
    fn processes(&self) -> usize {
        0
    }
    fn vmas(&self, _: u16) -> Result<Vec<Vma>> {
        Err(self.differs("for its VMAs"))
    }
    fn mapped_pages(&self, _: u16) -> Result<[u64; 3]> {
        Err(self.differs("for its mapped pages"))
    }
}

/// How to build a member's stream again, from its first record, in the memory it has.
struct Rebuild {
    cfg: WorkloadConfig,
    seed: u64,
    maps: Maps,
}

impl Rebuild {
    fn build(&self, pid: u16) -> Result<Box<dyn RecordSource>> {
        let mut os = Replay {
            maps: &self.maps,
            next: 0,
            name: self.cfg.name(),
        };
        super::build_into(&self.cfg, &mut os, pid, self.seed)
    }
}

struct Member {
    source: Box<dyn RecordSource>,
    rebuild: Rebuild,
    pid: u16,
    buf: Vec<Record>,
    pos: usize,
    /// Records taken from the member's own stream so far.
    taken: u64,
    /// The member's records have reached its region of interest.
    in_roi: bool,
    done: bool,
}

/// One member as a program of its own (see [`RecordSource::programs`]): its stream with its
/// pid and core, restarting from its first record on demand.
struct MemberStream {
    source: Box<dyn RecordSource>,
    rebuild: Rebuild,
    pid: u16,
    core: u8,
}

impl RecordSource for MemberStream {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        self.source.fill(buf)?;
        for r in buf.iter_mut() {
            r.pid = self.pid;
            r.core = self.core;
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        self.source.len_hint()
    }

    fn roi(&self) -> Roi {
        self.source.roi()
    }

    fn restart(&mut self) -> Result<bool> {
        self.source = self.rebuild.build(self.pid)?;
        Ok(true)
    }
}

/// The round-robin interleaving of the members' streams.
pub struct Mix {
    members: Vec<Member>,
    current: usize,
    /// The current member has emitted a record in this slice.
    in_slice: bool,
    slice_instr: u64,
    quantum: u64,
    emitted: u64,
    budget: u64,
    roi: Roi,
}

impl Mix {
    /// End the slice and move to the next member that still has records (if any).
    fn switch(&mut self) {
        self.slice_instr = 0;
        self.in_slice = false;
        let n = self.members.len();
        for step in 1..=n {
            let next = (self.current + step) % n;
            if !self.members[next].done {
                self.current = next;
                return;
            }
        }
    }

    fn live(&self) -> bool {
        self.members.iter().any(|m| !m.done)
    }

    /// Records the mix may hold in all: `references` counts from its region of interest.
    fn limit(&self) -> u64 {
        self.roi.end_of_budget(self.budget)
    }

    /// The region begins at the next record once every member is in its own (or has ended).
    fn note_roi(&mut self) {
        if self.roi == Roi::NotYet && self.members.iter().all(|m| m.in_roi || m.done) {
            self.roi = Roi::At(self.emitted);
        }
    }
}

impl RecordSource for Mix {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        buf.clear();
        let cap = buf.capacity().max(1);
        while buf.len() < cap && self.emitted < self.limit() && self.live() {
            let m = &mut self.members[self.current];
            if m.pos == m.buf.len() {
                m.source.fill(&mut m.buf)?;
                m.pos = 0;
                if m.buf.is_empty() {
                    m.done = true;
                    self.note_roi();
                    self.switch();
                }
                continue;
            }
            if !m.in_roi {
                // Known by now: a source knows where its region begins once it has handed
                // out the record there.
                if let Roi::At(start) = m.source.roi() {
                    m.in_roi = m.taken >= start;
                }
                if m.in_roi {
                    self.note_roi();
                }
            }
            let m = &mut self.members[self.current];
            m.taken += 1;
            if !self.in_slice {
                self.in_slice = true;
            }
            let mut r = m.buf[m.pos];
            m.pos += 1;
            r.pid = m.pid;
            // Validation keeps the index below 256. The member's dependences stay as they are:
            // `dep` counts within the records of one core number, the member's own stream.
            r.core = self.current as u8;
            self.emitted += 1;
            self.slice_instr += u64::from(r.instr_delta) + u64::from(!r.joins_previous());
            buf.push(r);
            // A slice does not end between the memory operands of one instruction (as far as
            // the member's buffered records tell).
            let m = &self.members[self.current];
            let operand_next = m.buf.get(m.pos).is_some_and(Record::joins_previous);
            if self.slice_instr >= self.quantum && !operand_next {
                self.switch();
            }
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        let Roi::At(start) = self.roi else {
            return None;
        };
        let members: Option<u64> = self.members.iter().map(|m| m.source.len_hint()).sum();
        Some(members.map_or(start + self.budget, |n| n.min(start + self.budget)))
    }

    fn roi(&self) -> Roi {
        self.roi
    }

    /// The members, each from the start of its own stream (none read yet), with its own
    /// region of interest; `references` and `quantum` are the system's to apply.
    fn programs(&mut self) -> Vec<Program> {
        let quota = self.budget.div_ceil(self.members.len().max(1) as u64);
        std::mem::take(&mut self.members)
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                debug_assert_eq!(m.taken, 0, "handed out before it is read");
                Program {
                    name: m.rebuild.cfg.name().to_string(),
                    pid: m.pid,
                    core: i as u8,
                    quota,
                    source: Box::new(MemberStream {
                        source: m.source,
                        rebuild: m.rebuild,
                        pid: m.pid,
                        core: i as u8,
                    }),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // Without randomisation a member gets the addresses it gets alone in a fresh OS (with it,
    // each process has its own layout).
    use crate::workload::testutil::{drain, stream_hash, unrandomised_os, vma_bytes};

    const TWO: &str = r#"
        quantum = 5000
        references = 60000
        [[members]]
        name = "kvstore"
        keys = 300
        buckets = 16
        value_min = 10
        value_max = 200
        references = 1000000
        [[members]]
        name = "sysbench-mem"
        access = "rnd"
        total_bytes = 1048576
        references = 1000000
        [[members]]
        name = "gups"
        table_bytes = 65536
        references = 4000
    "#;

    fn mix_cfg(text: &str) -> MixConfig {
        let cfg: MixConfig = toml::from_str(text).unwrap();
        cfg.validate("workload").unwrap();
        cfg
    }

    fn run_mix(cfg: &MixConfig, seed: u64) -> Vec<Record> {
        let mut os = unrandomised_os();
        let mut src =
            super::super::build(&WorkloadConfig::Mix(cfg.clone()), &mut os, seed).unwrap();
        assert_eq!(os.processes(), cfg.members.len());
        drain(src.as_mut(), 700)
    }

    #[test]
    fn each_member_runs_in_its_own_process_and_keeps_its_stream() {
        let cfg = mix_cfg(TWO);
        let recs = run_mix(&cfg, 3);
        assert_eq!(recs.len(), 60_000);
        // The short member ran out; the others filled the budget.
        assert_eq!(recs.iter().filter(|r| r.pid == 2).count(), 4000);
        for (i, member) in cfg.members.iter().enumerate() {
            // Standalone: the same workload alone in a fresh OS, with the member's seed.
            let mut os = unrandomised_os();
            let mut alone = super::super::build(member, &mut os, member_seed(3, i)).unwrap();
            let alone = drain(alone.as_mut(), 1000);
            let mine: Vec<(usize, Record)> = recs
                .iter()
                .copied()
                .enumerate()
                .filter(|(_, r)| r.pid == i as u16)
                .collect();
            assert!(mine.len() > 1000);
            for (local, (_, r)) in mine.iter().enumerate() {
                let a = alone[local];
                assert_eq!(
                    (r.vaddr, r.op, r.size, r.instr_delta),
                    (a.vaddr, a.op, a.size, a.instr_delta),
                    "member {i} record {local}"
                );
                // Dependences count in the member's own stream (its core number).
                assert_eq!(
                    (r.core, r.dep),
                    (i as u8, a.dep),
                    "member {i} record {local}"
                );
            }
        }
    }

    #[test]
    fn each_member_runs_on_its_own_core() {
        let recs = run_mix(&mix_cfg(TWO), 2);
        // Member i is process i here, and its records carry core i.
        assert!(recs.iter().all(|r| r.core as u16 == r.pid));
        assert_eq!(
            recs.iter()
                .map(|r| r.core)
                .collect::<std::collections::BTreeSet<_>>(),
            [0, 1, 2].into()
        );
        assert_eq!(WorkloadConfig::Mix(mix_cfg(TWO)).cores(), 3);
    }

    #[test]
    fn slices_respect_the_quantum_round_robin() {
        let cfg = mix_cfg(TWO);
        let recs = run_mix(&cfg, 1);
        let mut slices: Vec<(u16, Vec<u64>)> = Vec::new();
        for r in &recs {
            let cost = r.instr_delta as u64 + 1;
            match slices.last_mut() {
                Some((pid, costs)) if *pid == r.pid => costs.push(cost),
                _ => slices.push((r.pid, vec![cost])),
            }
        }
        let last = slices.len() - 1;
        for (n, (pid, costs)) in slices.iter().enumerate() {
            let total: u64 = costs.iter().sum();
            // A slice ends with the record that reaches the quantum (or its member's end).
            let member_ended = *pid == 2 && !slices[n + 1..].iter().any(|(p, _)| *p == 2);
            if n != last && !member_ended {
                assert!(total >= 5000, "slice {n} of pid {pid}: {total}");
            }
            assert!(total - costs.last().unwrap() < 5000, "slice {n}: {total}");
        }
        // Round robin over the live members.
        assert_eq!(slices[0].0, 0);
        assert_eq!(slices[1].0, 1);
        assert_eq!(slices[2].0, 2);
        assert_eq!(slices[3].0, 0);
    }

    #[test]
    fn the_region_begins_when_every_member_is_in_its_own() {
        // bfs at scale 8 sets up 256 stores; gups has no set-up.
        let cfg = mix_cfg(
            r#"
            quantum = 100
            references = 5000
            [[members]]
            name = "bfs"
            scale = 8
            edge_factor = 4
            [[members]]
            name = "gups"
            table_bytes = 65536
            "#,
        );
        let mut os = unrandomised_os();
        let mut src = super::super::build(&WorkloadConfig::Mix(cfg), &mut os, 3).unwrap();
        assert_eq!(src.roi(), Roi::NotYet);
        let recs = drain(src.as_mut(), 700);
        let Roi::At(at) = src.roi() else {
            panic!("no region of interest")
        };
        let at = at as usize;
        let bfs: Vec<&Record> = recs[..at].iter().filter(|r| r.core == 0).collect();
        assert_eq!(bfs.len(), 256, "bfs's whole set-up comes before the region");
        assert!(bfs.iter().all(|r| r.op == crate::trace::Op::Store));
        assert_eq!(
            recs[at].core, 0,
            "the region opens with bfs's first kernel record"
        );
        assert!(recs[..at].iter().any(|r| r.core == 1), "gups ran meanwhile");
        // `references` counts from the region.
        assert_eq!(recs.len(), at + 5000);
        // A mix of members without set-up is all region of interest.
        let mut os = unrandomised_os();
        let all = super::super::build(&WorkloadConfig::Mix(mix_cfg(TWO)), &mut os, 3).unwrap();
        assert_eq!(all.roi(), Roi::At(0));
    }

    #[test]
    fn programs_are_handed_out_each_with_its_stream_and_restart_in_their_memory() {
        let cfg = mix_cfg(TWO);
        let mut os = unrandomised_os();
        let mut mix = super::super::build(&WorkloadConfig::Mix(cfg.clone()), &mut os, 3).unwrap();
        let vmas: Vec<usize> = (0..3).map(|p| os.vmas(p).unwrap().len()).collect();
        let programs = mix.programs();
        // The mix gave them up.
        assert!(drain(mix.as_mut(), 100).is_empty());
        let names: Vec<&str> = programs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["kvstore", "sysbench-mem", "gups"]);
        // 60000 references over three members.
        assert!(programs.iter().all(|p| p.quota == 20_000));
        for (i, mut p) in programs.into_iter().enumerate() {
            assert_eq!((p.pid, p.core), (i as u16, i as u8));
            // Its records are those it emits alone, with its pid and core.
            let mut alone_os = unrandomised_os();
            let mut alone =
                super::super::build(&cfg.members[i], &mut alone_os, member_seed(3, i)).unwrap();
            let alone = drain(alone.as_mut(), 1000);
            let first = drain(p.source.as_mut(), 1000);
            assert_eq!(first.len(), alone.len(), "member {i}");
            let key = |r: &Record| (r.vaddr, r.op, r.instr_delta, r.dep);
            assert!(
                first.iter().map(key).eq(alone.iter().map(key)),
                "member {i}"
            );
            assert!(first.iter().all(|r| (r.pid, r.core) == (i as u16, i as u8)));
            // Started again, it emits the same records, at the same addresses, and maps
            // nothing new.
            assert!(p.source.restart().unwrap());
            let again = drain(p.source.as_mut(), 1000);
            assert!(
                again.iter().map(key).eq(first.iter().map(key)),
                "member {i}"
            );
            assert!(again.iter().all(|r| (r.pid, r.core) == (i as u16, i as u8)));
        }
        let after: Vec<usize> = (0..3).map(|p| os.vmas(p).unwrap().len()).collect();
        assert_eq!(after, vmas);
    }

    #[test]
    fn deterministic_per_seed() {
        let cfg = mix_cfg(TWO);
        let a = stream_hash(&run_mix(&cfg, 4));
        assert_eq!(a, stream_hash(&run_mix(&cfg, 4)));
        assert_ne!(a, stream_hash(&run_mix(&cfg, 5)));
    }

    #[test]
    fn populate_false_reaches_every_member() {
        let cfg = MixConfig {
            populate: false,
            ..mix_cfg(TWO)
        };
        let mut os = unrandomised_os();
        drop(super::super::build(&WorkloadConfig::Mix(cfg.clone()), &mut os, 1).unwrap());
        assert_eq!(os.stats.faults.populated, 0);
        let mut os = unrandomised_os();
        drop(super::super::build(&WorkloadConfig::Mix(mix_cfg(TWO)), &mut os, 1).unwrap());
        assert!(os.stats.faults.populated > 0);
    }

    #[test]
    fn bad_members_are_named_by_position() {
        let err = |text: &str| {
            toml::from_str::<MixConfig>(text)
                .unwrap()
                .validate("workload")
                .unwrap_err()
                .to_string()
        };
        let e = err(&TWO.replace("total_bytes = 1048576", "total_bytes = 1000"));
        assert!(e.contains("`workload.members[1].total_bytes`"), "{e}");
        let e = err("[[members]]\nname = 'mix'\n");
        assert!(e.contains("`workload.members[0].name`"), "{e}");
        let e = err("members = []");
        assert!(e.contains("`workload.members`"), "{e}");
        let e = err("quantum = 0");
        assert!(e.contains("`workload.quantum`"), "{e}");
        let e = err(&TWO.replace("table_bytes = 65536", "table_bytes = 65536\nthreads = 2"));
        assert!(e.contains("`workload.members[2].threads`"), "{e}");
        let e = err(&"[[members]]\nname = 'gups'\n".repeat(257));
        assert!(e.contains("`workload.members`"), "{e}");
        assert!(toml::from_str::<MixConfig>("[[members]]\nname = 'gups'\nbogus = 1\n").is_err());
    }

    #[test]
    fn default_footprint_sums_the_members() {
        let mut cfg: MixConfig = toml::from_str("").unwrap();
        cfg.validate("workload").unwrap();
        cfg.populate = false;
        let mut os = unrandomised_os();
        drop(super::super::build(&WorkloadConfig::Mix(cfg), &mut os, 1).unwrap());
        // GUPS' 4 GiB table and STREAM's three 256 MiB arrays.
        assert_eq!(vma_bytes(&os), (4 << 30) + 3 * (256 << 20));
    }
}
