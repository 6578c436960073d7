"""Utopia (Kanellopoulos et al., MICRO'23), §8.4 Figs 18-20: how Utopia's components behave.

* **Fig 18**: hit rates of the SF cache and the TAR cache (Table 1: 2 KB each), and the pages
  migrated per kilo-instruction into a RestSeg (PTE-based migration, §5.5:
  ``stats.os.promoted``) and out of one (a page evicted to the FlexSeg to make room:
  ``stats.os.frames.restsegs[i].stats.evictions``).
* **Fig 19**: utilisation of the 4 KiB RestSeg over epochs of instructions, from an empty
  RestSeg (the share of its slots holding a page at the end of each epoch:
  ``stats.epochs[k].restseg_used`` over ``stats.os.frames.restsegs[i].stats.slots``).
* **Fig 20**: translation reuse of the pages that left the RestSeg: how many of their
  translations a RestSeg walk resolved while they were there, binned 0 / 1-5 / 6-20 / >20,
  for pages that entered by migration and by page fault
  (``stats.os.frames.restsegs[i].stats.reuse``).

Two kinds of run, both of Utopia (preset ``utopia``) on Table 2's workloads:

* **Utopia** (Figs 18 and 20): fast-forwarded through the set-up, whose first touches map
  the pages (page-fault-based allocation, §5.5), so the RestSeg is full when the measured
  kernel starts: the steady state, with migrations driven by costly FlexSeg walks.
* **Utopia (from empty)** (Fig 19): every record simulated from the first, no page mapped
  before its first touch (``sim.fast_forward = 0``), so the page-fault-based allocation fills
  the RestSeg as the program touches memory.

Both map pages at their first touch (``workload.populate = false``), but for GUPS and DLRM,
whose generators have no initialisation loop: they keep ``populate``, which maps their tables
before the first record as the programs' initialisation would (``POPULATED``).

The RestSeg holds a small part of the data, as in the paper (1 GB of RestSegs against 8-33 GB
of data): at tiny and quick scale the 4 KiB RestSeg shrinks with the footprints (1 MiB at
tiny, 32 MiB at quick, 8-way: a 16-way set's tags fit a 64-byte line only from 4096 sets on);
full and paper scale keep Table 1's 512 MB, 16-way.

Counters (``crates/xlat/src/schemes/utopia/rsw.rs``): a RestSeg walk (RSW) starts on every L1
TLB miss, in parallel with the L2 TLB, and looks in each RestSeg in turn until one holds the
page. Each lookup reads the set's SF counter through the SF cache (one SF cache access per
segment looked in); a zero counter ends that segment's lookup (``rsw.sf_filtered``) without a
TAR cache access, so the TAR cache's accesses exclude the requests the SF aborted, as the
paper's Fig 18 does. An L2 TLB hit aborts the RSW before it looks up anything
(``rsw.aborted``), so those requests are excluded too, as in the paper.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from .. import plots
from .registry import SCALES, Analysis, Reproduction, System, ascending, register
from .utopia import PAPER, PAPER_RUN, utopia_workloads

STEADY = "Utopia"
EMPTY = "Utopia (from empty)"
SYSTEMS = {
    STEADY: System("utopia"),
    EMPTY: System("utopia", {"sim.fast_forward": 0}),
}
#: The 4 KiB RestSeg per scale (bytes, ways); the 2 MiB one is Table 1's throughout.
RESTSEG_4K = {
    "tiny": (1 << 20, 8),
    "quick": (32 << 20, 8),
    "full": (512 << 20, 16),
    "paper": (512 << 20, 16),
}
#: Instructions per epoch of Fig 19: the paper's 1M, but at tiny, whose runs are shorter.
EPOCH_INSTRUCTIONS = {"tiny": 50_000, "quick": 1_000_000, "full": 1_000_000, "paper": 1_000_000}
#: Memory references per run. At the paper scale a run ends at 500M instructions
#: (``PAPER_RUN``, §7), the paper's 500 epochs of 1M; its references only cap it.
REFERENCES = {"tiny": 200_000, "quick": 5_000_000, "full": 200_000_000, "paper": 500_000_000}
#: Fig 20's bins of translation reuse.
REUSE_BINS = ("0", "1-5", "6-20", ">20")
#: A RestSeg counts as full at this share of its slots in use.
FULL = 0.95


#: Workloads whose generators have no initialisation loop when ``populate`` is off: their
#: kernels would take a first-touch fault on most references (GUPS's table, DLRM's embedding
#: tables), where the programs initialise them first. They keep ``populate`` (their pages are
#: mapped, by page-fault-based allocation, before the first record), so their RestSeg is full
#: from the first epoch of Fig 19.
POPULATED = ("gups", "dlrm-sls")


def components_workloads(scale: str) -> dict[str, dict]:
    """Table 2's workloads; those of ``POPULATED`` with ``populate = true``."""
    workloads = utopia_workloads(scale)
    for name in POPULATED:
        workloads[name] = {**workloads[name], "populate": True}
    return workloads


