//! The machine's topology: sockets, the DRAM channels each owns, the on-chip network of a
//! socket and the links between sockets (`[topology]`, docs/config.md).
//!
//! A DRAM channel is a memory node: physical address `a` lives on channel
//! `dram.decode(a).channel` (the DRAM's own address mapping decides, so the topology and the
//! DRAM timing model never disagree), and channel `c` belongs to socket
//! `c / (dram.channels / sockets)`. A request from a core on socket `s` to a line on socket `t`
//! crosses `s`'s on-chip network, the links from `s` to `t` and `t`'s on-chip network, and the
//! reply comes back the same way: [`Topology::one_way`] each way, added around the DRAM access
//! (never inside the DRAM model). One socket with a zero-latency network (the default) adds
//! nothing: a system without a `[topology]` section times exactly as it did before it existed.
//!
//! SPARTA (docs/schemes/sparta.md) also sends requests from a memory controller to its own
//! channel ([`Topology::from_channel`]): those cross no network.

use crate::config::nonzero;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// How the sockets' links connect them (`topology.links`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Links {
    /// Every pair of sockets has a direct link: any remote socket is one hop away.
    #[default]
    Full,
    /// Socket `s` links to `s ± 1` (mod sockets): `min(d, sockets - d)` hops for `d = |s - t|`.
    Ring,
    /// A hypercube (sockets a power of two): sockets whose numbers differ in one bit are linked,
    /// `popcount(s ^ t)` hops (an 8-socket machine with three links per socket).
    Hypercube,
}

/// `[topology]`: the sockets and the latencies of the paths between them. The default is one
/// socket with nothing to cross (every preset but the multi-socket ones).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyConfig {
    /// Sockets. `dram.channels` must be a multiple: each socket owns as many consecutive
    /// channels (`dram.channels / sockets` memory controllers).
    #[serde(default = "one")]
    pub sockets: u32,
    /// Nanoseconds of one crossing of a socket's on-chip network: from a core to a memory
    /// controller of its socket, or to the socket's inter-socket link (and from a link to a
    /// controller on the far side).
    #[serde(default)]
    pub noc_ns: f64,
    /// Nanoseconds of one hop over an inter-socket link.
    #[serde(default)]
    pub link_ns: f64,
    /// How the links connect the sockets: `full`, `ring` or `hypercube`.
    #[serde(default)]
    pub links: Links,
    /// The socket of each core, by core number (`[0, 0, 1, 1]`: cores 0-1 on socket 0, 2-3
    /// on socket 1). Empty (the default): core `i` on socket `i % sockets`. Cores beyond the
    /// list's end wrap around it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub core_sockets: Vec<u32>,
}

fn one() -> u32 {
    1
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig {
            sockets: 1,
            noc_ns: 0.0,
            link_ns: 0.0,
            links: Links::Full,
            core_sockets: Vec::new(),
        }
    }
}

/// Most sockets a topology may have.
pub const MAX_SOCKETS: u32 = 64;

impl TopologyConfig {
    /// Whether the topology adds nothing to any access (one socket, zero-latency network).
    pub fn is_flat(&self) -> bool {
        self.sockets == 1 && self.noc_ns == 0.0
    }

    /// Check the section against the DRAM's channel count; errors name `path.<key>`.
    pub fn validate(&self, path: &str, dram_channels: u32) -> Result<()> {
        nonzero(format!("{path}.sockets"), self.sockets.into())?;
        if self.sockets > MAX_SOCKETS {
            return Err(Error::config(
                format!("{path}.sockets"),
                format!("must be at most {MAX_SOCKETS}, got {}", self.sockets),
            ));
        }
        if !dram_channels.is_multiple_of(self.sockets) {
            return Err(Error::config(
                format!("{path}.sockets"),
                format!(
                    "{} sockets cannot share dram.channels = {dram_channels} evenly: each \
                     socket owns dram.channels / sockets memory channels",
                    self.sockets
                ),
            ));
        }
        for (key, v) in [("noc_ns", self.noc_ns), ("link_ns", self.link_ns)] {
            if !(0.0..=1e6).contains(&v) {
                return Err(Error::config(
                    format!("{path}.{key}"),
                    format!("must be a non-negative number of nanoseconds (at most 1e6), got {v}"),
                ));
            }
        }
        if self.links == Links::Hypercube && !self.sockets.is_power_of_two() {
            return Err(Error::config(
                format!("{path}.links"),
                format!(
                    "\"hypercube\" needs a power-of-two number of sockets, got {}",
                    self.sockets
                ),
            ));
        }
        if let Some((i, s)) = self
            .core_sockets
            .iter()
            .enumerate()
            .find(|(_, &s)| s >= self.sockets)
        {
            return Err(Error::config(
                format!("{path}.core_sockets[{i}]"),
                format!("socket {s} does not exist ({} sockets)", self.sockets),
            ));
        }
        Ok(())
    }

