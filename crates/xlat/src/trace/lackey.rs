//! Valgrind lackey memory traces: the text `valgrind --tool=lackey --trace-mem=yes` prints.
//!
//! ```text
//! ==4211== Lackey, an example Valgrind tool
//! I  0040117e,4
//!  L 1ffefffd18,8
//!  S 1ffefffd10,8
//!  M 0060103c,4
//! ```
//!
//! `I` is an executed instruction (address, length), `L` a load, `S` a store and `M` a modify
//! (read-modify-write of the same location: a load then a store). Addresses are hexadecimal,
//! sizes decimal. Lines starting with `==` (valgrind's own messages) and blank lines are
//! skipped; any other line is an error naming its line number.
//!
//! # Mapping to records
//!
//! Each `L`/`S` line is one record, an `M` line two (load, then store, both of the size
//! given). The data lines after one `I` line are all that instruction's: the records after
//! its first carry [`Record::SAME_INSTRUCTION`], so an `M`, or a load and a store, count as
//! one instruction. By default `I` lines become no records: an instruction without data accesses adds
//! one to the next record's `instr_delta` (the first record of an instruction carries it),
//! which is how the simulator's core accounts non-memory work. Instruction-fetch records are
//! opt-in ([`LackeyOptions::ifetch`]): xlat's workloads and the papers it models study data
//! translation, and an ifetch per instruction would triple a trace for accesses that nearly
//! always hit the instruction TLB. Sizes above 255 bytes (e.g. `xsave` areas) saturate at 255;
//! lackey carries no dependences, pid or core (all 0).

use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::trace::batch::{Batched, UnitDecoder};
use crate::trace::compress::{self, CompressedWriter, Compression};
use crate::trace::{Op, Record, SYNTHETIC_IP_BASE, SYNTHETIC_IP_STRIDE};
use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// Longest line accepted (a valid lackey line is under 40 bytes).
const MAX_LINE: usize = 4096;

/// How lackey text maps to records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LackeyOptions {
    /// Emit an ifetch record per `I` line instead of counting instructions in `instr_delta`.
    pub ifetch: bool,
}

/// One meaningful line of a lackey trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    Instr { addr: u64, size: u64 },
    Load { addr: u64, size: u64 },
    Store { addr: u64, size: u64 },
    Modify { addr: u64, size: u64 },
}

/// A line that is not lackey output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotLackey;

/// Parses one line: `Ok(None)` for lines to skip (blank, `==pid==` messages), `Err` for
/// anything that is not lackey output.
pub fn parse_line(line: &[u8]) -> std::result::Result<Option<Line>, NotLackey> {
    let text = std::str::from_utf8(line).map_err(|_| NotLackey)?;
    let text = text.trim_end_matches(['\n', '\r']);
    let body = text.trim_start();
    if body.is_empty() || body.starts_with("==") {
        return Ok(None);
    }
    let mut chars = body.chars();
    let op = chars.next().ok_or(NotLackey)?;
    let rest = chars.as_str();
    // The operation letter is followed by at least one space.
    if !rest.starts_with(' ') {
        return Err(NotLackey);
    }
    let (addr, size) = rest.trim().split_once(',').ok_or(NotLackey)?;
    if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(NotLackey);
    }
    if size.is_empty() || !size.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NotLackey);
    }
    let addr = u64::from_str_radix(addr, 16).map_err(|_| NotLackey)?;
    let size = size.parse::<u64>().map_err(|_| NotLackey)?;
    Ok(Some(match op {
        'I' => Line::Instr { addr, size },
        'L' => Line::Load { addr, size },
        'S' => Line::Store { addr, size },
        'M' => Line::Modify { addr, size },
        _ => return Err(NotLackey),
    }))
}

/// Whether `head` (the first bytes of a file) looks like lackey output: its first meaningful
/// line is a `==pid==` message or an access line.
pub fn looks_like_lackey(head: &[u8]) -> bool {
    for line in head.split(|&b| b == b'\n') {
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix(b"==") {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            return digits > 0 && rest[digits..].starts_with(b"==");
        }
        return matches!(parse_line(line), Ok(Some(_)));
    }
    false
}

