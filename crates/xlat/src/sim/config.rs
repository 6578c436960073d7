//! The whole-system config: one TOML document describes a simulated system and its run. Each
//! section is the config type of the component that owns it; this type only assembles them and
//! checks what spans several (physical memory against the DRAM geometry, the host memory of
//! all the structures the sections size).

use crate::config::{self, HostUses, Validate};
use crate::core::CoreConfig;
use crate::error::{Error, Result};
use crate::mem::cache::CacheHierarchyConfig;
use crate::mem::dram::DramConfig;
use crate::mem::topology::TopologyConfig;
use crate::mmu::config::MmuConfig;
use crate::os::OsConfig;
use crate::profile::ProfileConfig;
use crate::schemes::SchemeSections;
use crate::workload::WorkloadConfig;
use serde::{Deserialize, Serialize};

/// The whole simulated system plus the run parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of every random choice in the run (fragmentation, replacement, workloads).
    pub seed: u64,
    /// Translation scheme, by registry name (`xlat schemes` / docs list them).
    pub scheme: String,
    pub core: CoreConfig,
    pub mmu: MmuConfig,
    pub cache: CacheHierarchyConfig,
    pub dram: DramConfig,
    /// Sockets, the channels each owns and the networks between them (`[topology]`); the
    /// default, one socket with nothing to cross, leaves every run as it was without it.
    #[serde(default, skip_serializing_if = "is_default")]
    pub topology: TopologyConfig,
    pub os: OsConfig,
    /// Each scheme's own parameters, `[schemes.<section>]` (page-walk caches, hashed tables,
    /// range TLB...). Sections a run's scheme does not use keep their defaults.
    #[serde(default)]
    pub schemes: SchemeSections,
    pub sim: RunConfig,
    pub workload: WorkloadConfig,
    /// Counts taken beside the run (`[profile.tlb]`: many TLB geometries in one pass).
    #[serde(default, skip_serializing_if = "is_default")]
    pub profile: ProfileConfig,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Run control.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// How far to run functionally before simulating in detail: the OS faults and allocates,
    /// page tables are built, TLBs and page-walk caches (and with `fast_forward_caches` the
    /// caches) are kept warm, but nothing takes time and nothing is counted. `"roi"`: to the
    /// workload's region of interest (a trace, or a workload without set-up, starts there);
    /// a number: that many instructions; `0`: not at all.
    #[serde(default)]
    pub fast_forward: FastForward,
    /// Fast-forwarding also fills the caches with the data and page-table lines it touches.
    /// Without it fast-forwarding is several times quicker, and the detailed warm-up
    /// (`warmup_instructions`) has to fill the caches.
    #[serde(default = "yes")]
    pub fast_forward_caches: bool,
    /// The fast-forward's last this many records are replayed through the TLBs, page-walk
    /// caches (and caches) to warm them; the ones before only have their pages mapped. A
    /// million records touch far more pages and lines than any of those structures holds.
    #[serde(default = "default_warm_records")]
    pub fast_forward_warm_records: u64,
    /// Instructions simulated in detail before all statistics are reset (structures stay
    /// warm), after any fast-forward.
    pub warmup_instructions: u64,
    /// Record a time-series sample every this many instructions (0 = off).
    pub epoch_instructions: u64,
    /// Check every translation against the OS's ground-truth mapping.
    pub verify: bool,
    /// Self-test of `verify` (0 = off): once this many translations have been checked, the
    /// entries the next translated page's walk reads are corrupted in the scheme's own
    /// structures (a radix PTE, a hashed-table PTE, an RMM range, a Utopia TAR tag) and its
    /// cached translations shot down, so that the check must fail on that access. Needs
    /// `verify = true`; a scheme that translates from the OS's own mapping (`perfect-tlb`)
    /// has nothing to corrupt.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verify_inject_after: u64,
    /// Stop after this many instructions (0 = run the whole workload/trace), counted over
    /// all cores, as warm-up and epochs are.
    pub max_instructions: u64,
    /// Cores of the system (`--cores N`): each with its own core model, MMU, L1D and L2,
    /// sharing the LLC, DRAM, physical memory and OS. A record runs on core
    /// `record.core % cores`: the threads of a multi-threaded workload, or the members of a
    /// `mix`, each on its own core.
    #[serde(default = "one_core")]
    pub cores: u32,
    /// `"detailed"`: the core, caches and DRAM take time (cycles, IPC). `"translation"`:
    /// every record is translated as in a detailed run (TLBs, page-walk caches, walks through
    /// the scheme, page faults and the OS's work behind them) but nothing takes time: the
    /// caches and DRAM are not visited and the core model does not run, so cycles, IPC,
    /// latencies and cache statistics are absent from the stats. For studies that count TLB
    /// misses over long runs (docs/profiles.md).
    #[serde(default, skip_serializing_if = "is_default")]
    pub timing: RunTiming,
}

