//! Memory-reference records and the trace formats that carry them.
//!
//! A `Record` is one memory reference of the simulated program (docs/architecture.md). Traces are read
//! streaming through the `RecordSource` trait, which built-in workload generators implement too,
//! so the simulator does not care where references come from.
//!
//! Formats (docs/trace-formats.md): the native `.xtr` ([`native`]), ChampSim instruction
//! traces ([`champsim`]) and valgrind lackey text ([`lackey`]). [`open`] detects which one a
//! file is, [`convert`] rewrites a trace in the format its output name asks for, and
//! [`inspect`] summarises one.

mod ahead;
mod batch;
pub mod champsim;
pub mod compress;
pub mod inspect;
pub mod lackey;
pub mod native;
pub(crate) mod pipe;
mod readahead;

use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use compress::Compression;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use inspect::TraceSummary;

/// First instruction address writers of instruction-level formats (ChampSim, lackey) give the
/// non-memory and memory instructions they synthesise.
pub const SYNTHETIC_IP_BASE: u64 = 0x40_0000;
/// Distance between consecutive synthesised instruction addresses (and their lackey length).
pub const SYNTHETIC_IP_STRIDE: u64 = 4;
/// Bytes of a file's start examined to recognise lackey text.
const SNIFF_BYTES: usize = 4096;

/// Kind of memory reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[repr(u8)]
pub enum Op {
    #[default]
    Load = 0,
    Store = 1,
    Ifetch = 2,
}

impl Op {
    pub fn from_u8(b: u8) -> Option<Op> {
        match b {
            0 => Some(Op::Load),
            1 => Some(Op::Store),
            2 => Some(Op::Ifetch),
            _ => None,
        }
    }
}

/// One memory reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Record {
    pub vaddr: VirtAddr,
    pub op: Op,
    /// Access size in bytes.
    pub size: u8,
    /// The record stream it belongs to: a software thread of a multi-threaded workload or a
    /// program of a mix (0 otherwise). A system of N cores runs it on core `core % N`.
    pub core: u8,
    /// Process the address belongs to.
    pub pid: u16,
    /// Non-memory instructions executed since the previous record of this core.
    pub instr_delta: u32,
    /// This reference depends on the record `dep` positions earlier in its own stream, the
    /// records with the same `core` (0 = independent): its address is not known until that
    /// one completes (pointer chasing).
    pub dep: u32,
    /// Bits saying how the record relates to the records around it: [`Record::SAME_INSTRUCTION`],
    /// [`Record::AFTER_BARRIER`] (0: none, an instruction of its own).
    pub flags: u8,
}

impl Record {
    /// This memory operand belongs to the same instruction as the record directly before
    /// it, which is of the same stream (same `core`): an instruction with several memory
    /// operands (a load and a store, a gather) is one record per operand, the first without
    /// this bit and the others with it. The core model dispatches the instruction once; each
    /// operand still takes its own load- or store-queue entry, translation and data access.
    /// Honoured only with `instr_delta == 0` (non-memory instructions cannot come between
    /// the operands of one instruction) and after a record of the same stream: otherwise the
    /// record starts an instruction of its own.
    pub const SAME_INSTRUCTION: u8 = 1 << 0;
    /// The first record of a multi-threaded program's merged stream after a barrier opened:
    /// every record before it in the stream precedes the barrier, and a multi-core system
    /// holds this one back until they have all run and the threads have met there.
    pub const AFTER_BARRIER: u8 = 1 << 1;
    /// Every flag bit defined; formats that store flags ignore the others.
    pub const KNOWN_FLAGS: u8 = Record::SAME_INSTRUCTION | Record::AFTER_BARRIER;

    /// Whether this record is a further memory operand of the previous record's instruction
    /// rather than an instruction of its own ([`Record::SAME_INSTRUCTION`], honoured only
    /// without non-memory instructions before it).
    #[inline(always)]
    pub fn joins_previous(&self) -> bool {
        self.flags & Record::SAME_INSTRUCTION != 0 && self.instr_delta == 0
    }

    /// Whether a barrier opened just before this record ([`Record::AFTER_BARRIER`]).
    #[inline(always)]
    pub fn after_barrier(&self) -> bool {
        self.flags & Record::AFTER_BARRIER != 0
    }
}

/// Records a source hands over per [`RecordSource::fill`]. Large, so that what a hand-over costs
/// (a workload generator's thread woken when the simulator takes its batch: a system call of a
/// few microseconds) is small beside the batch's simulation; 16 Ki records of 24 bytes still fit
/// a core's L2.
pub const BATCH: usize = 16384;