/// Streaming decoder of lackey text (plain, xz or gzip).
pub struct LackeyDecoder {
    path: PathBuf,
    compression: Compression,
    input: Box<dyn BufRead + Send>,
    options: LackeyOptions,
    line: Vec<u8>,
    line_no: u64,
    /// Uncompressed bytes consumed so far.
    offset: u64,
    /// An `I` line was seen and its instruction has produced no record yet.
    instr_open: bool,
    /// The instruction of the last `I` line has produced a record (an ifetch or a data
    /// access): further records are its operands too.
    in_instr: bool,
    /// Non-memory instructions not yet carried by a record.
    pending_delta: u32,
}

/// A lackey trace reader.
pub type LackeyReader = Batched<LackeyDecoder>;

/// Opens a lackey trace with the default options (no ifetch records).
pub fn open(path: &Path) -> Result<LackeyReader> {
    open_with(path, LackeyOptions::default())
}

/// Opens a lackey trace; the compression is detected from the file's magic bytes.
pub fn open_with(path: &Path, options: LackeyOptions) -> Result<LackeyReader> {
    let (compression, input) = compress::open_read(path)?;
    Ok(Batched::new(LackeyDecoder {
        path: path.to_path_buf(),
        compression,
        input,
        options,
        line: Vec::with_capacity(64),
        line_no: 0,
        offset: 0,
        instr_open: false,
        in_instr: false,
        pending_delta: 0,
    }))
}

fn saturate(size: u64) -> u8 {
    size.min(u8::MAX as u64) as u8
}

impl LackeyDecoder {
    fn record(&mut self, addr: u64, size: u64, op: Op) -> Record {
        self.instr_open = false;
        let flags = if std::mem::replace(&mut self.in_instr, true) {
            Record::SAME_INSTRUCTION
        } else {
            0
        };
        Record {
            vaddr: VirtAddr(addr),
            op,
            size: saturate(size),
            core: 0,
            pid: 0,
            instr_delta: std::mem::take(&mut self.pending_delta),
            dep: 0,
            flags,
        }
    }

    fn err(&self, msg: String) -> Error {
        Error::file(&self.path, format!("line {}: {msg}", self.line_no))
    }
}

impl UnitDecoder for LackeyDecoder {
    fn position(&self) -> String {
        format!("line {}", self.line_no)
    }

    fn decode_unit(&mut self, out: &mut VecDeque<Record>) -> Result<bool> {
        self.line.clear();
        let got = std::io::Read::take(&mut self.input, MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.line)
            .map_err(|e| {
                let msg = compress::read_error(self.compression, self.offset, &e);
                Error::file(&self.path, format!("{msg} (after line {})", self.line_no))
            })?;
        if got == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        self.offset += got as u64;
        if self.line.len() > MAX_LINE {
            return Err(self.err(format!(
                "line longer than {MAX_LINE} bytes: not lackey output"
            )));
        }
        let parsed = parse_line(&self.line).map_err(|NotLackey| {
            let shown = String::from_utf8_lossy(&self.line);
            self.err(format!(
                "not a lackey line: {:?} (expected `I  addr,size`, ` L addr,size`, \
                 ` S addr,size`, ` M addr,size` or a `==pid==` message)",
                shown.trim_end()
            ))
        })?;
        match parsed {
            None => {}
            Some(Line::Instr { addr, size }) => {
                self.in_instr = false;
                if self.options.ifetch {
                    let r = self.record(addr, size, Op::Ifetch);
                    out.push_back(r);
                } else {
                    if self.instr_open {
                        self.pending_delta = self.pending_delta.saturating_add(1);
                    }
                    self.instr_open = true;
                }
            }
            Some(Line::Load { addr, size }) => {
                let r = self.record(addr, size, Op::Load);
                out.push_back(r);
            }
            Some(Line::Store { addr, size }) => {
                let r = self.record(addr, size, Op::Store);
                out.push_back(r);
            }
            Some(Line::Modify { addr, size }) => {
                let load = self.record(addr, size, Op::Load);
                let store = self.record(addr, size, Op::Store);
                out.push_back(load);
                out.push_back(store);
            }
        }
        Ok(true)
    }
}

/// Streaming writer of lackey text. Every record becomes an `I` line at a synthetic
/// instruction address followed by its ` L`/` S` line, preceded by `instr_delta` bare `I`
/// lines; a further operand of the previous record's instruction
/// ([`Record::joins_previous`]) is only its ` L`/` S` line, under that instruction's `I`
/// line. An ifetch record becomes an `I` line at its own address. `dep` is not representable
/// and is dropped. Call [`finish`](LackeyWriter::finish).
pub struct LackeyWriter {
    path: PathBuf,
    out: CompressedWriter,
    next_ip: u64,
    records: u64,
}