    /// Inter-socket link hops from socket `s` to socket `t`.
    pub fn hops(&self, s: u32, t: u32) -> u32 {
        if s == t {
            return 0;
        }
        match self.links {
            Links::Full => 1,
            Links::Ring => {
                let d = s.abs_diff(t);
                d.min(self.sockets - d)
            }
            Links::Hypercube => (s ^ t).count_ones(),
        }
    }

    /// The socket core `core` sits on.
    pub fn socket_of_core(&self, core: usize) -> u32 {
        if self.core_sockets.is_empty() {
            core as u32 % self.sockets
        } else {
            self.core_sockets[core % self.core_sockets.len()]
        }
    }
}

/// Counters of the network crossings of DRAM accesses (`topology` in the stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TopologyStats {
    /// DRAM accesses (reads) whose channel is on the requester's socket...
    pub local: u64,
    /// ...and on another socket.
    pub remote: u64,
    /// Cycles those accesses spent crossing networks and links, both ways.
    pub network_cycles: u64,
    /// Reads a memory controller sent to its own channel (SPARTA's memory-side walks and data
    /// reads): they cross nothing.
    pub controller_local: u64,
}

/// The topology of a system, built from `[topology]` and the DRAM's channel count: one-way
/// latencies in core cycles between each socket and each channel.
#[derive(Clone, Debug)]
pub struct Topology {
    cfg: TopologyConfig,
    channels_per_socket: u32,
    /// `one_way[s * sockets + t]`: cycles from a core on socket `s` to a controller on `t`.
    one_way: Vec<u64>,
    /// Cycles between two controllers of one socket (its on-chip network).
    noc: u64,
    stats: TopologyStats,
}

impl Topology {
    pub fn new(cfg: &TopologyConfig, dram_channels: u32, core_ghz: f64) -> Topology {
        let cycles = |ns: f64| (ns * core_ghz).round() as u64;
        let (noc, link) = (cycles(cfg.noc_ns), cycles(cfg.link_ns));
        let n = cfg.sockets;
        let one_way = (0..n)
            .flat_map(|s| (0..n).map(move |t| (s, t)))
            .map(|(s, t)| match cfg.hops(s, t) {
                0 => noc,
                hops => 2 * noc + u64::from(hops) * link,
            })
            .collect();
        Topology {
            cfg: cfg.clone(),
            channels_per_socket: (dram_channels / cfg.sockets.max(1)).max(1),
            one_way,
            noc,
            stats: TopologyStats::default(),
        }
    }

    pub fn config(&self) -> &TopologyConfig {
        &self.cfg
    }

    pub fn sockets(&self) -> u32 {
        self.cfg.sockets
    }

    /// The socket owning DRAM channel `channel`.
    #[inline]
    pub fn socket_of_channel(&self, channel: u64) -> u32 {
        (channel / u64::from(self.channels_per_socket)) as u32
    }

    /// The socket core `core` sits on.
    #[inline]
    pub fn socket_of_core(&self, core: usize) -> u32 {
        self.cfg.socket_of_core(core)
    }

    /// Cycles one way from a core on socket `from` to a memory controller on socket `to`.
    #[inline]
    pub fn socket_one_way(&self, from: u32, to: u32) -> u64 {
        self.one_way[(from * self.cfg.sockets + to) as usize]
    }

    /// Cycles one way from core `core` to the controller of DRAM channel `channel`, counted
    /// (both ways) in the stats.
    #[inline]
    pub fn one_way(&mut self, core: usize, channel: u64) -> u64 {
        let (s, t) = (self.socket_of_core(core), self.socket_of_channel(channel));
        self.count(s == t, self.socket_one_way(s, t))
    }

    /// Count a read that crossed to its own socket's controller (`local`) or another's, with
    /// `trip` cycles each way; returns `trip`.
    #[inline]
    fn count(&mut self, local: bool, trip: u64) -> u64 {
        if local {
            self.stats.local += 1;
        } else {
            self.stats.remote += 1;
        }
        self.stats.network_cycles += 2 * trip;
        trip
    }

