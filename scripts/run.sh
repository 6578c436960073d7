#!/usr/bin/env bash
# Set up (venv + pip install .) and run the main job: every reproduction `xlat reproduce --list`
# names (Utopia Figs 1-6, 9, 11-21 and its TAR cache; Gandhi et al. Figs 11-13, Table II and
# self-ballooning; ME-HPT Tables I-II and Figs 8-16; Mosaic Fig 6 and Tables 3-4; SPARTA Figs 2
# and 4-8), at quick
# scale, each figure drawn in the paper's style with our numbers beside the published ones, and
# one HTML report of it all.
#
#   bash scripts/run.sh                     # out/reproduce/report.html (8 min on an idle 2-core machine, after the build)
#   XLAT_SCALE=tiny bash scripts/run.sh     # seconds: a smoke test of the whole pipeline
#   XLAT_SCALE=full bash scripts/run.sh     # closest to the papers (hours)
#   bash scripts/run.sh --jobs 2            # extra options go to `xlat reproduce`
#
# Re-running resumes: finished simulations are not run again.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh

SCALE="${XLAT_SCALE:-quick}"
OUT="out/reproduce"
.venv/bin/xlat reproduce all --scale "$SCALE" --out "$OUT" "$@"
echo
echo "results: $OUT/report.html (figures + ours-vs-paper tables), $OUT/<id>/ per reproduction"