impl LackeyWriter {
    /// Creates `path`, compressing as `compression`, and writes a `==0==` banner line (so even
    /// an empty trace is recognisable as lackey text).
    pub fn create(path: &Path, compression: Compression) -> Result<Self> {
        let mut w = LackeyWriter {
            path: path.to_path_buf(),
            out: CompressedWriter::create(path, compression)?,
            next_ip: SYNTHETIC_IP_BASE,
            records: 0,
        };
        w.put(format_args!(
            "==0== lackey-format memory trace written by xlat\n"
        ))?;
        Ok(w)
    }

    fn put(&mut self, args: std::fmt::Arguments) -> Result<()> {
        self.out
            .write_fmt(args)
            .map_err(|e| Error::file(&self.path, format!("cannot write trace: {e}")))
    }

    fn instr_line(&mut self) -> Result<()> {
        let ip = self.next_ip;
        self.next_ip = self.next_ip.wrapping_add(SYNTHETIC_IP_STRIDE);
        self.put(format_args!("I  {ip:08x},{SYNTHETIC_IP_STRIDE}\n"))
    }

    /// Appends one record.
    pub fn write(&mut self, r: &Record) -> Result<()> {
        if r.pid != 0 || r.core != 0 {
            return Err(Error::file(
                &self.path,
                format!(
                    "record {} belongs to pid {} on core {}: a lackey trace holds one thread \
                     of one process (pid 0, core 0)",
                    self.records, r.pid, r.core
                ),
            ));
        }
        for _ in 0..r.instr_delta {
            self.instr_line()?;
        }
        let (addr, size) = (r.vaddr.0, r.size);
        // The first record has no instruction to join.
        let joins = r.joins_previous() && self.records > 0;
        match r.op {
            Op::Ifetch => self.put(format_args!("I  {addr:08x},{size}\n"))?,
            Op::Load => {
                if !joins {
                    self.instr_line()?;
                }
                self.put(format_args!(" L {addr:08x},{size}\n"))?;
            }
            Op::Store => {
                if !joins {
                    self.instr_line()?;
                }
                self.put(format_args!(" S {addr:08x},{size}\n"))?;
            }
        }
        self.records += 1;
        Ok(())
    }

