"""Utopia (Kanellopoulos et al., MICRO'23), §8.3 Fig 17: multi-programmed mixes on four cores.

The paper runs five mixes of its Table 2 workloads on 2-, 4- and 8-core systems ("we omit the
details due to space constraints") and plots each system's average speed-up over Radix. We run
the four-core system of Table 1 (four cores, each with its L1D and 1 MB L2, sharing an LLC of
2 MB per core, DRAM and the OS) with five fixed mixes of four Table 2 workloads, one member
per core (``workload.name = "mix"``, member ``i`` on core ``i``). The mixes were drawn at random
once (``random.Random(2023).sample`` of four of the 11 workloads, five times; the first seed
whose mixes cover every workload) and are fixed here so every run and every reader sees the
same ones.

Metric. A member runs on its own core, from its own stream and on its own clock, and is the
same program on every system: it warms up for its share of the warm-up and is measured to its
quota of references (the run's references split evenly), the same work on every system, then
keeps running until every member has reached its quota (``mix.members[i]`` in the stats holds
each member's numbers at its quota). A mix's speed-up over Radix is its **weighted speed-up
with Radix as the reference**: the mean over its members of ``IPC(member on the system) /
IPC(member on Radix)`` (each member's IPC at its quota). It weighs every program alike,
whatever its own IPC, as the single-core figures do; the average over mixes is a geometric
mean, as in Fig 5. The throughput ratio (instructions of all cores per cycle, over the whole
run) is reported beside it.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator, Mapping

import pandas as pd

from .. import api, plots
from .registry import SCALES, WARMUP_INSTRUCTIONS, Analysis, Reproduction, register
from .utopia import (
    PAPER,
    PAPER_RUN,
    PAPER_SYSTEMS,
    _ok,
    tar_cache_rarely_hits,
    utopia_workloads,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

#: Five mixes of four Table 2 workloads (``random.Random(2023)``: five draws of four).
MIXES = (
    ("sssp", "xsbench", "kmer", "tc"),
    ("dlrm-sls", "kmer", "tc", "bfs"),
    ("bfs", "pr", "gups", "dlrm-sls"),
    ("cc", "gc", "kmer", "bc"),
    ("gc", "tc", "bfs", "cc"),
)
CORES = 4
#: Table 1: "L3 Cache 2 MB/core".
LLC_BYTES_PER_CORE = 2 << 20
#: Memory references per run, over all four cores: each member's quota is a quarter. Four times
#: utopia.py's single-core runs at tiny; at quick 8M (2M per member; the set-up of four members
#: is most of a run's time).
REFERENCES = {"tiny": 120_000, "quick": 8_000_000, "full": 800_000_000, "paper": 800_000_000}
#: Graph kernels' Graph500 scale per scale. Quick takes 2^18 vertices instead of the
#: single-core figures' 2^20: generating a 2^20-vertex graph takes ~3.5 s per member, and 13
#: of the 20 members are graph kernels (a 2^18 graph, 64 MiB of edges, still overflows the
#: L2 TLB's reach many times over).
GRAPH_SCALE = {"tiny": 12, "quick": 18, "full": 23}
#: Instructions per slice of a mix time-sliced on one core. On four cores each member has a core
#: to itself and reads its own stream, so the quantum is not used; it is kept so that the runs'
#: configs (and their results' keys) stay as they were.
QUANTUM = 10_000

SYSTEMS = {
    label: PAPER_SYSTEMS[label] for label in ("Radix", "ECH", "POM-TLB", "RMM", "Utopia", "P-TLB")
}
LABELS = tuple(SYSTEMS)


def _member_params(name: str, params: dict) -> dict:
    """A member's own size parameters: a mix's members take no ``footprint`` (it is resolved
    per run, and members are tables of their own), so the paper scale's footprints are
    resolved here, by the engine, into the parameters they choose."""
    if "footprint" not in params:
        return params
    text = api.resolve_config(
        "baseline-radix", name, overrides={f"workload.{k}": v for k, v in params.items()}
    )
    resolved = tomllib.loads(text)["workload"]
    return {k: v for k, v in resolved.items() if k not in ("name", "references", "populate")}


def mix_workloads(scale: str) -> dict[str, dict]:
    """``mix@m1`` .. ``mix@m5``: each mix's members with the scale's Table 2 parameters."""
    single = {name: _member_params(name, p) for name, p in utopia_workloads(scale).items()}
    if scale in GRAPH_SCALE:
        for name in ("bc", "bfs", "cc", "gc", "pr", "tc", "sssp"):
            single[name] = {"scale": GRAPH_SCALE[scale]}
    workloads = {}
    for n, mix in enumerate(MIXES, 1):
        # Each member's own stream may run the whole run's references: it reaches its quota (a
        # quarter) without restarting.
        members = [{"name": name, **single[name], "references": REFERENCES[scale]} for name in mix]
        workloads[f"mix@m{n}"] = {"members": members, "quantum": QUANTUM}
    return workloads


class _Workloads(Mapping):
    """Scale -> the mixes, each built when first asked for: the paper scale's members are
    resolved by the engine, which importing this module should not need."""

    def __init__(self) -> None:
        self._built: dict[str, dict] = {}

    def __getitem__(self, scale: str) -> dict:
        if scale not in SCALES:
            raise KeyError(scale)
        if scale not in self._built:
            self._built[scale] = mix_workloads(scale)
        return self._built[scale]

    def __iter__(self) -> Iterator[str]:
        return iter(SCALES)

    def __len__(self) -> int:
        return len(SCALES)


def _scale_overrides(scale: str) -> dict:
    return {
        # The page sizes the paper ran with (§7); a mix's length stays its references'.
        **({k: v for k, v in PAPER_RUN.items() if k.startswith("os.")} if scale == "paper" else {}),
        "sim.cores": CORES,
        "cache.llc.size": CORES * LLC_BYTES_PER_CORE,
        # Each core warms up as long as a single-core run does.
        "sim.warmup_instructions": CORES * WARMUP_INSTRUCTIONS[scale],
    }


def mix_names(key: str) -> str:
    """``mix@m3`` -> ``m3: bfs+pr+gups+dlrm-sls``."""
    n = int(key.split("@m")[1])
    return f"m{n}: " + "+".join(MIXES[n - 1])


def member_ipcs(run: Mapping) -> list[float]:
    """Per member of the mix, in member order: its IPC from the end of its warm-up to its quota
    (``mix.members[i]``; NaN for a member that ran no cycles)."""
    ipcs = []
    for member in json.loads(run["stats.mix.members"]):
        instructions, cycles = member["instructions"], member["cycles"]
        ipcs.append(instructions / cycles if cycles else math.nan)
    return ipcs


def speedups(df: pd.DataFrame) -> pd.DataFrame:
    """Per mix (rows) and system (columns): weighted speed-up over Radix."""
    ok = df[df["status"] == "ok"]
    ipcs = {(r["workload"], r["label"]): member_ipcs(r) for _, r in ok.iterrows()}
    rows = {}
    for (mix, label), ipc in ipcs.items():
        radix = ipcs.get((mix, "Radix"))
        if radix is None:
            continue
        ratios = [s / r for s, r in zip(ipc, radix) if r > 0 and not math.isnan(s / r)]
        rows.setdefault(mix, {})[label] = sum(ratios) / len(ratios) if ratios else math.nan
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table.reindex(columns=[c for c in LABELS if c in table.columns]).sort_index()


def _throughputs(df: pd.DataFrame) -> pd.DataFrame:
    """Per mix and system: instructions of all cores per cycle, over Radix's."""
    ok = df[df["status"] == "ok"].copy()
    ok["throughput"] = ok["stats.summary.instructions"] / ok["stats.summary.cycles"]
    table = ok.pivot_table(index="workload", columns="label", values="throughput")
    return table.div(table["Radix"], axis=0)


