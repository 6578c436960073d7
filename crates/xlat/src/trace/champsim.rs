//! ChampSim instruction traces (the format of the DPC-3 / CRC-2 trace sets and of ChampSim's
//! PIN tracer): a stream of fixed 64-byte `input_instr` records, usually xz-compressed.
//!
//! # Record layout (little-endian, no padding)
//!
//! | offset | size | field                                              |
//! |-------:|-----:|----------------------------------------------------|
//! | 0      | 8    | `u64 ip`                                           |
//! | 8      | 1    | `u8 is_branch`                                     |
//! | 9      | 1    | `u8 branch_taken`                                  |
//! | 10     | 2    | `u8 destination_registers[2]` (0 = unused)         |
//! | 12     | 4    | `u8 source_registers[4]` (0 = unused)              |
//! | 16     | 16   | `u64 destination_memory[2]` (0 = unused)           |
//! | 32     | 32   | `u64 source_memory[4]` (0 = unused)                |
//!
//! # Mapping to records
//!
//! Each non-zero source memory operand becomes a load, then each non-zero destination memory
//! operand a store, in operand order. An instruction without memory operands adds one to the
//! `instr_delta` of the next record; the first record of an instruction carries the pending
//! delta, its other records 0 and [`Record::SAME_INSTRUCTION`], so an instruction with several
//! memory operands still counts as one. ChampSim carries no access size: records get
//! [`ACCESS_BYTES`]. There is one thread of one process: `pid` and `core` are 0.
//!
//! # Dependences
//!
//! The trace names registers, not data flow, so load-to-load dependences (pointer chasing) are
//! recovered by register taint: per register, the record index of the youngest load its value
//! derives from. An instruction's loads depend on the youngest load among its source
//! registers (`dep` = distance in records; ChampSim does not say which sources form the
//! address, so all of them count), and it writes to each destination register the youngest
//! load among its sources and its own loads. The flags and instruction-pointer registers
//! ([`REG_FLAGS`], [`REG_INSTRUCTION_POINTER`], as numbered by ChampSim's tracer) are ignored:
//! they carry control flow, not addresses, and following them would make every load after a
//! compare-and-branch on loaded data "dependent".
//!
//! The writer emits one instruction per record and encodes `dep` back through registers: the
//! k-th load writes register `DEP_REGISTERS[k % len]` and a dependent load reads its producer's
//! register, so the reader recovers exactly the distance as long as the producer is a load at
//! most `DEP_REGISTERS.len()` loads back (other dependences are dropped). A record that joins
//! the previous one's instruction ([`Record::joins_previous`]) becomes another memory operand
//! of that instruction when the reader would give it back alike: loads before stores, at most
//! four loads and two stores, and a load depending on the same producer as the instruction's
//! first load (the operands share the source registers). The register of such an instruction
//! holds its last load, so a later dependence on one of its earlier loads is dropped.

use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::trace::batch::{Batched, UnitDecoder};
use crate::trace::compress::{self, CompressedWriter, Compression};
use crate::trace::{Op, Record, SYNTHETIC_IP_BASE, SYNTHETIC_IP_STRIDE};
use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// Bytes of one `input_instr`.
pub const INSTR_BYTES: usize = 64;
/// Access size given to every record (ChampSim records carry none; 8 bytes is a word).
pub const ACCESS_BYTES: u8 = 8;
/// ChampSim's stack-pointer register number.
pub const REG_STACK_POINTER: u8 = 6;
/// ChampSim's flags register number.
pub const REG_FLAGS: u8 = 25;
/// ChampSim's instruction-pointer register number.
pub const REG_INSTRUCTION_POINTER: u8 = 26;

/// One ChampSim `input_instr`, field for field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Instr {
    pub ip: u64,
    pub is_branch: u8,
    pub branch_taken: u8,
    pub destination_registers: [u8; 2],
    pub source_registers: [u8; 4],
    pub destination_memory: [u64; 2],
    pub source_memory: [u64; 4],
}

