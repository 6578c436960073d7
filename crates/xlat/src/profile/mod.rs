//! Profiles: counts taken from the reference stream of a run beside the simulated system,
//! for studies that sweep a structure's geometry over many values at once.
//!
//! `[profile.tlb]` counts the misses of many data-TLB geometries (entries, sets, ways) for
//! several page groupings (arity 1: 4 KiB pages; arity k: Mosaic's groups of k pages, tagged
//! by VPN / k) in one pass, exactly as separate LRU TLBs of each geometry fed the same
//! references would ([`lru::LruGeometries`]). docs/profiles.md describes what is counted.

pub mod lru;

use crate::config::HostUses;
use crate::error::{Error, Result};
use lru::{Geometry, LruGeometries};
use serde::{Deserialize, Serialize};

/// `[profile]`: profiles taken during the run (all off by default).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    #[serde(default, skip_serializing_if = "TlbProfileConfig::is_off")]
    pub tlb: TlbProfileConfig,
}

/// Most entries a profiled TLB geometry may have: its slots take host memory (about 28
/// bytes each, per set count and arity), and a million is far beyond any TLB.
pub const MAX_PROFILE_ENTRIES: u32 = 1 << 20;

/// Largest arity: a Mosaic entry holds `arity` compressed frame numbers; the paper goes to
/// 64, and 4096 pages (16 MiB) per tag is well past any design.
pub const MAX_ARITY: u32 = 4096;

/// `[profile.tlb]`: the data-TLB geometries and arities whose misses one pass counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbProfileConfig {
    /// Entry counts of the TLBs to count (empty: the profile is off).
    #[serde(default)]
    pub entries: Vec<u32>,
    /// Set counts (powers of two); each entry count is counted at every one of them that
    /// divides it, with `ways = entries / sets`. Empty: every power of two from 1 (fully
    /// associative) to the entry count (direct-mapped).
    #[serde(default)]
    pub sets: Vec<u32>,
    /// Way counts to keep (empty: all): a geometry is counted only if its `ways` is listed,
    /// so that a sweep of sizes at one associativity (SPARTA's Fig 4: 4 ways, 4 to 2048
    /// entries) counts those geometries alone, not every set count dividing each size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ways: Vec<u32>,
    /// Pages per TLB tag: 1 is a plain 4 KiB-page TLB; `k > 1` tags by VPN / k, as a Mosaic
    /// TLB of arity k, whose entry misses on a page's first touch (see docs/profiles.md).
    #[serde(default = "vanilla")]
    pub arity: Vec<u32>,
}

fn vanilla() -> Vec<u32> {
    vec![1]
}

impl TlbProfileConfig {
    pub fn is_off(&self) -> bool {
        self.entries.is_empty()
    }

    /// The geometries counted, in order of entries, then sets (as given).
    pub fn geometries(&self) -> Vec<(u32, Geometry)> {
        let mut out = Vec::new();
        for &entries in &self.entries {
            let all: Vec<u32>;
            let sets = if self.sets.is_empty() {
                all = (0..=entries.trailing_zeros())
                    .map(|b| 1 << b)
                    .filter(|&s| s <= entries)
                    .collect();
                &all
            } else {
                &self.sets
            };
            for &s in sets {
                let kept = |w: u32| self.ways.is_empty() || self.ways.contains(&w);
                if s <= entries && entries.is_multiple_of(s) && kept(entries / s) {
                    out.push((
                        entries,
                        Geometry {
                            sets: s,
                            ways: entries / s,
                        },
                    ));
                }
            }
        }
        out
    }

