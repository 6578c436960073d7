//! Decompression on a thread of its own, for compressed trace input.
//!
//! Decoding an xz ChampSim trace costs about as much CPU time as simulating it. Decoded inline,
//! a run takes the sum of the two; [`ReadAhead`] runs the decoder on a dedicated thread that
//! hands back large chunks through a bounded channel, so decompression overlaps simulation and
//! a run takes about the longer of the two.
//!
//! The thread reads its decoder exactly as a `BufReader` of `read_bytes` capacity would (every
//! call asks for `read_bytes`), so the consumer sees the same bytes, and after an error the
//! same good bytes followed by the same error, as it would reading the decoder inline.

use super::pipe::{pipe, PipeReceiver, PipeSender};
use std::io::{self, BufRead, Read};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, JoinHandle};

/// Decoder reads per chunk handed over (a chunk holds up to `READS_PER_CHUNK * read_bytes`).
const READS_PER_CHUNK: usize = 8;
/// Chunks decoded ahead of the consumer: the depth of the channel.
const CHUNKS_AHEAD: usize = 4;

/// What the decoding thread sends, in stream order.
enum Msg {
    /// The next bytes of the stream (never empty).
    Data(Vec<u8>),
    /// The stream ended cleanly.
    End,
    /// The decoder failed after the bytes sent before.
    Failed(io::Error),
}

enum State {
    Open,
    Ended,
    /// The error, reported again by every later read.
    Failed {
        kind: io::ErrorKind,
        msg: String,
    },
}

/// A `BufRead` over a decoder running on its own thread. Dropping it stops the thread (which
/// notices at its next hand-over, after at most one chunk) and waits for it.
pub struct ReadAhead {
    chunks: PipeReceiver<Msg>,
    /// Returns consumed chunks to the thread, so that it allocates none per chunk.
    spent: Sender<Vec<u8>>,
    chunk: Vec<u8>,
    /// Bytes of `chunk` consumed.
    pos: usize,
    state: State,
    worker: Option<JoinHandle<()>>,
}

impl ReadAhead {
    /// Starts decoding `inner` on a new thread, `read_bytes` per read.
    pub fn spawn<R: Read + Send + 'static>(inner: R, read_bytes: usize) -> io::Result<ReadAhead> {
        let (chunk_tx, chunks) = pipe(CHUNKS_AHEAD);
        let (spent, spent_rx) = mpsc::channel();
        let worker = thread::Builder::new()
            .name("xlat-decompress".into())
            .spawn(move || decode(inner, read_bytes.max(1), &chunk_tx, &spent_rx))?;
        Ok(ReadAhead {
            chunks,
            spent,
            chunk: Vec::new(),
            pos: 0,
            state: State::Open,
            worker: Some(worker),
        })
    }

    /// Takes the thread's next message; the chunk it replaces goes back to the thread.
    fn next_chunk(&mut self) -> io::Result<()> {
        let msg = self.chunks.recv().unwrap_or_else(|_| {
            Msg::Failed(io::Error::other(
                "the decompression thread stopped before the end of the stream (it panicked)",
            ))
        });
        let next = match msg {
            Msg::Data(next) => next,
            Msg::End => {
                self.state = State::Ended;
                Vec::new()
            }
            Msg::Failed(e) => {
                self.state = State::Failed {
                    kind: e.kind(),
                    msg: e.to_string(),
                };
                self.chunk = Vec::new();
                self.pos = 0;
                return Err(e);
            }
        };
        // After the end the thread is gone and the send fails: the buffer is then freed.
        let _ = self.spent.send(std::mem::replace(&mut self.chunk, next));
        self.pos = 0;
        Ok(())
    }
}

