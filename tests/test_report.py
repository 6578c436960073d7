"""The HTML report of a sweep (xlat.report): embedded figures decode, tables and failures show,
and a real browser (headless Chromium) renders every figure.

No engine needed: the results are synthetic DataFrames (tests/frames.py).
"""

from __future__ import annotations

import base64
import io
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

import frames
from xlat import plots, report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IMG_DATA = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def embedded_images(page: str) -> list[np.ndarray]:
    """Every embedded figure of ``page``, decoded (fails on anything that is not a PNG)."""
    images = []
    for encoded in IMG_DATA.findall(page):
        data = base64.b64decode(encoded, validate=True)
        assert data.startswith(PNG_SIGNATURE)
        images.append(matplotlib.image.imread(io.BytesIO(data), format="png"))
    return images


def sweep_with_failure() -> pd.DataFrame:
    failed = [frames.failed_row("gups", "l2tlb=6144", 2, "unknown key <mmu.l2tlb.nope>")]
    return frames.results(seeds=(1, 2), failed=failed)


def test_report_embeds_one_decodable_png_per_figure(tmp_path: Path) -> None:
    df = frames.results()
    figures = [
        ("IPC & friends", plots.grouped_bars(df, "ipc")),
        ("MPKI", plots.grouped_bars(df, "l2tlb_mpki", summary="mean")),
    ]
    path = report.write_report(df, tmp_path / "r.html", title="Two figures", figures=figures)
    page = path.read_text(encoding="utf-8")
    images = embedded_images(page)
    assert len(images) == 2 == page.count("<img ")
    for image in images:
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
        assert np.ptp(image[..., :3]) > 0
    assert "<figcaption>IPC &amp; friends</figcaption>" in page
    assert "<figcaption>MPKI</figcaption>" in page


def test_default_figures_for_a_sweep_of_one_numeric_parameter() -> None:
    figures = report.default_figures(sweep_with_failure())
    captions = [caption for caption, _ in figures]
    assert len(figures) == 6
    assert captions[0].startswith("Instructions per cycle")
    assert captions[1].startswith("Speed-up over l2tlb=1536")
    assert captions[2].startswith("L2 TLB misses")
    assert captions[3].startswith("Average page-table walk latency")
    assert captions[4].startswith("Page-walk memory references")
    assert captions[5] == "ipc over mmu.l2tlb.unified.entries, one line per workload."
    # The speed-up figure is normalised to the first configuration: its bars are exactly 1.
    speedup = figures[1][1].axes[0]
    first_bars = sorted(speedup.patches, key=lambda p: p.get_x())[::3]
    assert [p.get_height() for p in first_bars] == pytest.approx([1.0] * 4)


def test_default_figures_only_for_statistics_present() -> None:
    df = frames.results(labels=("l2tlb=3072",))[["status", "workload", "label", "seed"]]
    assert report.default_figures(df) == []
    with_ipc = df.assign(**{"stats.summary.ipc": 1.5})
    figures = report.default_figures(with_ipc)
    # One configuration: IPC only, no speed-up, no line (nothing swept).
    assert [caption.split()[0] for caption, _ in figures] == ["Instructions"]


def test_swept_numeric_params_ignores_text_and_constant_params() -> None:
    df = frames.results().assign(**{"param.mmu.scheme": "radix", "param.core.width": 4})
    assert report.swept_numeric_params(df) == [frames.ENTRIES_KEY]


def test_tables_are_rendered_with_formatted_numbers(tmp_path: Path) -> None:
    table = pd.DataFrame({"name": ["a<b", "c"], "count": [1234567, 8], "ratio": [0.123456, 2.5]})
    path = report.write_report(
        frames.results(), tmp_path / "r.html", title="t", figures=[], tables=[("Mine", table)]
    )
    page = path.read_text(encoding="utf-8")
    assert "<caption>Mine</caption>" in page
    assert "<th>name</th><th>count</th><th>ratio</th>" in page
    assert '<td class="text">a&lt;b</td><td>1,234,567</td><td>0.1235</td>' in page
    assert '<td class="text">c</td><td>8</td><td>2.500</td>' in page
    assert "<img" not in page


def test_format_number() -> None:
    assert report.format_number(1234567) == "1,234,567"
    assert report.format_number(np.int64(42)) == "42"
    assert report.format_number(2_000_000.4) == "2,000,000"
    assert report.format_number(1.23456) == "1.235"
    assert report.format_number(0.0) == "0.000"
    assert report.format_number(0.000012) == "1.200e-05"
    assert report.format_number(float("nan")) == "n/a"
    assert report.format_number(None) == "n/a"
    assert report.format_number(np.True_) == "True"
    assert report.format_number("gups") == "gups"


def test_default_table_is_the_mean_per_configuration_and_workload() -> None:
    ((caption, table),) = report.default_tables(sweep_with_failure())
    assert "Mean over seeds" in caption
    assert list(table.columns[:3]) == ["label", "workload", "runs"]
    assert len(table) == 9
    row = table[(table["label"] == "l2tlb=6144") & (table["workload"] == "gups")].iloc[0]
    assert row["runs"] == 2  # the failed third run does not count
    expected = (
        frames.cycles_of("gups", "l2tlb=6144", 1) + frames.cycles_of("gups", "l2tlb=6144", 2)
    ) / 2
    assert row["cycles"] == pytest.approx(expected)


