#!/usr/bin/env bash
# The main job: an MPI latency benchmark on a simulated 2-node DIMMnet-2
# cluster with the paper's host profile (seed 004 Table 2).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bins
exec target/release/dnrun -n 2 --nodes 2 -- target/release/dnbench latency --sizes 0:64K "$@"
