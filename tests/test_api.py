"""The Python API: override conversion (pure Python) and runs of the real engine (``engine``)."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import pytest

import xlat
from support import TINY_GUPS, FakeCore
from xlat.api import OverrideError, build_overrides, override_key, to_toml_literal

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tomli backport is a dependency there
    import tomli as tomllib

#: A valid L2 TLB geometry whatever the preset's associativity (2048 / 8 = 256 sets).
L2TLB_2048 = {"mmu.l2tlb.unified.entries": 2048, "mmu.l2tlb.unified.ways": 8}


SUMMARY_KEYS = {
    "ipc",
    "instructions",
    "cycles",
    "l1tlb_mpki",
    "l2tlb_mpki",
    "walks",
    "avg_walk_latency",
    "walk_refs_l1",
    "walk_refs_l2",
    "walk_refs_llc",
    "walk_refs_dram",
    "faults",
    "dram_row_hit_rate",
}


# --------------------------------------------------------------------------------------------
# Override conversion (no engine needed)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("mmu__l2tlb__unified__entries", "mmu.l2tlb.unified.entries"),
        ("workload__table_bytes", "workload.table_bytes"),
        ("sim__verify", "sim.verify"),
        ("seed", "seed"),
    ],
)
def test_override_key(name: str, key: str) -> None:
    assert override_key(name) == key


@pytest.mark.parametrize("name", ["", "__x", "x__", "mmu____entries"])
def test_override_key_rejects_empty_levels(name: str) -> None:
    with pytest.raises(OverrideError):
        override_key(name)


class _NumpyLikeScalar:
    """Behaves like a NumPy scalar: not a Python number, but has ``item()``."""

    def __init__(self, value: object) -> None:
        self._value = value

    def item(self) -> object:
        return self._value


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (2048, "2048"),
        (-3, "-3"),
        (4294967296, "4294967296"),
        (0.5, "0.5"),
        (3.0, "3.0"),
        (1e20, "1e+20"),
        (1e-05, "1e-05"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (math.nan, "nan"),
        ("lru", '"lru"'),
        ("", '""'),
        ('say "hi"', '"say \\"hi\\""'),
        ("a\\b", '"a\\\\b"'),
        ("line\nnext\ttab", '"line\\nnext\\ttab"'),
        ("\x01", '"\\u0001"'),
        ("ünïcødé", '"ünïcødé"'),
        (Path("/tmp/x.xtr"), '"/tmp/x.xtr"'),
        ([1, 2, 3], "[1, 2, 3]"),
        ((True, "x"), '[true, "x"]'),
        ([], "[]"),
        ({"a": 1, "b c": "d"}, '{ a = 1, "b c" = "d" }'),
        ({}, "{}"),
        (_NumpyLikeScalar(7), "7"),
        (_NumpyLikeScalar(True), "true"),
    ],
)
def test_to_toml_literal(value: object, literal: str) -> None:
    assert to_toml_literal(value) == literal


@pytest.mark.parametrize("value", [None, object(), b"bytes", {1, 2}, [None]])
def test_to_toml_literal_rejects(value: object) -> None:
    with pytest.raises(OverrideError):
        to_toml_literal(value)


def test_toml_literals_round_trip() -> None:
    """Every literal we produce parses back (with tomllib) to the value it came from."""
    rng = random.Random(1234)
    alphabet = [chr(c) for c in range(0, 0x80)] + ["é", "ß", "€", "日", "\U0001f600"]
    values: list[object] = [True, False, 0, -1, 2**63 - 1, 0.1, -2.5e-300, 6.02e23]
    for _ in range(300):
        values.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))))
        values.append(rng.randint(-(2**62), 2**62))
        values.append(rng.uniform(-1e6, 1e6))
    values.append([1, [2, 3], {"k": "v"}])
    values.append({"nested": {"x": [1.5, "y"]}, "weird key": True})
    for value in values:
        literal = to_toml_literal(value)
        assert tomllib.loads(f"x = {literal}")["x"] == value, literal


def test_build_overrides_order_and_forms() -> None:
    assert build_overrides(
        "gups",
        {"sim.verify": True, "workload.table_bytes": 4 << 30},
        mmu__l2tlb__unified__entries=2048,
        mmu__l2tlb__policy="lru",
    ) == [
        'workload.name="gups"',
        "sim.verify=true",
        "workload.table_bytes=4294967296",
        "mmu.l2tlb.unified.entries=2048",
        'mmu.l2tlb.policy="lru"',
    ]


def test_build_overrides_raw_strings_pass_verbatim() -> None:
    raw = ["mmu.l2tlb.unified.entries=2048", "workload.name=gups", "x.y=[1, 2]"]
    assert build_overrides(overrides=raw) == raw
    assert build_overrides(overrides=iter(raw)) == raw


def test_build_overrides_empty() -> None:
    assert build_overrides() == []
    assert build_overrides(None, None) == []


@pytest.mark.parametrize(
    "overrides",
    ["mmu.l2tlb.unified.entries=2048", ["no-equals-sign"], ["=value"], [42], {"": 1}, {"a..b": 1}],
)
def test_build_overrides_rejects_bad_overrides(overrides: object) -> None:
    with pytest.raises(OverrideError):
        build_overrides(overrides=overrides)  # type: ignore[arg-type]


def test_build_overrides_rejects_bad_workload() -> None:
    with pytest.raises(OverrideError):
        build_overrides("")


def test_override_error_is_value_error() -> None:
    assert issubclass(OverrideError, ValueError)


def test_run_passes_arguments_to_engine(fake_core: FakeCore, tmp_path: Path) -> None:
    stats = xlat.run(
        Path("my.toml"),
        "stream",
        trace=tmp_path / "t.xtr",
        out=tmp_path,
        progress=True,
        overrides={"sim.seed": 7},
        mmu__l2tlb__unified__entries=2048,
    )
    assert stats["summary"]["instructions"] == 1_000_000
    name, args = fake_core.calls[-1]
    assert name == "run"
    config, overrides, trace, out, progress = args
    assert config == "my.toml"
    assert overrides == ['workload.name="stream"', "sim.seed=7", "mmu.l2tlb.unified.entries=2048"]
    assert trace == str(tmp_path / "t.xtr")
    assert out == str(tmp_path)
    assert progress is True


def test_run_defaults(fake_core: FakeCore) -> None:
    xlat.run()
    # No terminal and no notebook under pytest: a progress line a minute (none in a short run).
    assert fake_core.calls[-1] == ("run", ("baseline-radix", [], None, None, "lines"))


def test_run_json_returns_engine_text(fake_core: FakeCore) -> None:
    text = xlat.run_json("perfect-tlb", "gups")
    assert json.loads(text)["scheme"] == "perfect-tlb"


def test_resolve_presets_bench_wrappers(fake_core: FakeCore) -> None:
    assert "sim.verify=true" in xlat.resolve_config("baseline-radix", sim__verify=True)
    assert xlat.presets() == ["baseline-radix", "perfect-tlb", "mehpt-radix"]
    assert "preset perfect-tlb" in xlat.preset_text("perfect-tlb")
    result = xlat.bench("gups", 1000)
    assert result["references"] == 1000
    assert fake_core.calls[-1] == ("bench", ("gups", 1000, "baseline-radix", []))
    with pytest.raises(ValueError):
        xlat.bench("gups", 0)
    with pytest.raises(TypeError):
        xlat.bench("gups", 1.5)  # type: ignore[arg-type]


def test_xlat_error_comes_from_engine(fake_core: FakeCore) -> None:
    assert xlat.XlatError is fake_core.XlatError
    from xlat import XlatError

    assert XlatError is fake_core.XlatError


def test_an_engine_error_names_the_keyword_arguments_as_written(fake_core: FakeCore) -> None:
    # The engine knows only dotted keys: what the user wrote is named beside them.
    fake_core.error = fake_core.XlatError(
        "config error at `workload.references`: invalid value: integer `-5`, expected u64"
    )
    with pytest.raises(fake_core.XlatError) as caught:
        xlat.run("baseline-radix", "gups", workload__references=-5)
    assert str(caught.value) == (
        "config error at `workload.references` (keyword argument `workload__references`): "
        "invalid value: integer `-5`, expected u64"
    )
    for call in (xlat.resolve_config, xlat.boot, xlat.record_trace):
        args = ("t.xtr",) if call is xlat.record_trace else ()
        with pytest.raises(fake_core.XlatError, match="keyword argument `workload__references`"):
            call(*args, "baseline-radix", "gups", workload__references=-5)
    # A dotted key given as a dotted key is left as it is.
    with pytest.raises(fake_core.XlatError) as caught:
        xlat.run("baseline-radix", overrides={"workload.references": -5})
    assert "keyword" not in str(caught.value)


def test_keywords_are_named_at_their_key_a_table_above_it_or_a_quoted_override() -> None:
    name = xlat.api._name_keywords
    kwargs = ["mmu__l2tlb__unifed__entries", "workload__threads", "seed"]
    assert name(
        "config error at `mmu.l2tlb.unifed`: `unifed` is not a key of `mmu.l2tlb` (it has: 1g, "
        "unified); the override `mmu.l2tlb.unifed.entries=3072` would add it",
        kwargs,
    ) == (
        "config error at `mmu.l2tlb.unifed` (keys set by keyword argument "
        "`mmu__l2tlb__unifed__entries`): `unifed` is not a key of `mmu.l2tlb` (it has: 1g, "
        "unified); the keyword argument `mmu__l2tlb__unifed__entries=3072` would add it"
    )
    assert name("config error at `workload`: bad", kwargs + ["workload__references"]) == (
        "config error at `workload` (keys set by keyword arguments `workload__threads`, "
        "`workload__references`): bad"
    )
    # Only the first key is where the error is; single-level keywords read as written.
    assert name("config error at `seed`: not `workload.threads`", kwargs) == (
        "config error at `seed`: not `workload.threads`"
    )


def test_a_value_without_toml_form_names_its_keyword_or_key() -> None:
    with pytest.raises(OverrideError, match="keyword argument workload__references: None"):
        build_overrides("gups", workload__references=None)
    with pytest.raises(OverrideError, match="override 'workload.references': None"):
        build_overrides("gups", {"workload.references": None})


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError):
        _ = xlat.no_such_thing  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# The real engine
# --------------------------------------------------------------------------------------------


@pytest.mark.engine
def test_engine_version() -> None:
    assert isinstance(xlat.__version__, str) and xlat.__version__
    assert issubclass(xlat.XlatError, Exception)


@pytest.mark.engine
def test_run_gups_tiny() -> None:
    stats = xlat.run("baseline-radix", "gups", overrides=TINY_GUPS)
    summary = stats["summary"]
    assert SUMMARY_KEYS <= set(summary), SUMMARY_KEYS - set(summary)
    assert summary["instructions"] > 0
    assert summary["cycles"] > 0
    assert summary["walks"] > 0
    assert isinstance(stats["scheme"], str) and stats["scheme"]
    assert "gups" in stats["workload"]
    assert 0.0 <= summary["dram_row_hit_rate"] <= 1.0
    # The summary is printable.
    assert "IPC" in xlat.format_summary(stats)


@pytest.mark.engine
def test_run_stream_tiny() -> None:
    stats = xlat.run("baseline-radix", "stream", workload__references=50_000)
    assert stats["summary"]["instructions"] > 0
    assert "stream" in stats["workload"]


@pytest.mark.engine
def test_run_with_verify() -> None:
    stats = xlat.run("baseline-radix", "gups", overrides=TINY_GUPS, sim__verify=True)
    assert stats["summary"]["instructions"] > 0


@pytest.mark.engine
def test_perfect_tlb_never_walks_and_is_faster() -> None:
    base = xlat.run("baseline-radix", "gups", overrides=TINY_GUPS)
    perfect = xlat.run("perfect-tlb", "gups", overrides=TINY_GUPS)
    assert perfect["summary"]["walks"] == 0
    assert perfect["summary"]["cycles"] < base["summary"]["cycles"]
    assert xlat.speedup(base, perfect) > 1.0


@pytest.mark.engine
@pytest.mark.parametrize(
    "preset", sorted(p.stem for p in (Path(xlat.__file__).parent / "presets").glob("*.toml"))
)
def test_every_preset_is_deterministic_and_follows_its_seed(preset: str) -> None:
    # One core, and two threads on two cores (the multi-core stepping order is part of it).
    for extra in ({}, {"workload.threads": 2, "sim.cores": 2}):
        overrides = {**TINY_GUPS, "workload.references": 20_000, **extra}
        first = xlat.run_json(preset, "gups", overrides=overrides)
        assert xlat.run_json(preset, "gups", overrides=overrides) == first, extra
        reseeded = xlat.run_json(preset, "gups", overrides={**overrides, "seed": 2})
        assert reseeded != first, f"{preset} {extra}: the seed changes nothing"


@pytest.mark.engine
def test_out_dir(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    stats = xlat.run("baseline-radix", "gups", out=out, overrides={**TINY_GUPS, **L2TLB_2048})
    assert json.loads((out / "stats.json").read_text()) == stats
    config_text = (out / "config.toml").read_text()
    assert tomllib.loads(config_text)["mmu"]["l2tlb"]["unified"]["entries"] == 2048


@pytest.mark.engine
def test_resolve_config_applies_overrides() -> None:
    text = xlat.resolve_config("baseline-radix", "gups", overrides=L2TLB_2048)
    resolved = tomllib.loads(text)
    assert resolved["mmu"]["l2tlb"]["unified"]["entries"] == 2048
    assert resolved["workload"]["name"] == "gups"


@pytest.mark.engine
def test_presets() -> None:
    names = xlat.presets()
    for name in ("baseline-radix", "perfect-tlb", "mehpt-radix"):
        assert name in names
        assert xlat.preset_text(name).strip()
    with pytest.raises(xlat.XlatError):
        xlat.preset_text("no-such-preset")


@pytest.mark.engine
def test_unknown_key_is_an_error_naming_the_key() -> None:
    with pytest.raises(xlat.XlatError, match="nosuchkey"):
        xlat.run("baseline-radix", "gups", overrides=TINY_GUPS, mmu__l2tlb__nosuchkey=1)
    with pytest.raises(xlat.XlatError, match="nosuchkey"):
        xlat.resolve_config("baseline-radix", mmu__l2tlb__nosuchkey=1)


@pytest.mark.engine
@pytest.mark.parametrize("call", ["run", "resolve_config", "boot", "record_trace"])
def test_a_bad_keyword_argument_is_named_as_written(call: str, tmp_path: Path) -> None:
    args = (tmp_path / "t.xtr",) if call == "record_trace" else ()
    with pytest.raises(xlat.XlatError) as caught:
        getattr(xlat, call)(*args, "baseline-radix", "gups", workload__references=-5)
    message = str(caught.value)
    assert message.startswith(
        "config error at `workload.references` (keyword argument `workload__references`): "
    ), message
    with pytest.raises(xlat.XlatError, match="keyword argument `mmu__l2tlb__unified__ways`"):
        getattr(xlat, call)(*args, "baseline-radix", "gups", mmu__l2tlb__unified__ways=0)


#: pr at scale 10: 2^10 stores of set-up (its ranks), then its region of interest.
PR_TINY = {"workload.scale": 10, "workload.references": 5_000}
PR_SETUP = 1 << 10


def _lackey_stream(trace: Path, out: Path) -> list[tuple[int, str]]:
    """The loads and stores of ``trace`` as lackey text gives them back, each with the
    instructions since the one before (not their synthetic instruction addresses)."""
    xlat.convert_trace(trace, out)
    stream, before = [], 0
    for line in out.read_text().splitlines():
        if line.startswith("I"):
            before += 1
        elif line.startswith((" L", " S")):
            stream.append((before, line.strip()))
            before = 0
    return stream


@pytest.mark.engine
def test_record_trace_writes_the_region_of_interest_unless_asked_for_the_set_up(
    tmp_path: Path,
) -> None:
    roi, full = tmp_path / "roi.xtr", tmp_path / "full.xtr"
    record = {"overrides": PR_TINY, "progress": False}
    assert xlat.record_trace(roi, "baseline-radix", "pr", **record) == {
        "records": 5_000,
        "setup_records": PR_SETUP,
        "setup_included": False,
    }
    assert xlat.record_trace(full, "baseline-radix", "pr", include_setup=True, **record) == {
        "records": PR_SETUP + 5_000,
        "setup_records": PR_SETUP,
        "setup_included": True,
    }
    # The region's records are those after the set-up, which a run of the workload skips.
    stream = _lackey_stream(full, tmp_path / "full.lackey")
    assert _lackey_stream(roi, tmp_path / "roi.lackey") == stream[PR_SETUP:]
    ran = xlat.run("baseline-radix", "pr", overrides=PR_TINY, progress=False)
    assert ran["fast_forward"]["records"] == PR_SETUP
    assert ran["core"]["loads"] + ran["core"]["stores"] == 5_000
    # Runs of the traces measure the same references, fast-forwarding as the workload does.
    for trace, setup in ((roi, 0), (full, PR_SETUP)):
        ran = xlat.run("baseline-radix", trace=trace, progress=False)
        assert ran["fast_forward"]["records"] == setup
        assert ran["fast_forward"]["reached_roi"] is (setup > 0)
        assert ran["core"]["loads"] + ran["core"]["stores"] == 5_000
    summary = xlat.inspect_trace(roi)
    assert (summary["records"], summary["roi_start"], summary["setup_skipped"]) == (
        5_000,
        0,
        PR_SETUP,
    )
    summary = xlat.inspect_trace(full)
    assert (summary["roi_start"], summary["setup_skipped"]) == (PR_SETUP, None)


@pytest.mark.engine
def test_bad_geometry_is_an_error() -> None:
    with pytest.raises(xlat.XlatError, match="ways"):
        xlat.run("baseline-radix", "gups", overrides=TINY_GUPS, mmu__l2tlb__unified__ways=0)


@pytest.mark.engine
def test_missing_trace_file_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-trace.xtr"
    with pytest.raises(xlat.XlatError, match="no-such-trace"):
        xlat.run("baseline-radix", trace=missing)


@pytest.mark.engine
def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(xlat.XlatError, match="missing-config"):
        xlat.run(tmp_path / "missing-config.toml", "gups", overrides=TINY_GUPS)


@pytest.mark.engine
def test_config_file_extends_preset(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('extends = "baseline-radix"\n\n[mmu.l2tlb.unified]\nentries = 2048\nways = 8\n')
    text = xlat.resolve_config(path)
    assert "2048" in text
    stats = xlat.run(path, "gups", overrides=TINY_GUPS)
    assert stats["summary"]["instructions"] > 0


def test_experiments_are_reachable_after_import_xlat() -> None:
    assert callable(xlat.experiments.reproduce)
    assert "experiments" in dir(xlat)
