#!/usr/bin/env bash
# The project's test command: what CI runs (.ci/run) and what you run
# before sending a change. Formatting, lints, and every test of every crate,
# including the MPI programs on the simulator (sim-tests).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo build (binaries used by the end-to-end tests)"
cargo build --workspace --bins --locked
echo "== cargo test"
cargo test --workspace --locked
echo "== all tests passed"