def _scale_overrides(scale: str) -> dict:
    """The 4 KiB RestSeg and Fig 19's epochs of ``scale``; at the paper scale also §7's page
    sizes (THP, 90% of the ranges on 4 KiB pages) and 500M instructions (``PAPER_RUN``), as
    the §8 reproductions run."""
    size, ways = RESTSEG_4K[scale]
    return {
        **(PAPER_RUN if scale == "paper" else {}),
        "sim.epoch_instructions": EPOCH_INSTRUCTIONS[scale],
        "schemes.utopia.restsegs": [
            {"bytes": size, "page": "4K", "ways": ways},
            {"bytes": 512 << 20, "page": "2M", "ways": 16},
        ],
    }


def _runs(df: pd.DataFrame, label: str) -> pd.DataFrame:
    ok = df[(df["status"] == "ok") & (df["label"] == label)]
    return ok.set_index("workload")


def _restsegs(run: pd.Series) -> list[dict]:
    return json.loads(run["stats.os.frames.restsegs"])


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    return num / den.where(den > 0)


def components(df: pd.DataFrame) -> pd.DataFrame:
    """Per workload, from the steady-state runs: Fig 18's rates and migrations."""
    runs = _runs(df, STEADY)
    sf = runs["stats.mmu.sf_cache.hits"] + runs["stats.mmu.sf_cache.misses"]
    tar = runs["stats.mmu.tar_cache.hits"] + runs["stats.mmu.tar_cache.misses"]
    kilo = runs["stats.summary.instructions"] / 1000
    promoted = runs["stats.os.promoted"].fillna(0) if "stats.os.promoted" in runs else 0 * kilo
    evicted = runs.apply(lambda r: sum(s["stats"]["evictions"] for s in _restsegs(r)), axis=1)
    # A workload that populates its memory may do so after the measurement began (its region
    # of interest starts at its first record): the evictions of populating are in the
    # counter too. Every measured eviction was made room for by a fault or a migration into
    # the RestSeg, so those bound it (exactly, once populating has filled every set).
    evicted = evicted.clip(upper=runs["stats.os.faults.minor"] + promoted)
    return pd.DataFrame(
        {
            "SF cache hit rate": _ratio(runs["stats.mmu.sf_cache.hits"], sf),
            "TAR cache hit rate": _ratio(runs["stats.mmu.tar_cache.hits"], tar),
            "SF-filtered lookups": _ratio(runs["stats.mmu.rsw.sf_filtered"], sf),
            "migrations to RestSeg per kI": promoted / kilo,
            "migrations from RestSeg per kI": evicted / kilo,
        }
    )


