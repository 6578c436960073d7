//! Transparent compression for the foreign trace formats (ChampSim, lackey).
//!
//! ChampSim traces are distributed as `.xz` (the DPC-3 / CRC-2 sets) and sometimes `.gz`.
//! Readers detect the compression from the file's magic bytes, so a renamed file still opens;
//! writers pick it from the output file's extension. Both codecs are pure library code
//! (`liblzma` built statically, `flate2` with its Rust backend): no system library is needed.
//! Compressed input is decoded on a thread of its own (`readahead.rs`), ahead of the simulation.

use crate::error::{Error, Result};
use crate::trace::readahead::ReadAhead;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// xz container magic (`FD 37 7A 58 5A 00`).
const XZ_MAGIC: [u8; 6] = [0xfd, b'7', b'z', b'X', b'Z', 0x00];
/// gzip member magic (`1F 8B`).
const GZ_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// xz preset used by writers. On 32 MB of ChampSim records (a gups trace) preset 1 took 0.8 s
/// for a 15% larger file than xz's default 6, which took 26 s.
const XZ_PRESET: u32 = 1;
/// gzip level used by writers (gzip's default: level 1 saves little time for 20% more bytes).
const GZIP_LEVEL: u32 = 6;
const IO_BUFFER: usize = 1 << 17;

/// How a trace file's bytes are wrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Xz,
}

impl Compression {
    /// The compression whose magic `head` (the first bytes of a file) starts with.
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&XZ_MAGIC) {
            Compression::Xz
        } else if head.starts_with(&GZ_MAGIC) {
            Compression::Gzip
        } else {
            Compression::None
        }
    }

    /// The compression a file name asks for: `.xz`, `.gz`, anything else uncompressed.
    pub fn from_name(name: &str) -> Compression {
        if name.ends_with(".xz") {
            Compression::Xz
        } else if name.ends_with(".gz") {
            Compression::Gzip
        } else {
            Compression::None
        }
    }

    /// What error messages call it.
    pub fn label(self) -> &'static str {
        match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
        }
    }
}

/// Reads up to `buf.len()` bytes, stopping early only at the end of the stream.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The first up to `n` bytes of the file at `path` (fewer if the file is shorter).
pub fn head(path: &Path, n: usize) -> Result<Vec<u8>> {
    let mut f =
        File::open(path).map_err(|e| Error::file(path, format!("cannot open trace: {e}")))?;
    let mut buf = vec![0u8; n];
    let got = read_full(&mut f, &mut buf)
        .map_err(|e| Error::file(path, format!("cannot read trace: {e}")))?;
    buf.truncate(got);
    Ok(buf)
}

/// Opens `path` for reading its decompressed content. Concatenated xz streams and gzip members
/// are read as one stream, as `xz -d` and `gzip -d` do. Compressed content is decoded on a
/// thread of its own, which reads ahead of the caller (see `ReadAhead`).
pub fn open_read(path: &Path) -> Result<(Compression, Box<dyn BufRead + Send>)> {
    let kind = Compression::sniff(&head(path, XZ_MAGIC.len())?);
    let file =
        File::open(path).map_err(|e| Error::file(path, format!("cannot open trace: {e}")))?;
    let raw = BufReader::with_capacity(IO_BUFFER, file);
    let decoded = match kind {
        Compression::None => return Ok((kind, Box::new(raw))),
        Compression::Gzip => ReadAhead::spawn(flate2::bufread::MultiGzDecoder::new(raw), IO_BUFFER),
        Compression::Xz => ReadAhead::spawn(
            liblzma::bufread::XzDecoder::new_multi_decoder(raw),
            IO_BUFFER,
        ),
    }
    .map_err(|e| Error::file(path, format!("cannot start the decompression thread: {e}")))?;
    Ok((kind, Box::new(decoded)))
}

/// Describes a read error of a (possibly compressed) stream at uncompressed byte `offset`.
pub fn read_error(kind: Compression, offset: u64, e: &io::Error) -> String {
    match kind {
        Compression::None => format!("cannot read at byte offset {offset}: {e}"),
        _ if e.kind() == io::ErrorKind::UnexpectedEof => format!(
            "truncated {} stream: it ends before its end marker (after {offset} uncompressed bytes): {e}",
            kind.label()
        ),
        _ => format!(
            "corrupt {} stream near uncompressed byte offset {offset}: {e}",
            kind.label()
        ),
    }
}

/// A file being written through the compressor its name asks for. Call
/// [`finish`](CompressedWriter::finish): dropping it leaves an unterminated stream.
pub enum CompressedWriter {
    Raw(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Xz(liblzma::write::XzEncoder<BufWriter<File>>),
}

impl CompressedWriter {
    /// Creates (or truncates) `path`, compressing as `kind`.
    pub fn create(path: &Path, kind: Compression) -> Result<Self> {
        let file = File::create(path)
            .map_err(|e| Error::file(path, format!("cannot create trace: {e}")))?;
        let w = BufWriter::with_capacity(IO_BUFFER, file);
        Ok(match kind {
            Compression::None => CompressedWriter::Raw(w),
            Compression::Gzip => CompressedWriter::Gzip(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::new(GZIP_LEVEL),
            )),
            Compression::Xz => CompressedWriter::Xz(liblzma::write::XzEncoder::new(w, XZ_PRESET)),
        })
    }

    /// Ends the compressed stream and flushes everything to the file.
    pub fn finish(self) -> io::Result<()> {
        let mut w = match self {
            CompressedWriter::Raw(w) => w,
            CompressedWriter::Gzip(e) => e.finish()?,
            CompressedWriter::Xz(e) => e.finish()?,
        };
        w.flush()?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    }
}

impl Write for CompressedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            CompressedWriter::Raw(w) => w.write(buf),
            CompressedWriter::Gzip(w) => w.write(buf),
            CompressedWriter::Xz(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            CompressedWriter::Raw(w) => w.flush(),
            CompressedWriter::Gzip(w) => w.flush(),
            CompressedWriter::Xz(w) => w.flush(),
        }
    }
}
