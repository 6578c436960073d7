//! The scheme registry: the one place where a translation system is assembled from named
//! parts.
//!
//! A scheme is a type implementing [`Scheme`]: it names its MMU parts ([`MmuScheme`]: walker,
//! side paths beside the L2 TLB, an L3 TLB level), through them its page-table organisation,
//! and how it builds them and the frame policy of its OS. It lives in its own folder here, with
//! its config section (`[schemes.<section>]`), its presets, its stats subtree and its tests;
//! adding one is that folder plus one line in [`registry!`] below (and one in [`sections!`] if
//! it brings a config section of its own). docs/extending.md walks through RMM as the example.
//!
//! Dispatch is static: the system is generic over the scheme, so each scheme's reference loop
//! is compiled on its own with no virtual call. [`visit`] turns a scheme's name into that type
//! for a [`Visitor`], the only place a name is matched.

pub mod dipta;
pub mod hashed;
pub mod mosaic;
pub mod perfect_tlb;
pub mod pom_tlb;
pub mod radix;
pub mod rmm;
pub mod sparta;
pub mod utopia;
pub mod virt;

use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mmu::config::MmuConfig;
use crate::mmu::MmuScheme;
use crate::os::vmm::Vmm;
use crate::os::{BuddyFrames, FramePolicy};
use crate::pt::PtContext;
use serde::{Deserialize, Serialize};

/// What a scheme's builders see of the system config.
pub struct BuildCtx<'a> {
    pub sections: &'a SchemeSections,
    pub mmu: &'a MmuConfig,
    pub seed: u64,
    /// Bytes of physical memory (`os.physmem.bytes`).
    pub physmem_bytes: u64,
    /// The DRAM and the machine's topology (`[dram]`, `[topology]`): where physical memory is.
    pub dram: &'a crate::mem::dram::DramConfig,
    pub topology: &'a crate::mem::topology::TopologyConfig,
}

/// The page-table organisation of scheme `S`.
pub type TableOf<S> = <<S as Scheme>::Mmu as MmuScheme>::Table;

/// A translation system: how to build its parts.
pub trait Scheme: 'static {
    /// Its MMU parts, and through them its page-table organisation.
    type Mmu: MmuScheme;

    /// Build the MMU parts of one core.
    fn mmu(ctx: &BuildCtx) -> Result<Self::Mmu>;

    /// Build the parts every core's MMU shares, once per system (`()` for most schemes).
    fn shared(
        ctx: &BuildCtx,
        buddy: &mut BuddyAllocator,
    ) -> Result<<Self::Mmu as MmuScheme>::Shared>;

    /// A new, empty page table for process `pid`.
    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, pid: u16) -> Result<TableOf<Self>>;

    /// The frame policy of the OS (default: the buddy allocator's choice).
    fn frames(_ctx: &BuildCtx) -> Result<Box<dyn FramePolicy>> {
        Ok(Box::new(BuddyFrames))
    }

    /// The VMM the OS runs on as a guest, for a virtualized system (default: none, native).
    fn vmm(_ctx: &BuildCtx) -> Result<Option<Vmm>> {
        Ok(None)
    }

    /// Whether [`Scheme::vmm`] gives a VMM: the config's host-memory check then counts the
    /// VMM's memory, which nothing is built for otherwise.
    const VIRTUALIZED: bool = false;
}

/// Something to do with a scheme's type, chosen by name at run time.
pub trait Visitor {
    type Output;
    fn visit<S: Scheme>(self) -> Self::Output;
}

/// The registry: `"name" => Type, "one-line description";` per scheme.
macro_rules! registry {
    ($($name:literal => $ty:ty, $about:literal;)*) => {
        /// `(name, one-line description)` of every registered scheme.
        pub const SCHEMES: &[(&str, &str)] = &[$(($name, $about)),*];

        /// Run `visitor` with the type of the scheme called `name`.
        pub fn visit<V: Visitor>(name: &str, visitor: V) -> Result<V::Output> {
            match name {
                $($name => Ok(visitor.visit::<$ty>()),)*
                _ => Err(unknown(name)),
            }
        }
    };
}

