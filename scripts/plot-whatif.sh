#!/usr/bin/env bash
# The simulator's latency and bandwidth curves for the paper's host
# (p4-2003) and the what-if variant with the optimizations seed 004 §8.3
# names (p4-2003-sse2-clflush), in simulated time (deterministic), as a
# Markdown table and an SVG (docs/whatif-p4.svg).
#   scripts/plot-whatif.sh [OUT.svg]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/whatif-p4.svg}"
cargo build --release --locked --bins >/dev/null 2>&1 || cargo build --release --bins >/dev/null
bin=target/release
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json() { grep -o '\[{.*}\]' | tail -1; }
specs=()
for p in p4-2003 p4-2003-sse2-clflush; do
  $bin/dnrun -n 2 --nodes 2 --profile $p -- $bin/dnbench latency --sizes 0:1M --iters 20 --warmup 2 --json | json > "$tmp/$p.lat"
  $bin/dnrun -n 2 --nodes 2 --profile $p -- $bin/dnbench bw --sizes 1:1M --iters 10 --json | json > "$tmp/$p.bw"
  specs+=("$p=$tmp/$p.lat:$tmp/$p.bw")
done
$bin/dnplot --out "$out" --title "DIMMnet-2 simulated (MPI, 2 nodes): the paper's host and its planned optimizations" "${specs[@]}"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
load = lambda n: {r["size"]: r for r in json.load(open(f"{d}/{n}"))}
a, b = load("p4-2003.lat"), load("p4-2003-sse2-clflush.lat")
ab, bb = load("p4-2003.bw"), load("p4-2003-sse2-clflush.bw")
print("| size | p4-2003 latency (us) | sse2-clflush latency (us) | p4-2003 bw (MB/s) | sse2-clflush bw (MB/s) |")
print("|---|---|---|---|---|")
for s in sorted(a):
    bw = f"{ab[s]['MBps']:.1f} | {bb[s]['MBps']:.1f}" if s in ab else " | "
    print(f"| {s} | {a[s]['latency_us']:.2f} | {b[s]['latency_us']:.2f} | {bw} |")
PY
echo "wrote $out" >&2