    /// Check the lists; errors name the key (`path` is `profile.tlb`).
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.is_off() {
            for (key, given) in [
                ("sets", !self.sets.is_empty()),
                ("ways", !self.ways.is_empty()),
            ] {
                if given {
                    return Err(Error::config(
                        format!("{path}.{key}"),
                        format!("{key} are counted for the entry counts of {path}.entries, which is empty: give it, e.g. [1024]"),
                    ));
                }
            }
            return Ok(());
        }
        for &e in &self.entries {
            if !(1..=MAX_PROFILE_ENTRIES).contains(&e) {
                return Err(Error::config(
                    format!("{path}.entries"),
                    format!("each must be 1 to {MAX_PROFILE_ENTRIES}, got {e}"),
                ));
            }
        }
        for &s in &self.sets {
            crate::config::pow2(format!("{path}.sets"), "each set count", s.into())?;
        }
        if self.ways.contains(&0) {
            return Err(Error::config(
                format!("{path}.ways"),
                "each way count must be at least 1",
            ));
        }
        if self.arity.is_empty() {
            return Err(Error::config(
                format!("{path}.arity"),
                "must name at least one arity (1: 4 KiB-page TLB)",
            ));
        }
        for &k in &self.arity {
            if !(1..=MAX_ARITY).contains(&k) {
                return Err(Error::config(
                    format!("{path}.arity"),
                    format!("each must be 1 to {MAX_ARITY} pages per tag, got {k}"),
                ));
            }
        }
        let geometries = self.geometries();
        for &e in &self.entries {
            if !geometries.iter().any(|&(entries, _)| entries == e) {
                let (key, what) = if self.ways.is_empty() {
                    ("sets", String::new())
                } else {
                    (
                        "ways",
                        format!(" of a count in {path}.ways = {:?}", self.ways),
                    )
                };
                return Err(Error::config(
                    format!("{path}.{key}"),
                    format!(
                        "no set count in {:?} divides {e} entries (of {path}.entries) into \
                         whole ways{what}",
                        self.sets
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Host memory of the counters' slots (the per-tag tables grow with the pages touched).
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        let slots: u64 = self
            .geometries()
            .iter()
            .map(|(_, g)| u64::from(g.sets) * u64::from(g.ways))
            .sum();
        uses.once(
            format!("{path}.entries"),
            slots * self.arity.len() as u64,
            "profiled TLB slots",
            28,
        );
    }
}

/// The TLB profile of a run: one [`LruGeometries`] per arity, fed every data reference's
/// 4 KiB page (with its process) as it is translated.
#[derive(Clone, Debug)]
pub struct TlbProfile {
    /// The entry count of each geometry (in the counters' order).
    entries: Vec<u32>,
    arities: Vec<(u32, LruGeometries)>,
    /// The page referenced last, as `pid << 48 | vpn` (`u64::MAX`: none).
    last_page: u64,
    /// Pages shot down (unmapped, moved) since the counts were reset.
    invalidated: u64,
}

impl TlbProfile {
    /// The profile `cfg` asks for, or `None` if it asks for none.
    pub fn new(cfg: &TlbProfileConfig) -> Option<TlbProfile> {
        if cfg.is_off() {
            return None;
        }
        let geometries = cfg.geometries();
        let only: Vec<Geometry> = geometries.iter().map(|&(_, g)| g).collect();
        Some(TlbProfile {
            entries: geometries.iter().map(|&(e, _)| e).collect(),
            arities: cfg
                .arity
                .iter()
                .map(|&k| (k, LruGeometries::new(&only)))
                .collect(),
            last_page: u64::MAX,
            invalidated: 0,
        })
    }

    /// A data reference to page `vpn` of process `pid`; `faulted`: its page was not mapped
    /// when the reference was issued (a first touch, or a page back from swap), which a TLB
    /// of arity above 1 counts as a miss even if it holds the page's group.
    #[inline]
    pub fn reference(&mut self, pid: u16, vpn: u64, faulted: bool) {
        let page = tag_of(pid, vpn, 1);
        if page == self.last_page && !faulted {
            self.repeat(1);
            return;
        }
        self.last_page = page;
        for (k, counter) in &mut self.arities {
            counter.reference(tag_of(pid, vpn, *k), faulted && *k > 1);
        }
    }

    /// Have the host cache what a reference to page `vpn` of `pid` a few records ahead will
    /// read (a hint that changes no count).
    #[inline]
    pub fn prefetch(&self, pid: u16, vpn: u64) {
        for (k, counter) in &self.arities {
            counter.prefetch(tag_of(pid, vpn, *k));
        }
    }

    /// `n` more data references to the page referenced last.
    #[inline]
    pub fn repeat(&mut self, n: u64) {
        for (_, counter) in &mut self.arities {
            counter.repeat(n);
        }
    }

    /// `pages` pages were shot down: the profile does not model invalidations, and says how
    /// many there were.
    pub fn invalidated(&mut self, pages: u64) {
        self.invalidated += pages;
    }

    /// Restart the counts (the end of fast-forward or warm-up); the stacks stay warm.
    pub fn reset_counts(&mut self) {
        for (_, counter) in &mut self.arities {
            counter.reset_counts();
        }
        self.invalidated = 0;
    }

    /// The counts as a stats subtree: one row per (arity, geometry).
    pub fn snapshot(&self) -> TlbProfileSnapshot {
        let references = self.arities.first().map_or(0, |(_, c)| c.references());
        let mut misses = Vec::new();
        for (k, counter) in &self.arities {
            for ((g, &m), &entries) in counter
                .geometries()
                .iter()
                .zip(counter.misses())
                .zip(&self.entries)
            {
                misses.push(TlbProfileRow {
                    arity: *k,
                    entries,
                    sets: g.sets,
                    ways: g.ways,
                    misses: m,
                    forced: counter.forced(),
                    tags: counter.distinct_tags() as u64,
                });
            }
        }
        TlbProfileSnapshot {
            references,
            invalidated_pages: self.invalidated,
            misses,
        }
    }
}

/// The tag of page `vpn` of process `pid` in a TLB of arity `k`: the group's number (VPN / k)
/// in the low bits, which index the sets, and the ASID above the 36 bits of a VPN.
#[inline(always)]
fn tag_of(pid: u16, vpn: u64, k: u32) -> u64 {
    (u64::from(pid) << 48) | (vpn / u64::from(k))
}

/// The `profile.tlb` stats subtree.
#[derive(Clone, Debug, Serialize)]
pub struct TlbProfileSnapshot {
    /// Data references counted (each, at every arity and geometry, a hit or a miss).
    pub references: u64,
    /// Pages shot down while counting: the profile does not invalidate its stacks, so its
    /// counts are exact only when this is 0 (docs/profiles.md).
    pub invalidated_pages: u64,
    /// One row per arity and geometry (`pandas.DataFrame(stats["profile"]["tlb"]["misses"])`).
    pub misses: Vec<TlbProfileRow>,
}

/// The misses of one geometry at one arity.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TlbProfileRow {
    pub arity: u32,
    pub entries: u32,
    pub sets: u32,
    pub ways: u32,
    pub misses: u64,
    /// Of the arity's references, those that faulted and so miss at this arity whatever
    /// the TLB holds (arity > 1; included in `misses`).
    pub forced: u64,
    /// Distinct tags (pages, or groups of `arity` pages) seen since the run began.
    pub tags: u64,
}

/// The `profile` stats subtree (absent when no profile is taken).
#[derive(Clone, Debug, Serialize)]
pub struct ProfileSnapshot {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlb: Option<TlbProfileSnapshot>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometries_of_entries_and_sets() {
        let cfg = TlbProfileConfig {
            entries: vec![8, 1536],
            sets: vec![1, 4, 512, 1024],
            ways: vec![],
            arity: vec![1],
        };
        let g: Vec<(u32, u32, u32)> = cfg
            .geometries()
            .iter()
            .map(|(e, g)| (*e, g.sets, g.ways))
            .collect();
        assert_eq!(
            g,
            vec![
                (8, 1, 8),
                (8, 4, 2),
                (1536, 1, 1536),
                (1536, 4, 384),
                (1536, 512, 3)
            ]
        );
        let all = TlbProfileConfig {
            entries: vec![4],
            sets: vec![],
            ways: vec![],
            arity: vec![1],
        };
        assert_eq!(all.geometries().len(), 3);
        // One associativity kept: each size at that many ways only.
        let four_way = TlbProfileConfig {
            entries: vec![4, 8, 1536],
            sets: vec![],
            ways: vec![4],
            arity: vec![1],
        };
        let g: Vec<(u32, u32, u32)> = four_way
            .geometries()
            .iter()
            .map(|(e, g)| (*e, g.sets, g.ways))
            .collect();
        assert_eq!(g, vec![(4, 1, 4), (8, 2, 4)]);
        let e = four_way.validate("profile.tlb").unwrap_err().to_string();
        assert!(e.contains("profile.tlb.ways") && e.contains("1536"), "{e}");
    }

    #[test]
    fn bad_lists_name_their_key() {
        let err = |c: TlbProfileConfig| c.validate("profile.tlb").unwrap_err().to_string();
        let base = TlbProfileConfig {
            entries: vec![1024],
            sets: vec![],
            ways: vec![],
            arity: vec![1, 4],
        };
        assert!(base.validate("profile.tlb").is_ok());
        let e = err(TlbProfileConfig {
            sets: vec![3],
            ..base.clone()
        });
        assert!(e.contains("profile.tlb.sets"), "{e}");
        let e = err(TlbProfileConfig {
            ways: vec![0],
            ..base.clone()
        });
        assert!(e.contains("profile.tlb.ways"), "{e}");
        let e = err(TlbProfileConfig {
            arity: vec![0],
            ..base.clone()
        });
        assert!(e.contains("profile.tlb.arity"), "{e}");
        let e = err(TlbProfileConfig {
            entries: vec![0],
            ..base.clone()
        });
        assert!(e.contains("profile.tlb.entries"), "{e}");
        let e = err(TlbProfileConfig {
            entries: vec![24],
            sets: vec![16],
            ..base.clone()
        });
        assert!(e.contains("profile.tlb.sets"), "{e}");
        let e = err(TlbProfileConfig {
            entries: vec![],
            sets: vec![4],
            ..base
        });
        assert!(e.contains("profile.tlb.sets"), "{e}");
    }

    /// Arity k tags a page by VPN / k; a faulting reference misses at arities above 1 only.
    #[test]
    fn arities_group_pages_and_force_first_touches() {
        let cfg = TlbProfileConfig {
            entries: vec![4],
            sets: vec![1],
            ways: vec![],
            arity: vec![1, 4],
        };
        let mut p = TlbProfile::new(&cfg).unwrap();
        // Pages 0..4 are one group at arity 4; each first touch faults.
        for vpn in 0..4 {
            p.reference(1, vpn, true);
        }
        // Touched again: hits at both arities (4 entries hold 4 pages, or their one group).
        for vpn in 0..4 {
            p.reference(1, vpn, false);
        }
        p.reference(1, 3, false);
        let s = p.snapshot();
        assert_eq!(s.references, 9);
        let rows: Vec<(u32, u64, u64, u64)> = s
            .misses
            .iter()
            .map(|r| (r.arity, r.misses, r.forced, r.tags))
            .collect();
        assert_eq!(rows, vec![(1, 4, 0, 4), (4, 4, 4, 1)]);
        // Another process's page 0 is another tag.
        p.reference(2, 0, false);
        assert!(p.snapshot().misses.iter().all(|r| r.misses == 5));
    }
}
