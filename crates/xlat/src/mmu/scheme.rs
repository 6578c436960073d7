//! The scheme registry: translation schemes by the name used in `scheme = "..."`.
//!
//! A scheme decides what happens after the TLBs miss. Adding one means adding a variant here and
//! its own files; no other scheme changes. Dispatch is a `match` on an enum, so the reference loop
//! has no virtual calls (DESIGN.md §3 rule 5).

use super::radix_walker::RadixWalker;
use crate::config::SimConfig;
use crate::error::{Error, Result};

/// `(name, one-line description)` of every registered scheme.
pub const SCHEMES: &[(&str, &str)] = &[
    (
        "radix",
        "x86-64 4/5-level radix page table with split page-walk caches",
    ),
    (
        "perfect-tlb",
        "ideal bound: every translation hits in the L1 TLB (Utopia's P-TLB)",
    ),
];

// One `Scheme` per MMU, held inline so the hot path has no indirection; size is irrelevant.
#[allow(clippy::large_enum_variant)]
pub enum Scheme {
    Radix(RadixWalker),
    PerfectTlb,
}

pub fn check_name(name: &str) -> Result<()> {
    if SCHEMES.iter().any(|(n, _)| *n == name) {
        Ok(())
    } else {
        let known: Vec<&str> = SCHEMES.iter().map(|(n, _)| *n).collect();
        Err(Error::config(
            "scheme",
            format!("unknown scheme `{name}` (known: {})", known.join(", ")),
        ))
    }
}

pub fn build(cfg: &SimConfig) -> Result<Scheme> {
    check_name(&cfg.scheme)?;
    Ok(match cfg.scheme.as_str() {
        "radix" => Scheme::Radix(RadixWalker::new(&cfg.mmu.pwc)),
        "perfect-tlb" => Scheme::PerfectTlb,
        _ => unreachable!("check_name accepted it"),
    })
}
