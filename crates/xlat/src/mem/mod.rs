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

/// Hint the host to cache the line holding `value` (nothing on other architectures): the
/// simulated structures on the hot path (caches, page-table frames, TLB profiles) ask for the
/// host lines they are about to search. It lives here, at the bottom of the memory system,
/// so that every layer above can use it.
#[inline(always)]
pub(crate) fn prefetch_host<V>(value: &V) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache, and the address is that of a live reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const V).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
