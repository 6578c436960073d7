//! Where a process's regions go in its virtual address space (`os.layout`, `os.aslr`).
//!
//! Placement decides which sets of a set-associative translation structure a program's pages
//! fall in (Utopia's RestSegs index their sets by `vpn % sets`), so it is part of the model, not
//! a detail: arrays placed back to back from one fixed base tile the sets evenly, while the
//! regions of a real process (a binary and its brk heap in one part of the address space, shared
//! libraries and `mmap`ed data below a randomised `mmap_base`, stacks at the top) overlap in
//! them and collide.
//!
//! * `linux` (default): the x86-64 Linux layout (facts from `arch/x86/mm/mmap.c`,
//!   `mm/util.c`, `fs/binfmt_elf.c`): the PIE binary at `ELF_ET_DYN_BASE` (0x5555_5555_4000),
//!   its brk heap right after its data and bss, the main thread's stack at the top of the
//!   47-bit user space, `mmap_base` a stack gap below it, and every `mmap` placed top-down: at
//!   the highest free gap below `mmap_base` that fits, with no gap between mappings, anonymous
//!   mappings of 2 MiB or more aligned to 2 MiB (1 GiB for hugetlbfs). With `os.aslr` (default)
//!   the binary's base, the stack's top, `mmap_base` and the brk start are randomised as
//!   Linux's `randomize_va_space = 2` does, from the run's seed and the pid: the same seed gives
//!   the same layout.
//! * `packed`: every region upward from 16 TiB with 2 MiB gaps, no binary, heap or stack
//!   (xlat's placement before layouts were modelled, kept to compare against).

use super::vma::{MapKind, Region, Vma};
use crate::addr::PageSize;
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `os.layout`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LayoutKind {
    #[default]
    Linux,
    Packed,
}

/// x86-64's 47-bit user space ends one page below 128 TiB (`TASK_SIZE_MAX`,
/// `DEFAULT_MAP_WINDOW`). A 5-level table does not move it: Linux maps above it only on
/// request.
pub const TASK_SIZE: u64 = 0x7fff_ffff_f000;
/// `ELF_ET_DYN_BASE`: two thirds of the user space, where a PIE binary loads.
pub const ELF_ET_DYN_BASE: u64 = 0x5555_5555_4000;
/// `mmap_min_addr`: nothing maps below 64 KiB.
const MMAP_MIN_ADDR: u64 = 0x1_0000;
/// `RLIMIT_STACK`'s usual 8 MiB: the main stack's limit and glibc's default thread stack size.
pub const STACK_LIMIT: u64 = 8 << 20;
/// `stack_guard_gap`: 256 pages kept free below a stack.
const STACK_GUARD_GAP: u64 = 256 << 12;
/// The least gap between the stack's top and `mmap_base` (`SIZE_128M` in `mmap_base()`).
const MIN_GAP: u64 = 128 << 20;
/// Random pages below the stack's top (`STACK_RND_MASK`, 22 bits on x86-64: up to 16 GiB).
const STACK_RND_BITS: u32 = 22;
/// Random pages below `mmap_base` and above `ELF_ET_DYN_BASE` (`mmap_rnd_bits`' default, 28:
/// up to 1 TiB).
const MMAP_RND_BITS: u32 = 28;
/// The brk heap starts up to 32 MiB after the bss (`arch_randomize_brk`).
const BRK_RND: u64 = 32 << 20;
/// The main thread's stack as `exec` leaves it, before it grows: arguments, environment,
/// auxiliary vector and the first frames (`[stack]` is 132 KiB in a fresh process).
const INITIAL_STACK: u64 = 132 << 10;
/// The binary: ELF headers, text and read-only data, then data and bss (a small benchmark).
const BINARY_TEXT: u64 = 512 << 10;
const BINARY_DATA: u64 = 128 << 10;
/// The shared libraries the dynamic loader maps for a C++ program, in its order (the loader
/// itself first, by the kernel), each its whole image (x86-64 Ubuntu 22.04's sizes, rounded).
const LIBRARIES: &[u64] = &[
    236 << 10,  // ld-linux-x86-64.so.2
    2456 << 10, // libstdc++.so.6
    936 << 10,  // libm.so.6
    112 << 10,  // libgcc_s.so.1
    2220 << 10, // libc.so.6
];

/// Where the fixed parts of a Linux process go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxLayout {
    /// Where the binary is loaded.
    pub binary: u64,
    /// The brk heap's first byte.
    pub brk_start: u64,
    /// The top of the main thread's stack.
    pub stack_top: u64,
    /// The top of the `mmap` area: mappings go below it, top-down.
    pub mmap_base: u64,
}

