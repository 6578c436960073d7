//! Batching and error delivery shared by the foreign-format readers (ChampSim, lackey).
//!
//! A foreign format is decoded one unit at a time (an instruction, a text line), and one unit
//! can yield several records. [`Batched`] turns such a unit decoder into a [`RecordSource`]:
//! it fills caller buffers to their capacity, delivers every record decoded before an error
//! first, and then reports the error on this and every later call (a trace never silently
//! ends early).

use crate::error::{Error, Result};
use crate::trace::{Record, RecordSource};
use std::collections::VecDeque;

/// Batch used by `fill` when handed a buffer with zero capacity.
const DEFAULT_FILL: usize = 4096;

/// Decodes a trace one unit at a time.
pub trait UnitDecoder {
    /// Decodes the next unit, appending its records (possibly none) to `out`. Returns
    /// `Ok(false)` at the end of the trace.
    fn decode_unit(&mut self, out: &mut VecDeque<Record>) -> Result<bool>;

    /// Where the unit decoded last is in the file, for messages ("line 12").
    fn position(&self) -> String;
}

enum State {
    Reading,
    Done,
    /// The error, kept to be reported again by every later call.
    Failed {
        file: String,
        msg: String,
    },
}

/// A [`RecordSource`] over a [`UnitDecoder`].
pub struct Batched<D> {
    decoder: D,
    pending: VecDeque<Record>,
    state: State,
}

impl<D: UnitDecoder> Batched<D> {
    pub fn new(decoder: D) -> Self {
        Batched {
            decoder,
            pending: VecDeque::new(),
            state: State::Reading,
        }
    }

    /// The decoder, for format-specific queries.
    pub fn decoder(&self) -> &D {
        &self.decoder
    }

    /// Decodes units until a record is pending, the trace ends or an error occurs.
    fn top_up(&mut self) {
        while self.pending.is_empty() && matches!(self.state, State::Reading) {
            match self.decoder.decode_unit(&mut self.pending) {
                Ok(true) => {}
                Ok(false) => self.state = State::Done,
                Err(e) => {
                    self.state = match e {
                        Error::File { file, msg } => State::Failed { file, msg },
                        other => State::Failed {
                            file: String::new(),
                            msg: other.to_string(),
                        },
                    }
                }
            }
        }
    }

    fn error(&self) -> Result<()> {
        match &self.state {
            State::Failed { file, msg } => Err(Error::File {
                file: file.clone(),
                msg: msg.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Where in the file record `record` (counted from 0) comes from: the position of the
    /// unit that yields it. `None` if the trace ends (or breaks) before it. Reads from the
    /// current position, so call it on a freshly opened reader.
    pub fn locate(mut self, record: u64) -> Option<String> {
        let mut decoded = 0u64;
        while matches!(self.state, State::Reading) {
            let before = self.pending.len();
            match self.decoder.decode_unit(&mut self.pending) {
                Ok(true) => {}
                _ => return None,
            }
            decoded += (self.pending.len() - before) as u64;
            if decoded > record {
                return Some(self.decoder.position());
            }
            self.pending.clear();
        }
        None
    }

    /// The next record, `None` at the end of the trace.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        self.top_up();
        match self.pending.pop_front() {
            Some(r) => Ok(Some(r)),
            None => self.error().map(|()| None),
        }
    }
}

impl<D: UnitDecoder> RecordSource for Batched<D> {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        buf.clear();
        if buf.capacity() == 0 {
            buf.reserve(DEFAULT_FILL);
        }
        let cap = buf.capacity();
        while buf.len() < cap {
            self.top_up();
            if self.pending.is_empty() {
                break;
            }
            let n = self.pending.len().min(cap - buf.len());
            buf.extend(self.pending.drain(..n));
        }
        if buf.is_empty() {
            self.error()?;
        }
        Ok(())
    }
}