/// Anything that yields records in program order: a trace reader or a workload generator.
pub trait RecordSource {
    /// Fill `buf` (cleared first) with up to `buf.capacity()` records; an empty `buf` after the
    /// call means the source is exhausted. Batching keeps dynamic dispatch off the per-record path.
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()>;

    /// Total records if known in advance (for progress bars).
    fn len_hint(&self) -> Option<u64> {
        None
    }

    /// Where the region of interest (the measured kernel, after the program's set-up) begins
    /// in this source's stream. A trace, or a workload without set-up, is all region of
    /// interest.
    fn roi(&self) -> Roi {
        Roi::At(0)
    }

    /// The programs of a multi-programmed source (a `mix`), handed over once so that a
    /// system with a core for each runs every program from its own stream, on its own clock
    /// (docs/architecture.md, "multi-core stepping"). The source gives them up: it is empty
    /// afterwards. A source of one stream (one program, or the threads of one) has none.
    fn programs(&mut self) -> Vec<Program> {
        Vec::new()
    }

    /// Start the stream again from its first record, the program's memory staying mapped as
    /// it is: what a program of a mix does when it ends before the others. Returns whether
    /// the source can (by default it cannot).
    fn restart(&mut self) -> Result<bool> {
        Ok(false)
    }
}

/// One program of a multi-programmed source: its own stream of records (all of process
/// `pid`, each naming core `core`), which can [`RecordSource::restart`].
pub struct Program {
    /// The workload's name (`gups`, `stream`, ...).
    pub name: String,
    pub pid: u16,
    /// The core its records name: its position in the mix.
    pub core: u8,
    /// Records it runs from its region of interest before its statistics are taken (its
    /// quota); it goes on running after that while other programs have not reached theirs.
    pub quota: u64,
    pub source: Box<dyn RecordSource>,
}

/// Where a source's region of interest begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Roi {
    /// At this record of the stream (0: the whole stream).
    At(u64),
    /// Not among the records read so far: the program is still in its set-up.
    NotYet,
}

impl Roi {
    /// Records a stream may hold in all when its budget of `budget` records counts from the
    /// region of interest: no limit while the set-up lasts.
    pub fn end_of_budget(self, budget: u64) -> u64 {
        match self {
            Roi::At(start) => start.saturating_add(budget),
            Roi::NotYet => u64::MAX,
        }
    }
}

/// A trace file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Native `.xtr` (zstd-compressed records with metadata).
    Xtr,
    /// ChampSim 64-byte `input_instr` records, raw, xz or gzip.
    ChampSim,
    /// valgrind lackey `--trace-mem=yes` text, plain, xz or gzip.
    Lackey,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Xtr => "xtr",
            Format::ChampSim => "champsim",
            Format::Lackey => "lackey",
        }
    }
}

const SUPPORTED_INPUTS: &str = "supported: native .xtr (magic XLATTRC), ChampSim input_instr \
    records (raw with a size that is a multiple of 64 bytes, or .xz / .gz compressed), valgrind \
    lackey --trace-mem=yes text (plain, .xz or .gz)";

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

/// Whether a (lowercase) file name names a ChampSim trace: `.champsim` or `.champsimtrace`,
/// optionally followed by `.xz` / `.gz`.
fn champsim_name(name: &str) -> bool {
    let base = name
        .strip_suffix(".xz")
        .or_else(|| name.strip_suffix(".gz"))
        .unwrap_or(name);
    base.ends_with(".champsim") || base.ends_with(".champsimtrace")
}

