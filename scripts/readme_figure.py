"""Write the README's figure, docs/img/utopia-fig5.png, and the numbers it is drawn from,
docs/img/utopia-fig5.json, from the main job's utopia-fig5 runs.

    .venv/bin/python scripts/readme_figure.py [OUT]     # OUT: the main job's out/reproduce

Runs (or, after the main job, only re-reads) ``xlat reproduce utopia-fig5 --scale quick`` in
OUT. tests/test_readme_figure.py fails when the kept figure drifts from what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from xlat import experiments
from xlat.experiments import snapshot

ROOT = Path(__file__).resolve().parent.parent
PNG = ROOT / "docs" / "img" / "utopia-fig5.png"
#: The statistics the reproduction's analysis reads.
COLUMNS = (
    "stats.summary.cycles",
    "stats.dram.data.row_conflicts",
    "stats.dram.translation.row_conflicts",
)


def main(argv: list[str]) -> None:
    out = argv[0] if argv else "out/reproduce"
    outcome = experiments.reproduce("utopia-fig5", scale="quick", out=out)
    for path in snapshot.write(outcome, PNG, figure=1, columns=COLUMNS, scale="quick"):
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