/// The thread: fills chunks from `inner` and sends them until the stream ends, the decoder
/// fails or the consumer hangs up.
fn decode(
    mut inner: impl Read,
    read_bytes: usize,
    chunks: &PipeSender<Msg>,
    spent: &Receiver<Vec<u8>>,
) {
    let chunk_bytes = READS_PER_CHUNK * read_bytes;
    loop {
        let mut buf = spent.try_recv().unwrap_or_default();
        buf.resize(chunk_bytes, 0);
        let mut got = 0;
        let last = loop {
            if got + read_bytes > chunk_bytes {
                break None;
            }
            match inner.read(&mut buf[got..got + read_bytes]) {
                Ok(0) => break Some(Msg::End),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(Msg::Failed(e)),
            }
        };
        buf.truncate(got);
        // A failed send means the consumer is gone: stop.
        if got > 0 && chunks.send(Msg::Data(buf)).is_err() {
            return;
        }
        if let Some(msg) = last {
            let _ = chunks.send(msg);
            return;
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ReadAhead {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.chunk.len() {
            match &self.state {
                State::Open => self.next_chunk()?,
                State::Ended => break,
                State::Failed { kind, msg } => return Err(io::Error::new(*kind, msg.clone())),
            }
        }
        Ok(&self.chunk[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.chunk.len());
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        stop(&mut self.chunks, &mut self.worker);
    }
}

/// Stop a thread that sends to `rx` and wait for it: hang up first, so that a thread blocked
/// on the full channel fails its send and returns. A panic of the thread has been reported
/// through the channel already (or was never asked for).
pub(super) fn stop<T>(rx: &mut PipeReceiver<T>, worker: &mut Option<JoinHandle<()>>) {
    rx.hang_up();
    if let Some(worker) = worker.take() {
        let _ = worker.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Hard-to-compress bytes (6 random bits each), so the xz stream spans many decoder reads.
    fn data(n: usize) -> Vec<u8> {
        let mut rng = crate::rng::Rng::new(5, 0);
        (0..n).map(|_| (rng.next_u64() >> 58) as u8).collect()
    }

    fn xz(bytes: &[u8]) -> Vec<u8> {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn decoder(xz: Vec<u8>) -> impl Read + Send + 'static {
        liblzma::bufread::XzDecoder::new_multi_decoder(io::Cursor::new(xz))
    }

    /// Reads `r` to its end or first error, in uneven pieces through both `Read` and `BufRead`.
    fn drain(r: &mut impl BufRead) -> (Vec<u8>, Option<io::Error>) {
        let mut out = Vec::new();
        let mut step = 0usize;
        loop {
            step += 1;
            if step & 1 == 0 {
                let mut piece = vec![0u8; 1 + step % 700];
                match r.read(&mut piece) {
                    Ok(0) => return (out, None),
                    Ok(n) => out.extend_from_slice(&piece[..n]),
                    Err(e) => return (out, Some(e)),
                }
            } else {
                let n = match r.fill_buf() {
                    Ok(b) => {
                        let n = b.len().min(step % 300);
                        out.extend_from_slice(&b[..n]);
                        n
                    }
                    Err(e) => return (out, Some(e)),
                };
                r.consume(n);
            }
        }
    }

    #[test]
    fn round_trip_is_byte_identical_to_the_inline_decode() {
        let plain = data(600_000);
        let compressed = xz(&plain);
        // 4 KiB reads: chunks of 32 KiB, about 19 of them.
        let mut threaded = ReadAhead::spawn(decoder(compressed.clone()), 4096).unwrap();
        let (got, err) = drain(&mut threaded);
        assert!(err.is_none(), "{err:?}");
        assert!(got == plain, "threaded decode differs");
        let mut inline = BufReader::with_capacity(4096, decoder(compressed));
        assert!(drain(&mut inline).0 == plain, "inline decode differs");
        // The end is sticky.
        assert_eq!(threaded.read(&mut [0u8; 10]).unwrap(), 0);
    }

    #[test]
    fn truncated_xz_fails_like_the_inline_decode() {
        let compressed = xz(&data(600_000));
        for cut in [compressed.len() / 3, compressed.len() - 5] {
            let cut = compressed[..cut].to_vec();
            let mut inline = BufReader::with_capacity(4096, decoder(cut.clone()));
            let (want, want_err) = drain(&mut inline);
            let mut threaded = ReadAhead::spawn(decoder(cut), 4096).unwrap();
            let (got, got_err) = drain(&mut threaded);
            assert!(!got.is_empty() && got == want, "same good bytes first");
            let (want_err, got_err) = (want_err.unwrap(), got_err.unwrap());
            assert_eq!(got_err.kind(), want_err.kind());
            assert_eq!(got_err.to_string(), want_err.to_string());
            // The error is sticky.
            let again = threaded.read(&mut [0u8; 10]).unwrap_err();
            assert_eq!(again.to_string(), want_err.to_string());
        }
    }

    /// `good` bytes, then an error.
    struct FailsAfter {
        good: usize,
    }

    impl Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.good == 0 {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "bad block"));
            }
            let n = buf.len().min(self.good).min(1000);
            buf[..n].fill(7);
            self.good -= n;
            Ok(n)
        }
    }

    #[test]
    fn an_error_in_the_middle_arrives_after_the_good_bytes() {
        let mut r = ReadAhead::spawn(FailsAfter { good: 123_457 }, 4096).unwrap();
        let (got, err) = drain(&mut r);
        assert_eq!(got.len(), 123_457);
        assert!(got.iter().all(|&b| b == 7));
        let err = err.unwrap();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(err.to_string(), "bad block");
    }

    /// Endless bytes; records when it is dropped.
    struct Endless {
        dropped: Arc<AtomicBool>,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(1);
            Ok(buf.len())
        }
    }

    impl Drop for Endless {
        fn drop(&mut self) {
            self.dropped.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn dropping_early_stops_the_thread() {
        for read_first in [0, 10, 100_000] {
            let dropped = Arc::new(AtomicBool::new(false));
            let inner = Endless {
                dropped: dropped.clone(),
            };
            let (done_tx, done) = mpsc::channel();
            thread::spawn(move || {
                let mut r = ReadAhead::spawn(inner, 4096).unwrap();
                let mut buf = vec![0u8; read_first];
                r.read_exact(&mut buf).unwrap();
                // Let the thread fill the channel and block on it.
                thread::sleep(Duration::from_millis(50));
                drop(r);
                done_tx.send(()).unwrap();
            });
            done.recv_timeout(Duration::from_secs(20))
                .expect("drop returns");
            assert!(dropped.load(Ordering::SeqCst), "the thread has ended");
        }
    }

    struct Panics;

    impl Read for Panics {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            panic!("decoder bug");
        }
    }

    #[test]
    fn a_panicking_decoder_is_a_read_error() {
        let mut r = ReadAhead::spawn(Panics, 4096).unwrap();
        let msg = r.read(&mut [0u8; 4]).unwrap_err().to_string();
        assert!(msg.contains("decompression thread"), "{msg}");
        assert!(r.read(&mut [0u8; 4]).is_err(), "the error is sticky");
    }
}