def _utilisation(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    """From the from-empty runs: per epoch and workload, the 4 KiB RestSeg's utilisation
    (empty when the stats have no ``restseg_used``); per workload its utilisation at the end
    of the run, and whether the run touched more 4 KiB pages than it has slots."""
    runs = _runs(df, EMPTY)
    rows, final, overflows = [], {}, {}
    for workload, run in runs.iterrows():
        seg = _restsegs(run)[0]
        slots = seg["stats"]["slots"]
        final[workload] = seg["stats"]["used"] / slots
        faults = run.get("stats.os.faults.4k", math.nan)
        overflows[workload] = bool(faults > slots)
        for k, epoch in enumerate(json.loads(run.get("stats.epochs") or "[]"), 1):
            used = epoch.get("restseg_used")
            if used is None:
                continue
            rows.append(
                {
                    "status": "ok",
                    "workload": workload,
                    "epoch": k,
                    "utilisation": used[0] / slots,
                }
            )
    return pd.DataFrame(rows), pd.Series(final), pd.Series(overflows)


def _reuse(df: pd.DataFrame) -> pd.DataFrame:
    """Per workload and way in ("migrated", "faulted"): pages that left the 4 KiB RestSeg, by
    bin of translation reuse (empty when the stats have no ``reuse``)."""
    rows = []
    for workload, run in _runs(df, STEADY).iterrows():
        reuse = _restsegs(run)[0]["stats"].get("reuse")
        if not reuse:
            continue
        for way, bins in reuse.items():
            rows.append(
                {"workload": workload, "way": way, **{b: bins.get(b, 0) for b in REUSE_BINS}}
            )
    return pd.DataFrame(rows, columns=["workload", "way", *REUSE_BINS])


def _bars(table: pd.DataFrame, columns: dict[str, str], value: str) -> pd.DataFrame:
    """``table``'s per-workload ``columns`` (bar label -> column) in the long form the bar
    plots take: one row per workload and bar, the number under ``value``."""
    return pd.DataFrame(
        [
            {"status": "ok", "workload": w, "label": label, value: table.at[w, column]}
            for w in table.index
            for label, column in columns.items()
        ]
    )


def _analyse(df: pd.DataFrame) -> Analysis:
    table = components(df)
    figures = []
    rates = _bars(
        table, {"SF cache": "SF cache hit rate", "TAR cache": "TAR cache hit rate"}, "hit_rate"
    )
    fig_a = plots.grouped_bars(
        rates,
        "hit_rate",
        summary="mean",
        ylabel="hit rate",
        title="SF and TAR cache hit rates",
        ylim=(0, 1.05),  # linear, as the paper draws rates
    )
    migrations = _bars(
        table,
        {
            "to RestSeg": "migrations to RestSeg per kI",
            "from RestSeg": "migrations from RestSeg per kI",
        },
        "per_ki",
    )
    fig_b = plots.grouped_bars(
        migrations,
        "per_ki",
        summary="mean",
        ylabel="migrations per kilo-instruction",
        title="Migrations to and from the RestSegs",
    )
    figures += [
        ("Fig 18 (left): hit rates of the SF cache and the TAR cache.", fig_a),
        (
            "Fig 18 (right): pages migrated into and out of the RestSegs per kilo-instruction.",
            fig_b,
        ),
    ]
    mig = table["migrations to RestSeg per kI"] + table["migrations from RestSeg per kI"]
    values = {
        "fig18_sf_hit_rate_avg": float(table["SF cache hit rate"].mean()),
        "fig18_tar_hit_rate_avg": float(table["TAR cache hit rate"].mean()),
        "fig18_sf_filtered_avg": float(table["SF-filtered lookups"].mean()),
        "fig18_migrations_pki_avg": float(mig.mean()),
    }
    undefined: dict[str, str] = {}

    epochs, final, overflows = _utilisation(df)
    values["fig19_restseg_full_share"] = float((final[overflows] >= FULL).mean())
    if not overflows.any():
        values["fig19_restseg_full_share"] = math.nan
        undefined["fig19_restseg_full_share"] = (
            "no workload touched more pages than the RestSeg holds"
        )
    if len(epochs):
        fig = plots.lines(
            epochs,
            "epoch",
            "utilisation",
            ylabel="4 KiB RestSeg utilisation",
            title="RestSeg utilisation across epochs (from empty)",
        )
    else:
        # Stats without the per-epoch occupancy: the end-of-run utilisation only.
        fig = plots.grouped_bars(
            pd.DataFrame(
                {"status": "ok", "workload": final.index, "label": EMPTY, "utilisation": final}
            ),
            "utilisation",
            summary="mean",
            ylabel="4 KiB RestSeg utilisation at the end",
            title="RestSeg utilisation at the end of the run (from empty)",
        )
    figures.append(
        (
            f"Fig 19: utilisation of the 4 KiB RestSeg over epochs of "
            f"{'instructions' if len(epochs) else '(end of run only)'}, starting empty.",
            fig,
        )
    )

    reuse = _reuse(df)
    tables = [("Per workload (steady state): Fig 18's quantities.", table.reset_index())]
    for way in ("migrated", "faulted"):
        counts = reuse[reuse["way"] == way].set_index("workload")[list(REUSE_BINS)]
        total = counts.sum(axis=1)
        share = counts[total > 0].div(total[total > 0], axis=0)
        key_prefix = f"fig20_{way}"
        if len(share):
            pooled = counts.sum() / counts.sum().sum()
            values[f"{key_prefix}_reuse0"] = float(pooled["0"])
            values[f"{key_prefix}_reuse_gt5"] = float(pooled["6-20"] + pooled[">20"])
            values[f"{key_prefix}_reuse_gt20"] = float(pooled[">20"])
            how = "migration" if way == "migrated" else "page fault"
            caption = (
                f"Fig 20: pages that entered the 4 KiB RestSeg by {how} and left it, by "
                "translation reuse (share)."
            )
            tables.append((caption, share.reset_index()))
        else:
            for key in ("reuse0", "reuse_gt5", "reuse_gt20"):
                values[f"{key_prefix}_{key}"] = math.nan
                undefined[f"{key_prefix}_{key}"] = (
                    f"no {way} page left the 4 KiB RestSeg"
                    if len(reuse)
                    else "these stats have no translation reuse (restsegs[i].stats.reuse)"
                )
        if way == "migrated" and len(share):
            stack = share.reset_index().assign(status="ok")
            fig = plots.stacked_bars(
                stack,
                {b: b for b in REUSE_BINS},
                normalize=True,
                ylabel="fraction of migrated pages",
                title="Translation reuse of migrated pages before eviction",
            )
            figures.append(("Fig 20: translation reuse of pages migrated into the RestSeg.", fig))
    tables.append(
        (
            "Per workload (from empty): 4 KiB RestSeg utilisation at the end.",
            pd.DataFrame(
                {"utilisation": final, "touched more pages than slots": overflows}
            ).reset_index(names="workload"),
        )
    )
    return Analysis(figures=figures, values=values, tables=tables, undefined=undefined)


def _kmer_fault_evictions(df: pd.DataFrame, _scale: str) -> str | None:
    """The cause of the paper-scale mark: k-mer's first touches of its count table fault into
    full RestSeg sets, each evicting a page to the FlexSeg, at least one per kilo-instruction,
    with almost no PTE-based migration beside them."""
    table = components(df)
    if "kmer" not in table.index:
        return "no k-mer run"
    evicted = float(table.at["kmer", "migrations from RestSeg per kI"])
    promoted = float(table.at["kmer", "migrations to RestSeg per kI"])
    if evicted >= 1.0 and promoted < 0.1 * evicted:
        return None
    return (
        f"k-mer's evictions are {evicted:.2f} per kilo-instruction against {promoted:.2f} "
        "promotions (the mark needs at least 1, mostly from faults)"
    )


def _direction(df: pd.DataFrame, v: dict) -> bool:
    return ascending(1.0, v["fig19_restseg_full_share"]) and ascending(
        v["fig18_migrations_pki_avg"], 0.5, strict=True
    )


register(
    Reproduction(
        id="utopia-fig18-20",
        paper=PAPER,
        figure="Figs 18-20",
        title="SF/TAR cache hit rates, migrations, RestSeg utilisation and translation reuse",
        systems=SYSTEMS,
        workloads={scale: components_workloads(scale) for scale in SCALES},
        references=REFERENCES,
        analyse=_analyse,
        direction="the 4 KiB RestSeg fills up from empty (>= 95% of its slots in use by the end "
        "on every workload that touches more pages than it holds) and Utopia migrates fewer "
        "than 0.5 pages per kilo-instruction to and from the RestSegs on average",
        direction_check=_direction,
        direction_not_shown={
            "paper": "k-mer's counting first touches its 12 GiB count table inside the 500M "
            "measured instructions: 3.73M page faults, each into a full set of the 4 KiB "
            "RestSeg, evict 7.20 pages per kilo-instruction to the FlexSeg (43 PTE-based "
            "migrations beside them), which Fig 18 counts as migrations from the RestSeg; the "
            "mean is 0.88, without k-mer 0.25",
        },
        not_shown_cause=_kmer_fault_evictions,
        # Pages are mapped at their first touch in every run (page-fault-based allocation,
        # §5.5): in the steady-state runs during the fast-forward through the set-up, in the
        # from-empty ones as Fig 19 measures. The steady-state runs warm their TLBs and caches
        # by fast-forward's replay only: the from-empty runs must not warm up (their first
        # epochs are Fig 19's), and a warm-up is set for every run alike.
        overrides={"sim.warmup_instructions": 0, "workload.populate": False},
        scale_overrides={scale: _scale_overrides(scale) for scale in SCALES},
        notes="Utopia only (preset ``utopia``: Table 1's 2 KB SF and TAR caches, migration "
        "thresholds of 15 walks and 31 DRAM references, the PTE counters' maxima), on Table 2's "
        "workloads. Two runs per "
        "workload: 'Utopia' fast-forwards through the set-up (pages mapped at their first "
        "touch, GUPS's and DLRM's tables populated as their initialisation would) and "
        "measures the kernel (Figs 18, 20); 'Utopia (from empty)' simulates every record from "
        "the first with nothing mapped (Fig 19). The 4 KiB RestSeg is 1 MiB at tiny and 32 MiB "
        "at quick (8-way), Table 1's 512 MB (16-way) at full and paper, so that, as in the "
        "paper (1 GB of RestSegs, 8-33 GB of data), it holds a small part of each footprint. "
        "At the paper scale the runs take §7's page sizes (THP, 90% of every region's 2 MB "
        "ranges left to 4 KiB pages) and end at 500M instructions, as the other §8 "
        "reproductions do; the smaller scales keep 4 KiB pages. "
        "Our SF cache is accessed once per RestSeg looked in; the TAR cache once per lookup "
        "the SF did not abort, and an L2 TLB hit aborts the RSW before either, which is the "
        "paper's exclusion of SF-aborted requests and of those that hit the L2 TLB. "
        "A TAR line holds one set's tags and consecutive pages "
        "fall in consecutive sets, so the 32-line TAR cache covers 32 pages: workloads with "
        "spread-out L1 TLB misses miss it. The SF-filtered share counts lookups that end at "
        "an SF count of zero; the paper's 54% also counts requests that hit the L2 TLB. "
        "Migrations to a RestSeg are PTE-based promotions (stats.os.promoted), from it the "
        "evictions to the FlexSeg that faults and promotions cause. Fig 19 plots the share "
        "of slots in use at the end of each epoch (1M instructions; 50k at tiny); a "
        "workload whose run touches fewer pages than the RestSeg has slots cannot fill it, "
        "and the direction leaves it out. Fig 20 bins the pages that left the 4 KiB RestSeg "
        "by the RSW resolutions of their translation while they were in it; the shares pool "
        "the pages of every workload (so the workload that migrates most weighs most: k-mer "
        "at quick scale, whose migrated pages a later migration into their set evicts after "
        "1-5 translations), per-workload shares are in the tables.",
    )
)
