#!/usr/bin/env bash
# Set up (venv + pip install '.[test]') and run every test and check of the project:
# Rust formatting, clippy, Rust tests, Python lint/format, pytest.
#
#   bash scripts/test.sh
#
# This is exactly what CI runs (.ci/run).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh test

# rustfmt and clippy are rustup components that a minimal toolchain may lack.
if command -v rustup >/dev/null 2>&1; then
    cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
    cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
fi

step() {
    echo
    echo "==> $*"
}

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy"
# With the features that only add code (the DRAM call log), so their code is checked too.
cargo clippy --workspace --all-targets --features xlat/dram-log -- -D warnings

step "cargo test"
cargo test --workspace

step "ruff"
.venv/bin/ruff check python tests
.venv/bin/ruff format --check python tests

step "pytest"
.venv/bin/python -m pytest -q tests
