"""ME-HPT (Stojkovic et al., MICRO'22): Table I, Table II and the evaluation figures 8-16.

ECPT (elastic cuckoo page tables) needs one contiguous block per HPT way; ME-HPT builds ways
from chunks behind an L2P table, resizes in place and per way, and steals L2P entries. Most of
the paper's evaluation is about page-table memory (contiguity, total bytes, resizes, L2P use,
re-insertions), which depends on the pages mapped, not on the timing: those reproductions map
each workload's footprint at build time (``populate``) and simulate only a few references
without warm-up. Fig 9 (speed-up) is the exception: it runs with first-touch faults inside the
measured window, because ME-HPT's speed-up comes from the cost of allocating page-table memory
when faults grow the tables (§VII-B), as in the paper's first 550M instructions.

Per-process statistics of the hashed tables are in ``stats.os.pt.<pid>.{4k,2m,1g,total}``
(see docs/schemes/hashed-page-tables.md); radix page-table bytes are ``stats.os.pt_bytes``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import pandas as pd

import xlat

from .. import plots
from .registry import SCALES, Analysis, Reproduction, System, ascending, register

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

PAPER = "ME-HPT (MICRO'22)"
KIB = 1024
MIB = 1024 * 1024

#: The eight GraphBIG kernels of §VI, on Kronecker graphs (the paper: 1M nodes = scale 20).
GRAPH_KERNELS = ("bc", "bfs", "cc", "dc", "dfs", "pr", "sssp", "tc")
#: Paper names of our workloads (Table I, Figs 8-16).
PAPER_NAMES = {k: k.upper() for k in GRAPH_KERNELS} | {
    "gups": "GUPS",
    "sysbench-mem": "SysBench",
    "mummer": "MUMmer",
}


#: Share of a GraphBIG kernel's 2 MiB ranges that THP does not back. GraphBIG builds its graphs
#: from many small allocations, and Table I shows THP barely touching them: the radix tree of
#: BFS, DFS and SSSP keeps its size with THP (28.2 vs 28.2 MB, ...), CC's shrinks most, by 12%
#: (32.0 -> 28.1 MB). Our CSR arrays are few and large, so we leave 90% of their ranges to
#: 4 KiB pages (the graph workloads' `thp_ineligible` key) to give THP runs 4 KiB tables.
GRAPH_THP_INELIGIBLE = 0.9

#: ME-HPT Table I's graph footprints, for the ``paper`` scale.
PAPER_FOOTPRINTS = {
    **dict.fromkeys(("bfs", "cc", "dc", "pr", "sssp"), "9.3GB"),
    "bc": "17.3GB",
    "dfs": "9.0GB",
    "tc": "11.9GB",
}


#: The paper evaluates an 8-core system (§VI, Table III): its full and paper scales do too.
#: The workloads that have threads run one per core (``THREADED``); the others run their one
#: thread on the 8-core system, sharing its LLC and memory with idle cores. Tiny and quick keep
#: one core (the quick main job stays within minutes).
CORES = {"tiny": 1, "quick": 1, "full": 8, "paper": 8}
#: Table III's LLC is 2 MB per core; the presets hold one core's share.
LLC_BYTES_PER_CORE = 2 << 20
SCALE_OVERRIDES = {
    scale: {"sim.cores": n, "cache.llc.size": n * LLC_BYTES_PER_CORE}
    for scale, n in CORES.items()
    if n > 1
}
#: Our workloads with a ``threads`` key among the paper's applications.
THREADED = ("bfs", "pr", "gups")


def _threads(scale: str, name: str) -> dict[str, int]:
    """``threads`` of workload ``name`` at ``scale``: one per core where it has threads."""
    return {"threads": CORES[scale]} if CORES[scale] > 1 and name in THREADED else {}


def mehpt_workloads(scale: str) -> dict[str, dict]:
    """The applications at ``scale``, each with one thread per core where it has threads."""
    return {name: {**params, **_threads(scale, name)} for name, params in _workloads(scale).items()}


def _workloads(scale: str) -> dict[str, dict]:
    """The ME-HPT applications we have, at ``scale``.

    ``tiny`` has 1K-vertex graphs and 16 MiB GUPS / SysBench buffers (seconds for the test
    suite); ``quick`` runs the paper's 1M-node graphs and 4 GiB GUPS / SysBench (the paper's are
    64 GB); ``full`` 16 GiB. MUMmer aligns reads against a 64K-, 32M- or 64M-base reference.
    """
    if scale == "paper":
        return {
            **{
                k: {"footprint": PAPER_FOOTPRINTS[k], "thp_ineligible": GRAPH_THP_INELIGIBLE}
                for k in GRAPH_KERNELS
            },
            # 64 GiB: a power-of-two table at or just above Table I's 64 GB.
            "gups": {"table_bytes": 1 << 36},
            "sysbench-mem": {"footprint": "64GB", "access": "rnd"},
            # Table I's 6.9 GB of text and suffix array (1.38G bases), all of it also on the
            # host, plus the index construction's buffer: 9 GiB.
            "mummer": {"footprint": "6.9GB"},
        }
    graph_scale = {"tiny": 10, "quick": 20, "full": 20}[scale]
    big = {"tiny": 1 << 24, "quick": 1 << 32, "full": 1 << 34}[scale]
    workloads: dict[str, dict] = {
        k: {"scale": graph_scale, "thp_ineligible": GRAPH_THP_INELIGIBLE} for k in GRAPH_KERNELS
    }
    workloads["gups"] = {"table_bytes": big}
    workloads["sysbench-mem"] = {"total_bytes": big, "access": "rnd"}
    # Text + suffix array: 5 bytes a base (160 MiB at quick scale; the paper's MUMmer: 6.9 GB).
    workloads["mummer"] = {
        "reference_bases": {"tiny": 1 << 16, "quick": 1 << 25, "full": 1 << 26}[scale]
    }
    return workloads


WORKLOADS = {scale: mehpt_workloads(scale) for scale in SCALES}
#: Page-table memory depends on the mapped footprint (populated at build time), not on how
#: long the kernel runs: a few references suffice, without warm-up.
MEMORY_REFERENCES = {"tiny": 5_000, "quick": 200_000, "full": 2_000_000, "paper": 2_000_000}
MEMORY_OVERRIDES = {"sim.warmup_instructions": 0}

SIZES = ("4k", "2m", "1g")
#: The applications with the largest footprints (64 GB in the paper, 4 GiB at quick scale),
#: whose tables the paper singles out in Figs 8, 9 and 12.
LARGEST = ["gups", "sysbench-mem"]
NOTHP = {"os.thp": "never"}
THP = {"os.thp": "always"}

NOTES_COMMON = (
    "The paper runs 8-core full-system simulations (Simics + SST) of the first 550M instructions "
    "per thread, with 9-64 GB datasets; we simulate one core at tiny and quick scale and 8 at "
    "full and paper scale (BFS, PR and GUPS with 8 threads, the other applications with one), "
    "on smaller inputs except at paper scale (graphs with 1M "
    "nodes as in the paper, GUPS and SysBench with 4 GiB at quick scale instead of 64 GB), so "
    "every size that grows with the footprint (way sizes, table bytes, L2P entries, upsizes) is "
    "smaller than the paper's: a 64 MiB ECPT way needs a 64 GB GUPS table. Our graph kernels "
    "store compact CSR arrays (about 150 MB at 1M vertices, against GraphBIG's 9.3 GB in Table "
    "I), so their tables are about 60x smaller than the paper's at the same vertex count; with "
    "THP their arrays are backed by huge pages and the 4 KiB tables stay at their initial size "
    "(GraphBIG's allocations mostly stay on 4 KiB pages). Tables are created on a page size's "
    "first mapping, so GUPS and SysBench with THP have no 4 KiB table at all. MUMmer (BioBench "
    "genome alignment) is our `mummer`: reads matched against a suffix array of a synthetic "
    "genome (32M bases, 160 MiB, at quick scale; the paper's 6.9 GB). SysBench is "
    "`sysbench memory` with random block access."
)


# --------------------------------------------------------------------------------------------
# Reading the hashed page tables' statistics
# --------------------------------------------------------------------------------------------


def _hpt_column(df: pd.DataFrame, size: str, field: str) -> str | None:
    """The column ``stats.os.pt.<pid>.<size>.<field>`` (one process per run here)."""
    pattern = re.compile(rf"stats\.os\.pt\.\d+\.{re.escape(size)}\.{re.escape(field)}")
    columns = sorted(c for c in df.columns if pattern.fullmatch(c))
    if len(columns) > 1:
        raise ValueError(f"several processes' hashed page tables in the results: {columns}")
    return columns[0] if columns else None


def hpt(df: pd.DataFrame, size: str, field: str) -> pd.Series:
    """A hashed-table statistic per run (lists decoded from their JSON text); NaN for radix
    runs and for page sizes a run never created a table for."""
    column = _hpt_column(df, size, field)
    if column is None:
        return pd.Series([math.nan] * len(df), index=df.index, dtype=object)

    def decode(value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    return df[column].map(decode)


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"].copy()


def _pivot(df: pd.DataFrame, values: pd.Series) -> pd.DataFrame:
    """workload x label table of one value per run."""
    frame = pd.DataFrame({"workload": df["workload"], "label": df["label"], "v": values})
    return frame.pivot_table(index="workload", columns="label", values="v", aggfunc="mean")


def _long(table: pd.DataFrame, name: str) -> pd.DataFrame:
    """A workload x label table as the long frame the plots take."""
    long = table.reset_index().melt(id_vars="workload", var_name="label", value_name=name)
    long["status"] = "ok"
    return long.dropna(subset=[name])


def _gmean(values: Iterable[float]) -> float:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def _gmean_ratio(num: pd.Series, den: pd.Series) -> float:
    """GeoMean of ``num`` over GeoMean of ``den``, both over the applications both define (an
    application whose run did not finish leaves both means, not one)."""
    both = num.astype(float).map(math.isfinite) & den.astype(float).map(math.isfinite)
    return _gmean(num[both]) / _gmean(den[both])


def _mean_of_defined(
    per_app: pd.Series, why: str, unfinished: Collection[str] = ()
) -> tuple[float, str]:
    """The mean of the defined (finite) values of ``per_app``, and a note saying over how many
    it was taken and which applications were left out (``why``; those in ``unfinished``
    because a run did not finish), so that a mean that skips undefined values says so instead
    of hiding them (or counting them as 0)."""
    values = per_app.astype(float)
    defined = values[values.map(math.isfinite)]
    missing = [w for w in values.index if w not in defined.index]
    mean = float(defined.mean()) if len(defined) else math.nan
    note = f"mean of {len(defined)} of {len(values)} applications"
    for reason, apps in (
        (UNFINISHED, [w for w in missing if w in unfinished]),
        (why, [w for w in missing if w not in unfinished]),
    ):
        if apps:
            note += f"; n/a for {', '.join(PAPER_NAMES.get(w, w) for w in apps)}: {reason}"
    return mean, note


def _unfinished(df: pd.DataFrame) -> set[str]:
    """The workloads on which a run did not finish. The reproduction lets through only the
    failures :func:`_hpt_found_no_contiguous_block` accepts, so each is a hashed table's."""
    return set(df.loc[df["status"] != "ok", "workload"])


