//! The scheme registry: translation schemes by the name used in `scheme = "..."`.
//!
//! A scheme decides what happens after the TLBs miss. Adding one means adding a variant here and
//! its own files; no other scheme changes. Dispatch is a `match` on an enum, so the reference loop
//! has no virtual calls (DESIGN.md §3 rule 5).

use super::hashed_walker::HashedWalker;
use super::radix_walker::RadixWalker;
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::pt::hashed::HptKind;
use crate::pt::Organisation;

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
    (
        "ecpt",
        "Elastic Cuckoo Page Tables: W-way cuckoo hashed tables per page size, CWCs (ME-HPT §II-B)",
    ),
    (
        "mehpt",
        "Memory-Efficient HPTs: ECPT with L2P chunks, in-place and per-way resizing (ME-HPT §IV)",
    ),
];

// One `Scheme` per MMU, held inline so the hot path has no indirection; size is irrelevant.
#[allow(clippy::large_enum_variant)]
pub enum Scheme {
    Radix(RadixWalker),
    PerfectTlb,
    Hashed(HashedWalker),
}

/// The hashed organisation a scheme name stands for, if any.
fn hashed_kind(scheme: &str) -> Option<HptKind> {
    match scheme {
        "ecpt" => Some(HptKind::Ecpt),
        "mehpt" => Some(HptKind::Mehpt),
        _ => None,
    }
}

/// The page-table organisation the processes of a run get under its scheme.
pub fn organisation(cfg: &SimConfig) -> Organisation {
    match hashed_kind(&cfg.scheme) {
        Some(kind) => Organisation::Hashed {
            cfg: cfg.pt.hashed.clone(),
            kind,
        },
        None => Organisation::Radix {
            levels: cfg.pt.levels,
        },
    }
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
        name => match hashed_kind(name) {
            Some(kind) => Scheme::Hashed(HashedWalker::new(&cfg.mmu.hpt, kind, cfg.pt.hashed.ways)),
            None => unreachable!("check_name accepted it"),
        },
    })
}
