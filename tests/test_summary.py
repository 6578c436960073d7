"""Summaries of statistics, on hand-made stats dicts (no engine needed)."""

from __future__ import annotations

import math
import re

from support import make_stats
from xlat.summary import format_comparison, format_summary, speedup


def _value_column(line: str) -> int:
    """Index just past the value on a summary line (the right edge of the value column)."""
    match = re.match(r"^  (.{22})(.{15})", line)
    assert match, line
    return match.end(2)


def test_summary_contains_every_headline_number() -> None:
    text = format_summary(make_stats())
    assert text.splitlines()[0] == "gups on radix"
    for expected in [
        "IPC",
        "0.500",
        "1,000,000",
        "2,000,000",
        "L1 TLB MPKI",
        "80.25",
        "L2 TLB MPKI",
        "61.50",
        "page walks",
        "61,500",
        "avg walk latency",
        "123.5",
        "cycles",
        "200,000",  # walk refs in total
        "page faults",
        "4,096",
        "DRAM row-buffer hits",
        "41.2%",
    ]:
        assert expected in text, expected


def test_walk_refs_by_level_with_percentages() -> None:
    lines = format_summary(make_stats()).splitlines()
    by_level = {line.split()[2]: line for line in lines if line.strip().startswith("served by")}
    assert set(by_level) == {"L1", "L2", "LLC", "DRAM"}
    assert by_level["L1"].rstrip().endswith("50.0%")
    assert by_level["L2"].rstrip().endswith("25.0%")
    assert by_level["LLC"].rstrip().endswith("15.0%")
    assert by_level["DRAM"].rstrip().endswith("10.0%")
    assert "100,000" in by_level["L1"]


def test_columns_are_aligned() -> None:
    lines = format_summary(make_stats(workload="/a/rather/long/path/to/trace.xtr")).splitlines()
    assert lines[1].split() == ["scheme", "radix"]
    assert lines[2].split() == ["workload", "/a/rather/long/path/to/trace.xtr"]
    numeric = lines[3:]
    assert len({_value_column(line) for line in numeric}) == 1
    for line in numeric:
        # Every value ends exactly at the right edge of the value column.
        assert line[_value_column(line) - 1] != " ", line


def test_missing_numbers_print_as_na() -> None:
    stats = {"scheme": "radix", "workload": "gups", "summary": {"ipc": 1.25}}
    text = format_summary(stats)
    assert "1.250" in text
    assert "n/a" in text
    assert "%" not in text  # no shares without walk counts
    assert format_summary({}).splitlines()[0] == "? on ?"


def test_zero_walks_have_no_shares() -> None:
    stats = make_stats(walks=0, walk_refs_l1=0, walk_refs_l2=0, walk_refs_llc=0, walk_refs_dram=0)
    text = format_summary(stats)
    served = [line for line in text.splitlines() if "served by" in line]
    assert all("%" not in line for line in served)
    # The engine reports 0.0 cycles for the average of no walks: undefined, so n/a.
    [latency] = [line for line in text.splitlines() if "avg walk latency" in line]
    assert latency.split()[-1] == "n/a", latency


def test_custom_title() -> None:
    assert format_summary(make_stats(), title="baseline").splitlines()[0] == "baseline"


def test_speedup() -> None:
    base = make_stats(cycles=3_000_000)
    fast = make_stats(cycles=1_500_000)
    assert speedup(base, fast) == 2.0
    assert speedup(base, base) == 1.0
    assert math.isnan(speedup(base, make_stats(cycles=0)))
    assert math.isnan(speedup(base, {}))


def test_format_comparison() -> None:
    text = format_comparison(
        [
            ("baseline-radix", make_stats(cycles=3_000_000)),
            ("perfect-tlb", make_stats(cycles=1_200_000)),
        ]
    )
    assert text.count("IPC") == 2
    assert "speed-up over baseline-radix (cycles ratio)" in text
    table = text.split("speed-up over")[1].splitlines()
    assert "1.000x" in table[1] and "baseline-radix" in table[1]
    assert "2.500x" in table[2] and "perfect-tlb" in table[2]
    assert format_comparison([]) == ""


def test_verify_says_how_many_translations_it_checked() -> None:
    stats = make_stats()
    assert "verified" not in format_summary(stats)
    stats["verify"] = {"enabled": True, "translations_checked": 1_234_567}
    line = next(x for x in format_summary(stats).splitlines() if "verified" in x)
    assert "1,234,567" in line and line.endswith("translations")
    assert _value_column(line) == _value_column(format_summary(stats).splitlines()[3])


def test_several_cores_show_each_cores_ipc() -> None:
    stats = dict(make_stats())
    stats["cores"] = [{"core": {"ipc": 0.5}}, {"core": {"ipc": 0.25}}]
    text = format_summary(stats)
    assert "cores" in text and "core 0 IPC" in text and "0.250" in text
    # One core: no per-core lines.
    assert "core 0 IPC" not in format_summary(make_stats())