    /// Ends the (compressed) stream; returns the record count.
    pub fn finish(self) -> Result<u64> {
        self.out
            .finish()
            .map_err(|e| Error::file(&self.path, format!("cannot write trace: {e}")))?;
        Ok(self.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIXTURE: &str = "\
==4211== Lackey, an example Valgrind tool
==4211== Copyright (C) 2002-2017, and GNU GPL'd, by Nicholas Nethercote.
==4211== Command: /bin/true

I  04001f70,3
I  04001f73,4
 S 1ffefffd68,8
I  04001f77,2
I  04001f79,5
 L 04022118,8
 M 0402a3a8,4
I  0400aaaa,3\r
 L 1000,16
I  0400aab0,2
 S 2000,512
==4211==
I  0400aab2,2
";

    fn rec(op: Op, vaddr: u64, size: u8, instr_delta: u32) -> Record {
        Record {
            vaddr: VirtAddr(vaddr),
            op,
            size,
            core: 0,
            pid: 0,
            instr_delta,
            dep: 0,
            flags: 0,
        }
    }

    fn joined(r: Record) -> Record {
        Record {
            flags: Record::SAME_INSTRUCTION,
            ..r
        }
    }

    fn read_all(path: &Path, options: LackeyOptions) -> Result<Vec<Record>> {
        crate::trace::read_to_end(&mut open_with(path, options)?, 3)
    }

    fn fixture_file(dir: &tempfile::TempDir, text: &str) -> PathBuf {
        let p = dir.path().join("lackey.log");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn fixture_maps_to_records() {
        let dir = tempfile::tempdir().unwrap();
        let p = fixture_file(&dir, FIXTURE);
        assert_eq!(
            read_all(&p, LackeyOptions::default()).unwrap(),
            vec![
                rec(Op::Store, 0x1ffefffd68, 8, 1),
                rec(Op::Load, 0x04022118, 8, 1),
                // The `M` is the same instruction's as the `L` before it.
                joined(rec(Op::Load, 0x0402a3a8, 4, 0)),
                joined(rec(Op::Store, 0x0402a3a8, 4, 0)),
                rec(Op::Load, 0x1000, 16, 0),
                rec(Op::Store, 0x2000, 255, 0),
            ]
        );
    }

    #[test]
    fn fixture_with_ifetch_records() {
        let dir = tempfile::tempdir().unwrap();
        let p = fixture_file(&dir, FIXTURE);
        let got = read_all(&p, LackeyOptions { ifetch: true }).unwrap();
        let ops: String = got
            .iter()
            .map(|r| match r.op {
                Op::Ifetch => 'I',
                Op::Load => 'L',
                Op::Store => 'S',
            })
            .collect();
        assert_eq!(ops, "IISIILLSILISI");
        assert_eq!(got[0], rec(Op::Ifetch, 0x04001f70, 3, 0));
        assert!(got.iter().all(|r| r.instr_delta == 0));
        // Every data record belongs to the instruction fetched before it: one instruction
        // per `I` line.
        assert!(got
            .iter()
            .all(|r| r.joins_previous() == (r.op != Op::Ifetch)));
    }

    #[test]
    fn garbage_line_names_its_number() {
        let dir = tempfile::tempdir().unwrap();
        for (text, line) in [
            ("I  1000,4\n L 2000,8\n L 3000\n", 3),
            ("==1== hi\n\n X 2000,8\n", 3),
            (" L 2000,8\n L zz,8\n", 2),
            (" L 2000,-8\n", 1),
            (" L2000,8\n", 1),
            (" L 2000,8 junk\n", 1),
            (" L 11112222333344445,8\n", 1),
            (" L 2000,8\n\u{0} L\n", 2),
        ] {
            let p = fixture_file(&dir, text);
            let mut r = open(&p).unwrap();
            let mut all = Vec::new();
            let err = loop {
                match r.next_record() {
                    Ok(Some(x)) => all.push(x),
                    Ok(None) => panic!("{text:?} must fail"),
                    Err(e) => break e.to_string(),
                }
            };
            assert!(
                err.contains("lackey.log") && err.contains(&format!("line {line}:")),
                "{text:?}: {err}"
            );
            assert!(r.next_record().is_err(), "the error is sticky");
        }
    }

    #[test]
    fn recognises_lackey_text() {
        assert!(looks_like_lackey(FIXTURE.as_bytes()));
        assert!(looks_like_lackey(b"\n\nI  0400aaaa,3\n"));
        assert!(looks_like_lackey(b" L 0400aaaa,3"));
        assert!(!looks_like_lackey(b"==x== hello\n"));
        assert!(!looks_like_lackey(b"hello world\n"));
        assert!(!looks_like_lackey(b"\x7fELF\x02\x01"));
        assert!(!looks_like_lackey(b""));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Everything lackey can carry survives writing and reading back.
        #[test]
        fn writer_reader_round_trip(
            raw in proptest::collection::vec((any::<bool>(), any::<u64>(), any::<u8>(), 0u32..5, any::<bool>()), 0..300),
            compression in prop_oneof![Just(Compression::None), Just(Compression::Gzip)],
        ) {
            // Records joining the instruction before them (never the first record, and only
            // without non-memory instructions in between: the flag means nothing otherwise).
            let recs: Vec<Record> = raw
                .into_iter()
                .enumerate()
                .map(|(i, (load, a, size, d, join))| {
                    let r = rec(if load { Op::Load } else { Op::Store }, a, size, d);
                    if join && i > 0 { joined(Record { instr_delta: 0, ..r }) } else { r }
                })
                .collect();
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("t.lackey");
            let mut w = LackeyWriter::create(&p, compression).unwrap();
            for r in &recs {
                w.write(r).unwrap();
            }
            prop_assert_eq!(w.finish().unwrap(), recs.len() as u64);
            prop_assert_eq!(read_all(&p, LackeyOptions::default()).unwrap(), recs);
        }
    }

    #[test]
    fn writer_text_is_lackey_output() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.lackey");
        let mut w = LackeyWriter::create(&p, Compression::None).unwrap();
        let mut dependent = rec(Op::Load, 0xabc, 8, 1);
        dependent.dep = 1;
        w.write(&rec(Op::Store, 0x1ffefffd68, 8, 0)).unwrap();
        w.write(&dependent).unwrap();
        w.write(&rec(Op::Ifetch, 0x401000, 4, 0)).unwrap();
        w.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "==0== lackey-format memory trace written by xlat\n\
             I  00400000,4\n S 1ffefffd68,8\n\
             I  00400004,4\n\
             I  00400008,4\n L 00000abc,8\n\
             I  00401000,4\n"
        );
    }
}
