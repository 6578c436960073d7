"""The ``xlat`` command in a subprocess, against the real engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import TINY_GUPS_ARGS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tomli backport is a dependency there
    import tomli as tomllib

pytestmark = pytest.mark.engine


def _ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def _usage_error(result: subprocess.CompletedProcess) -> str:
    """The error of a run that failed as docs/cli.md promises: exit status 2, one line."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("xlat") and ": error:" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


def test_version(run_cli) -> None:
    assert _ok(run_cli("--version")).startswith("xlat ")


def test_run_prints_summary(run_cli) -> None:
    out = _ok(run_cli("run", "--config", "baseline-radix", *TINY_GUPS_ARGS, "--no-progress"))
    for label in ["IPC", "instructions", "cycles", "L1 TLB MPKI", "L2 TLB MPKI", "page walks"]:
        assert label in out
    assert "served by DRAM" in out


def test_run_json(run_cli) -> None:
    stats = json.loads(_ok(run_cli("run", *TINY_GUPS_ARGS, "--json")))
    assert stats["summary"]["instructions"] > 0
    assert isinstance(stats["scheme"], str)


def test_run_verify_and_out(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "out" / "one"
    _ok(run_cli("run", *TINY_GUPS_ARGS, "--verify", "--out", out))
    stats = json.loads((out / "stats.json").read_text())
    assert stats["summary"]["instructions"] > 0
    config_text = (out / "config.toml").read_text()
    assert tomllib.loads(config_text)["sim"]["verify"] is True
    summary = (out / "summary.txt").read_text()
    assert "IPC" in summary
    checked = stats["verify"]["translations_checked"]
    assert f"verified {checked:,} translations" in " ".join(summary.split())


@pytest.mark.parametrize(
    "preset", ["baseline-radix", "ecpt", "mehpt", "rmm", "utopia", "mosaic", "mosaic-vanilla"]
)
def test_verify_catches_an_injected_wrong_translation(run_cli, preset: str) -> None:
    # The self-test of --verify: after 1000 checked translations the scheme's own structures
    # are corrupted for the next page; the run must stop there with the check's message.
    err = _usage_error(
        run_cli(
            "run",
            "-c",
            preset,
            *TINY_GUPS_ARGS,
            "--verify",
            "--set",
            "sim.verify_inject_after=1000",
        )
    )
    scheme = tomllib.loads(_ok(run_cli("config", "-c", preset)))["scheme"]
    assert err.startswith("xlat: error: at record "), err
    for part in [
        f"translation check failed: {scheme}: VirtAddr(0x",
        "(vpn 0x",
        "of pid 0: MMU gave PhysAddr(0x",
        ", OS maps it to PhysAddr(0x",
        "(its entry was corrupted on purpose by sim.verify_inject_after)",
    ]:
        assert part in err, (part, err)
    # The same run without the injection passes.
    stats = json.loads(_ok(run_cli("run", "-c", preset, *TINY_GUPS_ARGS, "--verify", "--json")))
    assert stats["verify"]["translations_checked"] == 50_000


def test_verify_injection_without_verify_is_a_config_error(run_cli) -> None:
    err = _usage_error(run_cli("run", *TINY_GUPS_ARGS, "--set", "sim.verify_inject_after=1000"))
    assert "config error at `sim.verify_inject_after`" in err
    assert "sim.verify = true (--verify)" in err


def test_unknown_key_is_exit_2_without_traceback(run_cli) -> None:
    err = _usage_error(run_cli("run", *TINY_GUPS_ARGS, "--set", "mmu.l2tlb.nosuchkey=1"))
    assert "nosuchkey" in err


def test_usage_errors_are_one_line(run_cli) -> None:
    assert "--bogus" in _usage_error(run_cli("run", "--bogus"))
    assert "nosuch" in _usage_error(run_cli("nosuch"))
    assert "SWEEP_DIR" in _usage_error(run_cli("query", "SELECT 1"))


def test_a_misspelt_table_name_lists_the_real_ones(run_cli) -> None:
    err = _usage_error(run_cli("run", *TINY_GUPS_ARGS, "--set", "mmu.l2tlb.unifed.entries=3072"))
    assert "`unifed` is not a key of `mmu.l2tlb` (it has: 1g, unified)" in err


def test_malformed_set_is_exit_2(run_cli) -> None:
    _usage_error(run_cli("run", "--set", "no-equals-sign"))


def test_bad_geometry_is_exit_2(run_cli) -> None:
    err = _usage_error(run_cli("run", *TINY_GUPS_ARGS, "--set", "mmu.l2tlb.unified.ways=0"))
    assert "ways" in err


def test_missing_config_file_is_exit_2(run_cli, tmp_path: Path) -> None:
    err = _usage_error(run_cli("run", "--config", tmp_path / "nope.toml", *TINY_GUPS_ARGS))
    assert "nope.toml" in err


def test_missing_trace_is_exit_2(run_cli, tmp_path: Path) -> None:
    err = _usage_error(run_cli("run", "--trace", tmp_path / "missing.xtr"))
    assert "missing.xtr" in err


def test_compare(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "main"
    text = _ok(
        run_cli(
            "compare",
            "--config",
            "baseline-radix",
            "--config",
            "perfect-tlb",
            *TINY_GUPS_ARGS,
            "--out",
            out,
        )
    )
    assert "speed-up over baseline-radix" in text
    report = json.loads((out / "compare.json").read_text())
    speedups = [run["speedup"] for run in report["runs"]]
    assert speedups[0] == 1.0
    assert speedups[1] > 1.0
    for name in ["baseline-radix", "perfect-tlb"]:
        assert (out / name / "stats.json").exists()
        assert (out / name / "config.toml").exists()


def test_presets(run_cli) -> None:
    names = _ok(run_cli("presets")).split()
    for name in ["baseline-radix", "perfect-tlb", "mehpt-radix"]:
        assert name in names
    assert _ok(run_cli("presets", "show", "perfect-tlb")).strip()
    _usage_error(run_cli("presets", "show", "no-such-preset"))


def test_config_shows_resolved_toml_with_override(run_cli) -> None:
    text = _ok(
        run_cli(
            "config",
            "--config",
            "baseline-radix",
            "--set",
            "mmu.l2tlb.unified.entries=2048",
            "--set",
            "mmu.l2tlb.unified.ways=8",
        )
    )
    assert "2048" in text
    assert tomllib.loads(text)["mmu"]["l2tlb"]["unified"]["entries"] == 2048


def test_bench(run_cli) -> None:
    out = _ok(run_cli("bench", "--refs", "200000"))
    assert "refs/s" in out
    assert "gups" in out and "stream" in out


#: Four small programs, one per core of a four-core system (the quantum applies on one core).
MIX_OF_FOUR = [
    "--workload",
    "mix",
    "--refs",
    "40000",
    "--set",
    "workload.quantum=10000",
    "--set",
    "workload.members=["
    '{name = "gups", table_bytes = 67108864}, {name = "stream", array_bytes = 8388608}, '
    '{name = "gups", table_bytes = 33554432}, {name = "stream", array_bytes = 4194304}]',
]


def _per_core_instructions(stats: dict) -> list[int]:
    return [c["core"]["instructions"] for c in stats["cores"]]


def test_multi_programmed_mix_on_four_cores_verifies_and_repeats(run_cli) -> None:
    args = ["run", "-c", "baseline-radix", *MIX_OF_FOUR, "--cores", "4", "--verify", "--json"]
    first = json.loads(_ok(run_cli(*args)))
    assert first["system"]["cores"] == 4
    # Each program runs its quota, a quarter of the references, on its own core; those that
    # reach it first keep running (and translating) until all have.
    members = first["mix"]["members"]
    assert [m["workload"] for m in members] == ["gups", "stream", "gups", "stream"]
    assert all(m["reached_quota"] and m["core"]["memory_refs"] == 10000 for m in members)
    assert first["verify"]["translations_checked"] >= 40000
    assert all(n > 0 for n in _per_core_instructions(first)), _per_core_instructions(first)
    assert sum(_per_core_instructions(first)) == first["summary"]["instructions"]
    assert json.loads(_ok(run_cli(*args))) == first, "same seed, same stats"


@pytest.mark.engine
def test_a_mix_on_more_cores_than_programs_says_so(run_cli) -> None:
    done = run_cli("run", "-c", "baseline-radix", "-w", "mix", "--cores", "4", "--refs", "20k")
    assert done.returncode == 0, done.stderr
    assert "note: the mix has 2 programs" in done.stderr and "of 4 ran nothing" in done.stderr
    # The summary names the cores and gives each one's IPC.
    assert "cores" in done.stdout and "core 3 IPC" in done.stdout
    # --json keeps stdout pure JSON; the note stays on stderr.
    done = run_cli("run", "-w", "mix", "--cores", "4", "--refs", "20k", "--json")
    assert json.loads(done.stdout)["system"]["cores"] == 4 and "note:" in done.stderr


@pytest.mark.engine
def test_multi_threaded_gups_on_four_cores_verifies(run_cli) -> None:
    stats = json.loads(
        _ok(
            run_cli(
                "run",
                *TINY_GUPS_ARGS,
                "--cores",
                "4",
                "--verify",
                "--json",
            )
        )
    )
    assert stats["verify"]["translations_checked"] == 50000
    assert all(n > 0 for n in _per_core_instructions(stats)), _per_core_instructions(stats)


def test_multi_threaded_bfs_meets_at_barriers(run_cli) -> None:
    # Each BFS level ends at a barrier: the cores whose threads finish a level early wait
    # there for the slowest one.
    stats = json.loads(
        _ok(
            run_cli(
                "run", "-c", "baseline-radix", "-w", "bfs", "--cores", "4", "--verify", "--json"
            )
        )
    )
    assert stats["system"]["barriers"] > 0
    assert stats["system"]["barrier_wait_cycles"] > 0
    waits = [c["core"]["barrier_wait_cycles"] for c in stats["cores"]]
    assert sum(waits) == stats["system"]["barrier_wait_cycles"]
    assert stats["verify"]["translations_checked"] > 0


def test_mix_meets_at_no_barriers(run_cli) -> None:
    args = ["run", "-c", "baseline-radix", *MIX_OF_FOUR, "--cores", "4", "--json"]
    stats = json.loads(_ok(run_cli(*args)))
    assert (stats["system"]["barriers"], stats["system"]["barrier_wait_cycles"]) == (0, 0)


def test_bench_on_two_cores(run_cli) -> None:
    out = _ok(run_cli("bench", "--refs", "100000", "-w", "gups", "--cores", "2"))
    assert "2 cores" in out and "refs/s" in out


def test_console_script(tmp_path: Path) -> None:
    """The ``xlat`` entry point installed next to this Python (by ``pip install``)."""
    name = "xlat.exe" if os.name == "nt" else "xlat"
    script = Path(sys.executable).parent / name
    if not script.exists():
        pytest.skip("xlat console script not installed next to this interpreter")
    result = subprocess.run(
        [str(script), "presets"], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert "baseline-radix" in _ok(result)


@pytest.mark.engine
def test_verify_passes_on_ten_million_gups_references(run_cli, tmp_path) -> None:
    """Every one of 10 M translations (4 GiB table, 40% fragmented memory) matches the OS."""
    out = tmp_path / "verify"
    _ok(
        run_cli(
            "run",
            "--config",
            "baseline-radix",
            "--workload",
            "gups",
            "--refs",
            "10000000",
            "--verify",
            "--out",
            str(out),
        )
    )
    stats = json.loads((out / "stats.json").read_text())
    assert stats["verify"]["enabled"] is True
    assert stats["verify"]["translations_checked"] == 10_000_000
    assert stats["summary"]["walks"] > 1_000_000


@pytest.mark.engine
def test_workloads_lists_every_builtin_with_footprint(run_cli) -> None:
    catalog = json.loads(_ok(run_cli("workloads", "--json")))
    names = {w["name"] for w in catalog}
    assert {"gups", "stream"} <= names
    assert all(w["footprint_bytes"] > 0 and "[workload]" in w["defaults"] for w in catalog)
    text = _ok(run_cli("workloads", "-v"))
    assert "table_bytes = 4294967296" in text
    # Every column has a header, and a '?' in the host column is explained under the table.
    assert text.splitlines()[0].split() == ["workload", "footprint", "host", "description"]
    assert any(w["host_bytes"] is None for w in catalog)
    assert "'?': this workload has no formula" in text
    gups = next(w for w in catalog if w["name"] == "gups")
    assert 0 < gups["host_bytes"] < gups["footprint_bytes"]


def test_reproduce_list_aligns_its_columns(run_cli) -> None:
    lines = _ok(run_cli("reproduce", "--list")).splitlines()
    assert len(lines) > 10
    # The citation column starts at one offset, past the longest id.
    starts = {line.index(line.split()[1]) for line in lines}
    assert len(starts) == 1 and min(len(line.split()[0]) for line in lines) < starts.pop() - 2
    # Figure numbers in numeric order: Fig 2 before Fig 10.
    ids = [line.split()[0] for line in lines]
    assert ids.index("sparta-fig2") < ids.index("sparta-fig9") < ids.index("sparta-fig10")


@pytest.mark.engine
def test_workloads_at_a_footprint_show_parameters_and_host_memory(run_cli) -> None:
    catalog = json.loads(_ok(run_cli("workloads", "--footprint", "64GiB", "--json")))
    by_name = {w["name"]: w for w in catalog}
    # Workloads with size keys of their own (index structures) are not listed.
    assert {"gups", "stream", "bfs", "dlrm-sls"} <= set(by_name)
    assert "btree" not in by_name
    assert "table_bytes = 68719476736" in by_name["gups"]["defaults"]
    for w in catalog:
        assert 0.5 * 2**36 <= w["footprint_bytes"] <= 2**36, w["name"]
    # gups keeps no data on the host; the implicit graph only per-vertex state.
    assert by_name["gups"]["host_bytes"] < 2**32
    assert by_name["bfs"]["host_bytes"] < 16 * 2**30
    text = _ok(run_cli("workloads", "--footprint", "8GiB"))
    assert "host" in text.splitlines()[0]


@pytest.mark.engine
def test_run_at_a_footprint_grows_physical_memory(run_cli, tmp_path) -> None:
    out = tmp_path / "r"
    _ok(
        run_cli(
            "run",
            "-c",
            "baseline-radix",
            "-w",
            "gups",
            "--refs",
            "2000",
            "--set",
            "workload.footprint=64GiB",
            "--set",
            "workload.populate=false",
            "-o",
            str(out),
        )
    )
    text = (out / "config.toml").read_text()
    assert "table_bytes = 68719476736" in text
    assert "footprint" not in text


@pytest.mark.engine
def test_trace_record_then_run_the_trace(run_cli, tmp_path) -> None:
    trace = tmp_path / "s.xtr"
    out = _ok(run_cli("trace", "record", "-w", "stream", "--set", "references=20000", "-o", trace))
    assert "20,000 records" in out
    stats = json.loads(_ok(run_cli("run", "--trace", trace, "--json", "--verify")))
    assert stats["workload"] == "trace"
    assert stats["verify"]["translations_checked"] == 20_000


def test_trace_record_leaves_the_set_up_out_unless_asked_and_says_so(run_cli, tmp_path) -> None:
    # pr at scale 10 sets up 2^10 vertices' ranks before its region of interest.
    roi, full = tmp_path / "pr.xtr", tmp_path / "pr-all.xtr"
    record = ("trace", "record", "-w", "pr", "--set", "scale=10", "--refs", "5000", "--no-progress")
    out = _ok(run_cli(*record, "-o", roi))
    said = "wrote 5,000 records (region of interest; set-up of 1,024 records skipped)"
    assert out == f"{said} to {roi}\n"
    out = _ok(run_cli(*record, "--include-setup", "-o", full))
    assert out.startswith("wrote 6,024 records (1,024 of set-up, then 5,000 of the region of ")
    lines = _ok(run_cli("trace", "inspect", roi)).splitlines()
    assert lines[1:3] == [
        f"{'records':<24}{'5,000':>16}",
        f"{'  set-up not recorded':<24}{'1,024':>16}",
    ]
    lines = _ok(run_cli("trace", "inspect", full)).splitlines()
    assert lines[1:3] == [
        f"{'records':<24}{'6,024':>16}",
        f"{'  set-up (run skips it)':<24}{'1,024':>16}",
    ]
    # A run of either measures the region, the first without fast-forwarding, the second
    # fast-forwarding through the set-up once, as a run of the workload does.
    for trace, skipped in ((roi, 0), (full, 1024)):
        stats = json.loads(_ok(run_cli("run", "--trace", trace, "--json")))
        assert stats["fast_forward"]["records"] == skipped
        assert stats["core"]["loads"] + stats["core"]["stores"] == 5000
    # Recording simulates nothing: there is nothing to fast-forward.
    assert "--fast-forward" in _usage_error(run_cli(*record, "--fast-forward", "0", "-o", roi))


def test_a_bad_workload_parameter_is_named_by_its_key(run_cli) -> None:
    err = _usage_error(run_cli("run", "-w", "gups", "--set", "workload.references=-5"))
    assert "config error at `workload.references`: invalid value: integer `-5`" in err


@pytest.mark.engine
def test_bench_generators_reports_rates(run_cli) -> None:
    results = json.loads(_ok(run_cli("bench", "--generators", "--refs", "100000", "--json")))
    assert [r["workload"] for r in results] == ["gups", "stream"]
    assert all(r["references"] == 100_000 and r["refs_per_second"] > 0 for r in results)


def test_fast_forward_is_reported_and_bad_values_are_usage_errors(run_cli) -> None:
    out = _ok(run_cli("run", *TINY_GUPS_ARGS, "--fast-forward", "2k", "--no-progress"))
    line = next(x for x in out.splitlines() if "fast-forwarded" in x)
    assert int(line.split()[1].replace(",", "")) >= 2000
    stats = json.loads(_ok(run_cli("run", *TINY_GUPS_ARGS, "--fast-forward", "2k", "--json")))
    assert stats["fast_forward"]["instructions"] == stats["summary"]["fast_forwarded_instructions"]
    assert stats["fast_forward"]["reached_roi"] is False
    # GUPS has no set-up: by default nothing is skipped and the summary says nothing.
    assert "fast-forwarded" not in _ok(run_cli("run", *TINY_GUPS_ARGS, "--no-progress"))
    bad = run_cli("run", *TINY_GUPS_ARGS, "--fast-forward", "soon")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "invalid fast-forward 'soon'" in bad.stderr


def test_champsim_preset_runs_a_champsim_trace(run_cli, tmp_path) -> None:
    # xlat run -c champsim --trace T.champsimtrace.xz: ChampSim's default system on its format.
    xtr, trace = tmp_path / "g.xtr", tmp_path / "g.champsimtrace.xz"
    _ok(run_cli("trace", "record", "-w", "gups", "--set", "references=5000", "-o", xtr))
    _ok(run_cli("trace", "convert", xtr, trace))
    stats = json.loads(_ok(run_cli("run", "-c", "champsim", "--trace", trace, "--json")))
    assert stats["workload"] == "trace"
    assert stats["core"]["loads"] + stats["core"]["stores"] == 5000
    assert stats["summary"]["ipc"] > 0
    # 5-level walks through the four paging-structure caches, PSCL5 included.
    assert set(stats["mmu"]["pwc"]) == {"pd", "pdpt", "pml4", "pml5"}
    assert "l1d_mshr" in stats["cache"]


def test_a_bad_memory_limit_is_an_error_before_any_run(run_cli, tmp_path) -> None:
    for cmd in (
        ["sweep", "-c", "baseline-radix", "-w", "gups"],
        ["reproduce", "utopia-fig9", "--tiny"],
    ):
        err = _usage_error(run_cli(*cmd, "--memory", "12XB", "-o", str(tmp_path / "o")))
        assert "config error at `--memory`: unknown unit `XB`" in err
    assert not (tmp_path / "o").exists()


def test_stop_after_leaves_runs_for_the_next_call_with_exit_status_3(run_cli, tmp_path) -> None:
    out = tmp_path / "o"
    sweep_args = [
        "sweep", "-c", "baseline-radix", "-w", "gups", "--grid", "mmu.walkers=1,2",
        "--set", "workload.table_bytes=67108864", "--set", "os.physmem.bytes=2147483648",
        "--refs", "20k", "-j", "1", "-o", str(out / "sweep"), "--no-progress",
    ]  # fmt: skip
    stopped = run_cli(*sweep_args, "--stop-after", "0")
    assert stopped.returncode == 3, stopped.stderr
    assert "0 ran, 0 already finished, 0 failed, 2 not started" in stopped.stdout
    assert "--stop-after passed with 2 runs not started" in stopped.stderr
    done = run_cli(*sweep_args, "--stop-after", "1h")
    assert done.returncode == 0, done.stderr
    assert "2 ran, 0 already finished, 0 failed)" in done.stdout

    # A reproduction stopped before its runs draws nothing; the next call finishes it.
    rep = ["reproduce", "gandhi-table2", "--tiny", "-j", "1", "-o", str(out), "--no-progress"]
    stopped = run_cli(*rep, "--stop-after", "0s")
    assert stopped.returncode == 3, stopped.stderr
    assert "gandhi-table2: 4 of 4 runs not started before the time limit" in stopped.stderr
    assert not (out / "gandhi-table2" / "comparison.md").exists()
    done = run_cli(*rep)
    assert done.returncode == 0, done.stderr
    assert (out / "gandhi-table2" / "comparison.md").exists()

    err = _usage_error(run_cli(*sweep_args, "--stop-after", "soon"))
    assert "argument --stop-after: invalid duration 'soon'" in err
