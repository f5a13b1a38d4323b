#!/usr/bin/env bash
# The CPU cost of seed 000's polling process per node against per-rank
# polling (dnrun --dpdk-poller node|rank), DPDK over memif on this host.
#
# For each case, dnbench runs twice, with ITERS and 2*ITERS round trips
# (or bandwidth iterations); the CPU time of the whole job (every rank and
# poller: user + system, from getrusage of the launcher's children) of the
# second run less the first, divided by ITERS, is the CPU per round trip
# with start-up cancelled out, and the same difference over the difference
# in wall time is how many cores the job kept busy. Each case runs ROUNDS times, alternating
# the modes; the round with the lowest latency (highest bandwidth) is
# kept, with its own CPU figure. Prints a Markdown table.
#   scripts/bench-dpdk-poller.sh [ITERS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
iters="${1:-200000}"
rounds="${2:-3}"
cargo build --release --locked --bins >/dev/null 2>&1 || cargo build --release --bins >/dev/null
python3 - "$iters" "$rounds" <<'PY'
import json, os, re, resource, subprocess, sys, time

iters, rounds = int(sys.argv[1]), int(sys.argv[2])
b = "target/release"

def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def job(mode, nodes, test, size, n):
    """One dnbench run; returns (result row, CPU seconds, wall seconds)."""
    args = [f"{b}/dnrun", "-n", "2", "--nodes", str(nodes), "--backend", "dpdk", "--dpdk-poller", mode,
            "--", f"{b}/dnbench", test, "--sizes", str(size), "--json"]
    args += ["--iters", str(n), "--warmup", "200"] if test == "latency" else ["--iters", str(n)]
    c0, t0 = cpu(), time.monotonic()
    out = subprocess.run(args, capture_output=True, text=True, timeout=900)
    c1, t1 = cpu(), time.monotonic()
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{out.stderr}")
    rows = json.loads(re.findall(r"\[\{.*\}\]", out.stdout)[-1])
    return rows[0], c1 - c0, t1 - t0

cases = [("latency", 0, 1), ("latency", 2048, 1), ("latency", 16384, 1), ("latency", 0, 2), ("latency", 2048, 2),
         ("bw", 1 << 20, 1)]
best = {}
for r in range(rounds):
    for case in cases:
        test, size, nodes = case
        for mode in ("rank", "node"):
            n = iters if test == "latency" else max(iters // 1000, 10)
            row1, cpu1, wall1 = job(mode, nodes, test, size, n)
            row2, cpu2, wall2 = job(mode, nodes, test, size, 2 * n)
            per = (cpu2 - cpu1) / n * 1e6
            busy = (cpu2 - cpu1) / max(wall2 - wall1, 1e-3)
            val = row2["latency_us"] if test == "latency" else row2["MBps"]
            k = (case, mode)
            better = (lambda a, b: a < b) if test == "latency" else (lambda a, b: a > b)
            if k not in best or better(val, best[k][0]):
                best[k] = (val, per, busy)

print(f"| case | nodes | per-rank polling | CPU per round trip / message, cores busy | polling process per node | CPU per round trip / message, cores busy |")
print("|---|---|---|---|---|---|")
for case in cases:
    test, size, nodes = case
    unit = "us" if test == "latency" else "MB/s"
    name = f"{test} {size} B" if test == "latency" else f"bandwidth {size >> 20} MiB (per message)"
    cells = []
    for mode in ("rank", "node"):
        val, per, busy = best[(case, mode)]
        cells.append(f"{val:.2f} {unit} | {per:.1f} us, {busy:.2f}")
    print(f"| {name} | {nodes} | {cells[0]} | {cells[1]} |")
PY
