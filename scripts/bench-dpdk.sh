#!/usr/bin/env bash
# DPDK backend against UDP and busy-polled TCP on this host, in one run:
# dnbench over --backend dpdk (memif) and --backend udp (loopback), and
# tcpbench (TCP_NODELAY, busy-polled non-blocking reads), latency and
# bandwidth from 0 B to 4 MiB. Each measurement runs ROUNDS times,
# alternating the three, and the best round counts (the machine is shared;
# the best is the least disturbed). Prints Markdown tables.
#   scripts/bench-dpdk.sh [ITERS] [ROUNDS]
# DPDK_FRAME=N sets the DPDK backend's frame size (DN_DPDK_FRAME).
set -euo pipefail
cd "$(dirname "$0")/.."
iters="${1:-2000}"
rounds="${2:-3}"
cargo build --release --locked --bins >/dev/null 2>&1 || cargo build --release --bins >/dev/null
bin=target/release
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json() { grep -o '\[{.*}\]' | tail -1; }
frame=()
if [ -n "${DPDK_FRAME:-}" ]; then frame=(-x "DN_DPDK_FRAME=$DPDK_FRAME"); fi
dpdk() { timeout 900 $bin/dnrun -n 2 --backend dpdk "${frame[@]}" -- $bin/dnbench "$@"; }
udp() { timeout 900 $bin/dnrun -n 2 --backend udp -- $bin/dnbench "$@"; }
tcp() { timeout 900 $bin/tcpbench "$@"; }
# A long warm-up: the first size measured otherwise absorbs the start-up
# (caches, the peer still leaving its start-up sleeps).
warm=2000
for r in $(seq "$rounds"); do
  for b in dpdk udp tcp; do
    $b latency --sizes 0:4M --iters "$iters" --warmup $warm --json | json > "$tmp/${b}_lat.$r"
  done
  for b in dpdk udp tcp; do
    $b bw --sizes 1:4M --iters 30 --json | json > "$tmp/${b}_bw.$r"
  done
done
python3 - "$tmp" "$rounds" <<'PY'
import sys
d, rounds = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, "scripts")
from bench_best import best as best_of, lower as lo, higher as hi
best = lambda name, key, better: best_of(d, rounds, name, key, better)
L = {b: best(f"{b}_lat", "latency_us", lo) for b in ("dpdk", "udp", "tcp")}
B = {b: best(f"{b}_bw", "MBps", hi) for b in ("dpdk", "udp", "tcp")}
print("| size | DPDK (us) | UDP (us) | TCP busy-poll (us) | DPDK vs TCP | lowest | DPDK bw (MB/s) | UDP bw (MB/s) | TCP bw (MB/s) | DPDK / TCP bw |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s in sorted(L["dpdk"]):
    if not all(s in L[b] for b in L):
        continue
    lat = {b: L[b][s]["latency_us"] for b in L}
    low = min(lat, key=lat.get).upper()
    row = f"| {s} | {lat['dpdk']:.2f} ({L['dpdk'][s]['protocol']}) | {lat['udp']:.2f} | {lat['tcp']:.2f} | {(lat['dpdk'] / lat['tcp'] - 1) * 100:+.0f}% | {low} |"
    if all(s in B[b] for b in B):
        bw = {b: B[b][s]["MBps"] for b in B}
        row += f" {bw['dpdk']:.0f} | {bw['udp']:.0f} | {bw['tcp']:.0f} | {bw['dpdk'] / bw['tcp']:.2f} |"
    else:
        row += " | | | |"
    print(row)
PY