UNFINISHED = "a hashed table's run did not finish"
#: Buddy order of an 8 MiB block (4 KiB frames): ME-HPT's third chunk size, the first that
#: the paper's applications never needed (Table III: used 8KB and 1MB).
ORDER_8MIB = 11


def _hpt_found_no_contiguous_block(label: str, workload: str, error: str) -> str | None:
    """The failures the paper describes: a hashed table that needs a contiguous block larger
    than a fragmented memory has left. ECPT's way is one block (§III: beyond 0.7 FMFI "the ECPT
    runs are unable to finish"); ME-HPT's largest block is one chunk, and §IV-B says an upsizing
    fails only when the OS cannot provide a chunk of the size it asks for."""
    if "no free contiguous" not in error:
        return None
    if label.startswith("ECPT"):
        return (
            "an ECPT way is one contiguous block, and the memory had none of that size left: "
            "fragmented to 0.7 FMFI at boot, it had 2 MiB blocks for about a third of a 64 GB "
            "table, so most of it took 4 KiB pages, whose HPT then grew past what was left; "
            "§VII reports this failure of ECPT beyond 0.7 FMFI, though the paper's own THP runs "
            "of GUPS and SysBench found huge pages for their whole table (Table I: 0.4 MB of "
            "radix table) and finished"
        )
    chunk = re.search(r"chunk: no free contiguous .*\(order (\d+)\)", error)
    if label.startswith("ME-HPT") and chunk and int(chunk[1]) >= ORDER_8MIB:
        return (
            "THP took every free block of 2 MiB or more, so most of the 64 GB table fell back "
            "to 4 KiB pages (the same boot fragmentation as ECPT's failure above; the paper's "
            "GUPS with THP never upsizes its 4 KiB table, §VII-E2); the 4 KiB ME-HPT then "
            "outgrew 64 one-MiB chunks a way and asked for 8 MiB chunks, Table II's next size, "
            "which memory at 1.00 FMFI could not give: the failure §IV-B allows, met later "
            "than ECPT's"
        )
    return None


def _na(table: pd.DataFrame) -> pd.DataFrame:
    """A table for display: undefined cells as "n/a", not NaN or 0."""
    return table.astype(object).where(table.notna(), "n/a")


def _largest_lead(per_app: pd.Series) -> bool:
    """Whether GUPS and SysBench both come above every other application in ``per_app``."""
    return ascending(per_app.drop(LARGEST).max(), per_app[LARGEST].min(), strict=True)


def _per_app(table: pd.DataFrame, prefix: str, columns: Mapping[str, str]) -> dict[str, float]:
    """``{prefix}_{key}_{workload}`` for each column of ``table`` (key -> column label)."""
    return {
        f"{prefix}_{key}_{workload}": float(table.loc[workload, column])
        for key, column in columns.items()
        for workload in table.index
    }


# --------------------------------------------------------------------------------------------
# Table I: contiguous and total page-table memory, radix vs ECPT, without and with THP
# --------------------------------------------------------------------------------------------

TABLE1_SYSTEMS = {
    "Radix": System("mehpt-radix", NOTHP),
    "ECPT": System("ecpt", NOTHP),
    "Radix THP": System("mehpt-radix", THP),
    "ECPT THP": System("ecpt", THP),
}


def _pt_total_mib(df: pd.DataFrame) -> pd.Series:
    """Page-table memory: the radix tree's bytes, or the HPT's peak (old and new tables
    together during resizes, as Table I's 'maximum memory consumed')."""
    hashed = hpt(df, "total", "peak_bytes").astype(float)
    return hashed.where(hashed.notna(), df["stats.os.pt_bytes"].astype(float)) / MIB


def _analyse_table1(df: pd.DataFrame) -> Analysis:
    ok = _ok(df)
    total = _pivot(ok, _pt_total_mib(ok))
    ecpt = ok[ok["label"] == "ECPT"]
    contig = _pivot(ecpt, hpt(ecpt, "4k", "max_contiguous_bytes").astype(float) / KIB)["ECPT"]
    table = pd.DataFrame(
        {
            "contig KiB ECPT (no THP)": contig,
            "MiB Radix": total["Radix"],
            "MiB ECPT": total["ECPT"],
            "MiB Radix THP": total["Radix THP"],
            "MiB ECPT THP": total["ECPT THP"],
        }
    )
    keys = {
        "contig_kb_ecpt": "contig KiB ECPT (no THP)",
        "total_mb_radix": "MiB Radix",
        "total_mb_ecpt": "MiB ECPT",
        "total_mb_radix_thp": "MiB Radix THP",
        "total_mb_ecpt_thp": "MiB ECPT THP",
    }
    values = _per_app(table, "table1", keys)
    values |= {f"table1_{key}_geomean": _gmean(table[column]) for key, column in keys.items()}
    values["table1_ecpt_over_radix_geomean"] = _gmean_ratio(table["MiB ECPT"], table["MiB Radix"])
    values["table1_ecpt_over_radix_thp_geomean"] = _gmean_ratio(
        table["MiB ECPT THP"], table["MiB Radix THP"]
    )
    shown = table.copy()
    shown.index = [PAPER_NAMES.get(w, w) for w in shown.index]
    shown.loc["GeoMean"] = [_gmean(shown[c]) for c in shown.columns]
    fig = plots.grouped_bars(
        _long(total, "pt_mib"),
        "pt_mib",
        summary="gmean",
        ylabel="page-table memory (MiB)",
        title="Page-table memory: radix tree vs ECPT, without and with THP",
    )
    return Analysis(
        figures=[("Table I, columns 5-8, as bars: page-table memory (MiB).", fig)],
        values=values,
        tables=[("Table I (ours): page-table memory per application.", shown.reset_index())],
    )


