//! The machine's topology (`[topology]`, docs/config.md): a flat machine times as before the
//! topology existed, and on the eight-socket machine a conventional accelerator's page walk
//! pays the way to a remote socket's memory and back, as its data does.

#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;

use sim::{cfg, flatten, run, u};

/// Every statistic but the topology's own subtree.
fn without_topology(v: &serde_json::Value) -> Vec<String> {
    flatten(v)
        .into_iter()
        .filter(|l| !l.starts_with("topology."))
        .collect()
}

#[test]
fn a_flat_topology_changes_no_statistic() {
    let refs = 30_000;
    let plain = run(cfg("baseline-radix", "gups", refs, &[]));
    assert!(plain.get("topology").is_none(), "no topology subtree");
    // One socket said out loud: the resolved config and every number are the same.
    let one = cfg(
        "baseline-radix",
        "gups",
        refs,
        &["topology.sockets=1".into()],
    );
    assert_eq!(
        one.to_toml(),
        cfg("baseline-radix", "gups", refs, &[]).to_toml()
    );
    assert_eq!(flatten(&run(one)), flatten(&plain));
    // Two sockets whose networks take no time: reads are counted local or remote, nothing
    // else moves.
    let two = run(cfg(
        "baseline-radix",
        "gups",
        refs,
        &["topology.sockets=2".into()],
    ));
    assert_eq!(without_topology(&two), flatten(&plain));
    assert!(u(&two, "topology.remote") > 0 && u(&two, "topology.local") > 0);
    assert_eq!(u(&two, "topology.network_cycles"), 0);
}

#[test]
fn the_eight_socket_preset_spreads_memory_over_its_channels() {
    // 4 GiB on 32 channels: dram.rows follows physical memory, so each channel holds a
    // contiguous 128 MiB (a memory node) and every channel is used.
    let c = cfg("numa-8socket", "gups", 1000, &[]);
    assert_eq!(c.dram.channels, 32);
    assert_eq!(c.dram.capacity_bytes(), Some(c.os.physmem.bytes));
}

#[test]
fn a_conventional_walk_on_eight_sockets_pays_remote_latency() {
    let refs = 40_000;
    let flat = ["topology.noc_ns=0.0".into(), "topology.link_ns=0.0".into()];
    let near = run(cfg("accel-conventional", "gups", refs, &flat));
    let far = run(cfg("accel-conventional", "gups", refs, &[]));
    // Perfect MMU caches: one reference per walk, the leaf PTE, but for the walks that
    // first touch a 2 MiB region (the caches start cold).
    let walks = u(&far, "walk.walks");
    assert!(
        walks > refs / 2,
        "gups misses the 128-entry TLB: {walks} walks"
    );
    let refs_per_walk = u(&far, "walk.refs.total") as f64 / walks as f64;
    assert!(refs_per_walk < 1.1, "{refs_per_walk} references per walk");
    // The accelerator sits on socket 0; 28 of the 32 channels are on other sockets, and the
    // leaf PTEs and data are spread over all of them.
    let (local, remote) = (u(&far, "topology.local"), u(&far, "topology.remote"));
    assert!(remote > 5 * local, "{remote} remote vs {local} local reads");
    // 2.6 GHz: the network is 26 cycles, a link hop 52; a remote socket is 1-3 hops away
    // (hypercube), so a remote round trip is at least 2 x (26 + 52 + 26) = 208 cycles.
    let walk_latency =
        |v: &serde_json::Value| u(v, "walk.cycles") as f64 / u(v, "walk.walks") as f64;
    let (w_near, w_far) = (walk_latency(&near), walk_latency(&far));
    let dram_walk_refs = u(&far, "walk.refs.by_level.dram") as f64 / walks as f64;
    let min_extra = dram_walk_refs * (remote as f64 / (local + remote) as f64) * 208.0;
    assert!(
        w_far - w_near >= 0.9 * min_extra,
        "walks take {w_far:.0} cycles with the network, {w_near:.0} without; at least \
         {min_extra:.0} more expected"
    );
}