/// Detects the format of the trace at `path` from its content: the `.xtr` magic; lackey text
/// (plain or inside xz / gzip); other xz / gzip content, or a raw file whose size is a
/// multiple of 64 bytes (or whose name ends in `.champsim[trace]`), is ChampSim.
pub fn detect(path: &Path) -> Result<Format> {
    let meta = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::file(path, "no such trace file")
        } else {
            Error::file(path, format!("cannot open trace: {e}"))
        }
    })?;
    if meta.is_dir() {
        return Err(Error::file(path, "is a directory, not a trace file"));
    }
    let head = compress::head(path, SNIFF_BYTES)?;
    if head.starts_with(&native::MAGIC) {
        return Ok(Format::Xtr);
    }
    match Compression::sniff(&head) {
        Compression::None => {
            if lackey::looks_like_lackey(&head) {
                Ok(Format::Lackey)
            } else if (meta.len() > 0 && meta.len() % champsim::INSTR_BYTES as u64 == 0)
                || champsim_name(&file_name(path))
            {
                Ok(Format::ChampSim)
            } else if meta.len() == 0 {
                Err(Error::file(
                    path,
                    format!("empty file, not a trace ({SUPPORTED_INPUTS})"),
                ))
            } else {
                Err(Error::file(
                    path,
                    format!("unrecognised trace format ({SUPPORTED_INPUTS})"),
                ))
            }
        }
        _ => {
            // Look at the start of the decompressed content; a stream too damaged to yield
            // any is left to the ChampSim reader, which reports where it breaks.
            let (_, mut r) = compress::open_read(path)?;
            let mut inner = vec![0u8; SNIFF_BYTES];
            let got = compress::read_full(&mut r, &mut inner).unwrap_or(0);
            if lackey::looks_like_lackey(&inner[..got]) {
                Ok(Format::Lackey)
            } else {
                Ok(Format::ChampSim)
            }
        }
    }
}

/// Opens the trace at `path` in whichever supported format it is (see [`detect`]).
pub fn open(path: &Path) -> Result<Box<dyn RecordSource>> {
    Ok(match detect(path)? {
        Format::Xtr => Box::new(ahead::Ahead::spawn(
            path,
            Box::new(native::XtrReader::open(path)?),
        )?),
        Format::ChampSim => Box::new(champsim::open(path)?),
        Format::Lackey => Box::new(lackey::open(path)?),
    })
}

/// Where record `record` (counted from 0) of the trace at `path` is in the file ("line 12",
/// "instruction 7 at byte offset 448"), for error messages; `None` if the format has no finer
/// position than the record itself (`.xtr`) or the trace cannot be read that far.
pub fn locate(path: &Path, record: u64) -> Option<String> {
    match detect(path).ok()? {
        Format::Xtr => None,
        Format::ChampSim => champsim::locate(path, record).ok().flatten(),
        Format::Lackey => lackey::open(path).ok()?.locate(record),
    }
}

/// Summarises the trace at `path` (any supported format) in one streaming pass.
pub fn inspect(path: &Path) -> Result<TraceSummary> {
    let format = detect(path)?;
    let mut source = open(path)?;
    let mut summary = inspect::summarize(format.name(), source.as_mut())?;
    if format == Format::Xtr {
        summary.setup_skipped = native::XtrReader::open(path)?.meta().setup_skipped();
    }
    Ok(summary)
}

const SUPPORTED_OUTPUTS: &str = "supported output names: *.xtr, *.champsim / *.champsimtrace \
    (optionally .xz or .gz), *.lackey / *.lackey.txt (optionally .xz or .gz)";

/// The format and compression an output file name asks for.
pub fn output_format(path: &Path) -> Result<(Format, Compression)> {
    let name = file_name(path);
    let compression = Compression::from_name(&name);
    let base = name
        .strip_suffix(".xz")
        .or_else(|| name.strip_suffix(".gz"))
        .unwrap_or(&name);
    if base.ends_with(".xtr") && compression == Compression::None {
        Ok((Format::Xtr, Compression::None))
    } else if champsim_name(&name) {
        Ok((Format::ChampSim, compression))
    } else if base.ends_with(".lackey") || base.ends_with(".lackey.txt") {
        Ok((Format::Lackey, compression))
    } else {
        Err(Error::file(
            path,
            format!("cannot tell the output format from the name ({SUPPORTED_OUTPUTS})"),
        ))
    }
}

/// A writer of any output format.
enum Sink {
    Xtr(native::XtrWriter),
    ChampSim(champsim::ChampSimWriter),
    Lackey(lackey::LackeyWriter),
}

impl Sink {
    fn write(&mut self, r: &Record) -> Result<()> {
        match self {
            Sink::Xtr(w) => w.write(r),
            Sink::ChampSim(w) => w.write(r),
            Sink::Lackey(w) => w.write(r),
        }
    }

    fn finish(self) -> Result<u64> {
        match self {
            Sink::Xtr(w) => w.finish(),
            Sink::ChampSim(w) => w.finish(),
            Sink::Lackey(w) => w.finish(),
        }
    }
}

