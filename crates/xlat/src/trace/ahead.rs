//! A record source read on a thread of its own, batches ahead of the simulation.
//!
//! Decompressing and decoding a native trace costs about as much CPU time per record as
//! simulating a simple workload: done inline, a run takes the sum of the two. [`Ahead`] runs
//! the source's `fill` on a dedicated thread that hands whole batches over a bounded channel,
//! so reading overlaps simulation and a run takes about the longer of the two. The simulator
//! receives the thread's batch in its own buffer's place, and its old buffer goes back to the
//! thread to be filled again: no record is copied and no batch allocated in the steady state.
//!
//! The consumer sees exactly what the source would have given it inline: the same records in
//! the same batches, and after an error the records decoded before it, then the error.

use super::pipe::{pipe, PipeReceiver, PipeSender};
use super::{Record, RecordSource, Roi, BATCH};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, JoinHandle};

/// Batches filled ahead of the consumer: the depth of the channel.
const BATCHES_AHEAD: usize = 4;

/// What the reading thread sends, in stream order.
enum Msg {
    /// The next records (never empty).
    Batch(Vec<Record>),
    /// The source is exhausted.
    End,
    /// The source failed after the records sent before.
    Failed(Error),
}

/// A [`RecordSource`] whose inner source is read on a thread of its own. Dropping it stops the
/// thread (which notices at its next hand-over) and waits for it.
pub struct Ahead {
    batches: PipeReceiver<Msg>,
    /// Returns the consumer's spent buffers to the thread.
    spent: Sender<Vec<Record>>,
    /// The error to report again, or `Some(None)` once the source has ended cleanly.
    ended: Option<Option<Error>>,
    len_hint: Option<u64>,
    roi: Roi,
    path: PathBuf,
    worker: Option<JoinHandle<()>>,
}

impl Ahead {
    /// Starts reading `source`, the trace at `path`, on a new thread.
    pub fn spawn(path: &Path, source: Box<dyn RecordSource + Send>) -> Result<Ahead> {
        let (len_hint, roi) = (source.len_hint(), source.roi());
        let (batch_tx, batches) = pipe(BATCHES_AHEAD);
        let (spent, spent_rx) = mpsc::channel();
        let worker = thread::Builder::new()
            .name("xlat-trace-read".into())
            .spawn(move || read(source, &batch_tx, &spent_rx))
            .map_err(|e| Error::file(path, format!("cannot start the reading thread: {e}")))?;
        Ok(Ahead {
            batches,
            spent,
            ended: None,
            len_hint,
            roi,
            path: path.to_path_buf(),
            worker: Some(worker),
        })
    }
}

/// The reading thread: fill batches until the source ends or fails, or the consumer is gone.
fn read(
    mut source: Box<dyn RecordSource + Send>,
    batches: &PipeSender<Msg>,
    spent: &Receiver<Vec<Record>>,
) {
    loop {
        let mut batch = spent
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let msg = match source.fill(&mut batch) {
            Ok(()) if batch.is_empty() => Msg::End,
            Ok(()) => Msg::Batch(batch),
            Err(e) => Msg::Failed(e),
        };
        let last = !matches!(msg, Msg::Batch(_));
        if batches.send(msg).is_err() || last {
            return;
        }
    }
}

impl RecordSource for Ahead {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        buf.clear();
        if let Some(ended) = &self.ended {
            return match ended {
                None => Ok(()),
                Some(e) => Err(e.clone()),
            };
        }
        let msg = self.batches.recv().unwrap_or_else(|_| {
            Msg::Failed(Error::file(
                &self.path,
                "the reading thread stopped before the end of the trace (it panicked)",
            ))
        });
        match msg {
            Msg::Batch(mut batch) => {
                std::mem::swap(buf, &mut batch);
                // The thread may have ended already; then the buffer is simply dropped.
                let _ = self.spent.send(batch);
                Ok(())
            }
            Msg::End => {
                self.ended = Some(None);
                Ok(())
            }
            Msg::Failed(e) => {
                self.ended = Some(Some(e.clone()));
                Err(e)
            }
        }
    }

    fn len_hint(&self) -> Option<u64> {
        self.len_hint
    }

    fn roi(&self) -> Roi {
        self.roi
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        super::readahead::stop(&mut self.batches, &mut self.worker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::VirtAddr;

    /// Records 0..n in batches of `batch`, then `fail` if given (again on every later call,
    /// as a failed reader does).
    struct Counting {
        next: u64,
        n: u64,
        batch: usize,
        fail: Option<&'static str>,
    }

    impl RecordSource for Counting {
        fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
            buf.clear();
            while buf.len() < self.batch && self.next < self.n {
                buf.push(Record {
                    vaddr: VirtAddr(self.next * 8),
                    ..Record::default()
                });
                self.next += 1;
            }
            match self.fail {
                Some(msg) if buf.is_empty() => Err(Error::file("t.xtr", msg)),
                _ => Ok(()),
            }
        }

        fn len_hint(&self) -> Option<u64> {
            Some(self.n)
        }
    }

    /// Every batch a source gives, then how it ended.
    fn drain(mut s: impl RecordSource) -> (Vec<Vec<u64>>, Option<String>) {
        let mut batches = Vec::new();
        let mut buf = Vec::with_capacity(BATCH);
        loop {
            match s.fill(&mut buf) {
                Ok(()) if buf.is_empty() => return (batches, None),
                Ok(()) => batches.push(buf.iter().map(|r| r.vaddr.0).collect()),
                Err(e) => {
                    // Reported again on the next call.
                    assert_eq!(s.fill(&mut buf).unwrap_err().to_string(), e.to_string());
                    return (batches, Some(e.to_string()));
                }
            }
        }
    }

    #[test]
    fn gives_what_the_source_gives_inline() {
        for (n, batch, fail) in [
            (0, 7, None),
            (100_000, 4096, None),
            (
                10_001,
                1000,
                Some("corrupt compressed body near record 10001"),
            ),
            (0, 10, Some("bad magic")),
        ] {
            let source = || Counting {
                next: 0,
                n,
                batch,
                fail,
            };
            let ahead = Ahead::spawn(Path::new("t.xtr"), Box::new(source())).unwrap();
            assert_eq!(ahead.len_hint(), Some(n));
            assert_eq!(drain(ahead), drain(source()), "{n} records, {fail:?}");
        }
    }

    #[test]
    fn dropping_it_early_stops_the_thread() {
        let mut ahead = Ahead::spawn(
            Path::new("t.xtr"),
            Box::new(Counting {
                next: 0,
                n: u64::MAX,
                batch: 64,
                fail: None,
            }),
        )
        .unwrap();
        let mut buf = Vec::new();
        ahead.fill(&mut buf).unwrap();
        assert_eq!(buf.len(), 64);
        // The thread is blocked on a full channel; dropping must not hang.
        drop(ahead);
    }
}
