#!/usr/bin/env bash
# Set up (venv + pip install .) and run the main job: GUPS on the x86-64 radix baseline versus a
# perfect TLB, i.e. how much of the run time goes into address translation.
#
#   bash scripts/run.sh                    # results in out/main/
#   XLAT_REFS=20M bash scripts/run.sh      # more references (default 5M: about a minute)
#   bash scripts/run.sh --jobs 2           # extra options go to `xlat compare`
#
# Writes out/main/summary.txt, out/main/compare.json and, per system, out/main/<preset>/
# stats.json + config.toml (the resolved config, to rerun exactly the same system).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh

REFS="${XLAT_REFS:-5000000}"
OUT="out/main"
mkdir -p "$OUT"
.venv/bin/xlat compare \
    --config baseline-radix \
    --config perfect-tlb \
    --workload gups \
    --refs "$REFS" \
    --out "$OUT" \
    "$@"
echo
echo "results: $OUT/summary.txt, $OUT/compare.json, $OUT/<preset>/{stats.json,config.toml}"
