#!/usr/bin/env bash
# The project's test command: what CI runs (.ci/run) and what you run
# before sending a change. Formatting, lints, and every test of every crate,
# including the MPI programs on the simulator (sim-tests).
set -euo pipefail
cd "$(dirname "$0")/.."

# The DPDK backend's tests need the system's DPDK (scripts/setup.sh). Without
# it they are skipped, and said so here; DN_REQUIRE_DPDK=1 (CI) makes a
# missing DPDK an error instead of a green suite that ran nothing.
if [ -n "${DN_NO_DPDK:-}" ] || ! pkg-config --exists 'libdpdk >= 21.11' 2>/dev/null; then
    if [ -n "${DN_REQUIRE_DPDK:-}" ]; then
        echo "DN_REQUIRE_DPDK is set, but there is no DPDK to build against (DN_NO_DPDK set, or pkg-config finds no libdpdk >= 21.11): run scripts/setup.sh" >&2
        exit 1
    fi
    echo "== no DPDK here: the DPDK backend's tests will be SKIPPED (scripts/setup.sh installs it)"
fi
# CMake, Meson and pkg-config find our install (sim-tests build_systems),
# and Fortran programs build with our mpifort (sim-tests fortran_programs):
# skipped without the tools, an error under DN_REQUIRE_BUILD_TOOLS=1 (CI).
for t in cmake meson ninja pkg-config c++ gfortran; do
    if ! command -v "$t" >/dev/null; then
        if [ -n "${DN_REQUIRE_BUILD_TOOLS:-}" ]; then
            echo "DN_REQUIRE_BUILD_TOOLS is set, but $t is not installed: run scripts/setup.sh" >&2
            exit 1
        fi
        echo "== no $t here: the build-system tests will be SKIPPED (scripts/setup.sh installs it)"
    fi
done
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== adi without its optional backends (no driver, no simulator link, no DPDK)"
cargo clippy -p adi --no-default-features --lib --locked -- -D warnings
if cargo tree -p adi --no-default-features -e normal --prefix none --locked | grep -Eq '^(driver|dpdk-sys|hw-model|simlink) '; then
    echo "adi --no-default-features still depends on a backend's crate:" >&2
    cargo tree -p adi --no-default-features -e normal --locked >&2
    exit 1
fi
echo "== cargo build (binaries used by the end-to-end tests)"
cargo build --workspace --bins --locked
echo "== cargo test"
cargo test --workspace --locked
echo "== all tests passed"