/// Where a file is written before being renamed into place: next to it, `NAME.tmp`.
fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Converts the trace at `src` (any supported format) to `dst`, whose name selects the output
/// format (see [`output_format`]); returns the records written. The output appears atomically:
/// it is written to `dst.tmp` and renamed, so a failure never leaves a partial `dst`.
/// What a format cannot carry is dropped (docs/trace-formats.md): ChampSim and lackey hold no
/// pid or core (records of another pid or core are an error), lackey no `dep`, ChampSim no
/// access size.
pub fn convert(src: &Path, dst: &Path) -> Result<u64> {
    let (format, compression) = output_format(dst)?;
    let source_format = detect(src)?;
    let mut source = open(src)?;
    let tmp = temp_path(dst);
    let result = (|| {
        let mut sink = match format {
            Format::Xtr => {
                let mut meta = serde_json::Map::new();
                meta.insert("converted_from".into(), src.display().to_string().into());
                meta.insert("source_format".into(), source_format.name().into());
                meta.insert("xlat_version".into(), env!("CARGO_PKG_VERSION").into());
                // A trace with its set-up keeps saying where the region of interest begins.
                if let Roi::At(start @ 1..) = source.roi() {
                    meta.insert(native::META_ROI_START.into(), start.into());
                }
                Sink::Xtr(native::XtrWriter::create(&tmp, meta)?)
            }
            Format::ChampSim => {
                Sink::ChampSim(champsim::ChampSimWriter::create(&tmp, compression)?)
            }
            Format::Lackey => Sink::Lackey(lackey::LackeyWriter::create(&tmp, compression)?),
        };
        let mut buf = Vec::with_capacity(4096);
        loop {
            source.fill(&mut buf)?;
            if buf.is_empty() {
                break;
            }
            for r in &buf {
                sink.write(r)?;
            }
        }
        let n = sink.finish()?;
        std::fs::rename(&tmp, dst).map_err(|e| {
            Error::file(
                dst,
                format!("cannot move the converted trace into place: {e}"),
            )
        })?;
        Ok(n)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Every record of `source`, read in batches of `batch` (tests of the readers).
#[cfg(test)]
pub(crate) fn read_to_end(source: &mut dyn RecordSource, batch: usize) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(batch);
    loop {
        source.fill(&mut buf)?;
        if buf.is_empty() {
            return Ok(out);
        }
        out.extend_from_slice(&buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: Op, vaddr: u64, instr_delta: u32, dep: u32) -> Record {
        Record {
            vaddr: VirtAddr(vaddr),
            op,
            size: 8,
            core: 0,
            pid: 0,
            instr_delta,
            dep,
            flags: 0,
        }
    }

    #[test]
    fn record_stays_24_bytes() {
        // Millions of records wait in the cores' queues and the readers' batches.
        assert_eq!(std::mem::size_of::<Record>(), 24);
        assert_eq!(Record::default().flags, 0);
    }

    /// Loads and stores over a few pages; every third load chases the load before it.
    fn sample(n: u64) -> Vec<Record> {
        let mut rng = crate::rng::Rng::new(11, 0);
        let mut out: Vec<Record> = Vec::new();
        for i in 0..n {
            let x = rng.next_u64();
            let vaddr = 0x7f00_0000_0000 + ((x % (1 << 24)) & !7);
            let chase = i % 3 == 2 && out.last().is_some_and(|r| r.op == Op::Load);
            let op = if chase || x >> 60 < 12 {
                Op::Load
            } else {
                Op::Store
            };
            out.push(rec(op, vaddr, (x >> 32) as u32 % 4, u32::from(chase)));
        }
        out
    }

    fn read_all(path: &Path) -> Result<Vec<Record>> {
        read_to_end(open(path)?.as_mut(), 1000)
    }

    fn write_xtr(path: &Path, recs: &[Record]) {
        let mut w = native::XtrWriter::create(path, serde_json::Map::new()).unwrap();
        w.write_all(recs).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn detects_every_format_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let d = |name: &str| dir.path().join(name);
        let recs = sample(500);
        write_xtr(&d("a.xtr"), &recs);
        for name in [
            "b.champsim",
            "c.champsim.xz",
            "d.champsimtrace.gz",
            "e.lackey",
            "f.lackey.gz",
            "g.lackey.txt.xz",
        ] {
            assert_eq!(convert(&d("a.xtr"), &d(name)).unwrap(), 500, "{name}");
        }
        let expect = [
            ("a.xtr", Format::Xtr),
            ("b.champsim", Format::ChampSim),
            ("c.champsim.xz", Format::ChampSim),
            ("d.champsimtrace.gz", Format::ChampSim),
            ("e.lackey", Format::Lackey),
            ("f.lackey.gz", Format::Lackey),
            ("g.lackey.txt.xz", Format::Lackey),
        ];
        for (name, format) in expect {
            // Names do not matter: copy each under a neutral one.
            let neutral = d(&format!("{name}.data"));
            std::fs::copy(d(name), &neutral).unwrap();
            assert_eq!(detect(&neutral).unwrap(), format, "{name}");
        }

        std::fs::write(d("text"), "hello world\n").unwrap();
        let msg = detect(&d("text")).unwrap_err().to_string();
        assert!(
            msg.contains("unrecognised trace format") && msg.contains("lackey"),
            "{msg}"
        );
        std::fs::write(d("empty"), "").unwrap();
        assert!(detect(&d("empty"))
            .unwrap_err()
            .to_string()
            .contains("empty file"));
        let msg = open(&d("missing.xtr")).err().unwrap().to_string();
        assert!(msg.contains("missing.xtr: no such trace file"), "{msg}");
        // A raw file of the wrong size is still read as ChampSim when its name says so, so
        // the reader can say where it breaks.
        std::fs::write(d("odd.champsim"), [0u8; 70]).unwrap();
        assert_eq!(detect(&d("odd.champsim")).unwrap(), Format::ChampSim);
        let msg = read_all(&d("odd.champsim")).unwrap_err().to_string();
        assert!(msg.contains("byte offset 64"), "{msg}");
    }

    #[test]
    fn conversions_keep_what_each_format_carries() {
        let dir = tempfile::tempdir().unwrap();
        let d = |name: &str| dir.path().join(name);
        let recs = sample(3000);
        write_xtr(&d("a.xtr"), &recs);

        // ChampSim keeps addresses, ops, deltas and load-to-load deps; sizes become 8.
        convert(&d("a.xtr"), &d("b.champsim.xz")).unwrap();
        assert_eq!(read_all(&d("b.champsim.xz")).unwrap(), recs);
        // Lackey keeps everything but deps.
        convert(&d("b.champsim.xz"), &d("c.lackey")).unwrap();
        let no_deps: Vec<Record> = recs.iter().map(|r| Record { dep: 0, ..*r }).collect();
        assert_eq!(read_all(&d("c.lackey")).unwrap(), no_deps);
        // And back to native, with the provenance in the metadata.
        assert_eq!(convert(&d("c.lackey"), &d("d.xtr")).unwrap(), 3000);
        assert_eq!(read_all(&d("d.xtr")).unwrap(), no_deps);
        let meta = native::XtrReader::open(&d("d.xtr"))
            .unwrap()
            .meta()
            .meta
            .clone();
        assert_eq!(meta["source_format"], "lackey");

        let s = inspect(&d("b.champsim.xz")).unwrap();
        assert_eq!((s.format.as_str(), s.records), ("champsim", 3000));
        assert_eq!(
            s.dependent,
            recs.iter().filter(|r| r.dep > 0).count() as u64
        );
        let t = inspect(&d("c.lackey")).unwrap();
        assert_eq!(t.instructions, s.instructions);
        assert_eq!(t.reuse_histogram, s.reuse_histogram);
        assert_eq!(t.dependent, 0);
    }

    #[test]
    fn failed_conversion_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let d = |name: &str| dir.path().join(name);
        let mut recs = sample(10);
        recs[7].pid = 3;
        write_xtr(&d("a.xtr"), &recs);
        let msg = convert(&d("a.xtr"), &d("b.champsim"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("record 7 belongs to pid 3"), "{msg}");
        assert!(!d("b.champsim").exists() && !d("b.champsim.tmp").exists());

        let msg = convert(&d("a.xtr"), &d("b.trace")).unwrap_err().to_string();
        assert!(
            msg.contains("cannot tell the output format") && msg.contains(".champsim"),
            "{msg}"
        );
        assert!(
            convert(&d("a.xtr"), &d("b.xtr.gz")).is_err(),
            ".xtr is compressed already"
        );
    }

    #[test]
    fn output_names_map_to_formats() {
        let f = |n: &str| output_format(Path::new(n)).unwrap();
        assert_eq!(f("x.xtr"), (Format::Xtr, Compression::None));
        assert_eq!(f("x.champsim"), (Format::ChampSim, Compression::None));
        assert_eq!(f("X.ChampSimTrace.XZ"), (Format::ChampSim, Compression::Xz));
        assert_eq!(f("x.champsim.gz"), (Format::ChampSim, Compression::Gzip));
        assert_eq!(f("x.lackey"), (Format::Lackey, Compression::None));
        assert_eq!(f("x.lackey.txt.gz"), (Format::Lackey, Compression::Gzip));
        assert!(output_format(Path::new("x.txt")).is_err());
    }
}
