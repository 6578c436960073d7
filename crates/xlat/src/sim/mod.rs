//! The simulation: builds the system a config describes, with its scheme's parts, and runs it.
//!
//! [`Simulation`] is what callers hold; it owns a [`system::System`] of the config's scheme
//! behind one virtual call per batch of records, so the reference loop inside is static.

mod config;
pub mod system;

pub use crate::stats::Stats;
pub use config::{FastForward, RunConfig, RunTiming, SimConfig};

use crate::error::Result;
use crate::os::AddressSpaces;
use crate::schemes::{self, Scheme, Visitor};
use crate::trace::{Record, RecordSource};
use system::System;

/// What the simulation does with a system, whatever its scheme.
trait Engine {
    fn config(&self) -> &SimConfig;
    fn step(&mut self, rec: &Record) -> Result<()>;
    fn run(&mut self, progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>) -> Result<Stats>;
    fn stats(&self) -> Stats;
    fn address_spaces(&mut self) -> &mut dyn AddressSpaces;
    fn shootdown(&mut self, pid: u16, pages: &[(crate::addr::Vpn, crate::addr::PageSize)]);
    fn truth(
        &self,
        pid: u16,
        va: crate::addr::VirtAddr,
    ) -> Option<(crate::addr::Pfn, crate::addr::PageSize)>;
}

impl<S: Scheme> Engine for System<S> {
    fn config(&self) -> &SimConfig {
        System::config(self)
    }
    fn step(&mut self, rec: &Record) -> Result<()> {
        System::step(self, rec)
    }
    fn run(&mut self, progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>) -> Result<Stats> {
        System::run(self, progress)
    }
    fn stats(&self) -> Stats {
        System::stats(self)
    }
    fn address_spaces(&mut self) -> &mut dyn AddressSpaces {
        &mut self.os
    }
    fn shootdown(&mut self, pid: u16, pages: &[(crate::addr::Vpn, crate::addr::PageSize)]) {
        self.shoot_down(0, pid, pages);
    }
    fn truth(
        &self,
        pid: u16,
        va: crate::addr::VirtAddr,
    ) -> Option<(crate::addr::Pfn, crate::addr::PageSize)> {
        self.os.truth(pid, va)
    }
}

type MakeSource<'a> = Box<dyn FnOnce(&mut dyn AddressSpaces) -> Result<Box<dyn RecordSource>> + 'a>;

/// Builds the system of the scheme the registry names.
struct Build<'a> {
    cfg: SimConfig,
    make_source: MakeSource<'a>,
}

impl Visitor for Build<'_> {
    type Output = Result<Box<dyn Engine>>;
    fn visit<S: Scheme>(self) -> Self::Output {
        Ok(Box::new(System::<S>::new(self.cfg, self.make_source)?))
    }
}

/// Boots the OS of a scheme on its own.
struct BootOs<'a>(&'a SimConfig);

impl Visitor for BootOs<'_> {
    type Output = Result<Box<dyn AddressSpaces>>;
    fn visit<S: Scheme>(self) -> Self::Output {
        Ok(Box::new(system::boot_os::<S>(self.0)?))
    }
}

/// The OS of `cfg`'s system on its own, without a machine: what recording a workload or
/// measuring its footprint needs.
pub fn boot_os(cfg: &SimConfig) -> Result<Box<dyn AddressSpaces>> {
    schemes::visit(&cfg.scheme, BootOs(cfg))?
}

pub struct Simulation {
    engine: Box<dyn Engine>,
}

impl Simulation {
    /// Build the system of `cfg` running its configured workload.
    pub fn new(cfg: SimConfig) -> Result<Simulation> {
        let workload = cfg.workload.clone();
        let seed = cfg.seed;
        Simulation::with_source(cfg, move |os| crate::workload::build(&workload, os, seed))
    }

    /// Build the system of `cfg` with records from `make_source`, which may create processes
    /// and mappings in the OS first.
    pub fn with_source(
        cfg: SimConfig,
        make_source: impl FnOnce(&mut dyn AddressSpaces) -> Result<Box<dyn RecordSource>>,
    ) -> Result<Simulation> {
        crate::config::Validate::validate(&cfg)?;
        let scheme = cfg.scheme.clone();
        let build = Build {
            cfg,
            make_source: Box::new(make_source),
        };
        Ok(Simulation {
            engine: schemes::visit(&scheme, build)??,
        })
    }

    pub fn config(&self) -> &SimConfig {
        self.engine.config()
    }

    /// Simulate one record (the run loop does this for every record of the source).
    pub fn step(&mut self, rec: &Record) -> Result<()> {
        self.engine.step(rec)
    }

    /// Run to the end of the source (or `sim.max_instructions`). `progress(records, total)` is
    /// called every batch; an error it returns (e.g. [`crate::Error::Interrupted`]) stops the
    /// run.
    pub fn run(
        &mut self,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<Stats> {
        self.engine.run(progress)
    }

    /// The stats tree as of now.
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// The OS's address spaces (what a workload sees), e.g. to unmap memory mid-run.
    pub fn address_spaces(&mut self) -> &mut dyn AddressSpaces {
        self.engine.address_spaces()
    }

    /// Shoot down the translations of `pages` of `pid` (after an unmap), from core 0, on
    /// every core that runs `pid`.
    pub fn shootdown(&mut self, pid: u16, pages: &[(crate::addr::Vpn, crate::addr::PageSize)]) {
        self.engine.shootdown(pid, pages)
    }

    /// The OS's mapping of `va` in `pid` (the ground truth `--verify` compares with).
    pub fn truth(
        &self,
        pid: u16,
        va: crate::addr::VirtAddr,
    ) -> Option<(crate::addr::Pfn, crate::addr::PageSize)> {
        self.engine.truth(pid, va)
    }
}