def gmean(values: pd.Series) -> float:
    values = values.dropna()
    return math.exp(values.map(math.log).mean()) if len(values) else math.nan


def _analyse(df: pd.DataFrame) -> Analysis:
    table = speedups(df)
    throughput = _throughputs(df)
    long = pd.DataFrame(
        [
            {"status": "ok", "mix": mix_names(mix), "label": label, "speedup": value}
            for mix, row in table.iterrows()
            for label, value in row.items()
        ]
    )
    fig = plots.grouped_bars(
        long,
        "speedup",
        x="mix",
        ylabel="weighted speed-up over Radix",
        title=f"Multi-programmed mixes on {CORES} cores: speed-up over Radix",
        ylim=(0, 2.5),  # a perfect TLB on the GUPS mix runs off the top, labelled with its value
    )
    avg = {label: gmean(table[label]) for label in table.columns}
    values = {
        "fig17_ech_speedup_avg": avg["ECH"],
        "fig17_pomtlb_speedup_avg": avg["POM-TLB"],
        "fig17_rmm_speedup_avg": avg["RMM"],
        "fig17_utopia_speedup_avg": avg["Utopia"],
        "fig17_ptlb_speedup_avg": avg["P-TLB"],
        "fig17_utopia_over_rmm": avg["Utopia"] / avg["RMM"],
        "fig17_utopia_of_ptlb": avg["Utopia"] / avg["P-TLB"],
    }
    per_mix = table.rename(index=mix_names)
    per_mix.columns = [f"{c} speed-up" for c in per_mix.columns]
    thr = throughput.rename(index=mix_names)
    thr.columns = [f"{c} throughput / Radix" for c in thr.columns]
    summary = "Weighted speed-up over Radix, geometric mean over the mixes: " + ", ".join(
        f"{label} {value:.3f}" for label, value in avg.items()
    )
    return Analysis(
        figures=[
            (
                f"Fig 17 (four-core bars): weighted speed-up over Radix of five "
                f"multi-programmed mixes on {CORES} cores, and their geometric mean.",
                fig,
            )
        ],
        values=values,
        tables=[
            ("Per mix: weighted speed-up over Radix.", per_mix.reset_index(names="mix")),
            (
                "Per mix: throughput (instructions per cycle, all cores) over Radix's.",
                thr.reset_index(names="mix"),
            ),
        ],
        summary=summary,
    )


