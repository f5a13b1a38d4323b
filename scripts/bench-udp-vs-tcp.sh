#!/usr/bin/env bash
# Side-by-side, in one run: dnbench over the UDP backend on loopback and the
# plain TCP baseline (tcpbench: TCP_NODELAY, busy-polled non-blocking reads;
# and blocking reads for reference), latency and bandwidth over the same
# sizes. Each measurement runs ROUNDS times, alternating UDP and TCP, and the
# best round counts (the machine is shared; the best is the least disturbed).
# Prints a Markdown table.
#   scripts/bench-udp-vs-tcp.sh [ITERS] [ROUNDS]
# NET=veth runs both between two network namespaces joined by a veth pair
# (root and iproute2), one process in each, instead of on loopback.
# On loopback a reference nobody here wrote runs too, when Debian's mpich is
# installed (scripts/setup.sh): bench/mpich/mpibench.c (dnbench's pattern)
# built with mpicc.mpich and started by mpiexec.hydra, once over TCP
# (MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp: the network path, comparable) and once
# as it runs by default on one host (shared memory: not a network).
set -euo pipefail
cd "$(dirname "$0")/.."
iters="${1:-5000}"
rounds="${2:-3}"
net="${NET:-loopback}"
cargo build --release --locked --bins >/dev/null 2>&1 || cargo build --release --bins >/dev/null
bin=target/release
tmp=$(mktemp -d)
source scripts/netns-lib.sh
ns_a=dn-a-$$; ns_b=dn-b-$$; a=$ns_a; b=$ns_b
cleanup() {
  if [ "$net" = veth ]; then netns_down; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
json() { grep -o '\[{.*}\]' | tail -1; }
case "$net" in
  loopback)
    udp() { $bin/dnrun -n 2 --backend udp -- $bin/dnbench "$@"; }
    tcp() { $bin/tcpbench "$@"; } ;;
  veth)
    netns_up $$
    printf '10.199.0.1:17001\n10.199.0.2:17002\n' > "$tmp/hosts"
    udp() {
      local job=$RANDOM
      ip netns exec $b $bin/dnrun -n 2 --backend udp --hostfile "$tmp/hosts" --ranks 1 --job-id $job -- $bin/dnbench "$@" >/dev/null &
      local pb=$!
      ip netns exec $a $bin/dnrun -n 2 --backend udp --hostfile "$tmp/hosts" --ranks 0 --job-id $job -- $bin/dnbench "$@"
      wait $pb
    }
    tcp() { ip netns exec $a $bin/tcpbench "$@" --listen 10.199.0.1 --peer-via "ip netns exec $b"; } ;;
  *) echo "NET=$net: use loopback or veth" >&2; exit 2 ;;
esac
mpich=no
if [ "$net" = loopback ] && command -v mpicc.mpich >/dev/null && command -v mpiexec.hydra >/dev/null; then
  mpicc.mpich -O2 -Wno-stringop-overflow -o "$tmp/mpibench" bench/mpich/mpibench.c && mpich=yes
fi
mpi() { timeout 600 mpiexec.hydra -n 2 "$tmp/mpibench" "$@"; }
for r in $(seq "$rounds"); do
  if [ $mpich = yes ]; then
    MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp mpi latency "$iters" 200 | json > "$tmp/mpt_lat.$r"
    MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp mpi bw 30 | json > "$tmp/mpt_bw.$r"
    mpi latency "$iters" 200 | json > "$tmp/mps_lat.$r"
  fi
  udp latency --sizes 0:4M --iters "$iters" --warmup 200 --json | json > "$tmp/udp_lat.$r"
  tcp latency --sizes 0:4M --iters "$iters" --warmup 200 --json | json > "$tmp/tcp_lat.$r"
  tcp latency --sizes 0:4M --iters "$iters" --warmup 200 --blocking --json | json > "$tmp/tcpb_lat.$r"
  udp bw --sizes 1:4M --iters 30 --json | json > "$tmp/udp_bw.$r"
  tcp bw --sizes 1:4M --iters 30 --json | json > "$tmp/tcp_bw.$r"
done
python3 - "$tmp" "$rounds" "$mpich" <<'PY'
import sys
d, rounds, mpich = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "yes"
sys.path.insert(0, "scripts")
from bench_best import best as best_of, lower as lo, higher as hi
best = lambda name, key, better: best_of(d, rounds, name, key, better)
ul, tl, bl = best("udp_lat", "latency_us", lo), best("tcp_lat", "latency_us", lo), best("tcpb_lat", "latency_us", lo)
ub, tb = best("udp_bw", "MBps", hi), best("tcp_bw", "MBps", hi)
mt, mb, ms = best("mpt_lat", "latency_us", lo), best("mpt_bw", "MBps", hi), best("mps_lat", "latency_us", lo)
extra_h = " MPICH tcp (us) | MPICH shm (us) | MPICH tcp bw (MB/s) |" if mpich else ""
print("| size | UDP latency (us) | TCP busy-poll (us) | TCP blocking (us) | UDP / TCP | UDP bw (MB/s) | TCP bw (MB/s) | UDP / TCP |" + extra_h)
print("|---|---|---|---|---|---|---|---|" + ("---|---|---|" if mpich else ""))
f = lambda t, s, k, p: f"{t[s][k]:.{p}f}" if s in t else ""
for s in sorted(ul):
    u, t, b = ul[s]["latency_us"], tl[s]["latency_us"], bl[s]["latency_us"]
    bw = f"{ub[s]['MBps']:.0f} | {tb[s]['MBps']:.0f} | {ub[s]['MBps']/tb[s]['MBps']*100:.0f}%" if s in ub and s in tb else " | | "
    extra = f" {f(mt, s, 'latency_us', 2)} | {f(ms, s, 'latency_us', 2)} | {f(mb, s, 'MBps', 0)} |" if mpich else ""
    print(f"| {s} | {u:.2f} ({ul[s]['protocol']}) | {t:.2f} | {b:.2f} | {u/t*100:.0f}% | {bw} |" + extra)
PY