registry! {
    "radix" => radix::Radix,
        "x86-64 4/5-level radix page table with split page-walk caches";
    "perfect-tlb" => perfect_tlb::PerfectTlb,
        "ideal bound: every translation hits in the L1 TLB (Utopia's P-TLB)";
    "ecpt" => hashed::Ecpt,
        "Elastic Cuckoo Page Tables: W-way cuckoo hashed tables per page size, CWCs (ME-HPT §II-B)";
    "mehpt" => hashed::Mehpt,
        "Memory-Efficient HPTs: ECPT with L2P chunks, in-place and per-way resizing (ME-HPT §IV)";
    "pom-tlb" => pom_tlb::PomTlb,
        "radix with a 64K-entry DRAM-resident L3 TLB probed through the caches (POM-TLB, ISCA'17)";
    "rmm" => rmm::Rmm,
        "Redundant Memory Mappings: range TLB beside the L2 TLB, B-tree range table, eager paging";
    "utopia" => utopia::Utopia,
        "Utopia: set-associative RestSegs (TAR/SF, RestSeg walk beside the L2 TLB) + radix FlexSeg";
    "virt" => virt::Virt,
        "a guest on a VMM: guest radix tables over a nested page table, the 2D walk, and the \
         Dual/VMM/Guest Direct segment modes (Gandhi et al., MICRO'14)";
    "shadow" => virt::Shadow,
        "a guest on a VMM with shadow paging: 1D walks of shadow tables, trapped guest PTE writes";
    "mosaic" => mosaic::Mosaic,
        "Mosaic pages: iceberg-hashed memory, TLB entries holding a ToC of CPFNs, ToC page-table leaves";
    "mosaic-vanilla" => mosaic::MosaicVanilla,
        "Mosaic's vanilla comparator: the mosaic TLB's geometry with one-page entries, radix, buddy";
    "sparta" => sparta::Sparta,
        "SPARTA: partitioned memory, per-partition memory-side TLBs and inverted page tables, \
         translation at the memory controller (Picorel et al.)";
    "dipta" => dipta::Dipta,
        "DIPTA, idealised: set-associative placement, a free hardware page table, a way \
         predictor at memory (SPARTA's comparator, §7.7)";
    "direct-segment" => virt::DirectSegments,
        "radix paging plus a direct segment per primary region, checked beside the L2 TLB";
}

/// The config sections of the schemes: `name: Type;` each becomes `[schemes.<name>]`, with
/// the type's defaults when a config leaves it out.
macro_rules! sections {
    ($($(#[$attr:meta])* $name:ident: $ty:ty;)*) => {
        /// `[schemes]`: each scheme's own parameters, one section per part.
        #[derive(Clone, Debug, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct SchemeSections {
            $($(#[$attr])* #[serde(default)] pub $name: $ty,)*
        }

        impl SchemeSections {
            pub fn validate(&self) -> Result<()> {
                $(self.$name.validate(concat!("schemes.", stringify!($name)))?;)*
                Ok(())
            }

            /// What each section's structures take, whether or not the run's scheme builds
            /// them (a section it does not use is validated all the same).
            pub fn host_uses(&self, uses: &mut HostUses) {
                $(self.$name.host_uses(concat!("schemes.", stringify!($name)), uses);)*
            }
        }
    };
}

sections! {
    radix: radix::RadixConfig;
    hashed: hashed::HashedSchemeConfig;
    pom_tlb: pom_tlb::PomTlbConfig;
    rmm: rmm::RmmConfig;
    utopia: utopia::UtopiaConfig;
    virt: virt::VirtConfig;
    mosaic: mosaic::MosaicConfig;
    /// Left out of a resolved config while it has its defaults, so that configs (and run
    /// ids) from before SPARTA existed stay as they were.
    #[serde(skip_serializing_if = "sparta::SpartaConfig::is_default")]
    sparta: sparta::SpartaConfig;
    /// As `sparta`.
    #[serde(skip_serializing_if = "dipta::DiptaConfig::is_default")]
    dipta: dipta::DiptaConfig;
}

fn unknown(name: &str) -> Error {
    let known: Vec<&str> = SCHEMES.iter().map(|(n, _)| *n).collect();
    Error::config(
        "scheme",
        format!("unknown scheme `{name}` (known: {})", known.join(", ")),
    )
}

/// Whether scheme `name` runs its OS on a VMM ([`Scheme::VIRTUALIZED`]).
pub fn virtualized(name: &str) -> Result<bool> {
    struct Virtualized;
    impl Visitor for Virtualized {
        type Output = bool;
        fn visit<S: Scheme>(self) -> bool {
            S::VIRTUALIZED
        }
    }
    visit(name, Virtualized)
}

/// Whether `name` is a registered scheme.
pub fn check_name(name: &str) -> Result<()> {
    if SCHEMES.iter().any(|(n, _)| *n == name) {
        Ok(())
    } else {
        Err(unknown(name))
    }
}
