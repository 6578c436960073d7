"""The command line against a fake engine: argument handling, output, errors (no engine needed)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import xlat.api
from support import FakeCore, PanicException, make_stats
from xlat.cli import build_parser, main, parse_count, parse_duration


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("5000000", 5_000_000),
        ("5_000_000", 5_000_000),
        ("5e6", 5_000_000),
        ("2.5M", 2_500_000),
        ("200k", 200_000),
        ("200K", 200_000),
        ("1G", 1_000_000_000),
        (" 7 ", 7),
    ],
)
def test_parse_count(text: str, value: int) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["", "0", "-5", "1.5", "abc", "5T", "1e-3", "k"])
def test_parse_count_rejects(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_count(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("5400", 5400), ("45s", 45), ("90m", 5400), ("1.5h", 5400), ("1h30m", 5400),
     (" 2H ", 7200), ("1h 30m 15s", 5415)],
)  # fmt: skip
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "-5m", "1d", "1h30", "90 minutes", "1.5.2h", "h1"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="duration"):
        parse_duration(text)


def test_run_builds_overrides(fake_core: FakeCore, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        [
            "run",
            "--config",
            "baseline-radix",
            "--workload",
            "gups",
            "--refs",
            "5M",
            "--verify",
            "--set",
            "mmu.l2tlb.unified.entries=2048",
            "-s",
            "workload.table_bytes=4294967296",
        ]
    )
    assert status == 0
    name, (config, overrides, trace, out, progress) = fake_core.calls[-1]
    assert name == "run"
    assert config == "baseline-radix"
    assert overrides == [
        'workload.name="gups"',
        "workload.references=5000000",
        "sim.verify=true",
        "mmu.l2tlb.unified.entries=2048",
        "workload.table_bytes=4294967296",
    ]
    assert trace is None and out is None
    assert progress == "lines"  # stderr is not a terminal under pytest: a line a minute
    printed = capsys.readouterr().out
    assert "IPC" in printed and "L2 TLB MPKI" in printed


def test_run_defaults_to_baseline(fake_core: FakeCore) -> None:
    assert main(["run"]) == 0
    assert fake_core.calls[-1] == ("run", ("baseline-radix", [], None, None, "lines"))


def test_run_progress_follows_the_terminal(
    fake_core: FakeCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert main(["run"]) == 0
    assert fake_core.calls[-1][1][4] == "bar"
    assert main(["run", "--no-progress"]) == 0
    assert fake_core.calls[-1][1][4] == "off"


def test_run_trace(fake_core: FakeCore, tmp_path: Path) -> None:
    trace = tmp_path / "t.xtr"
    assert main(["run", "--trace", str(trace)]) == 0
    assert fake_core.calls[-1][1][2] == str(trace)


def test_trace_and_workload_are_exclusive(fake_core: FakeCore) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--trace", "t.xtr", "--workload", "gups"])
    assert exc.value.code == 2


def test_run_json_prints_engine_text(
    fake_core: FakeCore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["summary"]["instructions"] == 1_000_000


def test_run_out_dir(fake_core: FakeCore, tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    assert main(["run", "--out", str(out)]) == 0
    assert fake_core.calls[-1][1][3] == str(out)
    assert (out / "stats.json").exists()
    assert "IPC" in (out / "summary.txt").read_text()


@pytest.mark.parametrize("bad", ["nokey", "=3", " =3"])
def test_malformed_set_is_a_usage_error(
    fake_core: FakeCore, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    assert main(["run", "--set", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xlat: error: --set expects KEY=VALUE")
    assert "run" not in fake_core.names()


def test_engine_error_is_printed_without_traceback(
    fake_core: FakeCore, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_core.error = fake_core.XlatError("unknown key `mmu.l2tlb.nosuchkey` in --set")
    assert main(["run", "--set", "mmu.l2tlb.nosuchkey=1"]) == 2
    err = capsys.readouterr().err
    assert err == "xlat: error: unknown key `mmu.l2tlb.nosuchkey` in --set\n"


def test_engine_panic_is_reported_as_a_bug(
    fake_core: FakeCore, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_core.error = PanicException("index out of bounds")
    assert main(["run"]) == 70
    err = capsys.readouterr().err
    assert err.startswith("xlat: error: internal error in the engine: index out of bounds")
    assert "bug" in err


def test_missing_engine_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing() -> None:
        raise xlat.api.EngineMissingError("the compiled engine xlat._core is not installed")

    monkeypatch.setattr(xlat.api, "engine", missing)
    assert main(["presets"]) == 2
    assert "not installed" in capsys.readouterr().err


def test_unexpected_python_errors_propagate(fake_core: FakeCore) -> None:
    fake_core.error = RuntimeError("a bug in the Python layer")
    with pytest.raises(RuntimeError):
        main(["run"])


def test_compare(fake_core: FakeCore, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fake_core.stats_by_config["baseline-radix"] = make_stats(cycles=3_000_000, scheme="radix")
    fake_core.stats_by_config["perfect-tlb"] = make_stats(cycles=1_000_000, scheme="perfect")
    out = tmp_path / "main"
    argv = ["compare", "-c", "baseline-radix", "-c", "perfect-tlb", "-w", "gups", "--refs", "1M"]
    assert main([*argv, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("IPC") == 2
    assert "speed-up over baseline-radix" in text
    assert "3.000x" in text
    runs = [args for name, args in fake_core.calls if name == "run"]
    assert [r[0] for r in runs] == ["baseline-radix", "perfect-tlb"]
    assert all(r[1] == ['workload.name="gups"', "workload.references=1000000"] for r in runs)
    assert [r[3] for r in runs] == [str(out / "baseline-radix"), str(out / "perfect-tlb")]
    report = json.loads((out / "compare.json").read_text())
    assert report["baseline"] == "baseline-radix"
    assert [r["speedup"] for r in report["runs"]] == [1.0, 3.0]
    assert (out / "summary.txt").read_text().strip() == text.strip()
    assert (out / "perfect-tlb" / "stats.json").exists()
    assert (out / "perfect-tlb" / "summary.txt").read_text().startswith("perfect-tlb\n")
    assert report["runs"][1]["cycles"] == 1_000_000

    # Same result with two simulations at once.
    assert main([*argv, "--jobs", "2"]) == 0
    assert capsys.readouterr().out == text

    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in report["runs"]] == ["baseline-radix", "perfect-tlb"]
    assert report["runs"][1]["stats"]["summary"]["cycles"] == 1_000_000


def test_compare_labels_of_config_files(fake_core: FakeCore, tmp_path: Path) -> None:
    out = tmp_path / "o"
    a = str(tmp_path / "x" / "mine.toml")
    b = str(tmp_path / "y" / "mine.toml")
    assert main(["compare", "-c", a, "-c", b, "-c", "perfect-tlb", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "mine",
        "mine-2",
        "perfect-tlb",
    ]


def test_compare_needs_two_configs(fake_core: FakeCore, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--config", "baseline-radix"]) == 2
    assert "at least two" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare"])


def test_bench(fake_core: FakeCore, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--refs", "200000"]) == 0
    out = capsys.readouterr().out
    assert "refs/s" in out
    assert "gups" in out and "stream" in out
    assert "800,000" in out  # 200000 refs / 0.25 s
    assert [args for name, args in fake_core.calls if name == "bench"] == [
        ("gups", 200_000, "baseline-radix", []),
        ("stream", 200_000, "baseline-radix", []),
    ]
    assert main(["bench", "--refs", "1k", "-w", "gups", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["refs_per_second"] == 4000
    fake_core.calls.clear()
    assert main(["bench", "--refs", "1k", "-w", "gups", "-c", "baseline-radix", "-c", "ecpt"]) == 0
    out = capsys.readouterr().out
    assert "baseline-radix/gups" in out and "ecpt/gups" in out
    assert [args for name, args in fake_core.calls if name == "bench"] == [
        ("gups", 1000, "baseline-radix", []),
        ("gups", 1000, "ecpt", []),
    ]


def test_presets(fake_core: FakeCore, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["presets"]) == 0
    assert capsys.readouterr().out.split() == ["baseline-radix", "perfect-tlb", "mehpt-radix"]
    assert main(["presets", "list"]) == 0
    assert "perfect-tlb" in capsys.readouterr().out
    assert main(["presets", "show", "perfect-tlb"]) == 0
    assert "preset perfect-tlb" in capsys.readouterr().out
    assert main(["presets", "show", "nope"]) == 2
    assert capsys.readouterr().err == "xlat: error: unknown preset 'nope'\n"


def test_config(fake_core: FakeCore, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "config",
        "-c",
        "perfect-tlb",
        "-w",
        "stream",
        "--set",
        "mmu.l2tlb.unified.entries=2048",
    ]
    assert main([*argv, "--verify"]) == 0
    assert fake_core.calls[-1] == (
        "resolve",
        (
            "perfect-tlb",
            ['workload.name="stream"', "sim.verify=true", "mmu.l2tlb.unified.entries=2048"],
        ),
    )
    assert "mmu.l2tlb.unified.entries=2048" in capsys.readouterr().out


def test_version(fake_core: FakeCore, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == "xlat 0.0.0-fake (model of 2000-01-01)\n"


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "command is required" in capsys.readouterr().err


def test_help_mentions_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    help_text = build_parser().format_help()
    for command in ["run", "compare", "bench", "presets", "config"]:
        assert command in help_text
