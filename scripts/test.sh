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
echo "== adi without its optional backends (no driver, no DPDK)"
cargo clippy -p adi --no-default-features --lib --locked -- -D warnings
if cargo tree -p adi --no-default-features -e normal --prefix none --locked | grep -Eq '^(driver|dpdk-sys|hw-model) '; then
    echo "adi --no-default-features still depends on a backend's crate:" >&2
    cargo tree -p adi --no-default-features -e normal --locked >&2
    exit 1
fi
echo "== cargo build (binaries used by the end-to-end tests)"
cargo build --workspace --bins --locked
echo "== cargo test"
cargo test --workspace --locked
echo "== all tests passed"
