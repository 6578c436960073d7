//! The memory system: caches, the hierarchy that connects them, and DRAM.

pub mod cache;
pub mod dram;
pub mod hierarchy;
pub mod kind;
pub mod physmem;
mod sorted;
pub mod topology;

pub use hierarchy::{Hierarchy, Level, Timing};
pub use kind::MemKind;
