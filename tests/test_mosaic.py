"""Mosaic Pages (ASPLOS'23) at tiny scale: Fig 6, Table 3 and Table 4 hold the paper's
directions, and each loses its direction when its mechanism is switched off (the mosaic TLB's
table of contents, the iceberg table's backyard choices, Horizon LRU).

``test_reproduce.py`` runs every reproduction at tiny scale and checks its direction; these
tests look at the quantities the directions rest on."""

from __future__ import annotations

import pytest

from xlat.experiments import mosaic

pytestmark = pytest.mark.engine

MIB = 1 << 20


def _misses(outcome) -> dict:
    return mosaic.fig6_misses(outcome.results)


def test_fig6_mosaic4_misses_less_than_vanilla_on_bfs_and_xsbench(tiny_reproduction) -> None:
    misses = _misses(tiny_reproduction("mosaic-fig6"))
    for workload in ("bfs", "xsbench"):
        part = misses.loc[workload]
        assert list(part.index) == list(mosaic.WAYS)
        # At every associativity, direct-mapped to fully associative.
        assert (part["Mosaic-4"] < part["Vanilla"]).all(), part
        # More pages per entry, fewer misses (up to the set conflicts of a few ways).
        assert part.loc[mosaic.TLB_ENTRIES, "Mosaic-64"] <= part.loc[mosaic.TLB_ENTRIES, "Mosaic-4"]


def test_fig6_without_the_table_of_contents_mosaic4_is_vanilla(tiny_mechanism_off) -> None:
    # Mosaic-4 with one page per entry (arity 1, profiled at arity 1) is a vanilla TLB: the
    # same misses at every geometry, so the direction is lost.
    off = tiny_mechanism_off(
        "mosaic-fig6",
        {"Mosaic-4": {"schemes.mosaic.arity": 1, "profile.tlb.arity": [1]}},
        workloads=["bfs", "xsbench"],
    )
    misses = _misses(off)
    assert (misses["Mosaic-4"] == misses["Vanilla"]).all()
    assert not off.direction_holds, off.direction


def test_fig6_profile_counts_equal_each_runs_own_mosaic_tlb(tiny_reproduction) -> None:
    # Every run's own TLB is set to one of the reported geometries (CHECK_WAYS): its misses
    # are the profile's count of that geometry, exactly.
    checks = mosaic.fig6_checks(tiny_reproduction("mosaic-fig6").results)
    assert len(checks) == len(mosaic.FIG6_SYSTEMS) * len(mosaic.FIG6_NAMES)
    assert set(checks["ways"]) == set(mosaic.CHECK_WAYS.values())
    assert checks["equal"].all(), checks
    assert (checks["TLB misses (profile)"] > 0).all()


def test_table3_first_conflict_above_97_percent(tiny_reproduction) -> None:
    outcome = tiny_reproduction("mosaic-table3")
    table = mosaic.swap_table(outcome.results)
    assert len(table) == 6
    assert (table["first conflict"] > 0.97).all(), table
    assert (table["first conflict"] < 0.99).all(), table
    # Ghost pages let the pool fill past the first conflict.
    assert (table["steady state"] > table["first conflict"]).all(), table
    assert outcome.direction_holds


def test_table3_with_one_backyard_choice_conflicts_far_earlier(tiny_mechanism_off) -> None:
    # d = 1: an overflowing bucket's page has one backyard bucket, not the least loaded of 6.
    off = tiny_mechanism_off(
        "mosaic-table3",
        {"Mosaic": {"schemes.mosaic.backyard_choices": 1}},
        workloads=["bfs@4158", "xsbench@4156"],
    )
    table = mosaic.swap_table(off.results)
    assert (table["first conflict"] < 0.95).all(), table
    assert not off.direction_holds, off.direction


def test_table4_horizon_swaps_less_beyond_the_pool(tiny_reproduction) -> None:
    outcome = tiny_reproduction("mosaic-table4")
    table = mosaic.swap_table(outcome.results)
    assert len(table) == 9
    assert (table["Linux swap I/O (pages)"] > 0).all() and (
        table["Mosaic swap I/O (pages)"] > 0
    ).all()
    beyond = table[table["footprint / pool"] > mosaic.BEYOND]
    assert (beyond["difference (%)"] > 0).all(), beyond
    # More footprint, more swapping, for both.
    for _, rows in table.groupby("workload"):
        assert rows["Linux swap I/O (pages)"].is_monotonic_increasing
        assert rows["Mosaic swap I/O (pages)"].is_monotonic_increasing
    assert outcome.direction_holds


def test_table4_without_horizon_lru_the_difference_is_gone(tiny_mechanism_off) -> None:
    # The Mosaic system swapping by the Linux-like LRU (os.swap.policy = "lru" is the
    # buddy-allocated comparator's, so the system becomes it): no difference left.
    off = tiny_mechanism_off(
        "mosaic-table4",
        {
            "Mosaic": {
                "scheme": "mosaic-vanilla",
                "os.swap.policy": "lru",
                "os.physmem.bytes": mosaic.POOL_BYTES["tiny"],
            }
        },
        workloads=["bfs@4924", "xsbench@4924", "btree@4919"],
    )
    table = mosaic.swap_table(off.results)
    assert (table["difference (%)"] == 0).all(), table
    assert not off.direction_holds, off.direction


def test_table5_is_listed_as_not_reproduced() -> None:
    assert "synthesis" in mosaic.NOT_REPRODUCED["Table 5"]
