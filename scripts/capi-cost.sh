#!/usr/bin/env bash
# What the C ABI adds over the Rust API: the instructions a C MPI_Send and
# MPI_Recv execute outside the Rust call they make (mpi::staged::direct::send,
# mpi::staged::direct::recv), per call, in a 0-byte C ping-pong on the simulator.
#
# callgrind counts only between entry to MPI_Send (MPI_Recv) and its return,
# with counting switched off again inside direct::send (direct::recv): nested
# --toggle-collect, so the figure is exactly the C layer's own instructions,
# whatever the compiler inlined where.
#
#   scripts/capi-cost.sh [ITERATIONS]      (default 5000; needs valgrind)
set -euo pipefail
iters=${1:-5000}
case $iters in '' | *[!0-9]*) echo "usage: scripts/capi-cost.sh [ITERATIONS]" >&2; exit 2 ;; esac
[ "$iters" -gt 0 ] || { echo "ITERATIONS must be at least 1" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "capi-cost.sh needs valgrind (apt-get install valgrind)" >&2; exit 1; }
cd "$(dirname "$0")/.."
work=target/capi-cost
rm -rf "$work" && mkdir -p "$work"
scripts/install.sh "$work/prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log" >&2; exit 1; }
"$work/prefix/bin/mpicc" -O2 -g -o "$work/pingpong" sim-tests/c/pingpong.c
for call in Send Recv; do
    rust=$(echo "$call" | tr A-Z a-z)
    "$work/prefix/bin/dnrun" -n 2 --nodes 2 --timeout 900 -- valgrind --tool=callgrind \
        --toggle-collect="MPI_$call" --toggle-collect="mpi::staged::direct::$rust*" \
        --callgrind-out-file="$work/$rust.%q{DN_RANK}" "$work/pingpong" "$iters" > "$work/$rust.log" 2>&1 \
        || { cat "$work/$rust.log" >&2; exit 1; }
    for rank in 0 1; do
        total=$(grep -E '^summary:' "$work/$rust.$rank" | awk '{print $2}')
        echo "MPI_$call rank $rank: $((total / iters)) instructions per call over direct::$rust ($total in $iters calls)"
    done
done