    /// Cycles one way from the controller of channel `from` to that of channel `to`: nothing
    /// on the same channel, the socket's network within a socket, the links between sockets.
    #[inline]
    pub fn from_channel(&mut self, from: u64, to: u64) -> u64 {
        if from == to {
            self.stats.controller_local += 1;
            return 0;
        }
        let (s, t) = (self.socket_of_channel(from), self.socket_of_channel(to));
        let trip = if s == t {
            self.noc
        } else {
            self.socket_one_way(s, t)
        };
        self.count(s == t, trip)
    }

    pub fn stats(&self) -> TopologyStats {
        self.stats
    }

    pub fn reset_stats(&mut self) {
        self.stats = TopologyStats::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(sockets: u32, links: Links) -> TopologyConfig {
        TopologyConfig {
            sockets,
            noc_ns: 10.0,
            link_ns: 40.0,
            links,
            core_sockets: Vec::new(),
        }
    }

    #[test]
    fn hops_follow_the_link_shape() {
        let full = cfg(8, Links::Full);
        let ring = cfg(8, Links::Ring);
        let cube = cfg(8, Links::Hypercube);
        assert_eq!((full.hops(0, 0), full.hops(0, 7)), (0, 1));
        assert_eq!(
            (0..8).map(|t| ring.hops(0, t)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 3, 2, 1]
        );
        assert_eq!(
            (0..8).map(|t| cube.hops(0, t)).collect::<Vec<_>>(),
            [0, 1, 1, 2, 1, 2, 2, 3]
        );
        // Symmetric.
        for c in [&full, &ring, &cube] {
            for s in 0..8 {
                for t in 0..8 {
                    assert_eq!(c.hops(s, t), c.hops(t, s));
                }
            }
        }
    }

    #[test]
    fn one_way_latencies_are_exact() {
        // 2 GHz: 10 ns = 20 cycles of network, 40 ns = 80 cycles a hop.
        let mut t = Topology::new(&cfg(8, Links::Hypercube), 32, 2.0);
        // Channels 0-3 on socket 0, 28-31 on socket 7.
        assert_eq!(t.socket_of_channel(3), 0);
        assert_eq!(t.socket_of_channel(28), 7);
        // Core 0 on socket 0: local channel, one network crossing.
        assert_eq!(t.one_way(0, 1), 20);
        // Socket 7 is three hops away: network, three links, network.
        assert_eq!(t.one_way(0, 30), 20 + 3 * 80 + 20);
        // Core 5 sits on socket 5 (spread): channel 20 is on socket 5.
        assert_eq!(t.one_way(5, 20), 20);
        assert_eq!(
            t.stats(),
            TopologyStats {
                local: 2,
                remote: 1,
                network_cycles: 2 * (20 + 280 + 20),
                controller_local: 0
            }
        );
        // A controller reading its own channel crosses nothing.
        assert_eq!(t.from_channel(9, 9), 0);
        assert_eq!(t.from_channel(9, 10), 20);
        assert_eq!(t.stats().controller_local, 1);
    }

    #[test]
    fn flat_default_adds_nothing() {
        let c = TopologyConfig::default();
        assert!(c.is_flat());
        let mut t = Topology::new(&c, 2, 2.6);
        assert_eq!(t.one_way(0, 1), 0);
        assert_eq!(t.one_way(3, 0), 0);
    }

    #[test]
    fn placement_and_validation() {
        let mut c = cfg(2, Links::Full);
        c.core_sockets = vec![1, 1, 0];
        assert_eq!(
            (0..4).map(|i| c.socket_of_core(i)).collect::<Vec<_>>(),
            [1, 1, 0, 1]
        );
        assert!(c.validate("topology", 8).is_ok());
        let err = |c: &TopologyConfig, ch| c.validate("topology", ch).unwrap_err().to_string();
        assert!(err(&c, 3).contains("topology.sockets"));
        c.core_sockets = vec![0, 2];
        assert!(err(&c, 8).contains("topology.core_sockets[1]"));
        let mut c = cfg(6, Links::Hypercube);
        assert!(err(&c, 12).contains("topology.links"));
        c.links = Links::Ring;
        c.noc_ns = -1.0;
        assert!(err(&c, 12).contains("topology.noc_ns"));
    }
}
