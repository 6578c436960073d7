//! DIPTA's set-associative placement, hardware table and way predictor.

use super::*;

fn cfg(ways: u32) -> DiptaConfig {
    DiptaConfig {
        ways,
        ..DiptaConfig::default()
    }
}

#[test]
fn pages_take_a_free_way_of_their_set_and_the_table_finds_them() {
    let bytes = 64 << 20; // 16384 frames: 4096 sets of 4
    let geo = Geometry::new(&cfg(4), bytes).unwrap();
    assert_eq!((geo.sets, geo.ways), (4096, 4));
    let mut buddy = BuddyAllocator::new(bytes >> 12);
    let mut store = PtStore::new();
    let mut frames = SetFrames {
        geo,
        conflicts: 0,
        last_refusal: None,
    };
    let mut tables: Vec<DiptaTable> = (1..=2)
        .map(|asid| DiptaTable {
            geo,
            asid,
            base: bytes,
        })
        .collect();
    // Four pages of one set (vpn = 7 mod 4096) fill its four ways; two address spaces both
    // have page 7, each its own.
    let pages = [(0, 7u64), (1, 7), (0, 4096 + 7), (1, 8192 + 7)];
    for &(t, vpn) in &pages {
        let pfn = frames
            .frame(&mut buddy, t as u16 + 1, Vpn(vpn), PageSize::Size4K)
            .unwrap();
        assert_eq!(pfn.0 / 4, 7, "set 7");
        let mut ctx = PtContext {
            store: &mut store,
            buddy: &mut buddy,
        };
        tables[t]
            .map(&mut ctx, Vpn(vpn), pfn, PageSize::Size4K)
            .unwrap();
    }
    for (w, &(t, vpn)) in pages.iter().enumerate() {
        let va = VirtAddr(vpn << 12);
        assert_eq!(tables[t].lookup(&store, va), Some(Pfn(7 * 4 + w as u64)));
        if !pages.contains(&(1 - t, vpn)) {
            assert_eq!(
                tables[1 - t].lookup(&store, va),
                None,
                "another address space"
            );
        }
    }
    // The set is full: the fifth page is refused, with the set named.
    assert!(frames
        .frame(&mut buddy, 1, Vpn(3 * 4096 + 7), PageSize::Size4K)
        .is_none());
    assert!(frames.refusal().unwrap().contains("set 7"));
    // Huge pages are refused (base pages only).
    assert!(frames
        .frame(&mut buddy, 1, Vpn(1 << 9), PageSize::Size2M)
        .is_none());
    // Corrupting a page's entry moves it to another way.
    assert!(tables[0].corrupt(&mut store, Vpn(7), PageSize::Size4K));
    assert_eq!(
        tables[0].lookup(&store, VirtAddr(7 << 12)),
        Some(Pfn(7 * 4 + 1))
    );
}

#[test]
fn the_config_is_checked_key_by_key() {
    let path = "schemes.dipta";
    assert!(DiptaConfig::default().validate(path).is_ok());
    let mut c = cfg(0);
    assert!(c
        .validate(path)
        .unwrap_err()
        .to_string()
        .contains("schemes.dipta.ways"));
    c.ways = 4;
    c.predictor_entries = 1000;
    let e = c.validate(path).unwrap_err().to_string();
    assert!(e.contains("schemes.dipta.predictor_entries"), "{e}");
}
