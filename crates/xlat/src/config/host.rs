//! The host memory of the structures a config sizes: TLBs, page-walk and other translation
//! caches, data caches, the POM-TLB array, RestSeg state, the first hashed tables, the frame
//! state of physical memory... Each component lists what its section makes the engine
//! allocate ([`HostUses`]), and the system config checks the sum once, at load time, against
//! [`HOST_BUDGET`]. A value such as `mmu.l1tlb.4k.entries = 2147483648` is then an error
//! naming its key, instead of an allocation of 48 GiB that aborts the process when the
//! system is built.
//!
//! Each estimate is the count the key gives times the host bytes one entry takes in the
//! engine's own type (`size_of` of what a slot holds), times the copies the system builds (one
//! per core, per process, per page-walk-cache level): an upper bound that follows the types
//! when they change. The workload's own host memory is estimated apart (the workload
//! config's `host_bytes`) and checked against the machine's memory when a run starts.

use crate::error::{Error, Result};

/// Host memory the structures a config sizes may take together: 4 GiB. The presets take
/// some 70 MiB (the frame state of their 32 GiB of simulated memory and the fast-forward's
/// warm-up records); 4 GiB still allows a simulated LLC of a few GiB, a POM-TLB of tens of
/// millions of entries or some 3 TiB of simulated memory, and leaves room for a workload's
/// own data on a 16 GiB laptop.
pub const HOST_BUDGET: u64 = 4 << 30;

/// One structure (or set of identical structures) a key sizes.
#[derive(Clone, Debug)]
struct HostUse {
    key: String,
    /// What the key gives: entries, lines, slots, frames...
    count: u64,
    unit: &'static str,
    /// Host bytes of one of them.
    bytes_each: u64,
    /// Structures of this size the system builds, and why (`one per core`).
    copies: u64,
    copies_why: &'static str,
}

impl HostUse {
    /// Host bytes of all the copies, in a `u128`: absurd counts are what this is for, and
    /// their products must not wrap or saturate into other sums.
    fn bytes(&self) -> u128 {
        (self.count as u128 * self.bytes_each as u128).saturating_mul(self.copies as u128)
    }
}

/// What a config's structures take, collected from its sections.
#[derive(Clone, Debug)]
pub struct HostUses {
    cores: u64,
    processes: u64,
    uses: Vec<HostUse>,
}

impl HostUses {
    /// For a system of `cores` cores running `processes` processes: what components add
    /// per core or per process is counted that many times.
    pub fn new(cores: u64, processes: u64) -> HostUses {
        HostUses {
            cores: cores.max(1),
            processes: processes.max(1),
            uses: Vec::new(),
        }
    }

    pub fn cores(&self) -> u64 {
        self.cores
    }

    pub fn processes(&self) -> u64 {
        self.processes
    }

    /// `copies` structures (`copies_why` says whose: `one per core`) of `count` `unit` (as
    /// `key` gives them) of `bytes_each` host bytes each. Nothing is added for a count of 0
    /// (an absent structure).
    pub fn add(
        &mut self,
        key: impl Into<String>,
        count: u64,
        unit: &'static str,
        bytes_each: u64,
        (copies, copies_why): (u64, &'static str),
    ) {
        if count == 0 || copies == 0 {
            return;
        }
        self.uses.push(HostUse {
            key: key.into(),
            count,
            unit,
            bytes_each,
            copies,
            copies_why,
        });
    }

    /// One structure per core.
    pub fn per_core(
        &mut self,
        key: impl Into<String>,
        count: u64,
        unit: &'static str,
        bytes_each: u64,
    ) {
        self.add(key, count, unit, bytes_each, (self.cores, "one per core"));
    }

    /// One structure for the whole system.
    pub fn once(
        &mut self,
        key: impl Into<String>,
        count: u64,
        unit: &'static str,
        bytes_each: u64,
    ) {
        self.add(key, count, unit, bytes_each, (1, ""));
    }

    /// Host bytes of everything added.
    pub fn total(&self) -> u128 {
        self.uses
            .iter()
            .fold(0u128, |sum, u| sum.saturating_add(u.bytes()))
    }

    /// Refuse what takes more than `budget` together, naming the key of the largest
    /// structure (the first of equals): the value most likely to be a mistake, and the one
    /// whose change helps most.
    pub fn check(&self, budget: u64) -> Result<()> {
        let total = self.total();
        if total <= budget.into() {
            return Ok(());
        }
        let largest = self
            .uses
            .iter()
            .reduce(|a, b| if b.bytes() > a.bytes() { b } else { a })
            .expect("a total above the budget has uses");
        let copies = if largest.copies > 1 {
            format!(" (x {} copies, {})", largest.copies, largest.copies_why)
        } else {
            String::new()
        };
        Err(Error::config(
            largest.key.clone(),
            format!(
                "{} {} of {} host bytes each{copies} would take {} of host memory; the \
                 structures a config sizes may take {} together (the others take {}): \
                 choose a smaller value",
                largest.count,
                largest.unit,
                largest.bytes_each,
                human(largest.bytes()),
                human(budget.into()),
                human(total.saturating_sub(largest.bytes())),
            ),
        ))
    }
}

/// `bytes` in the largest binary unit that keeps at least 1 of it, to one decimal.
pub fn human(bytes: u128) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >= 1 << (10 * (unit + 1)) {
        unit += 1;
    }
    if unit == 0 {
        return format!("{bytes} bytes");
    }
    let value = bytes as f64 / (1u128 << (10 * unit)) as f64;
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_structure_of_a_config_over_budget_is_named_with_its_cost() {
        let mut uses = HostUses::new(4, 1);
        uses.per_core("mmu.l1tlb.4k.entries", 64, "entries", 24);
        uses.once("cache.llc.size", 1 << 15, "lines", 18);
        assert_eq!(uses.total(), 4 * 64 * 24 + (18 << 15));
        uses.check(HOST_BUDGET).unwrap();
        uses.per_core("mmu.l2tlb.1g.entries", 1 << 29, "entries", 24);
        let e = uses.check(HOST_BUDGET).unwrap_err().to_string();
        assert_eq!(
            e,
            "config error at `mmu.l2tlb.1g.entries`: 536870912 entries of 24 host bytes each \
             (x 4 copies, one per core) would take 48 GiB of host memory; the structures a \
             config sizes may take 4 GiB together (the others take 582 KiB): choose a \
             smaller value"
        );
    }

    #[test]
    fn costs_past_u64_are_exact_and_absent_structures_cost_nothing() {
        let mut uses = HostUses::new(64, 1);
        uses.per_core("a", u64::MAX, "entries", 80);
        uses.per_core("b", 0, "entries", 1 << 40);
        uses.once("c", 1, "entries", 100);
        assert_eq!(uses.total(), u64::MAX as u128 * 80 * 64 + 100);
        let e = uses.check(HOST_BUDGET).unwrap_err().to_string();
        assert!(
            e.contains("`a`") && e.contains("(the others take 100 bytes)"),
            "{e}"
        );
    }

    #[test]
    fn sizes_print_in_their_unit() {
        assert_eq!(human(17), "17 bytes");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(48 << 30), "48 GiB");
        assert_eq!(human(u64::MAX.into()), "16384 PiB");
        assert_eq!(human(1 << 60), "1024 PiB");
    }
}
