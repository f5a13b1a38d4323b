#!/usr/bin/env bash
# Side-by-side, in one run: dnbench over the UDP backend on loopback and the
# plain TCP baseline (tcpbench: TCP_NODELAY, busy-polled non-blocking reads;
# and blocking reads for reference), latency and bandwidth over the same
# sizes. Each measurement runs ROUNDS times, alternating UDP and TCP, and the
# best round counts (the machine is shared; the best is the least disturbed).
# Prints a Markdown table.
#   scripts/bench-udp-vs-tcp.sh [ITERS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
iters="${1:-5000}"
rounds="${2:-3}"
cargo build --release --locked --bins >/dev/null 2>&1 || cargo build --release --bins >/dev/null
bin=target/release
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json() { grep -o '\[{.*}\]' | tail -1; }
for r in $(seq "$rounds"); do
  $bin/dnrun -n 2 --backend udp -- $bin/dnbench latency --sizes 0:4M --iters "$iters" --warmup 200 --json | json > "$tmp/udp_lat.$r"
  $bin/tcpbench latency --sizes 0:4M --iters "$iters" --warmup 200 --json | json > "$tmp/tcp_lat.$r"
  $bin/tcpbench latency --sizes 0:4M --iters "$iters" --warmup 200 --blocking --json | json > "$tmp/tcpb_lat.$r"
  $bin/dnrun -n 2 --backend udp -- $bin/dnbench bw --sizes 1:4M --iters 30 --json | json > "$tmp/udp_bw.$r"
  $bin/tcpbench bw --sizes 1:4M --iters 30 --json | json > "$tmp/tcp_bw.$r"
done
python3 - "$tmp" "$rounds" <<'PY'
import json, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def best(name, key, better):
    out = {}
    for r in range(1, rounds + 1):
        for row in json.load(open(f"{d}/{name}.{r}")):
            s = row["size"]
            if s not in out or better(row[key], out[s][key]):
                out[s] = row
    return out
lo = lambda a, b: a < b
hi = lambda a, b: a > b
ul, tl, bl = best("udp_lat", "latency_us", lo), best("tcp_lat", "latency_us", lo), best("tcpb_lat", "latency_us", lo)
ub, tb = best("udp_bw", "MBps", hi), best("tcp_bw", "MBps", hi)
print("| size | UDP latency (us) | TCP busy-poll (us) | TCP blocking (us) | UDP / TCP | UDP bw (MB/s) | TCP bw (MB/s) | UDP / TCP |")
print("|---|---|---|---|---|---|---|---|")
for s in sorted(ul):
    u, t, b = ul[s]["latency_us"], tl[s]["latency_us"], bl[s]["latency_us"]
    bw = f"{ub[s]['MBps']:.0f} | {tb[s]['MBps']:.0f} | {ub[s]['MBps']/tb[s]['MBps']*100:.0f}%" if s in ub and s in tb else " | | "
    print(f"| {s} | {u:.2f} ({ul[s]['protocol']}) | {t:.2f} | {b:.2f} | {u/t*100:.0f}% | {bw} |")
PY
