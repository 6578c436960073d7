//! Built-in presets: the system tables of the papers, as TOML. The files live in
//! `python/xlat/presets/` and are compiled into the engine so that the CLI, the
//! Python API and Rust tests all see the same text.

/// `(name, TOML text)` of every preset.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "baseline-radix",
        include_str!("../../../../python/xlat/presets/baseline-radix.toml"),
    ),
    (
        "perfect-tlb",
        include_str!("../../../../python/xlat/presets/perfect-tlb.toml"),
    ),
    (
        "mehpt-radix",
        include_str!("../../../../python/xlat/presets/mehpt-radix.toml"),
    ),
    (
        "ecpt",
        include_str!("../../../../python/xlat/presets/ecpt.toml"),
    ),
    (
        "mehpt",
        include_str!("../../../../python/xlat/presets/mehpt.toml"),
    ),
    (
        "utopia-ech",
        include_str!("../../../../python/xlat/presets/utopia-ech.toml"),
    ),
    (
        "pom-tlb",
        include_str!("../../../../python/xlat/presets/pom-tlb.toml"),
    ),
    (
        "rmm",
        include_str!("../../../../python/xlat/presets/rmm.toml"),
    ),
    (
        "utopia",
        include_str!("../../../../python/xlat/presets/utopia.toml"),
    ),
    (
        "champsim",
        include_str!("../../../../python/xlat/presets/champsim.toml"),
    ),
    (
        "gandhi-native",
        include_str!("../../../../python/xlat/presets/gandhi-native.toml"),
    ),
    (
        "virt-4k4k",
        include_str!("../../../../python/xlat/presets/virt-4k4k.toml"),
    ),
    (
        "virt-4k2m",
        include_str!("../../../../python/xlat/presets/virt-4k2m.toml"),
    ),
    (
        "virt-4k1g",
        include_str!("../../../../python/xlat/presets/virt-4k1g.toml"),
    ),
    (
        "virt-2m2m",
        include_str!("../../../../python/xlat/presets/virt-2m2m.toml"),
    ),
    (
        "direct-segment",
        include_str!("../../../../python/xlat/presets/direct-segment.toml"),
    ),
    (
        "vmm-direct",
        include_str!("../../../../python/xlat/presets/vmm-direct.toml"),
    ),
    (
        "guest-direct",
        include_str!("../../../../python/xlat/presets/guest-direct.toml"),
    ),
    (
        "dual-direct",
        include_str!("../../../../python/xlat/presets/dual-direct.toml"),
    ),
    (
        "shadow-4k",
        include_str!("../../../../python/xlat/presets/shadow-4k.toml"),
    ),
    (
        "shadow-2m",
        include_str!("../../../../python/xlat/presets/shadow-2m.toml"),
    ),
    (
        "mosaic",
        include_str!("../../../../python/xlat/presets/mosaic.toml"),
    ),
    (
        "mosaic-vanilla",
        include_str!("../../../../python/xlat/presets/mosaic-vanilla.toml"),
    ),
    (
        "mosaic-8",
        include_str!("../../../../python/xlat/presets/mosaic-8.toml"),
    ),
    (
        "mosaic-16",
        include_str!("../../../../python/xlat/presets/mosaic-16.toml"),
    ),
    (
        "mosaic-32",
        include_str!("../../../../python/xlat/presets/mosaic-32.toml"),
    ),
    (
        "mosaic-64",
        include_str!("../../../../python/xlat/presets/mosaic-64.toml"),
    ),
];

pub fn get(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}