/// `sim.timing`: what a run models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunTiming {
    /// The full timing model.
    #[default]
    Detailed,
    /// Translation only: no core, cache or DRAM timing.
    Translation,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn one_core() -> u32 {
    1
}

fn yes() -> bool {
    true
}

fn default_warm_records() -> u64 {
    1_000_000
}

/// `sim.fast_forward`: to the region of interest, or a number of instructions (0 = off).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FastForward {
    #[default]
    Roi,
    Instructions(u64),
}

impl Serialize for FastForward {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            FastForward::Roi => s.serialize_str("roi"),
            FastForward::Instructions(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for FastForward {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Count(u64),
            Name(String),
        }
        let expected = "\"roi\" or a number of instructions (0 = off)";
        match Given::deserialize(d)
            .map_err(|_| serde::de::Error::custom(format!("expected {expected}")))?
        {
            Given::Count(n) => Ok(FastForward::Instructions(n)),
            Given::Name(name) if name == "roi" => Ok(FastForward::Roi),
            Given::Name(name) => Err(serde::de::Error::custom(format!(
                "expected {expected}, got \"{name}\""
            ))),
        }
    }
}

/// Most cores a system may have (a record names its core in 8 bits).
pub const MAX_CORES: u32 = 64;

impl SimConfig {
    /// Load `spec` (a preset name or a TOML file path), apply `overrides` (`key=value`),
    /// validate.
    ///
    /// `workload.footprint` (bytes, or a size such as `"8GiB"`) sets the workload's size
    /// parameters to reach that footprint and is not kept (the resolved config holds the
    /// parameters it chose). When the workload's data does not fit in `os.physmem.bytes` and
    /// the overrides do not set `os.physmem.bytes`, physical memory grows to hold it, and
    /// `dram.rows` with it (see [`SimConfig::fit_memory`]).
    pub fn load(spec: &str, overrides: &[String]) -> Result<SimConfig> {
        let (mut cfg, footprint): (SimConfig, _) = config::load_with(spec, overrides, |table| {
            table
                .get_mut("workload")
                .and_then(|w| w.as_table_mut())
                .and_then(|w| w.remove("footprint"))
        })?;
        if let Some(size) = footprint {
            let key = "workload.footprint";
            let bytes = crate::workload::footprint::parse_size(&size, key)?;
            cfg.workload.set_footprint(bytes, key)?;
        }
        let given = |key: &str| {
            overrides
                .iter()
                .any(|o| config::parse_override(o).is_ok_and(|(k, _)| k == key))
        };
        cfg.fit_memory(given("os.physmem.bytes"));
        cfg.fit_channel_nodes(given("dram.rows"));
        cfg.validate()?;
        Ok(cfg)
    }

    /// Physical memory the workload's data needs: its footprint plus a quarter (page tables,
    /// fragmentation pins, the kernel's own allocations) plus 1 GiB, in whole GiB.
    pub fn memory_needed(&self) -> Option<u64> {
        let fp = self.workload.footprint_bytes()?;
        Some((fp + fp / 4 + (1 << 30)).div_ceil(1 << 30) << 30)
    }

