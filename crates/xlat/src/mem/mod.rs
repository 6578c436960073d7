//! The memory system: caches, the hierarchy that connects them, and DRAM.

pub mod dram;
