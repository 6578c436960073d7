//! A log of the calls a run makes to its DRAM, to time and check the DRAM model on its own.
//!
//! Built with the `dram-log` feature, a run started with `XLAT_DRAM_LOG=FILE` appends every
//! [`Dram::set_floor`](super::Dram::set_floor), [`Dram::access`](super::Dram::access) and
//! [`Dram::write`](super::Dram::write) call to `FILE`; the `dram_replay` example makes the same
//! calls on a new `Dram` and reports their time and a checksum of every latency and the final
//! stats. A change to the model that only makes it faster must leave the checksum as it was
//! (`docs/dram.md`, "Timing the model"). Without the feature nothing is recorded and the hot
//! path carries no check.

use super::Requester;
use crate::addr::PhysAddr;

/// One call to the DRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Floor(u64),
    Read(PhysAddr, u64, Requester),
    Write(PhysAddr, u64),
}

/// Bytes of an encoded event: a kind byte and two little-endian words.
pub const EVENT_BYTES: usize = 17;

impl Event {
    pub fn encode(self) -> [u8; EVENT_BYTES] {
        let (kind, a, b) = match self {
            Event::Floor(cycle) => (0, cycle, 0),
            Event::Read(addr, now, Requester::Data) => (1, addr.0, now),
            Event::Read(addr, now, Requester::Translation) => (2, addr.0, now),
            Event::Write(addr, now) => (3, addr.0, now),
        };
        let mut out = [0; EVENT_BYTES];
        out[0] = kind;
        out[1..9].copy_from_slice(&u64::to_le_bytes(a));
        out[9..].copy_from_slice(&u64::to_le_bytes(b));
        out
    }

    /// The event of one encoded record; `None` for an unknown kind byte.
    pub fn decode(record: &[u8; EVENT_BYTES]) -> Option<Event> {
        let word = |at: usize| {
            u64::from_le_bytes(record[at..at + 8].try_into().expect("8 bytes of a record"))
        };
        let (a, b) = (word(1), word(9));
        Some(match record[0] {
            0 => Event::Floor(a),
            1 => Event::Read(PhysAddr(a), b, Requester::Data),
            2 => Event::Read(PhysAddr(a), b, Requester::Translation),
            3 => Event::Write(PhysAddr(a), b),
            _ => return None,
        })
    }
}

#[cfg(feature = "dram-log")]
mod recorder {
    use super::{Event, EVENT_BYTES};
    use std::io::Write;
    use std::sync::Mutex;

    /// The open log, or `Err(())` once `XLAT_DRAM_LOG` was found unset (or the file could not
    /// be created: reported once) so that later calls return at once.
    static LOG: Mutex<Option<Result<std::io::BufWriter<std::fs::File>, ()>>> = Mutex::new(None);

    pub fn record(event: Event) {
        let mut log = LOG.lock().unwrap_or_else(|e| e.into_inner());
        let out = log.get_or_insert_with(|| {
            let path = std::env::var_os("XLAT_DRAM_LOG").ok_or(())?;
            std::fs::File::create(&path)
                .map(std::io::BufWriter::new)
                .map_err(|e| eprintln!("XLAT_DRAM_LOG={}: {e}", path.to_string_lossy()))
        });
        if let Ok(out) = out {
            let record: [u8; EVENT_BYTES] = event.encode();
            if let Err(e) = out.write_all(&record) {
                eprintln!("XLAT_DRAM_LOG: {e}");
            }
        }
    }

    /// Write out what is buffered (call before the process exits).
    pub fn flush() {
        if let Some(Ok(out)) = LOG.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            if let Err(e) = out.flush() {
                eprintln!("XLAT_DRAM_LOG: {e}");
            }
        }
    }
}

#[cfg(feature = "dram-log")]
pub use recorder::{flush, record};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_decodes_to_itself() {
        let events = [
            Event::Floor(123_456_789),
            Event::Read(PhysAddr(0x00de_adbe_efc0), 42, Requester::Data),
            Event::Read(PhysAddr(64), u64::MAX, Requester::Translation),
            Event::Write(PhysAddr(1 << 40), 7),
        ];
        for e in events {
            assert_eq!(Event::decode(&e.encode()), Some(e));
        }
        let mut bad = Event::Floor(1).encode();
        bad[0] = 9;
        assert_eq!(Event::decode(&bad), None);
    }
}