def test_header_and_failed_runs(tmp_path: Path) -> None:
    df = sweep_with_failure()
    path = report.write_report(df, tmp_path / "r.html", title="L2 TLB <size>", figures=[])
    page = path.read_text(encoding="utf-8")
    assert "<title>L2 TLB &lt;size&gt;</title>" in page
    assert "<h1>L2 TLB &lt;size&gt;</h1>" in page
    assert "19 (<span class='ok'>18 ok</span>" in page
    assert "1 failed</span>" in page
    assert "<dt>xlat version</dt>" in page
    assert "<dt>mmu.l2tlb.unified.entries</dt><dd>1536, 3072, 6144</dd>" in page
    assert "<caption>Failed runs (1)</caption>" in page
    assert "gups-l2tlb=6144-2-failed" in page
    assert "unknown key &lt;mmu.l2tlb.nope&gt;" in page


def test_sections_put_each_figure_beside_its_own_table(tmp_path: Path) -> None:
    df = frames.results()
    first = pd.DataFrame({"quantity": ["speed-up"], "ours": [2.121e-4], "paper": [1.3]})
    sections = [
        report.Section("A: Fig 1", [("fig A", plots.grouped_bars(df, "ipc"))], [("tab A", first)]),
        report.Section(
            "B: Fig 2", [("fig B", plots.grouped_bars(df, "ipc"))], [("tab B", first[:0])]
        ),
    ]
    page = report.write_report(df, tmp_path / "r.html", title="t", sections=sections).read_text()
    order = [
        page.index(s)
        for s in (
            "<h2>A: Fig 1",
            "fig A</figcaption>",
            "tab A",
            "<h2>B: Fig 2",
            "fig B</figcaption>",
            "tab B",
        )
    ]
    assert order == sorted(order)
    assert "<h2>Figures</h2>" not in page
    # A table with no rows says so instead of showing a bare header; numbers never wrap.
    assert "(no rows)" in page[page.index("tab B") :]
    assert "white-space: nowrap" in page
    with pytest.raises(ValueError, match="sections"):
        report.write_report(df, tmp_path / "x.html", title="t", sections=sections, figures=[])


def test_unswept_seeds_are_named_not_left_blank(tmp_path: Path) -> None:
    df = frames.results()
    df["seed"] = float("nan")
    page = report.write_report(df, tmp_path / "r.html", title="t", figures=[]).read_text()
    assert "<dt>seeds</dt><dd>each configuration&#x27;s own (not swept)</dd>" in page


def test_no_failed_runs_is_said(tmp_path: Path) -> None:
    path = report.write_report(frames.results(), tmp_path / "r.html", title="t", figures=[])
    assert "No run failed." in path.read_text(encoding="utf-8")


def test_report_main_reads_the_sweep_parquet(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep-l2tlb"
    sweep.mkdir()
    sweep_with_failure().to_parquet(sweep / "results.parquet", index=False)
    path = report.report_main(sweep)
    assert path == sweep / "report.html"
    page = path.read_text(encoding="utf-8")
    assert "<h1>xlat sweep sweep-l2tlb</h1>" in page
    assert len(embedded_images(page)) == 6
    assert "Mean over seeds" in page
    # Written through a temporary file: nothing else is left in the directory.
    assert sorted(p.name for p in sweep.iterdir()) == ["report.html", "results.parquet"]
    other = report.report_main(sweep, out=tmp_path / "elsewhere" / "r.html")
    assert other.is_file()


def test_report_main_without_results_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="results.parquet"):
        report.report_main(tmp_path)


def chromium() -> str:
    """The headless browser (Debian package ``chromium``); its absence is a failure."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("chromium is not installed (apt-get install -y chromium; scripts/setup.sh)")


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    argv = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",  # containers give /dev/shm little room
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        *args,
    ]
    # Headless Chromium in a container now and then dies of a signal while starting (seen
    # here: SIGSEGV before loading anything). That is the browser, not the page: try again,
    # a few times; any other failure is returned at once.
    for _ in range(3):
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
        )
        if result.returncode >= 0:
            break
    return result


def test_report_renders_every_figure_in_headless_chromium(tmp_path: Path) -> None:
    page = report.write_report(sweep_with_failure(), tmp_path / "report.html", title="browser")
    url = page.resolve().as_uri()

    dom = run_chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body, dom.stdout[:500]
    ok = re.search(r'data-images-ok="(\d+)"', body.group(0))
    total = re.search(r'data-images="(\d+)"', body.group(0))
    assert ok and total, body.group(0)
    assert int(ok.group(1)) == int(total.group(1)) == 6

    shot = tmp_path / "shot.png"
    result = run_chromium(
        tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", "--hide-scrollbars", url
    )
    assert result.returncode == 0, result.stderr
    assert shot.read_bytes().startswith(PNG_SIGNATURE)
    image = matplotlib.image.imread(io.BytesIO(shot.read_bytes()), format="png")
    assert image.shape[:2] == (2000, 1280)
    # Not blank: the heading, the tables and the bars put many distinct colours on the page.
    colours = np.unique((image[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50