# --------------------------------------------------------------------------------------------
# Table II: maximum way size and mapping space per chunk size, from the mehpt preset
# --------------------------------------------------------------------------------------------

#: Bytes of one HPT line (§II-B clustering: 8 PTEs of 8 bytes).
LINE_BYTES = 64
PTES_PER_LINE = 8


def table2(config: Mapping[str, Any]) -> pd.DataFrame:
    """Table II from a resolved config: a way holds at most ``2 x l2p_entries`` chunks with
    stealing (its own L2P subtable plus the 1 GiB one, §V-A), a line maps 8 pages (§II-B
    clustering), and the mapping space counts every line of every way, as the paper does."""
    hashed = config["schemes"]["hashed"]["table"]
    mehpt = hashed["mehpt"]
    chunks_per_way = mehpt["l2p_entries"] * (2 if mehpt["stealing"] else 1)
    rows = []
    for chunk in mehpt["chunk_sizes"]:
        way = chunks_per_way * chunk
        pages = hashed["ways"] * (way // LINE_BYTES) * PTES_PER_LINE
        rows.append(
            {
                "chunk_bytes": chunk,
                "max_way_bytes": way,
                "map_4k_bytes": pages * 4 * KIB,
                "map_2m_bytes": pages * 2 * MIB,
            }
        )
    return pd.DataFrame(rows)


def _size_name(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024:
            return f"{n:g}{unit}"
        n /= 1024
    return f"{n:g}EB"


#: Table memory a measured way may take in the host (the simulated table's bytes live in host
#: memory): enough for the 1 MiB chunks' 64 MiB limit, not for 8 MiB (512 MiB) or 64 MiB
#: (4 GiB) chunks, which Table III lists as unused in the evaluation.
TABLE2_MEASURE_BYTES = 64 * MIB


def table2_measured(config: str = "mehpt") -> pd.DataFrame:
    """Table II's maximum way size per chunk size measured on real tables: one 4 KiB way of
    ``config``'s ME-HPT is upsized until the table moves on to a larger chunk size (see
    ``xlat.api.hpt_way_limits``). ``max_way_bytes`` is NaN where the limit lies beyond
    ``TABLE2_MEASURE_BYTES``; ``ended_by`` says why."""
    limits = xlat.api.hpt_way_limits(config, max_bytes=TABLE2_MEASURE_BYTES)
    frame = pd.DataFrame(limits)
    frame["max_way_bytes"] = frame["max_way_bytes"].astype(float)
    return frame


def _analyse_table2(df: pd.DataFrame) -> Analysis:
    table = table2(tomllib.loads(xlat.resolve_config("mehpt")))
    measured = table2_measured("mehpt").set_index("chunk_bytes")
    values = {}
    undefined = {}
    for row in table.itertuples(index=False):
        tag = _size_name(row.chunk_bytes)
        values[f"table2_way_{tag}"] = row.max_way_bytes / MIB
        values[f"table2_map4k_{tag}"] = row.map_4k_bytes / (1 << 30)
        values[f"table2_map2m_{tag}"] = row.map_2m_bytes / (1 << 40)
        real = measured.loc[row.chunk_bytes, "max_way_bytes"]
        values[f"table2_way_measured_{tag}"] = real / MIB
        if not math.isfinite(real):
            undefined[f"table2_way_measured_{tag}"] = (
                f"not grown: a {_size_name(row.max_way_bytes)} way of table memory exceeds the "
                f"{_size_name(TABLE2_MEASURE_BYTES)} a measurement may hold in host memory "
                "(Table III: chunk size unused in the evaluation)"
            )
    shown = pd.DataFrame(
        {
            "chunk": [_size_name(c) for c in table["chunk_bytes"]],
            "max way (formula)": [_size_name(b) for b in table["max_way_bytes"]],
            "max way (real table)": [
                _size_name(b) if math.isfinite(b) else "n/a (not grown)"
                for b in measured.loc[table["chunk_bytes"], "max_way_bytes"]
            ],
            "real = formula": [
                bool(m == f) if math.isfinite(m) else "n/a"
                for m, f in zip(
                    measured.loc[table["chunk_bytes"], "max_way_bytes"], table["max_way_bytes"]
                )
            ],
            "growth ended by": list(measured.loc[table["chunk_bytes"], "ended_by"]),
            "map 4 KiB pages": [_size_name(b) for b in table["map_4k_bytes"]],
            "map 2 MiB pages": [_size_name(b) for b in table["map_2m_bytes"]],
        }
    )
    fig = plots.grouped_bars(
        pd.DataFrame(
            {
                "status": "ok",
                "workload": [_size_name(c) for c in table["chunk_bytes"]] * 2,
                "label": ["4 KiB pages"] * len(table) + ["2 MiB pages"] * len(table),
                "GiB": list(table["map_4k_bytes"] / (1 << 30))
                + list(table["map_2m_bytes"] / (1 << 30)),
            }
        ),
        "GiB",
        geomean=False,
        ylabel="max mapping space (GiB, log scale)",
        title="Table II: mapping space of a 3-way ME-HPT per chunk size",
        logy=True,
    )
    ok = _ok(df)
    way_bytes = hpt(ok, "4k", "way_bytes").map(lambda w: max(w) if w else 0)
    return Analysis(
        figures=[("Table II as bars: maximum total HPT mapping space per chunk size.", fig)],
        values=values,
        undefined=undefined,
        tables=[
            (
                "Table II (ours): maximum way size from the formula (L2P entries with stealing "
                "x chunk) and from a real ME-HPT way upsized until the table moved to the next "
                "chunk size; mapping space from the formula.",
                shown,
            ),
            (
                "Largest 4 KiB way of the GUPS run (bytes).",
                pd.DataFrame({"workload": ok["workload"], "max way bytes": way_bytes}),
            ),
        ],
    )


# --------------------------------------------------------------------------------------------
# Fig 8: maximum contiguous allocation, ECPT vs ME-HPT
# --------------------------------------------------------------------------------------------

HPT_SYSTEMS = {
    "ECPT": System("ecpt", NOTHP),
    "ECPT THP": System("ecpt", THP),
    "ME-HPT": System("mehpt", NOTHP),
    "ME-HPT THP": System("mehpt", THP),
}


NO_4K_TABLE = "no 4 KiB table (every page it mapped is a 2 MiB page, and a size's table is "
NO_4K_TABLE += "created on its first mapping)"


def _only_largest_grow(df: pd.DataFrame, _scale: str) -> str | None:
    """The cause of mehpt-fig8's tiny mark: no application but GUPS and SysBench grows its
    4 KiB table past the initial way, so ME-HPT's largest block equals ECPT's on them."""
    ok = _ok(df)
    contig = _pivot(ok, hpt(ok, "4k", "max_contiguous_bytes").astype(float))
    others = contig.drop(index=LARGEST, errors="ignore")
    grew = sorted(others.index[others["ME-HPT"] != others["ECPT"]])
    if not grew:
        return None
    return f"ME-HPT's largest block differs from ECPT's on {', '.join(grew)} too"


def _analyse_fig8(df: pd.DataFrame) -> Analysis:
    ok = _ok(df)
    contig = _pivot(ok, hpt(ok, "4k", "max_contiguous_bytes").astype(float) / KIB)
    contig = contig.reindex(columns=list(HPT_SYSTEMS))
    # 0 bytes means no 4 KiB table (a table allocates at least one 8 KiB way): undefined.
    contig = contig.where(contig > 0)
    reduction = {
        "": 1 - contig["ME-HPT"] / contig["ECPT"],
        "_thp": 1 - contig["ME-HPT THP"] / contig["ECPT THP"],
    }
    values, notes, undefined = {}, [], {}
    unfinished = _unfinished(df)
    for key, series in reduction.items():
        mean, note = _mean_of_defined(series, NO_4K_TABLE, unfinished)
        values[f"fig8_reduction{key}_avg"] = mean
        notes.append(f"  Fig 8 reduction{' with THP' if key else ''}: {note}.")
        if not math.isfinite(mean):
            undefined[f"fig8_reduction{key}_avg"] = "no application has a 4 KiB table"
    for workload in ("gups", "sysbench-mem"):
        if workload in contig.index:
            tag = workload.split("-")[0]
            values[f"fig8_ecpt_kb_{tag}"] = float(contig.loc[workload, "ECPT"])
            values[f"fig8_mehpt_kb_{tag}"] = float(contig.loc[workload, "ME-HPT"])
    fig = plots.grouped_bars(
        _long(contig, "contig_kib"),
        "contig_kib",
        summary="mean",
        ylabel="max contiguous allocation (KiB, log)",
        title="Maximum contiguous allocation of the 4 KiB HPTs",
        logy=True,
    )
    table = contig.assign(
        **{"reduction": reduction[""], "reduction THP": reduction["_thp"]}
    ).reset_index()
    return Analysis(
        figures=[("Fig 8: max contiguous allocation for the 4 KiB HPTs (KiB).", fig)],
        values=values,
        undefined=undefined,
        summary="\n".join(notes),
        tables=[("Max contiguous allocation (KiB) and ME-HPT's reduction.", _na(table))],
    )


# --------------------------------------------------------------------------------------------
# Fig 9: speed-up over Radix without THP
# --------------------------------------------------------------------------------------------

FIG9_SYSTEMS = {"Radix": System("mehpt-radix", NOTHP), "Radix THP": System("mehpt-radix", THP)}
FIG9_SYSTEMS |= HPT_SYSTEMS


def _first_touch(workloads: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict:
    """The workloads with their memory mapped by first-touch faults during the run."""
    return {
        scale: {name: {**params, "populate": False} for name, params in by_name.items()}
        for scale, by_name in workloads.items()
    }


def _fig9_mark_cause(df: pd.DataFrame, scale: str) -> str | None:
    """The causes of mehpt-fig9's marks. Tiny: ME-HPT is no faster than ECPT on SysBench
    (within 0.5%). Quick: a graph kernel gains at least as much as GUPS."""
    ok = _ok(df)
    cycles = _pivot(ok, ok["stats.summary.cycles"].astype(float))
    gain = cycles["ECPT"] / cycles["ME-HPT"]
    if scale == "tiny":
        sysbench = float(gain["sysbench-mem"])
        if abs(sysbench - 1) < 0.005:
            return None
        return f"ME-HPT is {sysbench:.4f}x ECPT on SysBench (the mark needs within 0.5% of 1x)"
    graphs = gain.drop(index=[*LARGEST, "mummer"], errors="ignore")
    if graphs.max() >= gain["gups"]:
        return None
    return (
        f"no graph kernel gains as much as GUPS ({gain['gups']:.3f}x; the best, "
        f"{graphs.idxmax()}, {graphs.max():.3f}x)"
    )


def _analyse_fig9(df: pd.DataFrame) -> Analysis:
    ok = _ok(df)
    cycles = _pivot(ok, ok["stats.summary.cycles"].astype(float))
    speedup = cycles.rdiv(cycles["Radix"], axis=0)

    def over(a: str, b: str) -> float:
        return _gmean(cycles[b] / cycles[a])

    values = {
        "fig9_mehpt_over_ecpt": over("ME-HPT", "ECPT"),
        "fig9_mehpt_over_ecpt_thp": over("ME-HPT THP", "ECPT THP"),
        "fig9_mehpt_over_radix": over("ME-HPT", "Radix"),
        "fig9_mehpt_over_radix_thp": over("ME-HPT THP", "Radix THP"),
    }
    fig = plots.grouped_bars(
        ok,
        "stats.summary.cycles",
        baseline="Radix",
        normalize="inverse",
        ylabel="speed-up over Radix (no THP)",
        title="Speed-up of ME-HPT, ECPT and Radix over Radix without THP",
    )
    alloc = _pivot(ok, hpt(ok, "total", "alloc_cycles").astype(float))
    table = speedup.add_prefix("speed-up ").join(alloc.add_prefix("HPT alloc cycles "))
    return Analysis(
        figures=[("Fig 9: speed-up over Radix without THP.", fig)],
        values=values,
        tables=[("Speed-up and page-table allocation cycles per workload.", table.reset_index())],
    )


def _fig9_direction(df: pd.DataFrame, values: Mapping[str, float]) -> bool:
    """ME-HPT over ECPT (no THP): faster on average, and most on GUPS and SysBench."""
    ok = _ok(df)
    cycles = _pivot(ok, ok["stats.summary.cycles"].astype(float))
    gain = cycles["ECPT"] / cycles["ME-HPT"]
    return ascending(1.0, values["fig9_mehpt_over_ecpt"], strict=True) and _largest_lead(gain)


# --------------------------------------------------------------------------------------------
# Fig 9 sensitivity: the speed-ups against the fault cost and the footprint
# --------------------------------------------------------------------------------------------

#: ``os.minor_fault_cycles`` values swept: the presets' 5000 (a serialising minor fault), a
#: tenth of it, and 0 (the fault's own cost left out; only the page-table work is charged).
FIG9S_FAULT_CYCLES = (0, 500, 5000)
FIG9S_DESIGNS = {
    "Radix": System("mehpt-radix", NOTHP),
    "ECPT": System("ecpt", NOTHP),
    "ME-HPT": System("mehpt", NOTHP),
}
FIG9S_SYSTEMS = {
    f"{name} f={cycles}": System(sys.preset, {**sys.overrides, "os.minor_fault_cycles": cycles})
    for cycles in FIG9S_FAULT_CYCLES
    for name, sys in FIG9S_DESIGNS.items()
}


def fig9s_workloads(scale: str) -> dict[str, dict]:
    """GUPS (the paper's largest ways) at two footprints: the scale's own and a 16x smaller
    one, with first-touch faults in the measured window as in Fig 9."""
    big = WORKLOADS[scale]["gups"]["table_bytes"]
    return {
        f"gups@{_size_name(b)}": {"table_bytes": b, "populate": False, **_threads(scale, "gups")}
        for b in (big // 16, big)
    }


def _analyse_fig9s(df: pd.DataFrame) -> Analysis:
    ok = _ok(df)
    parts = ok["label"].str.extract(r"^(?P<design>.+) f=(?P<fault>\d+)$")
    frame = pd.DataFrame(
        {
            "footprint": ok["workload"].str.split("@").str[1],
            "fault": parts["fault"].astype(int),
            "design": parts["design"],
            "cycles": ok["stats.summary.cycles"].astype(float),
            # The run's cycles are its elapsed time, over all its cores; the page-table work
            # is charged to each faulting core, so its share is of every core's cycles.
            "core_cycles": ok["stats.summary.cycles"].astype(float)
            * ok["config.sim.cores"].astype(float),
            "pt_cycles": ok["stats.os.faults.pt_alloc_cycles"].astype(float)
            + ok["stats.os.faults.pt_rehash_cycles"].astype(float),
            "faults": ok["stats.os.faults.minor"].astype(float),
        }
    )
    cycles = frame.pivot_table(
        index=["footprint", "fault"], columns="design", values="cycles", aggfunc="mean"
    )
    pt = frame.pivot_table(
        index=["footprint", "fault"], columns="design", values="pt_cycles", aggfunc="mean"
    )
    core_cycles = frame.pivot_table(
        index=["footprint", "fault"], columns="design", values="core_cycles", aggfunc="mean"
    )
    table = pd.DataFrame(
        {
            "ME-HPT / ECPT": cycles["ECPT"] / cycles["ME-HPT"],
            "ME-HPT / Radix": cycles["Radix"] / cycles["ME-HPT"],
            "ECPT / Radix": cycles["Radix"] / cycles["ECPT"],
            "ECPT PT work (% of cycles)": 100 * pt["ECPT"] / core_cycles["ECPT"],
            "ME-HPT PT work (% of cycles)": 100 * pt["ME-HPT"] / core_cycles["ME-HPT"],
        }
    )
    size_of = dict(
        zip(frame["footprint"], ok["config.workload.table_bytes"].astype(int), strict=False)
    )
    footprints = sorted(table.index.get_level_values(0).unique(), key=size_of.__getitem__)
    table = table.reindex(footprints, level=0)
    best = table["ME-HPT / ECPT"].max()
    best_radix = table["ME-HPT / Radix"].max()
    rows = []
    for (footprint, fault), row in table.iterrows():
        rows.append(
            f"  {footprint:>8} {fault:>6}  {row['ME-HPT / ECPT']:>13.4f}  "
            f"{row['ME-HPT / Radix']:>14.4f}  {row['ECPT PT work (% of cycles)']:>10.2f}%"
            f"  {row['ME-HPT PT work (% of cycles)']:>10.2f}%"
        )
    summary = "\n".join(
        [
            "  Fig 9 sensitivity (GUPS, no THP, first-touch faults in the window): speed-ups "
            "against os.minor_fault_cycles (f) and the footprint; the paper: ME-HPT/ECPT 1.09, "
            "ME-HPT/Radix 1.23.",
            f"  {'GUPS':>8} {'f':>6}  {'ME-HPT/ECPT':>13}  {'ME-HPT/Radix':>14}  "
            f"{'ECPT PT':>11}  {'ME-HPT PT':>11}",
            *rows,
            _fig9s_sentence(table),
        ]
    )
    values = {
        "fig9s_mehpt_over_ecpt_max": float(best),
        "fig9s_mehpt_over_radix_max": float(best_radix),
    }
    long = table.reset_index()
    long["workload"] = long["footprint"] + " f=" + long["fault"].astype(str)
    long = long.melt(
        id_vars="workload",
        value_vars=["ME-HPT / ECPT", "ME-HPT / Radix", "ECPT / Radix"],
        var_name="label",
        value_name="speedup",
    )
    long["status"] = "ok"
    fig = plots.grouped_bars(
        long,
        "speedup",
        geomean=False,
        ylabel="speed-up",
        title="Fig 9 sensitivity: GUPS speed-ups by fault cost and footprint",
    )
    return Analysis(
        figures=[("Fig 9 sensitivity: speed-ups by os.minor_fault_cycles and footprint.", fig)],
        values=values,
        tables=[
            ("Speed-ups and page-table work per fault cost and footprint.", table.reset_index())
        ],
        summary=summary,
    )


def _fig9s_sentence(table: pd.DataFrame) -> str:
    """What the sensitivity table says about the paper's 1.09x and 1.23x, from its numbers."""
    gain = table["ME-HPT / ECPT"]
    radix = table["ME-HPT / Radix"]
    preset = gain.xs(max(FIG9S_FAULT_CYCLES), level=1)
    reach = gain[gain >= 1.09]
    parts = [
        f"  At the presets' fault cost (f={max(FIG9S_FAULT_CYCLES)}) ME-HPT/ECPT is "
        + ", ".join(f"{v:.3f} ({fp})" for fp, v in preset.items())
        + " (paper 1.09). The gain comes from the page-table work ECPT pays and ME-HPT does "
        "not (allocation, §III, plus rehashing): it is larger with cheaper faults than at the "
        "presets' cost, and larger on the larger footprint, whose largest way is larger."
    ]
    if len(reach):
        where = ", ".join(f"{fp} f={f}" for fp, f in reach.index)
        cheapest = max(f for _, f in reach.index)
        parts.append(
            f" It reaches 1.09 only at {where}: with os.minor_fault_cycles at most {cheapest}, "
            f"against the presets' {max(FIG9S_FAULT_CYCLES)} for a serialising minor fault."
        )
    else:
        parts.append(
            f" It stays below 1.09 at every fault cost and footprint here (at most "
            f"{gain.max():.3f})."
        )
    if radix.max() < 1.0:
        parts.append(
            f" ME-HPT is never faster than Radix here (at most {radix.max():.3f}; paper "
            "1.23): at these footprints radix PTEs mostly hit in the caches and PWCs, so "
            "hashed walks are not shorter, and cheaper faults only expose ME-HPT's own "
            "table work; the 1.23 cannot come from this model at these sizes."
        )
    else:
        parts.append(f" ME-HPT/Radix reaches {radix.max():.3f} (paper 1.23).")
    return "".join(parts)


def _fig9s_direction(df: pd.DataFrame, values: Mapping[str, float]) -> bool:
    """ME-HPT is faster than ECPT at every fault cost and footprint, and its gain at each
    cheaper fault cost is at least its gain at the presets' (the largest swept)."""
    ok = _ok(df)
    parts = ok["label"].str.extract(r"^(?P<design>.+) f=(?P<fault>\d+)$")
    frame = pd.DataFrame(
        {
            "footprint": ok["workload"],
            "fault": parts["fault"].astype(int),
            "design": parts["design"],
            "cycles": ok["stats.summary.cycles"].astype(float),
        }
    )
    cycles = frame.pivot_table(index=["footprint", "fault"], columns="design", values="cycles")
    gain = cycles["ECPT"] / cycles["ME-HPT"]
    # Never slower; strictly faster on the larger footprint. The smaller one may not grow its
    # tables at all at tiny scale, so both designs do the same work (the same walks and
    # page-table DRAM reads), and their cycles differ only by where their tables sit in DRAM:
    # the data reads' queueing at the banks and bus moves by a few thousand cycles between the
    # two (tiny, 1 MB, f=500: 235,666 vs 233,356 queue cycles; 0.17% of the run the other way).
    # The checks on it allow that much.
    size_of = dict(zip(ok["workload"], ok["config.workload.table_bytes"].astype(int), strict=False))
    largest = max(gain.index.get_level_values(0), key=size_of.__getitem__)

    def slack(footprint: str) -> float:
        return 1e-9 if footprint == largest else 0.005

    if not all(ascending(1.0, g, slack=slack(fp)) for (fp, _), g in gain.items()):
        return False
    if not all(ascending(1.0, g, strict=True) for g in gain.loc[largest]):
        return False
    # Against the presets' cost only: between the two cheapest costs the gain need not grow
    # (at paper scale, eight threads faulting at once, 4 GB gives 1.236 at 0 and 1.275 at 500).
    for footprint in gain.index.get_level_values(0).unique():
        by_fault = gain.loc[footprint]
        presets = by_fault[max(FIG9S_FAULT_CYCLES)]
        if not all(ascending(presets, g, slack=slack(footprint)) for g in by_fault):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Fig 10: page-table memory saved by ME-HPT over ECPT, in-place vs per-way
# --------------------------------------------------------------------------------------------

IN_PLACE_ONLY = {"schemes.hashed.table.mehpt.per_way": False}
FIG10_SYSTEMS = {
    "ECPT": System("ecpt", NOTHP),
    "ME-HPT in-place": System("mehpt", NOTHP | IN_PLACE_ONLY),
    "ME-HPT": System("mehpt", NOTHP),
    "ECPT THP": System("ecpt", THP),
    "ME-HPT in-place THP": System("mehpt", THP | IN_PLACE_ONLY),
    "ME-HPT THP": System("mehpt", THP),
}


def _no_thp_table_grows(df: pd.DataFrame, _scale: str) -> str | None:
    """The cause of mehpt-fig10's tiny mark: with THP no hashed table is ever upsized."""
    ok = _ok(df)
    thp = ok["label"].str.endswith(" THP")
    upsizes = hpt(ok[thp], "total", "upsizes").fillna(0)
    if upsizes.sum() == 0:
        return None
    grew = sorted(set(ok[thp].loc[upsizes > 0, "workload"]))
    return f"with THP the tables of {', '.join(grew)} grow"


def _analyse_fig10(df: pd.DataFrame) -> Analysis:
    ok = _ok(df)
    peak = _pivot(ok, hpt(ok, "total", "peak_bytes").astype(float) / MIB)
    rows, values, notes = [], {}, []
    in_place_saved = total_saved = 0.0
    for suffix, thp in (("", ""), ("_thp", " THP")):
        ecpt, in_place, full = (peak[f"{s}{thp}"] for s in ("ECPT", "ME-HPT in-place", "ME-HPT"))
        saved = 1 - full / ecpt
        in_place_part = (ecpt - in_place) / ecpt
        per_way_part = (in_place - full) / ecpt
        mean, note = _mean_of_defined(saved, "no hashed table at all", _unfinished(df))
        values[f"fig10_saving{suffix}_avg"] = mean
        values[f"fig10_saved_mb{suffix}_avg"] = _mean_of_defined(ecpt - full, "")[0]
        notes.append(f"  Fig 10 saving{thp or ' without THP'}: {note}.")
        in_place_saved += float((ecpt - in_place).sum())
        total_saved += float((ecpt - full).sum())
        for workload in peak.index:
            for part, value in (("in-place", in_place_part), ("per-way", per_way_part)):
                rows.append(
                    {
                        "status": "ok",
                        "workload": workload,
                        "label": f"{part}{thp}",
                        "fraction": float(value[workload]),
                    }
                )
    # In-place resizing's share of all the bytes saved (applications without and with THP
    # together, as the paper states one range for both).
    values["fig10_in_place_share"] = in_place_saved / total_saved if total_saved else math.nan
    parts = pd.DataFrame(rows)
    wide = parts.pivot_table(index=["workload"], columns="label", values="fraction")
    fig = plots.stacked_bars(
        _fig10_frame(parts),
        {"in-place": "in-place", "per-way": "per-way"},
        hue="label",
        normalize=False,
        ylabel="page-table memory saved over ECPT (fraction)",
        title="Page-table memory saved by ME-HPT over ECPT",
    )
    table = peak.add_prefix("peak MiB ").join(wide.add_prefix("saved: ")).reset_index()
    return Analysis(
        figures=[("Fig 10: page-table memory saved over ECPT, by technique.", fig)],
        values=values,
        summary="\n".join(notes),
        tables=[("Peak page-table memory (MiB) and the fractions saved.", _na(table))],
    )


def _fig10_frame(parts: pd.DataFrame) -> pd.DataFrame:
    """One row per (workload, THP or not) with the in-place and per-way fractions as columns."""
    parts = parts.assign(
        thp=parts["label"].str.endswith(" THP").map({True: "THP", False: "no THP"}),
        part=parts["label"].str.replace(" THP", "", regex=False),
    )
    wide = parts.pivot_table(index=["workload", "thp"], columns="part", values="fraction")
    wide = wide.reset_index().rename(columns={"thp": "label"})
    wide["status"] = "ok"
    return wide


# --------------------------------------------------------------------------------------------
# Figs 11-14: upsizes per way, final way sizes, entries moved per upsize, L2P entries used
# --------------------------------------------------------------------------------------------


def _analyse_fig11_14(df: pd.DataFrame) -> Analysis:
    ok = _ok(df)
    # A run that never mapped a 4 KiB page (GUPS, SysBench with THP) has no 4 KiB table:
    # no upsizes and no bytes (the paper's tables exist from the start, at 8 KiB a way).
    upsizes = hpt(ok, "4k", "upsizes")
    way_bytes = hpt(ok, "4k", "way_bytes")
    ways = max(len(u) for u in upsizes if isinstance(u, list))
    # A run with no 4 KiB table reports empty lists.
    # No table: undefined (NaN, shown "n/a"), not 0 upsizes or a 0-byte way.
    per_way = pd.DataFrame(
        {
            f"way {i}": [float(u[i]) if isinstance(u, list) and u else math.nan for u in upsizes]
            for i in range(ways)
        },
        index=ok.index,
    )
    sizes = pd.DataFrame(
        {
            f"way {i} KiB": [
                w[i] / KIB if isinstance(w, list) and w else math.nan for w in way_bytes
            ]
            for i in range(ways)
        },
        index=ok.index,
    )
    rehashed = hpt(ok, "4k", "upsize_entries_rehashed").astype(float)
    moved = hpt(ok, "4k", "upsize_entries_moved").astype(float) / rehashed.where(rehashed > 0)
    l2p = sum(hpt(ok, size, "l2p_entries_peak").fillna(0).astype(float) for size in SIZES)
    runs = pd.concat(
        [ok[["workload", "label"]], per_way, sizes, moved.rename("moved"), l2p.rename("l2p")],
        axis=1,
    )
    nothp = runs[runs["label"] == "ME-HPT"].set_index("workload")
    values = {f"fig11_upsizes_way{i}_avg": float(nothp[f"way {i}"].mean()) for i in range(ways)}
    values["fig11_upsizes_max"] = float(nothp[[f"way {i}" for i in range(ways)]].max().max())
    values["fig13_moved_fraction_avg"] = float(runs["moved"].mean())  # NaN-free: skips no-upsize
    values["fig14_l2p_entries_avg"] = float(runs["l2p"].mean())
    thp = runs[runs["label"] == "ME-HPT THP"].set_index("workload")
    undefined = {}
    for workload in ("gups", "sysbench-mem"):
        if workload in nothp.index:
            tag = workload.split("-")[0]
            values[f"fig12_way_kb_{tag}"] = float(nothp.loc[workload, list(sizes)].max())
            values[f"fig12_way_kb_{tag}_thp"] = float(thp.loc[workload, list(sizes)].max())
            if not math.isfinite(values[f"fig12_way_kb_{tag}_thp"]):
                undefined[f"fig12_way_kb_{tag}_thp"] = (
                    f"{PAPER_NAMES[workload]} with THP has {NO_4K_TABLE}; the paper's tables "
                    "exist from the start, at 8 KB a way"
                )
            values[f"fig14_l2p_entries_{tag}"] = float(nothp.loc[workload, "l2p"])
    # §VII-E2/E4 name MUMmer's "most" ways (0.5 MB: the median) and the L2P range 11 (TC) to
    # 195 (MUMmer).
    if "mummer" in nothp.index:
        values["fig12_way_kb_mummer_most"] = float(nothp.loc["mummer", list(sizes)].median())
    for workload in ("mummer", "tc"):
        if workload in nothp.index:
            values[f"fig14_l2p_entries_{workload}"] = float(nothp.loc[workload, "l2p"])
    figures = []
    for caption, columns, ylabel, log in (
        ("Fig 11: upsizes per way of the 4 KiB ME-HPT.", list(per_way.columns), "upsizes", False),
        ("Fig 12: final size of each way (KiB).", list(sizes.columns), "way size (KiB)", True),
    ):
        long = runs.melt(id_vars=["workload", "label"], value_vars=columns, var_name="way")
        long = long.dropna(subset=["value"])  # no 4 KiB table: an n/a mark (n/a in the table)
        # One series per system and way, named alike in both figures ("ME-HPT way 0"), each
        # system's ways side by side.
        way = long["way"].str.replace(" KiB", "", regex=False)
        order = [f"{system} way {i}" for system in ME_HPT_SYSTEMS for i in range(ways)]
        long["label"] = pd.Categorical(long["label"] + " " + way, categories=order)
        long = long.sort_values("label", kind="stable").assign(
            label=lambda t: t["label"].astype(str)
        )
        long["status"] = "ok"
        fig = plots.grouped_bars(
            long, "value", summary="mean", ylabel=ylabel, title=caption, logy=log
        )
        figures.append((caption, fig))
    for caption, column, ylabel in (
        ("Fig 13: fraction of entries moved per upsize (4 KiB).", "moved", "fraction moved"),
        ("Fig 14: L2P table entries used.", "l2p", "L2P entries"),
    ):
        frame = runs.dropna(subset=[column]).assign(status="ok")
        figures.append((caption, plots.grouped_bars(frame, column, summary="mean", ylabel=ylabel)))
    return Analysis(
        figures=figures,
        values=values,
        undefined=undefined,
        tables=[
            (
                "Per run: upsizes and final size per way, fraction moved, L2P entries (n/a: "
                "no 4 KiB table, or no upsize to measure a fraction on).",
                _na(runs),
            )
        ],
    )


def _fig11_14_direction(df: pd.DataFrame, values: Mapping[str, float]) -> bool:
    """No THP: GUPS and SysBench have the largest 4 KiB ways; about half the entries move."""
    ok = _ok(df)
    nothp = ok[ok["label"] == "ME-HPT"]
    largest_way = hpt(nothp, "4k", "way_bytes").map(lambda w: max(w) if w else 0)
    largest_way.index = nothp["workload"]
    return _largest_lead(largest_way) and ascending(0.4, values["fig13_moved_fraction_avg"], 0.6)


ME_HPT_SYSTEMS = {"ME-HPT": System("mehpt", NOTHP), "ME-HPT THP": System("mehpt", THP)}


# --------------------------------------------------------------------------------------------
# Fig 15: small inputs, 8 KiB + 1 MiB chunks vs 1 MiB only
# --------------------------------------------------------------------------------------------

ONE_MIB_ONLY = {"schemes.hashed.table.mehpt.chunk_sizes": [1 << 20, 8 << 20, 64 << 20]}
FIG15_SYSTEMS = {
    "ME-HPT 1MB": System("mehpt", NOTHP | ONE_MIB_ONLY),
    "ME-HPT 1MB+8KB": System("mehpt", NOTHP),
}
#: Graph scales standing for the paper's 1K, 10K and 100K nodes (Kronecker graphs have 2^s).
FIG15_SCALES = {"1K": 10, "10K": 13, "100K": 17}


def fig15_workloads(scale: str) -> dict[str, dict]:
    kernels = {"tiny": ("bfs",)}.get(scale, GRAPH_KERNELS)
    return {
        f"{kernel}@{n}": {"scale": s, **_threads(scale, kernel)}
        for kernel in kernels
        for n, s in FIG15_SCALES.items()
    }


def _analyse_fig15(df: pd.DataFrame) -> Analysis:
    ok = _ok(df)
    ways = hpt(ok, "4k", "way_bytes").map(lambda w: sum(w) / len(w) / KIB)
    frame = pd.DataFrame(
        {
            "nodes": ok["workload"].str.split("@").str[1],
            "label": ok["label"],
            "way_kib": ways,
        }
    )
    avg = frame.pivot_table(index="nodes", columns="label", values="way_kib", aggfunc="mean")
    avg = avg.reindex([n for n in FIG15_SCALES if n in avg.index])
    values = {f"fig15_way_kb_{n}": float(avg.loc[n, "ME-HPT 1MB+8KB"]) for n in avg.index}
    values |= {f"fig15_way_kb_1mb_{n}": float(avg.loc[n, "ME-HPT 1MB"]) for n in avg.index}
    fig = plots.grouped_bars(
        _long(avg.rename_axis("workload"), "way_kib"),
        "way_kib",
        geomean=False,
        ylabel="average 4 KiB HPT way (KiB, log)",
        title="Average way size on small graphs",
        logy=True,
    )
    return Analysis(
        figures=[("Fig 15: average 4 KiB way size over the graph kernels, per graph size.", fig)],
        values=values,
        tables=[("Average 4 KiB way size (KiB) per graph size.", avg.reset_index())],
    )


# --------------------------------------------------------------------------------------------
# Fig 16: cuckoo re-insertions per insertion or rehash
# --------------------------------------------------------------------------------------------


def _analyse_fig16(df: pd.DataFrame) -> Analysis:
    ok = _ok(df)
    ok = ok[ok["label"] == "ME-HPT"]
    per_app = {}
    for index, row in ok.iterrows():
        counts = None
        for size in SIZES:
            h = hpt(ok.loc[[index]], size, "reinsertions").iloc[0]
            if isinstance(h, list):
                counts = h if counts is None else [a + b for a, b in zip(counts, h)]
        total = sum(counts)
        per_app[row["workload"]] = [c / total for c in counts]
    dist = pd.DataFrame(per_app).T
    hist = dist.mean()
    mean_per_app = dist.apply(lambda p: sum(i * p.iloc[i] for i in range(len(p))), axis=1)
    buckets = [str(i) for i in range(len(hist) - 1)] + [f"{len(hist) - 1}+"]
    long = pd.DataFrame(
        {"status": "ok", "workload": buckets, "label": "ME-HPT", "probability": list(hist)}
    )
    fig = plots.grouped_bars(
        long,
        "probability",
        geomean=False,
        ylabel="probability",
        title="Cuckoo re-insertions per insertion or rehash",
    )
    fig.axes[0].set_xlabel("re-insertions")
    table = dist.set_axis(buckets, axis=1).assign(mean=mean_per_app).reset_index()
    return Analysis(
        figures=[("Fig 16: distribution of re-insertions per placement (ME-HPT).", fig)],
        values={
            "fig16_p_none": float(hist.iloc[0]),
            "fig16_mean": float(mean_per_app.mean()),
        },
        tables=[("Per application: distribution of re-insertions (16+ counted as 16).", table)],
    )


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------


def _memory_reproduction(**kwargs: Any) -> Reproduction:
    """A page-table-memory reproduction: footprint mapped at build, no warm-up."""
    return register(
        Reproduction(
            paper=PAPER,
            references=MEMORY_REFERENCES,
            overrides=MEMORY_OVERRIDES,
            scale_overrides=SCALE_OVERRIDES,
            expected_failure=_hpt_found_no_contiguous_block,
            **{"workloads": WORKLOADS, **kwargs},
        )
    )


_memory_reproduction(
    id="mehpt-table1",
    figure="Table I",
    title="contiguous and total page-table memory, radix vs ECPT, without and with THP",
    systems=TABLE1_SYSTEMS,
    analyse=_analyse_table1,
    direction="ECPT takes more page-table memory than a radix tree, without and with THP "
    "(paper: 2.4x and 2.3x the radix tree's, GeoMean)",
    direction_check=lambda df, v: (
        ascending(1.0, v["table1_ecpt_over_radix_geomean"], strict=True)
        and ascending(1.0, v["table1_ecpt_over_radix_thp_geomean"], strict=True)
    ),
    notes=NOTES_COMMON + " Radix memory is the tree's bytes at the end of the run; ECPT's is the "
    "peak of the HPTs (old and new tables coexist during a resize). The paper's total column "
    "(MB) is compared with ours in MiB; GeoMeans are over the applications we run.",
)

_memory_reproduction(
    id="mehpt-table2",
    figure="Table II",
    title="maximum way size and mapping space per chunk size",
    systems={"ME-HPT": System("mehpt", NOTHP)},
    workloads={scale: {"gups": WORKLOADS[scale]["gups"]} for scale in WORKLOADS},
    analyse=_analyse_table2,
    direction="Larger chunks map more, and 1 MiB chunks let a 3-way ME-HPT map the paper's "
    "64 GB footprints with 4 KiB pages (paper: 0.75 GB, 96 GB, 768 GB, 6 TB for 8 KB to 64 MB "
    "chunks)",
    direction_check=lambda df, v: (
        ascending(*(v[f"table2_map4k_{c}"] for c in ("8KB", "1MB", "8MB", "64MB")), strict=True)
        and ascending(64.0, v["table2_map4k_1MB"])
        # The real tables stop where the formula says, for every chunk size they were grown to.
        and v["table2_way_measured_8KB"] == v["table2_way_8KB"]
        and v["table2_way_measured_1MB"] == v["table2_way_1MB"]
    ),
    notes="The formula uses the mehpt preset's resolved config (L2P entries per subtable, "
    "stealing, chunk sizes, ways) and the 64-byte, 8-PTE line: its ratios must be exactly 1. "
    "The maximum way is also measured: one 4 KiB way of a real ME-HPT with that config is "
    "upsized (real chunks from a buddy allocator, real L2P entries) until the table moves on "
    "to the next chunk size; it stops at exactly the formula's size for the 8 KiB and 1 MiB "
    "chunks the paper's evaluation uses. 8 MiB and 64 MiB chunks would need 512 MiB and 4 GiB "
    "of table memory held in the host, so they are shown as n/a. Way size in MiB, mapping "
    "space with 4 KiB pages in GiB and with 2 MiB pages in TiB.",
)

_memory_reproduction(
    id="mehpt-fig8",
    figure="Fig 8",
    title="maximum contiguous allocation of the 4 KiB HPTs, ECPT vs ME-HPT",
    systems=HPT_SYSTEMS,
    analyse=_analyse_fig8,
    direction="Without THP, ME-HPT at least halves ECPT's largest contiguous allocation on "
    "average (paper: -92%; 64 MB -> 1 MB for GUPS and SysBench)",
    direction_check=lambda df, v: ascending(0.5, v["fig8_reduction_avg"]),
    # Holds at quick scale (-95%); the tiny test asserts this mark instead of a tolerance, as
    # a tolerance wide enough for tiny's -14% would no longer say "halves".
    direction_not_shown={
        "tiny": "only GUPS and SysBench grow their 4 KiB tables past the initial 8 KiB way, "
        "which is also one ME-HPT chunk, so the other applications show no reduction"
    },
    not_shown_cause=_only_largest_grow,
    notes=NOTES_COMMON + " ECPT's largest block is one whole way, so it grows with the footprint "
    "(64 MiB in the paper at 64 GB; about 4 MiB for our 4 GiB GUPS), while ME-HPT's stays at one "
    "chunk (1 MiB, or 8 KiB for small tables): the average reduction depends on our scale. The "
    "reduction is averaged arithmetically over the applications.",
)

register(
    Reproduction(
        id="mehpt-fig9",
        paper=PAPER,
        expected_failure=_hpt_found_no_contiguous_block,
        scale_overrides=SCALE_OVERRIDES,
        figure="Fig 9",
        title="speed-up of ME-HPT, ECPT and Radix over Radix without THP",
        systems=FIG9_SYSTEMS,
        workloads=_first_touch(WORKLOADS),
        references={"tiny": 20_000, "quick": 5_000_000, "full": 100_000_000, "paper": 100_000_000},
        analyse=_analyse_fig9,
        direction="Without THP, ME-HPT is faster than ECPT (paper: 1.09x), most of all on GUPS "
        "and SysBench, whose ways are largest",
        direction_check=_fig9_direction,
        direction_not_shown={
            "tiny": "with 16 MiB GUPS and SysBench the tables grow to a few 8 KiB chunks; once "
            "rehashing is charged, ME-HPT's one-way-at-a-time in-place upsizes cost SysBench "
            "about what ECPT's whole-table upsizes do (1.0013x), so only GUPS gains much",
            "quick": "with rehashing charged, the graph kernels' first-touch faults grow their "
            "tables in the window too, and bc (1.028x) and dfs (1.021x) gain more than GUPS "
            "(1.019x); SysBench leads (1.050x) and the geomean is 1.02x",
        },
        not_shown_cause=_fig9_mark_cause,
        notes=NOTES_COMMON + " ME-HPT's speed-up over ECPT comes from page-table allocation cost "
        "(§III: 8 KiB 5K cycles ... 64 MiB 120M cycles at 0.7 FMFI) and from moving fewer "
        "entries per resize (schemes.hashed.table.rehash_cycles_per_entry, an estimate), both "
        "paid when faults grow the tables. So these runs map memory by first-touch faults "
        "inside the measured window "
        "(populate = false, no warm-up), like the paper's first 550M instructions; our runs "
        "are far shorter, so fewer upsizes (and no 64 MiB allocation) happen. Speed-ups are "
        "geometric means. A page fault is a precise exception (os.minor_fault_cycles = 5000, "
        "serialising the core), and first-touch GUPS faults on most of its references, so faults "
        "take most of its cycles and ECPT's table allocations (about 64M cycles at quick scale) "
        "about 1%. By §III's own costs an allocation stays small next to the faults that fill "
        "it at any footprint (a 64 MiB way costs 120M cycles and holds about 5M 4 KiB pages at "
        "0.6 occupancy: 25 cycles a page, plus its smaller predecessors, against a 5000-cycle "
        "fault), so at that fault cost we cannot derive the paper's 1.09 from them; "
        "mehpt-fig9-sensitivity shows the fault costs at which it appears. We keep its "
        "direction: ME-HPT is faster than ECPT, "
        "most for GUPS and SysBench, whose ways are largest. Over Radix, hashed walks are not "
        "shorter at our footprints (a PMD-CWC miss, on most walks of the large footprints, "
        "probes all 3 ways of each size in parallel, against radix PTEs that mostly hit in the "
        "caches), unlike the paper's 1.23 at 9-64 GB.",
        overrides={"sim.warmup_instructions": 0},
    )
)

register(
    Reproduction(
        id="mehpt-fig9-sensitivity",
        paper=PAPER,
        expected_failure=_hpt_found_no_contiguous_block,
        scale_overrides=SCALE_OVERRIDES,
        figure="Fig 9 (sensitivity)",
        title="ME-HPT and ECPT speed-ups against the fault cost and the footprint (GUPS)",
        systems=FIG9S_SYSTEMS,
        workloads={scale: fig9s_workloads(scale) for scale in WORKLOADS},
        references={"tiny": 20_000, "quick": 2_000_000, "full": 20_000_000, "paper": 20_000_000},
        analyse=_analyse_fig9s,
        direction="ME-HPT is faster than ECPT at every fault cost and footprint, more so with "
        "cheaper faults than the presets' 5000 cycles (paper: 1.09x over ECPT at its, "
        "unstated, fault cost)",
        direction_check=_fig9s_direction,
        notes=NOTES_COMMON + " A companion to mehpt-fig9: where the paper's 1.09x and 1.23x "
        "can and cannot come from in our model. GUPS only (the paper's largest ways), at the "
        "scale's footprint and one 16x smaller, with os.minor_fault_cycles = 0, 500 and 5000 "
        "(the presets' value). 'PT work' is the page-table allocation (§III) and rehash cycles "
        "charged to faults, as a share of the cycles of all the run's cores (elapsed cycles "
        "times cores: at paper scale eight threads fault at once). On the smaller footprint, "
        "where at tiny scale neither table grows past its first size (the same walks and table "
        "reads), the direction allows ME-HPT 0.5% of slack: the data reads' DRAM queueing moves "
        "by that much between two placements of the tables.",
        overrides={"sim.warmup_instructions": 0},
    )
)

_memory_reproduction(
    id="mehpt-fig10",
    figure="Fig 10",
    title="page-table memory saved by ME-HPT over ECPT: in-place vs per-way resizing",
    systems=FIG10_SYSTEMS,
    analyse=_analyse_fig10,
    direction="ME-HPT saves page-table memory over ECPT without and with THP (paper: 43% and "
    "41%), in-place resizing more of it than per-way resizing (paper: 75-80%)",
    direction_check=lambda df, v: (
        ascending(0.0, v["fig10_saving_avg"], strict=True)
        and ascending(0.0, v["fig10_saving_thp_avg"], strict=True)
        and ascending(0.5, v["fig10_in_place_share"], strict=True)
    ),
    # Holds at quick scale; the tiny test asserts this mark, since with THP nothing is saved
    # at all there (no tolerance turns 0 into a saving).
    direction_not_shown={
        "tiny": "with THP no table grows (GUPS and SysBench map 16 MiB in 2 MiB pages), so "
        "ME-HPT has nothing to save over ECPT"
    },
    not_shown_cause=_no_thp_table_grows,
    notes=NOTES_COMMON + " Memory is each design's peak HPT bytes. 'ME-HPT in-place' is ME-HPT "
    "with per-way resizing off: ECPT minus it is in-place resizing's part, it minus full ME-HPT "
    "is per-way resizing's. The paper's in-place share is stated as a range (75-80%) for both "
    "configurations; we compare the share of all bytes saved (no THP and THP together) with its "
    "midpoint. Absolute savings (MB) scale with the footprint.",
)

_memory_reproduction(
    id="mehpt-fig11-14",
    figure="Figs 11-14",
    title="ME-HPT characterisation: upsizes per way, way sizes, entries moved, L2P entries",
    systems=ME_HPT_SYSTEMS,
    analyse=_analyse_fig11_14,
    direction="Without THP, GUPS and SysBench grow the largest 4 KiB ways (paper: 64 MB), and "
    "an upsize moves about half of the entries (paper: close to 0.5)",
    direction_check=_fig11_14_direction,
    notes=NOTES_COMMON + " Upsizes per way, way sizes and L2P entries grow with the footprint "
    "(a doubling per upsize: about 4 fewer upsizes for a 16x smaller GUPS). The fraction moved "
    "is averaged over the runs that upsized their 4 KiB table; L2P entries are the peak over "
    "all page sizes, averaged over applications without and with THP. It is the run's peak: "
    "GUPS and SysBench reach 192 (64 entries a way, stealing the 1 GiB part) with 8 KiB chunks, "
    "just before their ways move to 1 MiB chunks, whereas the paper's 192 are 1 MiB chunks of "
    "64 MiB ways.",
)

_memory_reproduction(
    id="mehpt-fig15",
    figure="Fig 15",
    title="small inputs: average 4 KiB way with 8 KiB + 1 MiB chunks vs 1 MiB only",
    systems=FIG15_SYSTEMS,
    workloads={scale: fig15_workloads(scale) for scale in WORKLOADS},
    analyse=_analyse_fig15,
    direction="On 1K- and 10K-node graphs, 8 KiB + 1 MiB chunks keep the average 4 KiB way at "
    "most an eighth of the 1 MiB-only design's (paper: 16 KB and 128 KB vs 1 MB)",
    direction_check=lambda df, v: all(
        ascending(v[f"fig15_way_kb_{n}"], v[f"fig15_way_kb_1mb_{n}"] / 8) for n in ("1K", "10K")
    ),
    notes="The paper's graphs have 1K, 10K and 100K nodes; Kronecker graphs have 2^scale "
    "vertices, so we use scales 10, 13 and 17 (1K, 8K and 131K vertices), averaged over the "
    "eight graph kernels (tiny: bfs only). Without THP (the paper: THP makes no difference). "
    "Our CSR graphs take about 60x less memory per vertex than GraphBIG's, so at the same vertex "
    "count our ways stay far smaller (at the initial 8 KiB up to 10K vertices); the 1 MiB-only "
    "design's one-chunk ways are the same as the paper's.",
)

_memory_reproduction(
    id="mehpt-fig16",
    figure="Fig 16",
    title="cuckoo re-insertions per ME-HPT insertion or rehash",
    systems={"ME-HPT": System("mehpt", NOTHP)},
    analyse=_analyse_fig16,
    direction="Most insertions need no re-insertion, and fewer than one is needed on average "
    "(paper: probability 0.64 of none, 0.7 on average)",
    direction_check=lambda df, v: (
        ascending(0.5, v["fig16_p_none"]) and ascending(v["fig16_mean"], 1.0, strict=True)
    ),
    notes=NOTES_COMMON + " The distribution counts every placement (new lines and lines "
    "rehashed by resizes) of all page sizes; 16 or more re-insertions are counted as 16.",
)
