//! `ecpt` and `mehpt`: hashed page tables (the organisation is `pt::hashed`) walked through
//! Cuckoo Walk Caches, ME-HPT §II-B and §IV-V. The two schemes share one config section,
//! `[schemes.hashed]`: the table's parameters under `table`, the walker's under `walker`.

pub mod walker;

use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr};
use crate::config::HostUses;
use crate::error::Result;
use crate::mem::physmem::BuddyAllocator;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, WalkEnv};
use crate::pt::hashed::{HashedConfig, HashedPageTable, HptKind};
use crate::pt::PtContext;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use walker::{HashedWalker, HptWalkerConfig};

/// `[schemes.hashed]`. Defaults are ME-HPT Table III.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HashedSchemeConfig {
    /// The tables: ways, sizes, thresholds, hashes, ME-HPT techniques.
    #[serde(default)]
    pub table: HashedConfig,
    /// The walker: hash and L2P latencies, CWC geometry.
    #[serde(default)]
    pub walker: HptWalkerConfig,
}

impl HashedSchemeConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        self.table.validate(&format!("{path}.table"))?;
        self.walker.validate(&format!("{path}.walker"))
    }

    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        self.table.host_uses(&format!("{path}.table"), uses);
        self.walker.host_uses(&format!("{path}.walker"), uses);
    }
}

impl MmuScheme for HashedWalker {
    type Table = HashedPageTable;
    type Shared = ();

    #[inline]
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, HashedPageTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        self.plan(va, asid, env.table, env.store, plan)
    }

    fn flush(&mut self) {
        HashedWalker::flush(self);
    }

    fn reset_stats(&mut self) {
        HashedWalker::reset_stats(self);
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::from([("cwc", stats_value(&self.snapshot()))])
    }
}

/// A hashed-page-table scheme: ECPT (`MEHPT = false`) or ME-HPT.
pub struct Hashed<const MEHPT: bool>;
pub type Ecpt = Hashed<false>;
pub type Mehpt = Hashed<true>;

impl<const MEHPT: bool> Hashed<MEHPT> {
    const KIND: HptKind = if MEHPT { HptKind::Mehpt } else { HptKind::Ecpt };
}

impl<const MEHPT: bool> Scheme for Hashed<MEHPT> {
    type Mmu = HashedWalker;

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn mmu(ctx: &BuildCtx) -> Result<HashedWalker> {
        let cfg = &ctx.sections.hashed;
        Ok(HashedWalker::new(&cfg.walker, Self::KIND, cfg.table.ways))
    }

    fn new_table(ctx: &BuildCtx, _pt: &mut PtContext, pid: u16) -> Result<TableOf<Self>> {
        let seed = ctx.seed ^ (pid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        HashedPageTable::new(&ctx.sections.hashed.table, Self::KIND, seed)
    }
}