fn u64_at(b: &[u8; INSTR_BYTES], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Instr {
    pub fn decode(b: &[u8; INSTR_BYTES]) -> Instr {
        Instr {
            ip: u64_at(b, 0),
            is_branch: b[8],
            branch_taken: b[9],
            destination_registers: [b[10], b[11]],
            source_registers: [b[12], b[13], b[14], b[15]],
            destination_memory: [u64_at(b, 16), u64_at(b, 24)],
            source_memory: [u64_at(b, 32), u64_at(b, 40), u64_at(b, 48), u64_at(b, 56)],
        }
    }

    pub fn encode(&self) -> [u8; INSTR_BYTES] {
        let mut b = [0u8; INSTR_BYTES];
        b[0..8].copy_from_slice(&self.ip.to_le_bytes());
        b[8] = self.is_branch;
        b[9] = self.branch_taken;
        b[10..12].copy_from_slice(&self.destination_registers);
        b[12..16].copy_from_slice(&self.source_registers);
        for (i, m) in self.destination_memory.iter().enumerate() {
            b[16 + 8 * i..24 + 8 * i].copy_from_slice(&m.to_le_bytes());
        }
        for (i, m) in self.source_memory.iter().enumerate() {
            b[32 + 8 * i..40 + 8 * i].copy_from_slice(&m.to_le_bytes());
        }
        b
    }
}

/// Whether register `r` takes part in dependence tracking.
fn tracked(r: u8) -> bool {
    r != 0 && r != REG_FLAGS && r != REG_INSTRUCTION_POINTER
}

/// Turns instructions into records, tracking register taint to recover dependences.
pub struct InstrMapper {
    /// Per register: one more than the record index of the youngest load its value derives
    /// from, 0 for none. Untracked registers are never written, so they always read 0.
    taint: [u64; 256],
    /// Records produced so far (the index of the next record).
    records: u64,
    /// Non-memory instructions not yet carried by a record.
    pending_delta: u32,
}

impl Default for InstrMapper {
    fn default() -> Self {
        InstrMapper {
            taint: [0; 256],
            records: 0,
            pending_delta: 0,
        }
    }
}

impl InstrMapper {
    /// Appends the records of `ins` to `out`.
    #[inline]
    pub fn map(&mut self, ins: &Instr, out: &mut VecDeque<Record>) {
        // One more than the youngest load among the sources (0: none).
        let source_load = ins
            .source_registers
            .iter()
            .map(|&r| self.taint[r as usize])
            .max()
            .unwrap_or(0);
        let mut derived = source_load;
        let before = out.len();
        let mut record = |addr: u64, op: Op, delta: &mut u32| {
            let index = self.records;
            let dep = if op == Op::Load && source_load > 0 {
                u32::try_from(index + 1 - source_load).unwrap_or(0)
            } else {
                0
            };
            if op == Op::Load {
                derived = index + 1;
            }
            let flags = if out.len() > before {
                Record::SAME_INSTRUCTION
            } else {
                0
            };
            out.push_back(Record {
                vaddr: VirtAddr(addr),
                op,
                size: ACCESS_BYTES,
                core: 0,
                pid: 0,
                instr_delta: std::mem::take(delta),
                dep,
                flags,
            });
            self.records += 1;
        };
        for &a in &ins.source_memory {
            if a != 0 {
                record(a, Op::Load, &mut self.pending_delta);
            }
        }
        for &a in &ins.destination_memory {
            if a != 0 {
                record(a, Op::Store, &mut self.pending_delta);
            }
        }
        if out.len() == before {
            self.pending_delta = self.pending_delta.saturating_add(1);
        }
        for &r in &ins.destination_registers {
            if tracked(r) {
                self.taint[r as usize] = derived;
            }
        }
    }
}

/// Instructions decoded per call of `decode_unit` at most: enough to amortise the call, few
/// enough that the records wait in a cache-sized queue.
const INSTRS_PER_UNIT: usize = 1024;

/// Streaming decoder of a ChampSim trace file (raw, xz or gzip).
pub struct ChampSimDecoder {
    path: PathBuf,
    compression: Compression,
    input: Box<dyn BufRead + Send>,
    /// Uncompressed bytes of whole instructions consumed so far.
    offset: u64,
    /// The first bytes of an instruction that straddles two input buffers.
    partial: [u8; INSTR_BYTES],
    partial_len: usize,
    mapper: InstrMapper,
}

/// A ChampSim trace reader.
pub type ChampSimReader = Batched<ChampSimDecoder>;

/// Opens a ChampSim trace; the compression is detected from the file's magic bytes.
pub fn open(path: &Path) -> Result<ChampSimReader> {
    let (compression, input) = compress::open_read(path)?;
    Ok(reader(path, compression, input))
}

fn reader(path: &Path, compression: Compression, input: Box<dyn BufRead + Send>) -> ChampSimReader {
    Batched::new(ChampSimDecoder {
        path: path.to_path_buf(),
        compression,
        input,
        offset: 0,
        partial: [0; INSTR_BYTES],
        partial_len: 0,
        mapper: InstrMapper::default(),
    })
}

/// The instruction of the trace at `path` that yields record `record`, and its byte offset.
pub fn locate(path: &Path, record: u64) -> Result<Option<String>> {
    let (compression, input) = compress::open_read(path)?;
    // An input buffer of one instruction: every unit decoded is one instruction.
    let input = Box::new(std::io::BufReader::with_capacity(INSTR_BYTES, input));
    Ok(reader(path, compression, input).locate(record))
}

impl ChampSimDecoder {
    /// The compression the file was found to use.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The error for input that ends `got` bytes into an instruction.
    fn truncated(&self, got: usize) -> Error {
        let instr = self.offset / INSTR_BYTES as u64;
        let msg = match self.compression {
            Compression::None => format!(
                "not a ChampSim trace: size is not a multiple of {INSTR_BYTES} bytes \
                 (instruction {instr} at byte offset {} has only {got} bytes)",
                self.offset
            ),
            c => format!(
                "truncated ChampSim trace: the {} content ends inside instruction {instr} \
                 (uncompressed byte offset {}, {got} of {INSTR_BYTES} bytes present)",
                c.label(),
                self.offset
            ),
        };
        Error::file(&self.path, msg)
    }
}

impl UnitDecoder for ChampSimDecoder {
    fn position(&self) -> String {
        let last = self.offset.saturating_sub(INSTR_BYTES as u64);
        let bytes = match self.compression {
            Compression::None => "byte offset",
            _ => "uncompressed byte offset",
        };
        format!(
            "instruction {} at {bytes} {last}",
            last / INSTR_BYTES as u64
        )
    }

    /// Decodes the whole instructions the input has buffered (up to `INSTRS_PER_UNIT`) straight
    /// from its buffer: no copy and no call per instruction. An instruction split between two
    /// buffers is assembled in `partial`.
    fn decode_unit(&mut self, out: &mut VecDeque<Record>) -> Result<bool> {
        let buf = match self.input.fill_buf() {
            Ok(buf) => buf,
            Err(e) => {
                let msg = compress::read_error(self.compression, self.offset, &e);
                return Err(Error::file(&self.path, msg));
            }
        };
        if buf.is_empty() {
            return match self.partial_len {
                0 => Ok(false),
                got => Err(self.truncated(got)),
            };
        }
        if self.partial_len > 0 || buf.len() < INSTR_BYTES {
            let n = (INSTR_BYTES - self.partial_len).min(buf.len());
            self.partial[self.partial_len..self.partial_len + n].copy_from_slice(&buf[..n]);
            self.partial_len += n;
            self.input.consume(n);
            if self.partial_len == INSTR_BYTES {
                self.partial_len = 0;
                self.offset += INSTR_BYTES as u64;
                self.mapper.map(&Instr::decode(&self.partial), out);
            }
            return Ok(true);
        }
        let whole = (buf.len() / INSTR_BYTES).min(INSTRS_PER_UNIT) * INSTR_BYTES;
        for b in buf[..whole].chunks_exact(INSTR_BYTES) {
            let b: &[u8; INSTR_BYTES] = b.try_into().expect("chunks of INSTR_BYTES");
            self.mapper.map(&Instr::decode(b), out);
        }
        self.input.consume(whole);
        self.offset += whole as u64;
        Ok(true)
    }
}

/// Registers the writer cycles through to encode dependences: every register number except
/// "unused" (0) and the ones with a special meaning to ChampSim.
fn dep_registers() -> Vec<u8> {
    (1..=255u8)
        .filter(|&r| tracked(r) && r != REG_STACK_POINTER)
        .collect()
}

/// Streaming writer of a ChampSim trace: one instruction per record, preceded by `instr_delta`
/// register-free non-memory instructions; ifetch records become a non-memory instruction at
/// their address. Call [`finish`](ChampSimWriter::finish).
pub struct ChampSimWriter {
    path: PathBuf,
    out: CompressedWriter,
    next_ip: u64,
    records: u64,
    loads: u64,
    registers: Vec<u8>,
    /// `(record index, load number)` of the last `registers.len()` loads, oldest first.
    recent_loads: VecDeque<(u64, u64)>,
    /// The memory instruction written last, held back while further operands may join it.
    pending: Option<Pending>,
}

/// A memory instruction of the writer not written out yet.
struct Pending {
    ins: Instr,
    loads: usize,
    stores: usize,
}

impl ChampSimWriter {
    /// Creates `path`, compressing as `compression`.
    pub fn create(path: &Path, compression: Compression) -> Result<Self> {
        let registers = dep_registers();
        Ok(ChampSimWriter {
            path: path.to_path_buf(),
            out: CompressedWriter::create(path, compression)?,
            next_ip: SYNTHETIC_IP_BASE,
            records: 0,
            loads: 0,
            recent_loads: VecDeque::with_capacity(registers.len()),
            registers,
            pending: None,
        })
    }

    /// Writes out the held-back instruction, if any.
    fn flush(&mut self) -> Result<()> {
        match self.pending.take() {
            Some(p) => self.emit(&p.ins),
            None => Ok(()),
        }
    }

    /// The register a load at record `index` depending `dep` records back reads (0: none).
    fn source_register(&self, index: u64, dep: u32) -> u8 {
        if dep > 0 && u64::from(dep) <= index {
            self.register_of_load(index - u64::from(dep)).unwrap_or(0)
        } else {
            0
        }
    }

    /// Adds `r` (record `index`) to the held-back instruction if the reader would give it
    /// back as that instruction's next operand; says whether it did.
    fn join(&mut self, r: &Record, index: u64) -> bool {
        let source = match r.op {
            Op::Load => self.source_register(index, r.dep),
            _ => 0,
        };
        let Some(p) = self.pending.as_mut() else {
            return false;
        };
        match r.op {
            Op::Load if p.stores == 0 && p.loads < 4 && p.ins.source_registers[0] == source => {
                p.ins.source_memory[p.loads] = r.vaddr.0;
                p.loads += 1;
                // The instruction's register now holds this load's value.
                let last = self
                    .recent_loads
                    .back_mut()
                    .expect("the instruction has a load");
                last.0 = index;
                true
            }
            Op::Store if p.stores < 2 => {
                p.ins.destination_memory[p.stores] = r.vaddr.0;
                p.stores += 1;
                true
            }
            _ => false,
        }
    }

    fn emit(&mut self, ins: &Instr) -> Result<()> {
        self.out
            .write_all(&ins.encode())
            .map_err(|e| Error::file(&self.path, format!("cannot write trace: {e}")))
    }

    fn step_ip(&mut self) -> u64 {
        let ip = self.next_ip;
        self.next_ip = self.next_ip.wrapping_add(SYNTHETIC_IP_STRIDE);
        ip
    }

    /// The register holding the value of the load at record `index`, if it is still there.
    fn register_of_load(&self, index: u64) -> Option<u8> {
        let at = self
            .recent_loads
            .binary_search_by_key(&index, |&(i, _)| i)
            .ok()?;
        let load = self.recent_loads[at].1;
        Some(self.registers[(load % self.registers.len() as u64) as usize])
    }

    /// Appends one record.
    pub fn write(&mut self, r: &Record) -> Result<()> {
        let index = self.records;
        if r.pid != 0 || r.core != 0 {
            return Err(Error::file(
                &self.path,
                format!(
                    "record {index} belongs to pid {} on core {}: a ChampSim trace holds one \
                     thread of one process (pid 0, core 0)",
                    r.pid, r.core
                ),
            ));
        }
        if r.vaddr.0 == 0 && r.op != Op::Ifetch {
            return Err(Error::file(
                &self.path,
                format!(
                    "record {index} accesses address 0, which ChampSim reads as \"no operand\""
                ),
            ));
        }
        if r.joins_previous() && r.op != Op::Ifetch && self.join(r, index) {
            self.records += 1;
            return Ok(());
        }
        self.flush()?;
        for _ in 0..r.instr_delta {
            let ip = self.step_ip();
            self.emit(&Instr {
                ip,
                ..Instr::default()
            })?;
        }
        let mut ins = Instr::default();
        let (mut loads, mut stores) = (0, 0);
        match r.op {
            Op::Ifetch => ins.ip = r.vaddr.0,
            Op::Store => {
                ins.ip = self.step_ip();
                ins.destination_memory[0] = r.vaddr.0;
                stores = 1;
            }
            Op::Load => {
                ins.ip = self.step_ip();
                ins.source_memory[0] = r.vaddr.0;
                ins.source_registers[0] = self.source_register(index, r.dep);
                loads = 1;
                let n = self.registers.len() as u64;
                ins.destination_registers[0] = self.registers[(self.loads % n) as usize];
                if self.recent_loads.len() == self.registers.len() {
                    self.recent_loads.pop_front();
                }
                self.recent_loads.push_back((index, self.loads));
                self.loads += 1;
            }
        }
        if r.op == Op::Ifetch {
            self.emit(&ins)?;
        } else {
            self.pending = Some(Pending { ins, loads, stores });
        }
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn count(&self) -> u64 {
        self.records
    }

    /// Ends the (compressed) stream; returns the record count.
    pub fn finish(mut self) -> Result<u64> {
        self.flush()?;
        self.out
            .finish()
            .map_err(|e| Error::file(&self.path, format!("cannot write trace: {e}")))?;
        Ok(self.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::RecordSource;
    use proptest::prelude::*;

    fn read_all(path: &Path) -> Result<Vec<Record>> {
        crate::trace::read_to_end(&mut open(path)?, 7)
    }

    fn write_instrs(path: &Path, instrs: &[Instr]) {
        let bytes: Vec<u8> = instrs.iter().flat_map(|i| i.encode()).collect();
        std::fs::write(path, bytes).unwrap();
    }

    fn write_records(path: &Path, recs: &[Record], c: Compression) -> u64 {
        let mut w = ChampSimWriter::create(path, c).unwrap();
        for r in recs {
            w.write(r).unwrap();
        }
        w.finish().unwrap()
    }

    fn rec(op: Op, vaddr: u64, instr_delta: u32, dep: u32) -> Record {
        Record {
            vaddr: VirtAddr(vaddr),
            op,
            size: ACCESS_BYTES,
            core: 0,
            pid: 0,
            instr_delta,
            dep,
            flags: 0,
        }
    }

    /// `r` as a further operand of the instruction before it.
    fn joined(r: Record) -> Record {
        Record {
            flags: Record::SAME_INSTRUCTION,
            ..r
        }
    }

    /// Every field sits at the offset ChampSim's `input_instr` gives it.
    #[test]
    fn layout_matches_input_instr() {
        let mut b = [0u8; INSTR_BYTES];
        b[0..8].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        b[8] = 1;
        b[9] = 1;
        b[10..12].copy_from_slice(&[3, 4]);
        b[12..16].copy_from_slice(&[5, 6, 7, 8]);
        for (i, v) in [0xd0u64, 0xd1, 0x50, 0x51, 0x52, 0x53].iter().enumerate() {
            b[16 + 8 * i..24 + 8 * i].copy_from_slice(&(v << 12).to_le_bytes());
        }
        let ins = Instr::decode(&b);
        assert_eq!(
            ins,
            Instr {
                ip: 0x1122_3344_5566_7788,
                is_branch: 1,
                branch_taken: 1,
                destination_registers: [3, 4],
                source_registers: [5, 6, 7, 8],
                destination_memory: [0xd0 << 12, 0xd1 << 12],
                source_memory: [0x50 << 12, 0x51 << 12, 0x52 << 12, 0x53 << 12],
            }
        );
        assert_eq!(ins.encode(), b);
    }

    /// Operands become loads then stores, non-memory instructions become `instr_delta`, and
    /// dependences follow register taint through arithmetic, ignoring flags and the IP.
    #[test]
    fn instructions_map_to_records() {
        let plain = |ip| Instr {
            ip,
            ..Instr::default()
        };
        let instrs = [
            plain(0x100),
            plain(0x104),
            // Two loads (operand slots 0 and 2) and a store (slot 1); writes r3.
            Instr {
                ip: 0x108,
                destination_registers: [3, 0],
                source_memory: [0xa000, 0, 0xb000, 0],
                destination_memory: [0, 0xc000],
                ..Instr::default()
            },
            // r4 = r3 + 1: register arithmetic carries the taint (and the flags get it too).
            Instr {
                ip: 0x10c,
                destination_registers: [4, REG_FLAGS],
                source_registers: [3, 0, 0, 0],
                ..Instr::default()
            },
            // Load through r4: depends on the youngest load behind r3 (record 1). Writes r5.
            Instr {
                ip: 0x110,
                destination_registers: [5, 0],
                source_registers: [4, 0, 0, 0],
                source_memory: [0xd000, 0, 0, 0],
                ..Instr::default()
            },
            // Reads only flags and the IP: independent.
            Instr {
                ip: 0x114,
                source_registers: [REG_FLAGS, REG_INSTRUCTION_POINTER, 0, 0],
                source_memory: [0xe000, 0, 0, 0],
                ..Instr::default()
            },
            // r3 = constant: clears its taint.
            Instr {
                ip: 0x118,
                destination_registers: [3, 0],
                ..Instr::default()
            },
            Instr {
                ip: 0x11c,
                source_registers: [3, 0, 0, 0],
                source_memory: [0xf000, 0, 0, 0],
                ..Instr::default()
            },
            // Reads r5 (the load at record 3) and an untainted register; store is independent.
            Instr {
                ip: 0x120,
                source_registers: [9, 5, 0, 0],
                source_memory: [0x1_0000, 0, 0, 0],
                destination_memory: [0x2_0000, 0],
                ..Instr::default()
            },
            plain(0x124),
        ];
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.champsim");
        write_instrs(&p, &instrs);
        assert_eq!(
            read_all(&p).unwrap(),
            vec![
                rec(Op::Load, 0xa000, 2, 0),
                joined(rec(Op::Load, 0xb000, 0, 0)),
                joined(rec(Op::Store, 0xc000, 0, 0)),
                rec(Op::Load, 0xd000, 1, 2),
                rec(Op::Load, 0xe000, 0, 0),
                rec(Op::Load, 0xf000, 1, 0),
                rec(Op::Load, 0x1_0000, 0, 3),
                joined(rec(Op::Store, 0x2_0000, 0, 0)),
            ]
        );
        // Written back, the operands share their instructions again.
        let q = dir.path().join("u.champsim");
        let recs = read_all(&p).unwrap();
        write_records(&q, &recs, Compression::None);
        assert_eq!(read_all(&q).unwrap(), recs);
        assert_eq!(
            std::fs::metadata(&q).unwrap().len(),
            10 * INSTR_BYTES as u64 - 64
        );
    }

    /// Operands join the instruction before them as far as one ChampSim instruction holds
    /// them and the reader gives them back alike; the rest start instructions of their own.
    #[test]
    fn writer_joins_operands_an_instruction_can_hold() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.champsim");
        let recs = vec![
            rec(Op::Load, 0x1000, 0, 0),
            joined(rec(Op::Load, 0x2000, 0, 0)),
            joined(rec(Op::Load, 0x3000, 0, 0)),
            joined(rec(Op::Load, 0x4000, 0, 0)),
            // A fifth load does not fit.
            joined(rec(Op::Load, 0x5000, 0, 0)),
            joined(rec(Op::Store, 0x6000, 0, 0)),
            joined(rec(Op::Store, 0x7000, 0, 0)),
            // Nor a third store, nor a load after a store.
            joined(rec(Op::Store, 0x8000, 0, 0)),
            joined(rec(Op::Load, 0x9000, 0, 0)),
            // Depends on 0x9000 but joins an instruction whose first load has no producer.
            joined(rec(Op::Load, 0xa000, 0, 1)),
            // With non-memory instructions before it, the flag means nothing.
            joined(rec(Op::Store, 0xb000, 2, 0)),
        ];
        assert_eq!(write_records(&p, &recs, Compression::None), 11);
        let instrs: Vec<Instr> = std::fs::read(&p)
            .unwrap()
            .chunks_exact(INSTR_BYTES)
            .map(|c| Instr::decode(c.try_into().unwrap()))
            .collect();
        let mem = |i: &Instr| (i.source_memory, i.destination_memory);
        assert_eq!(
            instrs.iter().map(mem).collect::<Vec<_>>(),
            vec![
                ([0x1000, 0x2000, 0x3000, 0x4000], [0, 0]),
                ([0x5000, 0, 0, 0], [0x6000, 0x7000]),
                ([0, 0, 0, 0], [0x8000, 0]),
                ([0x9000, 0, 0, 0], [0, 0]),
                ([0xa000, 0, 0, 0], [0, 0]),
                ([0, 0, 0, 0], [0, 0]),
                ([0, 0, 0, 0], [0, 0]),
                ([0, 0, 0, 0], [0xb000, 0]),
            ]
        );
        let mut want = recs.clone();
        for i in [4, 7, 8, 9, 10] {
            want[i].flags = 0;
        }
        assert_eq!(read_all(&p).unwrap(), want);
    }

    /// Records whose dependences all point at a load at most `window` loads back.
    fn records_strategy() -> impl Strategy<Value = Vec<Record>> {
        proptest::collection::vec(
            (
                any::<bool>(),
                1u64..1 << 47,
                0u32..4,
                proptest::option::of(0usize..400),
            ),
            0..500,
        )
        .prop_map(|raw| {
            let window = dep_registers().len();
            let mut loads: Vec<usize> = Vec::new();
            let mut out = Vec::new();
            for (i, (is_load, vaddr, delta, dep)) in raw.into_iter().enumerate() {
                let op = if is_load { Op::Load } else { Op::Store };
                let dep = match (op, dep) {
                    (Op::Load, Some(k)) if !loads.is_empty() => {
                        let reach = loads.len().min(window);
                        (i - loads[loads.len() - 1 - k % reach]) as u32
                    }
                    _ => 0,
                };
                if is_load {
                    loads.push(i);
                }
                out.push(rec(op, vaddr, delta, dep));
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn writer_reader_round_trip(recs in records_strategy()) {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("t.champsim");
            prop_assert_eq!(write_records(&p, &recs, Compression::None), recs.len() as u64);
            prop_assert_eq!(read_all(&p).unwrap(), recs);
        }
    }

    fn sample() -> Vec<Record> {
        let mut rng = crate::rng::Rng::new(3, 0);
        (0..20_000u64)
            .map(|i| {
                let x = rng.next_u64();
                let op = if x & 1 == 0 { Op::Load } else { Op::Store };
                let dep = u32::from(op == Op::Load && i > 0 && x & 2 == 0 && x & 4 == 0);
                let dep = if dep == 1 && x & 8 == 0 { 0 } else { dep };
                rec(op, (x >> 8) | 0x1000, (x >> 4 & 3) as u32, dep)
            })
            .collect()
    }

    /// The sample's deps point one record back; only those whose producer is a load survive.
    fn expected(recs: &[Record]) -> Vec<Record> {
        let mut want = recs.to_vec();
        for i in 1..want.len() {
            if want[i].dep == 1 && recs[i - 1].op != Op::Load {
                want[i].dep = 0;
            }
        }
        want
    }

    #[test]
    fn xz_and_gz_round_trips() {
        let recs = sample();
        let dir = tempfile::tempdir().unwrap();
        for (name, c, magic) in [
            ("t.champsim.xz", Compression::Xz, &[0xfdu8, b'7'][..]),
            ("t.champsim.gz", Compression::Gzip, &[0x1f, 0x8b][..]),
        ] {
            let p = dir.path().join(name);
            write_records(&p, &recs, c);
            assert!(std::fs::read(&p).unwrap().starts_with(magic), "{name}");
            assert_eq!(read_all(&p).unwrap(), expected(&recs), "{name}");
            assert_eq!(open(&p).unwrap().decoder().compression(), c);
            // Detection is by content: the same bytes under a misleading name read the same.
            let q = dir.path().join("renamed.bin");
            std::fs::copy(&p, &q).unwrap();
            assert_eq!(read_all(&q).unwrap(), expected(&recs), "{name} renamed");
        }
    }

    #[test]
    fn dependences_the_writer_cannot_encode_are_dropped() {
        let window = dep_registers().len() as u32;
        let mut recs = vec![rec(Op::Store, 0x1000, 0, 0), rec(Op::Load, 0x2000, 0, 1)];
        // A producer `window` loads back: its register has been reused.
        for i in 0..window {
            recs.push(rec(Op::Load, 0x3000 + u64::from(i) * 8, 0, 0));
        }
        recs.push(rec(Op::Load, 0x9000, 0, window + 1));
        recs.push(rec(Op::Load, 0xa000, 0, window));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.champsim");
        write_records(&p, &recs, Compression::None);
        let got = read_all(&p).unwrap();
        assert_eq!(
            got[1].dep, 0,
            "a dependence on a store is not a load dependence"
        );
        assert_eq!(got[got.len() - 2].dep, 0, "beyond the register window");
        assert_eq!(
            got[got.len() - 1].dep,
            window,
            "the oldest load still in a register"
        );
    }

    #[test]
    fn truncated_xz_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.champsim.xz");
        write_records(&p, &sample(), Compression::Xz);
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() * 2 / 3]).unwrap();
        let msg = read_all(&p).unwrap_err().to_string();
        assert!(msg.contains("t.champsim.xz") && msg.contains("xz"), "{msg}");
        // Records before the damage are delivered first.
        let mut r = open(&p).unwrap();
        assert!(r.next_record().unwrap().is_some());
    }

    /// Decodes the raw trace at `path` through an input buffer of `capacity` bytes, so that
    /// instructions straddle buffers wherever 64 does not divide it.
    fn read_through_buffer(path: &Path, capacity: usize) -> Result<Vec<Record>> {
        let file = std::fs::File::open(path).unwrap();
        let input = Box::new(std::io::BufReader::with_capacity(capacity, file));
        crate::trace::read_to_end(&mut reader(path, Compression::None, input), 1000)
    }

    #[test]
    fn instructions_straddling_input_buffers_decode_alike() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.champsim");
        let recs = sample();
        write_records(&p, &recs, Compression::None);
        let want = expected(&recs);
        for capacity in [1, 63, 65, 100, 4096 + 7, 1 << 17] {
            assert!(
                read_through_buffer(&p, capacity).unwrap() == want,
                "{capacity}"
            );
        }
        // Cut inside an instruction: every buffer size reports the same error after the
        // same records.
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 100]).unwrap();
        let msg = read_all(&p).unwrap_err().to_string();
        for capacity in [1, 63, 100] {
            let got = read_through_buffer(&p, capacity).unwrap_err().to_string();
            assert_eq!(got, msg, "{capacity}");
        }
        assert!(msg.contains("has only 28 bytes"), "{msg}");
    }

    #[test]
    fn truncated_gz_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.champsim.gz");
        write_records(&p, &sample(), Compression::Gzip);
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        let msg = read_all(&p).unwrap_err().to_string();
        assert!(msg.contains("gzip"), "{msg}");
    }

    #[test]
    fn raw_size_not_a_multiple_of_64_names_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.champsim");
        let ins = Instr {
            ip: 1,
            source_memory: [0x5000, 0, 0, 0],
            ..Instr::default()
        };
        let mut bytes: Vec<u8> = [ins; 3].iter().flat_map(|i| i.encode()).collect();
        bytes.extend_from_slice(&[1; 10]);
        std::fs::write(&p, &bytes).unwrap();
        let mut r = open(&p).unwrap();
        let mut buf = Vec::with_capacity(100);
        r.fill(&mut buf).unwrap();
        assert_eq!(buf.len(), 3, "complete instructions come first");
        let msg = r.fill(&mut buf).unwrap_err().to_string();
        assert!(
            msg.contains("t.champsim")
                && msg.contains("multiple of 64")
                && msg.contains("byte offset 192")
                && msg.contains("only 10 bytes"),
            "{msg}"
        );
        assert!(r.fill(&mut buf).is_err(), "the error is sticky");
    }

    #[test]
    fn writer_rejects_what_champsim_cannot_hold() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.champsim");
        let mut w = ChampSimWriter::create(&p, Compression::None).unwrap();
        let mut other_pid = rec(Op::Load, 0x1000, 0, 0);
        other_pid.pid = 2;
        let msg = w.write(&other_pid).unwrap_err().to_string();
        assert!(msg.contains("pid 2"), "{msg}");
        let msg = w.write(&rec(Op::Store, 0, 0, 0)).unwrap_err().to_string();
        assert!(msg.contains("address 0"), "{msg}");
    }

    #[test]
    fn ifetch_records_become_non_memory_instructions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.champsim");
        let mut fetch = rec(Op::Ifetch, 0x7777_0000, 1, 0);
        fetch.size = 4;
        let recs = [
            rec(Op::Load, 0x1000, 0, 0),
            fetch,
            rec(Op::Load, 0x2000, 0, 2),
        ];
        write_records(&p, &recs, Compression::None);
        let bytes = std::fs::read(&p).unwrap();
        // load, one delta instruction, the fetch at its own address, load.
        assert_eq!(bytes.len(), 4 * INSTR_BYTES);
        let third = Instr::decode(bytes[128..192].try_into().unwrap());
        assert_eq!(third.ip, 0x7777_0000);
        // The second load's producer (record 0) is recovered in the reader's numbering.
        assert_eq!(
            read_all(&p).unwrap(),
            vec![rec(Op::Load, 0x1000, 0, 0), rec(Op::Load, 0x2000, 2, 1)]
        );
    }
}
