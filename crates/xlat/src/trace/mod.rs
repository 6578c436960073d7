//! Memory-reference records and the trace formats that carry them.
//!
//! A `Record` is one memory reference of the simulated program (DESIGN.md §2). Traces are read
//! streaming through the `RecordSource` trait, which built-in workload generators implement too,
//! so the simulator does not care where references come from.
//!
//! Formats (docs/trace-formats.md): the native `.xtr` ([`native`]), ChampSim instruction
//! traces ([`champsim`]) and valgrind lackey text ([`lackey`]). [`open`] detects which one a
//! file is, [`convert`] rewrites a trace in the format its output name asks for, and
//! [`inspect`] summarises one.

mod batch;
pub mod champsim;
pub mod compress;
pub mod inspect;
pub mod lackey;
pub mod native;

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
    /// Core that issues the reference (0 on single-core runs).
    pub core: u8,
    /// Process the address belongs to.
    pub pid: u16,
    /// Non-memory instructions executed since the previous record of this core.
    pub instr_delta: u32,
    /// This reference depends on the record `dep` positions earlier (0 = independent): its
    /// address is not known until that one completes (pointer chasing).
    pub dep: u32,
}

/// Anything that yields records in program order: a trace reader or a workload generator.
pub trait RecordSource {
    /// Fill `buf` (cleared first) with up to `buf.capacity()` records; an empty `buf` after the
    /// call means the source is exhausted. Batching keeps dynamic dispatch off the per-record path.
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()>;

    /// Total records if known in advance (for progress bars).
    fn len_hint(&self) -> Option<u64> {
        None
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
        Format::Xtr => Box::new(native::XtrReader::open(path)?),
        Format::ChampSim => Box::new(champsim::open(path)?),
        Format::Lackey => Box::new(lackey::open(path)?),
    })
}

/// Summarises the trace at `path` (any supported format) in one streaming pass.
pub fn inspect(path: &Path) -> Result<TraceSummary> {
    let format = detect(path)?;
    let mut source = open(path)?;
    inspect::summarize(format.name(), source.as_mut())
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
