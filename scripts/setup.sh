#!/usr/bin/env bash
# Create the virtual environment .venv in the repository (if it is not there yet) and install
# xlat into it, building the Rust engine (xlat._core) with maturin through pip.
#
#   bash scripts/setup.sh          # the package
#   bash scripts/setup.sh test     # the package and its test tools (pytest, ruff)
#
# Needs only python3 (>= 3.9, with venv and pip) and a Rust toolchain (cargo). PYTHON=... picks
# another interpreter. Re-running is cheap: the venv is reused and cargo rebuilds incrementally.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"
EXTRAS="${1:-}"

die() {
    echo "setup: error: $*" >&2
    exit 1
}

command -v "$PYTHON" >/dev/null 2>&1 || die "'$PYTHON' not found: install Python >= 3.9 (or set PYTHON=...)"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' \
    || die "xlat needs Python >= 3.9; '$PYTHON' is $("$PYTHON" -V 2>&1)"
command -v cargo >/dev/null 2>&1 \
    || die "cargo not found: install a Rust toolchain (https://rustup.rs) and retry"

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV" \
        || die "could not create a venv (on Debian/Ubuntu: apt-get install python3-venv)"
fi

# System programs the test suite drives for real: valgrind (lackey trace import runs a real
# program under it) and Chromium (the HTML report is rendered headless). Installed if missing.
if [ "$EXTRAS" = "test" ]; then
    missing=()
    command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
    command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
        || missing+=(chromium)
    if [ "${#missing[@]}" -gt 0 ]; then
        if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
            echo "setup: installing ${missing[*]} (used by the tests)"
            apt-get update -qq \
                && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
                || die "could not install ${missing[*]} with apt-get"
        else
            die "the tests need ${missing[*]}: install them (e.g. sudo apt-get install ${missing[*]}) and retry"
        fi
    fi
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1
target="."
if [ -n "$EXTRAS" ]; then
    target=".[$EXTRAS]"
fi
echo "setup: building the engine and installing xlat${EXTRAS:+ [$EXTRAS]} into .venv" \
    "(the first build takes a few minutes)"
"$VENV/bin/python" -m pip install --quiet "$target"
echo "setup: ready: $("$VENV/bin/xlat" --version)"
