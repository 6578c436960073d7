"""Importing real traces: a program run under valgrind lackey, inspected, converted and simulated.

The project's setup (scripts/setup.sh) installs valgrind and gcc is part of the toolchain, so
nothing here is skipped.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import xlat

pytestmark = pytest.mark.engine

PAGES = 256

# Writes then reads one byte in each of PAGES pages of a heap buffer: at least PAGES distinct
# 4 KiB pages of stores and loads, whatever the C library does around it.
PROGRAM = f"""
#include <stdlib.h>
int main(void) {{
    volatile char *p = malloc({PAGES} * 4096L);
    long sum = 0;
    for (long i = 0; i < {PAGES}; i++) p[i * 4096] = 1;
    for (long i = 0; i < {PAGES}; i++) sum += p[i * 4096];
    return sum == {PAGES} ? 0 : 1;
}}
"""


@pytest.fixture(scope="module")
def lackey_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lackey trace of a small C program (compiled here) touching PAGES heap pages."""
    d = tmp_path_factory.mktemp("lackey")
    src, exe, log = d / "touch.c", d / "touch", d / "touch.log"
    src.write_text(PROGRAM)
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(src)], check=True)
    subprocess.run(
        ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={log}", str(exe)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return log


def test_inspect_lackey_trace_of_a_real_program(lackey_log: Path) -> None:
    s = xlat.inspect_trace(lackey_log)
    assert s["format"] == "lackey"
    assert s["records"] == s["loads"] + s["stores"] and s["ifetches"] == 0
    assert s["loads"] >= PAGES and s["stores"] >= PAGES
    assert s["instructions"] > s["records"]
    assert s["unique_pages_4k"] >= PAGES
    assert s["footprint_bytes"] == s["unique_pages_4k"] * 4096
    assert 1 <= s["unique_pages_2m"] <= s["unique_pages_4k"]
    assert s["min_address"] < s["max_address"]
    # Every access is either a first touch or lands in one histogram bucket.
    assert s["reuse_cold"] == s["unique_pages_4k"]
    assert s["reuse_cold"] + sum(b["count"] for b in s["reuse_histogram"]) == s["records"]
    for k, b in enumerate(s["reuse_histogram"]):
        assert (b["min"], b["max"]) == ((0, 0) if k == 0 else (2 ** (k - 1), 2**k - 1))


def test_convert_then_simulate(lackey_log: Path, tmp_path: Path) -> None:
    summary = xlat.inspect_trace(lackey_log)
    xtr = tmp_path / "touch.xtr"
    assert xlat.convert_trace(lackey_log, xtr) == summary["records"]
    native = xlat.inspect_trace(xtr)
    assert native["format"] == "xtr"
    assert {k: v for k, v in native.items() if k != "format"} == {
        k: v for k, v in summary.items() if k != "format"
    }

    stats = xlat.run("baseline-radix", trace=xtr, sim__verify=True)
    assert stats["workload"] == "trace"
    assert stats["verify"]["translations_checked"] == summary["records"]
    assert stats["summary"]["instructions"] == summary["instructions"]

    # The lackey text runs directly too, with the same result.
    direct = xlat.run("baseline-radix", trace=lackey_log)
    assert direct["summary"] == xlat.run("baseline-radix", trace=xtr)["summary"]


def test_champsim_round_trip_of_a_real_trace(lackey_log: Path, tmp_path: Path) -> None:
    champsim = tmp_path / "touch.champsimtrace.xz"
    n = xlat.convert_trace(lackey_log, champsim)
    assert champsim.read_bytes()[:6] == b"\xfd7zXZ\x00"
    back = tmp_path / "back.lackey"
    assert xlat.convert_trace(champsim, back) == n
    a, b = xlat.inspect_trace(lackey_log), xlat.inspect_trace(back)
    # ChampSim has no access size; everything else inspect reports survives, except that an
    # instruction ChampSim cannot hold as one (a store before a load, or more than 4 loads
    # or 2 stores, as xsave / xrstor have) comes back as several: a handful in this program.
    grouping = ("format", "instructions", "multi_operand_instructions")
    assert {k: v for k, v in a.items() if k not in grouping} == {
        k: v for k, v in b.items() if k not in grouping
    }
    assert a["instructions"] <= b["instructions"] <= a["instructions"] * 1.001


def test_bad_traces_are_errors_naming_the_place(tmp_path: Path) -> None:
    garbage = tmp_path / "bad.lackey"
    garbage.write_text("==1== Lackey\nI  0400aaaa,3\n L 1000,8\nthis is not lackey\n")
    with pytest.raises(xlat.XlatError, match=r"bad.lackey: line 4: not a lackey line"):
        xlat.inspect_trace(garbage)
    odd = tmp_path / "odd.champsim"
    odd.write_bytes(bytes(100))
    with pytest.raises(xlat.XlatError, match="byte offset 64"):
        xlat.inspect_trace(odd)
    with pytest.raises(xlat.XlatError, match="cannot tell the output format"):
        xlat.convert_trace(garbage, tmp_path / "out.bin")
    assert not (tmp_path / "out.bin").exists()


def test_cli_trace_convert_and_inspect(run_cli, lackey_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.champsim.gz"
    res = run_cli("trace", "convert", lackey_log, out)
    assert res.returncode == 0, res.stderr
    records = xlat.inspect_trace(lackey_log)["records"]
    assert f"wrote {records:,} records to {out}" in res.stdout

    res = run_cli("trace", "inspect", out)
    assert res.returncode == 0, res.stderr
    assert "champsim" in res.stdout and "unique 4 KiB pages" in res.stdout
    assert "cold (first touch)" in res.stdout
    assert "memory operands" in res.stdout and "multi-operand instrs" in res.stdout

    res = run_cli("trace", "inspect", "--json", out)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["records"] == records

    res = run_cli("trace", "inspect", tmp_path / "missing.champsim")
    assert res.returncode == 2 and "no such trace file" in res.stderr
    assert "Traceback" not in res.stderr