#: Radix's L1 TLB misses per instruction below which translation is "negligible" (the cause
#: of the tiny-scale mark: at most 22K misses in runs of 0.38-2.4M instructions).
RARE_L1_MISSES = 0.05


def _mark_cause(df: pd.DataFrame, scale: str) -> str | None:
    """Tiny: translation is negligible. Quick: the TAR cache rarely hits."""
    if scale != "tiny":
        return tar_cache_rarely_hits(df, scale)
    radix = _ok(df, "Radix")
    rate = float((radix["stats.mmu.l1tlb.misses"] / radix["stats.summary.instructions"]).max())
    if rate < RARE_L1_MISSES:
        return None
    return f"Radix misses the L1 TLB on up to {rate:.1%} of instructions (the mark needs under 5%)"


register(
    Reproduction(
        id="utopia-fig17",
        paper=PAPER,
        figure="Fig 17",
        title="multi-programmed mixes on four cores (ECH, POM-TLB, RMM, Utopia, P-TLB)",
        systems=SYSTEMS,
        workloads=_Workloads(),
        references=REFERENCES,
        analyse=_analyse,
        direction="Utopia is faster than Radix on four cores, on average over the mixes "
        "(paper: +28%)",
        direction_check=lambda df, v: v["fig17_utopia_speedup_avg"] > 1.0,
        scale_overrides={scale: _scale_overrides(scale) for scale in SCALES},
        direction_not_shown={
            "tiny": "translation is negligible at tiny footprints (Radix misses the L1 TLB at "
            "most 22K times in a run of 0.38-2.4M instructions) and Utopia's RestSeg walks read "
            "cold SF and TAR lines: 0.92x (per mix 0.87-0.98x; DRAM row conflicts 0.99-1.29x "
            "Radix's); not investigated further",
            "quick": "measured 0.98x (0.96-1.00x per mix; in cycles three mixes faster, 1.04x, "
            "1.09x and 1.11x, two within 0.97-1.0x): the 512 MB RestSeg, shared by four "
            "programs of up to 4 GiB, holds few of the pages that miss the L2 TLB (GUPS walks "
            "as on Radix), and a RestSeg walk reads one TAR line per page, which the 2 KB TAR "
            "cache rarely holds",
        },
        not_shown_cause=_mark_cause,
        notes="Four cores as Table 1 (LLC 2 MB per core, 8 MB shared); the paper also runs 2 "
        "and 8 cores, which we do not. Mixes (member i on core i): m1 sssp+xsbench+kmer+tc, "
        "m2 dlrm-sls+kmer+tc+bfs, m3 bfs+pr+gups+dlrm-sls, m4 cc+gc+kmer+bc, m5 gc+tc+bfs+cc, "
        "drawn at random once (the paper's five mixes are not published). Each member runs on "
        "its own core from its own stream to its quota (a quarter of the references), then "
        "keeps running until all have. A mix's speed-up "
        "is its weighted speed-up with Radix as the reference (mean over members of the "
        "member's IPC at its quota on the system over its IPC on Radix); the average is a "
        "geometric mean "
        "over mixes. Every system is the single-core figures' (utopia.py) with four cores; "
        "Utopia's two 512 MB RestSegs are shared by the four programs, so each gets less of "
        "them than alone. Inputs are the single-core figures' at each scale but for the "
        "graph kernels at quick scale (2^18 vertices instead of 2^20, to bound the set-up "
        "time of 13 graph members per system), far below the paper's 8-33 GB per program.",
    )
)
