//! `--verify` catches a wrong translation whatever structure produced it: for every scheme with
//! a translation structure in simulated memory, the entries that map one page (a radix PTE, a
//! hashed-table PTE, an RMM range's offset; a POM-TLB fills from the PTE; a Utopia TAR tag,
//! moved to the next way of its set) are corrupted to name another frame, the page's cached
//! translations are shot down, and the next access must fail the check instead of running on
//! with a wrong frame.

use xlat::addr::{PageSize, Pfn, VirtAddr, Vpn};
use xlat::os::MapKind;
use xlat::{SimConfig, Simulation};

/// Physical-address bits of an x86-64-style entry.
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Points every present entry that maps `vpn` to `pfn` (by frame, or by a range's offset from
/// the page number) at a frame two away; returns how many it changed.
fn corrupt_mapping(sim: &mut Simulation, vpn: Vpn, pfn: Pfn) -> usize {
    let offset = pfn.0.wrapping_sub(vpn.0);
    let mut changed = 0;
    for w in sim.translation_memory().words_mut() {
        let present = *w & 0xfff != 0;
        let frame = (*w & ADDR_MASK) >> 12;
        let range_offset = (((*w & !0xfff) as i64) >> 12) as u64;
        if present && (frame == pfn.0 || range_offset == offset) {
            *w ^= 2 << 12;
            changed += 1;
        }
    }
    changed
}

/// Moves the Utopia TAR entry of `vpn` in the 4 KiB RestSeg to the neighbouring way of its
/// set (the two 4-byte entries of its word swap), so the RestSeg walk finds the page in the
/// wrong slot; returns how many entries it moved.
fn corrupt_tar(sim: &mut Simulation, cfg: &SimConfig, vpn: Vpn) -> usize {
    let layout =
        xlat::schemes::utopia::restseg::Layout::new(&cfg.schemes.utopia, cfg.os.physmem.bytes, 48)
            .unwrap();
    let seg = layout
        .segs
        .iter()
        .find(|s| s.page == PageSize::Size4K)
        .unwrap();
    assert_eq!(seg.entry_bytes, 4);
    let (_, tag) = seg.index(vpn);
    let entry = seg.tar_value(tag);
    let mut changed = 0;
    for w in sim.translation_memory().words_mut() {
        let (lo, hi) = (*w & 0xffff_ffff, *w >> 32);
        if lo == entry || hi == entry {
            *w = (lo << 32) | hi;
            changed += 1;
        }
    }
    changed
}

#[test]
fn verify_reports_a_corrupted_entry_in_every_scheme() {
    for preset in xlat::config::presets::names() {
        if preset == "perfect-tlb" {
            continue; // translates from the OS's own mapping: no structure to corrupt
        }
        let cfg = SimConfig::load(
            preset,
            &[
                "os.physmem.bytes=2147483648".into(),
                "os.physmem.fragmentation=0.0".into(),
                "sim.verify=true".into(),
                "workload.table_bytes=67108864".into(),
            ],
        )
        .unwrap();
        let mut sim = Simulation::new(cfg.clone()).unwrap();
        let pid = 0;
        let va = sim
            .address_spaces()
            .mmap(pid, 1 << 20, MapKind::Anon)
            .unwrap();
        let rec = xlat::trace::Record {
            vaddr: VirtAddr(va.0 + 0x3000),
            pid,
            size: 8,
            ..Default::default()
        };
        sim.step(&rec).unwrap();
        let (pfn, size) = sim
            .truth(pid, rec.vaddr)
            .expect("mapped by the first access");
        assert_eq!(size, PageSize::Size4K, "{preset}");
        let vpn = rec.vaddr.vpn();
        let changed = if cfg.scheme == "utopia" {
            corrupt_tar(&mut sim, &cfg, vpn)
        } else {
            corrupt_mapping(&mut sim, vpn, pfn)
        };
        assert!(changed > 0, "{preset}: nothing maps the page");
        // Untouched, the cached translation is still right.
        sim.step(&rec).unwrap();
        sim.shootdown(pid, &[(vpn, PageSize::Size4K)]);
        let e = sim.step(&rec).unwrap_err().to_string();
        assert!(
            e.contains("translation check failed") && e.contains(&format!("{:#x}", rec.vaddr.0)),
            "{preset}: {e}"
        );
    }
}