    /// Grow `os.physmem.bytes` to [`SimConfig::memory_needed`] when it is smaller (unless
    /// `physmem_given`: the user chose the size, and a footprint beyond it is their experiment,
    /// reported by the OS when it runs out), and `dram.rows` by powers of two until the DRAM
    /// holds it. Workloads whose footprint is known only by building them are left alone.
    pub fn fit_memory(&mut self, physmem_given: bool) {
        let Some(need) = self.memory_needed() else {
            return;
        };
        // With swapping, a footprint beyond memory is what the run is about.
        if physmem_given || self.os.swap.enabled || need <= self.os.physmem.bytes {
            return;
        }
        self.os.physmem.bytes = need;
        if let (Some(cap), Some(rows)) = (self.dram.capacity_bytes(), self.dram.rows) {
            if cap < need {
                self.dram.rows = Some(rows * need.div_ceil(cap).next_power_of_two());
            }
        }
    }

    /// With `channel` the most significant field of `dram.mapping` on a multi-socket machine,
    /// each channel is a contiguous slice of physical memory (a memory node, as NUMA nodes
    /// are): `dram.rows` is then set so that the DRAM holds exactly `os.physmem.bytes` (when
    /// that is a power-of-two number of rows), so that physical memory spreads over every
    /// channel, whatever its size, rather than filling the first ones (unless `rows_given`).
    pub fn fit_channel_nodes(&mut self, rows_given: bool) {
        let d = &self.dram;
        if rows_given || self.topology.sockets <= 1 || d.rows.is_none() {
            return;
        }
        if d.mapping.split(':').next().map(str::trim) != Some("channel") {
            return;
        }
        let per_row = u64::from(d.channels) * u64::from(d.ranks) * u64::from(d.banks) * d.row_bytes;
        let bytes = self.os.physmem.bytes;
        if per_row > 0 && bytes.is_multiple_of(per_row) && (bytes / per_row).is_power_of_two() {
            self.dram.rows = Some(bytes / per_row);
        }
    }

    /// The host memory of the structures this config sizes, section by section (see
    /// [`crate::config::host`]): what each core, each process and the system builds.
    pub fn host_uses(&self) -> Result<HostUses> {
        let processes = match &self.workload {
            WorkloadConfig::Mix(m) => m.members.len() as u64,
            _ => 1,
        };
        let mut uses = HostUses::new(self.sim.cores.into(), processes);
        self.mmu.host_uses(&mut uses);
        self.cache.host_uses(&mut uses);
        self.dram.host_uses("dram", &mut uses);
        let vmm = crate::schemes::virtualized(&self.scheme)?;
        let guest_copies = if vmm && self.schemes.virt.backs_guest() {
            (2, "the guest's frames and the VMM's backing them")
        } else {
            (1, "")
        };
        self.os.host_uses("os", guest_copies, &mut uses);
        self.schemes.host_uses(&mut uses);
        if self.scheme == "sparta" {
            // The partitions' tables: `table_slots_per_frame` 16-byte entries per frame of
            // memory (1/64 of it at the prototype's load factor), kept in the store as the
            // walks and faults write them.
            let slots = u64::from(self.schemes.sparta.table_slots_per_frame);
            let key = "schemes.sparta.table_slots_per_frame";
            let entries = self.os.physmem.frames().saturating_mul(slots);
            uses.once(key, entries, "partition-table entries", 16);
        }
        self.profile.tlb.host_uses("profile.tlb", &mut uses);
        if vmm {
            let (virt, guest) = (&self.schemes.virt, self.os.physmem.bytes);
            virt.vmm_host_uses("schemes.virt", guest, &mut uses);
        }
        // The records the fast-forward keeps to replay (a mix splits them among programs).
        let record = std::mem::size_of::<crate::trace::Record>() as u64;
        let warm = self.sim.fast_forward_warm_records;
        uses.once("sim.fast_forward_warm_records", warm, "records", record);
        Ok(uses)
    }

    /// The config as TOML text (what is saved beside a run's stats).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a validated config always serialises")
    }
}

