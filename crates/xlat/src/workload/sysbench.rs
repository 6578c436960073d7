//! SysBench's memory test (`sysbench memory`), used by Mosaic pages and SPARTA.
//!
//! Each event of the test takes one block of `block_bytes` and reads or writes it word by word
//! (`size_t` words, one loop instruction between accesses), as sysbench's `memory_execute_event`
//! loop does. Blocks are taken one after another (`access = "seq"`) or uniformly at random
//! (`rnd`). Sysbench's own buffer is one block per thread; here the blocks are drawn from a
//! buffer of `total_bytes` (default 1 GiB) so that random access stresses address translation
//! as the papers' large-footprint runs do.

use super::emit::{Emitter, SimHeap, Stop, ThreadedSource};
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Seq,
    Rnd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Oper {
    Read,
    Write,
    /// sysbench's `none` runs the loop without touching memory: no references to simulate, so
    /// it is rejected with an explanation rather than producing an empty run.
    None,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SysbenchConfig {
    /// `--memory-block-size` (sysbench default 1 KiB); a multiple of 8 bytes.
    #[serde(default = "default_block")]
    pub block_bytes: u64,
    /// Bytes of the buffer the blocks are taken from (a multiple of `block_bytes`).
    #[serde(default = "default_total")]
    pub total_bytes: u64,
    /// `--memory-access-mode` (sysbench default `seq`).
    #[serde(default = "default_access")]
    pub access: Access,
    /// `--memory-oper` (sysbench default `write`).
    #[serde(default = "default_oper")]
    pub oper: Oper,
    /// Memory references to emit.
    #[serde(default = "default_refs")]
    pub references: u64,
    /// Map the buffer before the first reference (sysbench allocates and fills it first).
    #[serde(default = "default_populate")]
    pub populate: bool,
}

fn default_block() -> u64 {
    1024
}
fn default_total() -> u64 {
    1 << 30
}
fn default_access() -> Access {
    Access::Seq
}
fn default_oper() -> Oper {
    Oper::Write
}
fn default_refs() -> u64 {
    20_000_000
}
fn default_populate() -> bool {
    true
}

const WORD: u64 = 8;

impl SysbenchConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.block_bytes == 0 || !self.block_bytes.is_multiple_of(WORD) {
            return Err(Error::config(
                format!("{path}.block_bytes"),
                format!("must be a positive multiple of 8, got {}", self.block_bytes),
            ));
        }
        if self.total_bytes < self.block_bytes || !self.total_bytes.is_multiple_of(self.block_bytes)
        {
            return Err(Error::config(
                format!("{path}.total_bytes"),
                format!(
                    "must be a positive multiple of block_bytes ({}), got {}",
                    self.block_bytes, self.total_bytes
                ),
            ));
        }
        if self.oper == Oper::None {
            return Err(Error::config(
                format!("{path}.oper"),
                "`none` touches no memory, so there is nothing to simulate; use `read` or `write`",
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }
}

/// Builds the memory test in process `pid` and returns its record stream.
pub fn build(
    cfg: &SysbenchConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let buffer = SimHeap::new(pid, MapKind::Anon, cfg.populate).alloc(os, cfg.total_bytes, 4096)?;
    let cfg = cfg.clone();
    Ok(ThreadedSource::spawn(
        pid,
        cfg.references,
        move |e: &mut Emitter| -> std::result::Result<(), Stop> {
            let mut rng = Rng::new(seed, rng::stream::WORKLOAD);
            let blocks = cfg.total_bytes / cfg.block_bytes;
            let mut next = 0;
            loop {
                let block = match cfg.access {
                    Access::Seq => {
                        let b = next;
                        next = (next + 1) % blocks;
                        b
                    }
                    Access::Rnd => rng.below(blocks),
                };
                // Event dispatch: pick the block, set up the loop bounds.
                e.instr(10);
                let start = buffer.0 + block * cfg.block_bytes;
                for off in (0..cfg.block_bytes).step_by(WORD as usize) {
                    let va = VirtAddr(start + off);
                    match cfg.oper {
                        Oper::Read => e.load(va, WORD as u8)?,
                        _ => e.store(va, WORD as u8)?,
                    };
                    e.instr(1);
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Op, Record};
    use crate::workload::testutil::{drain, small_os, stream_hash, vma_bytes};

    fn tiny(access: Access, oper: Oper) -> SysbenchConfig {
        SysbenchConfig {
            block_bytes: 256,
            total_bytes: 64 << 10,
            access,
            oper,
            references: 20_000,
            populate: true,
        }
    }

    fn run(cfg: &SysbenchConfig, seed: u64) -> (Vec<Record>, VirtAddr) {
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        let mut src = build(cfg, &mut os, pid, seed).unwrap();
        let first = |v: &&crate::os::Vma| v.role.is_data();
        let base = VirtAddr(os.process(pid).unwrap().vmas().find(first).unwrap().start.0 * 4096);
        (drain(&mut src, 999), base)
    }

    #[test]
    fn seq_writes_consecutive_words_and_wraps() {
        let cfg = tiny(Access::Seq, Oper::Write);
        let (recs, base) = run(&cfg, 1);
        assert_eq!(recs.len(), 20_000);
        let words = cfg.total_bytes / 8;
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.vaddr.0, base.0 + (i as u64 % words) * 8);
            assert_eq!((r.op, r.size, r.dep), (Op::Store, 8, 0));
            // One loop instruction between words, the event overhead at each block start.
            let want = if i % 32 == 0 {
                if i == 0 {
                    10
                } else {
                    11
                }
            } else {
                1
            };
            assert_eq!(r.instr_delta, want, "record {i}");
        }
    }

    #[test]
    fn rnd_reads_whole_blocks_inside_the_buffer() {
        let cfg = tiny(Access::Rnd, Oper::Read);
        let (recs, base) = run(&cfg, 2);
        let mut blocks = std::collections::HashSet::new();
        for block in recs.chunks(32) {
            let start = block[0].vaddr.0 - base.0;
            assert_eq!(start % 256, 0, "blocks start at block boundaries");
            assert!(start + 256 <= cfg.total_bytes);
            for (j, r) in block.iter().enumerate() {
                assert_eq!(r.vaddr.0, block[0].vaddr.0 + j as u64 * 8);
                assert_eq!(r.op, Op::Load);
            }
            blocks.insert(start);
        }
        // 625 draws over 256 blocks cover most of them.
        assert!(blocks.len() > 200, "{}", blocks.len());
    }

    #[test]
    fn deterministic_per_seed() {
        let cfg = tiny(Access::Rnd, Oper::Write);
        let a = stream_hash(&run(&cfg, 4).0);
        assert_eq!(a, stream_hash(&run(&cfg, 4).0));
        assert_ne!(a, stream_hash(&run(&cfg, 5).0));
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let check = |f: fn(&mut SysbenchConfig), key: &str| {
            let mut c = tiny(Access::Seq, Oper::Read);
            f(&mut c);
            let err = c.validate("workload").unwrap_err().to_string();
            assert!(err.contains(&format!("`workload.{key}`")), "{err}");
        };
        check(|c| c.block_bytes = 12, "block_bytes");
        check(|c| c.total_bytes = 1000, "total_bytes");
        check(|c| c.total_bytes = 0, "total_bytes");
        check(|c| c.oper = Oper::None, "oper");
        check(|c| c.references = 0, "references");
        let bad: std::result::Result<SysbenchConfig, _> = toml::from_str("access = 'zigzag'");
        assert!(bad.is_err());
    }

    #[test]
    fn defaults_are_sysbench_defaults_with_a_large_buffer() {
        let mut cfg: SysbenchConfig = toml::from_str("").unwrap();
        cfg.validate("workload").unwrap();
        assert_eq!(
            (cfg.block_bytes, cfg.access, cfg.oper),
            (1024, Access::Seq, Oper::Write)
        );
        cfg.populate = false;
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        drop(build(&cfg, &mut os, pid, 1).unwrap());
        assert_eq!(vma_bytes(&os), 1 << 30);
    }
}
