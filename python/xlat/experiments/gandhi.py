"""Gandhi et al., Efficient Memory Virtualization (seed 001), Fig 11, native part: the
address-translation overhead of big-memory workloads with 4 KiB, 2 MiB and 1 GiB pages.

The paper defines the overhead of an execution E as ``(T_E - T_ideal) / T_ideal``; on real
hardware it estimates ``T_ideal`` as the 2 MiB run's time minus its page-walk cycles. A simulator
can run the ideal itself: the same system with a perfect TLB (and 2 MiB pages, so the data side
is that of the 2 MiB run). The virtualized bars join when nested paging lands.
"""

from __future__ import annotations

import pandas as pd

from .. import plots
from .registry import Analysis, Reproduction, System, ascending, register

#: Native page-size configurations (Gandhi §VIII: big-memory workloads request their page size
#: explicitly) and the ideal the overheads are measured against.
SYSTEMS = {
    "4K": System("baseline-radix", {"os.thp": "never"}),
    "2M": System("baseline-radix", {"os.thp": "always"}),
    "1G": System("baseline-radix", {"os.thp": "always", "os.hugetlb_1g": True}),
    "ideal": System("perfect-tlb", {"os.thp": "always"}),
}

#: graph500 is BFS on a Kronecker graph (our `bfs`); memcached is our `kvstore`; GUPS as is.
WORKLOADS = {
    "tiny": {"bfs": {"scale": 15}, "kvstore": {"keys": 1 << 14}, "gups": {"table_bytes": 1 << 26}},
    "quick": {"bfs": {"scale": 20}, "kvstore": {}, "gups": {"table_bytes": 1 << 32}},
    "full": {"bfs": {"scale": 24}, "kvstore": {"keys": 1 << 26}, "gups": {"table_bytes": 1 << 35}},
    # The paper's big-memory datasets are 60-75 GB; kvstore has no footprint key (its largest
    # key count here), GUPS at ME-HPT's 64 GB.
    "paper": {
        "bfs": {"footprint": "64GB"},
        "kvstore": {"keys": 1 << 27},
        "gups": {"footprint": "64GiB"},
    },
}


def _analyse(df: pd.DataFrame) -> Analysis:
    ok = df[df["status"] == "ok"]
    cycles = ok.pivot_table(index="workload", columns="label", values="stats.summary.cycles")
    overhead = cycles[["4K", "2M", "1G"]].div(cycles["ideal"], axis=0) - 1.0
    long = overhead.reset_index().melt(id_vars="workload", var_name="label", value_name="overhead")
    long["status"] = "ok"
    fig = plots.grouped_bars(
        long,
        "overhead",
        summary="mean",
        ylabel="address-translation overhead",
        title="Native translation overhead by page size",
    )
    values = {
        f"overhead_{size}_{workload}": float(overhead.loc[workload, size])
        for workload in overhead.index
        for size in ("4K", "2M", "1G")
    }
    return Analysis(
        figures=[("Fig 11 (native bars): (T - T_ideal) / T_ideal per page size.", fig)],
        values=values,
        tables=[("Overhead per workload and page size.", overhead.reset_index())],
    )


#: How far the 1 GiB overhead may sit above the 2 MiB one and still count as "no worse". Once
#: 2 MiB pages have brought the overhead near zero (bfs, kvstore) 1 GiB pages have nothing
#: left to remove, and which physical frames the data lands in moves the cycles by a few
#: thousandths (kvstore at tiny scale: 1.7% vs 1.5%).
SAME_OVERHEAD = 0.005


def _falls_with_page_size(df: pd.DataFrame, values: dict[str, float]) -> bool:
    """On every workload: 1G <= 2M (within SAME_OVERHEAD) < 4K."""
    return all(
        ascending(values[f"overhead_1G_{w}"], values[f"overhead_2M_{w}"], slack=SAME_OVERHEAD)
        and ascending(values[f"overhead_2M_{w}"], values[f"overhead_4K_{w}"], strict=True)
        for w in df["workload"].unique()
    )


register(
    Reproduction(
        id="gandhi-fig11",
        paper="Gandhi et al. (MICRO'14)",
        figure="Fig 11 (native)",
        title="translation overhead with 4 KiB, 2 MiB and 1 GiB pages",
        systems=SYSTEMS,
        workloads=WORKLOADS,
        references={"tiny": 30_000, "quick": 10_000_000, "full": 200_000_000, "paper": 200_000_000},
        analyse=_analyse,
        direction="Translation overhead falls with page size on every workload: 1 GiB <= 2 MiB "
        "< 4 KiB (paper, graph500: 3% < 6% < 28%)",
        direction_check=_falls_with_page_size,
        notes="The paper measures a Sandy Bridge machine (Table VI) running 60-75 GB datasets; "
        "we simulate baseline-radix (Utopia Table 1) on smaller inputs, and take T_ideal from a "
        "perfect-TLB run rather than by subtracting walk cycles. The 1G system maps every large "
        "region with 1 GiB pages where a free 1 GiB block exists (fragmented memory may force "
        "fallbacks, counted in stats.os.faults.huge_1g_fallbacks).",
    )
)