impl SimConfig {
    /// `os.swap.policy` against the scheme: Horizon LRU works on Mosaic's iceberg pool and
    /// nowhere else; the pool's pages are the frame policy's own, which `lru`'s reclaim
    /// cannot page out.
    fn check_swap_policy(&self) -> Result<()> {
        use crate::os::SwapPolicy;
        let policy = self.os.swap.policy;
        if policy != SwapPolicy::Fifo && !self.os.swap.enabled {
            return Err(Error::config(
                "os.swap.policy",
                format!("{policy:?} needs os.swap.enabled = true").to_lowercase(),
            ));
        }
        let mosaic = self.scheme == "mosaic";
        if policy == SwapPolicy::Horizon && !mosaic {
            return Err(Error::config(
                "os.swap.policy",
                format!(
                    "\"horizon\" is Horizon LRU over Mosaic's iceberg pool; scheme {} \
                     allocates frames otherwise (use \"lru\" or \"fifo\")",
                    self.scheme
                ),
            ));
        }
        if policy == SwapPolicy::Lru && mosaic {
            return Err(Error::config(
                "os.swap.policy",
                "\"lru\" reclaims the buddy allocator's memory, and every data page of a \
                 mosaic run is in the iceberg pool: use \"horizon\"",
            ));
        }
        Ok(())
    }
}

impl Validate for SimConfig {
    /// Check geometry and ranges; every error names the full key.
    fn validate(&self) -> Result<()> {
        self.core.validate()?;
        self.mmu.validate()?;
        self.cache.validate()?;
        self.dram.validate("dram")?;
        self.topology.validate("topology", self.dram.channels)?;
        if !(1..=MAX_CORES).contains(&self.sim.cores) {
            return Err(Error::config(
                "sim.cores",
                format!("must be 1 to {MAX_CORES}, got {}", self.sim.cores),
            ));
        }
        if self.sim.verify_inject_after > 0 && !self.sim.verify {
            return Err(Error::config(
                "sim.verify_inject_after",
                "injects a wrong translation for verify to catch: it needs sim.verify = true \
                 (--verify)",
            ));
        }
        self.os.validate("os")?;
        if let Some(cap) = self.dram.capacity_bytes() {
            if self.os.physmem.bytes > cap {
                return Err(Error::config(
                    "os.physmem.bytes",
                    format!(
                        "{} bytes do not fit in the DRAM geometry ({cap} bytes; see dram.rows)",
                        self.os.physmem.bytes
                    ),
                ));
            }
        }
        crate::schemes::check_name(&self.scheme)?;
        self.schemes.validate()?;
        if self.scheme == "utopia" && !self.schemes.utopia.flexseg && !self.os.swap.enabled {
            return Err(Error::config(
                "schemes.utopia.flexseg",
                "false (restrictive-only) pages out a full set's victim: it needs \
                 os.swap.enabled = true"
                    .to_string(),
            ));
        }
        self.check_swap_policy()?;
        self.workload.validate("workload")?;
        // A mix runs each program on a core of its own, or all of them time-sliced on one
        // core; an OS scheduler spreading more programs over fewer cores is not modelled.
        if let WorkloadConfig::Mix(m) = &self.workload {
            let members = m.members.len();
            let cores = self.sim.cores as usize;
            if cores > 1 && cores < members {
                return Err(Error::config(
                    "sim.cores",
                    format!(
                        "{cores} cores for the {members} programs of workload.members: a mix \
                         runs one program per core (sim.cores >= {members}), or all of them \
                         time-sliced on one core (sim.cores = 1)"
                    ),
                ));
            }
        }
        self.profile.tlb.validate("profile.tlb")?;
        if !self.profile.tlb.is_off() && self.sim.cores > 1 {
            return Err(Error::config(
                "profile.tlb.entries",
                format!(
                    "the TLB profile counts one TLB's stream: it needs sim.cores = 1, got {}",
                    self.sim.cores
                ),
            ));
        }
        if self.sim.timing == RunTiming::Translation && self.sim.cores > 1 {
            if let WorkloadConfig::Mix(_) = &self.workload {
                return Err(Error::config(
                    "sim.timing",
                    "\"translation\" runs a mix's programs interleaved on one core: set \
                     sim.cores = 1 (a core per program needs the timing model to interleave \
                     them)",
                ));
            }
        }
        if self.sim.timing == RunTiming::Translation && !self.cache.l1d.addressing.is_physical() {
            return Err(Error::config(
                "cache.l1d.addressing",
                "\"virtual\" translates only the L1D's misses, and sim.timing = \"translation\" \
                 models no caches: use sim.timing = \"detailed\"",
            ));
        }
        // Last: the estimates take the geometry checked above as given.
        self.host_uses()?.check(config::HOST_BUDGET)
    }
}
