//! The engine's error type. Every failure a user can cause (bad config, bad trace, impossible
//! workload) becomes one of these, with enough context to fix it: the key path, the file and
//! byte offset, or the resource that ran out. Panics are reserved for engine bugs.

use std::path::Path;

#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// A configuration problem; `key` is the full dotted path (`mmu.l2tlb.ways`).
    #[error("config error at `{key}`: {msg}")]
    Config { key: String, msg: String },

    /// A problem reading or writing a file; `offset` is a byte offset or line number context.
    #[error("{file}: {msg}")]
    File { file: String, msg: String },

    /// Simulated physical memory (or another simulated resource) is exhausted.
    #[error("out of simulated memory: {0}")]
    OutOfMemory(String),

    /// `verify = true` found a translation that disagrees with the OS's ground truth.
    #[error("translation check failed: {0}")]
    Verify(String),

    /// The run was stopped from outside (Ctrl-C) before it finished.
    #[error("interrupted")]
    Interrupted,

    /// A workload or trace asks for something the simulated system cannot do.
    #[error("workload error: {0}")]
    Workload(String),

    /// An error while simulating record `record` (counted from 0) of the workload's stream.
    #[error("at record {record}: {source}")]
    AtRecord { record: u64, source: Box<Error> },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// This error, as raised while simulating record `record` of the stream.
    #[cold]
    pub fn at_record(self, record: u64) -> Error {
        match self {
            Error::Interrupted | Error::AtRecord { .. } => self,
            other => Error::AtRecord {
                record,
                source: Box::new(other),
            },
        }
    }

    pub fn config(key: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::Config {
            key: key.into(),
            msg: msg.into(),
        }
    }
    pub fn file(file: impl AsRef<Path>, msg: impl Into<String>) -> Error {
        Error::File {
            file: file.as_ref().display().to_string(),
            msg: msg.into(),
        }
    }
}