impl LinuxLayout {
    /// The layout of process `pid` of a run with `seed`; randomised with `aslr`, otherwise
    /// Linux's fixed addresses (as under `setarch -R`).
    pub fn new(aslr: bool, seed: u64, pid: u16) -> LinuxLayout {
        let mut rng = Rng::new(
            seed ^ (pid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            rng::stream::LAYOUT,
        );
        let mut pages = |bits: u32| match aslr {
            true => (rng.next_u64() & ((1 << bits) - 1)) << 12,
            false => 0,
        };
        // In `load_elf_binary`'s order: the binary's base, the stack's top, `mmap_base`, brk.
        let binary = ELF_ET_DYN_BASE + pages(MMAP_RND_BITS);
        let stack_top = TASK_SIZE - pages(STACK_RND_BITS);
        let stack_rnd_max = if aslr {
            ((1 << STACK_RND_BITS) - 1) << 12
        } else {
            0
        };
        let gap = (STACK_LIMIT + STACK_GUARD_GAP + stack_rnd_max).clamp(MIN_GAP, TASK_SIZE / 6 * 5);
        let mmap_base = TASK_SIZE - gap - pages(MMAP_RND_BITS);
        let bss_end = binary + BINARY_TEXT + BINARY_DATA;
        let brk_start = bss_end + pages(BRK_RND.trailing_zeros() - 12);
        LinuxLayout {
            binary,
            brk_start,
            stack_top,
            mmap_base,
        }
    }

    /// The regions `exec` and the dynamic loader map before `main`: the binary, the main
    /// stack; the libraries follow through the top-down allocator (`LIBRARIES`).
    pub fn fixed_regions(&self) -> [(u64, u64, Region); 3] {
        [
            (self.binary, BINARY_TEXT, Region::Binary),
            (self.binary + BINARY_TEXT, BINARY_DATA, Region::Binary),
            (self.stack_top - INITIAL_STACK, INITIAL_STACK, Region::Stack),
        ]
    }

    pub fn libraries() -> &'static [u64] {
        LIBRARIES
    }
}

/// The alignment Linux gives an anonymous mapping of `len` bytes of `kind`: 1 GiB for
/// hugetlbfs, 2 MiB for one THP can back (2 MiB or more, `thp_get_unmapped_area`), else a page.
pub fn alignment(len: u64, kind: MapKind) -> u64 {
    match kind {
        MapKind::Huge1G => PageSize::Size1G.bytes(),
        MapKind::Anon | MapKind::AnonMixed { .. } if len >= PageSize::Size2M.bytes() => {
            PageSize::Size2M.bytes()
        }
        MapKind::Anon | MapKind::AnonMixed { .. } => 4096,
    }
}

/// Linux's top-down search (`vm_unmapped_area` with `VM_UNMAPPED_AREA_TOPDOWN`): the highest
/// `align`-aligned start of `len` bytes below `high` and at or above `low` that overlaps no VMA
/// and no `reserved` range. Mappings go right below the ones above them: no gap but alignment.
pub fn top_down(
    vmas: &BTreeMap<u64, Vma>,
    reserved: Option<(u64, u64)>,
    len: u64,
    align: u64,
    low: u64,
    high: u64,
) -> Option<u64> {
    let low = low.max(MMAP_MIN_ADDR);
    let mut top = high;
    loop {
        let start = top.checked_sub(len)? / align * align;
        if start < low {
            return None;
        }
        let end = start + len;
        // The VMA starting highest below `end`: if it reaches past `start` it is in the way,
        // and so is anything between; look again below it.
        let vma = vmas
            .range(..end >> 12)
            .next_back()
            .map(|(_, v)| (v.start.addr().0, v.end.addr().0));
        let blocker = [vma, reserved]
            .into_iter()
            .flatten()
            .filter(|&(s, e)| s < end && start < e)
            .map(|(s, _)| s)
            .min();
        match blocker {
            Some(s) => top = s,
            None => return Some(start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_aslr_linux_uses_its_fixed_addresses() {
        let l = LinuxLayout::new(false, 1, 0);
        assert_eq!(l.binary, 0x5555_5555_4000);
        assert_eq!(l.stack_top, 0x7fff_ffff_f000);
        // The 128 MiB least gap under the stack: ld.so lands just below 0x7ffff7fff000.
        assert_eq!(l.mmap_base, 0x7fff_f7ff_f000);
        assert_eq!(l.brk_start, l.binary + BINARY_TEXT + BINARY_DATA);
        assert_eq!(
            l,
            LinuxLayout::new(false, 99, 3),
            "no randomisation, no seed"
        );
    }

    #[test]
    fn aslr_randomises_within_linux_ranges_by_seed_and_pid() {
        let a = LinuxLayout::new(true, 7, 0);
        assert_eq!(a, LinuxLayout::new(true, 7, 0), "same seed, same layout");
        assert_ne!(a, LinuxLayout::new(true, 8, 0));
        assert_ne!(a, LinuxLayout::new(true, 7, 1));
        for seed in 0..200 {
            let l = LinuxLayout::new(true, seed, 0);
            assert!(l.binary >= ELF_ET_DYN_BASE && l.binary < ELF_ET_DYN_BASE + (1 << 40));
            assert!(l.stack_top <= TASK_SIZE && l.stack_top > TASK_SIZE - (16 << 30));
            let gap = STACK_LIMIT + STACK_GUARD_GAP + (((1 << 22) - 1) << 12);
            assert!(l.mmap_base <= TASK_SIZE - gap && l.mmap_base > TASK_SIZE - gap - (1 << 40));
            assert!(l.mmap_base < l.stack_top - INITIAL_STACK);
            let bss_end = l.binary + BINARY_TEXT + BINARY_DATA;
            assert!(l.brk_start >= bss_end && l.brk_start < bss_end + BRK_RND);
            assert!([l.binary, l.stack_top, l.mmap_base, l.brk_start]
                .iter()
                .all(|a| a % 4096 == 0));
        }
    }
}
