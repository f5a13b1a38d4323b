#!/usr/bin/env bash
# Issue 28's cluster-scale benchmark: the same unmodified C program
# (bench/ring-allreduce.c: a ring MPI_Sendrecv of BYTES plus an
# MPI_Allreduce of 8 doubles, ITERS times) on our simulator and on SimGrid
# SMPI, one rank per simulated node, and a markdown table of wall time,
# memory and scheduler grants.
#
#   scripts/bench-sim-scale.sh [RANKS ...]        default: 8 64 256 1024
#
# Environment: ITERS (50), BYTES (1024), PPN (1: ranks per simulated node on
# our side), MEM=0 to skip the memory runs (each size then runs once per
# simulator instead of twice), SIMGRID=0 to run ours only.
#
# SimGrid comes from Debian's libsimgrid-dev (smpicc, smpirun); the script
# installs it with apt-get when smpicc is missing and it may (root). Its
# platform is a cluster of 1 us / 1 GBps links with a 100 GBps backbone,
# written next to the binaries. Not part of the test suite: it takes
# minutes and measures wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
iters=${ITERS:-50}
bytes=${BYTES:-1024}
ppn=${PPN:-1}
mem=${MEM:-1}
simgrid=${SIMGRID:-1}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(8 64 256 1024)
for n in "${sizes[@]}"; do
    case $n in '' | *[!0-9]*) echo "bench-sim-scale: '$n' is not a rank count" >&2; exit 2 ;; esac
done
command -v python3 >/dev/null || { echo "bench-sim-scale: needs python3 (memory sampler)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-sim-scale: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

if [ "$simgrid" = 1 ] && ! command -v smpicc >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libsimgrid-dev
    else
        echo "bench-sim-scale: smpicc not found; install Debian's libsimgrid-dev or set SIMGRID=0" >&2
        exit 2
    fi
fi

work=$(mktemp -d /tmp/bench-sim-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
scripts/install.sh "$work/dn" >/dev/null
"$work/dn/bin/mpicc" -O2 -o "$work/ring" bench/ring-allreduce.c
if [ "$simgrid" = 1 ]; then
    smpicc -O2 -o "$work/ring.sg" bench/ring-allreduce.c 2>/dev/null
    max=0
    for n in "${sizes[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
    cat >"$work/cluster.xml" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-$((max - 1))" speed="1Gf" bw="1GBps" lat="1us" bb_bw="100GBps" bb_lat="1us"/>
</platform>
EOF
    for ((i = 0; i < max; i++)); do echo "node-$i"; done >"$work/hosts"
fi

# Peak proportional set size (MiB) of a command and all its descendants,
# sampled every 50 ms: shared mappings (the simulated device files, the
# libraries) count once, not once per process.
cat >"$work/pss.py" <<'EOF'
import os, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def tree(root):
    kids = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open(f'/proc/{d}/stat') as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [root]
    while todo:
        x = todo.pop()
        out.append(x)
        todo.extend(kids.get(x, []))
    return out
peak = 0
while p.poll() is None:
    total = 0
    for pid in tree(p.pid):
        try:
            with open(f'/proc/{pid}/smaps_rollup') as f:
                for line in f:
                    if line.startswith('Pss:'):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    peak = max(peak, total)
    time.sleep(0.05)
print(f'{peak / 1024:.0f}')
sys.exit(p.returncode)
EOF


echo "ring-allreduce, $iters iterations of $bytes bytes; ours with $ppn rank(s) per node" >&2
echo "| ranks | ours: wall s | ours: simulated loop us | grants per rank per iteration | events per rank per iteration | ours: memory MiB | SimGrid: wall s | SimGrid: memory MiB | wall ratio ours/SimGrid |"
echo "|---|---|---|---|---|---|---|---|---|"
for n in "${sizes[@]}"; do
    /usr/bin/time -o "$work/t" -f %e "$work/dn/bin/mpiexec" -v -np "$n" -ppn "$ppn" --timeout 3600 \
        "$work/ring" "$iters" "$bytes" >"$work/out" 2>"$work/err" ||
        { echo "bench-sim-scale: ours failed at $n ranks:" >&2; tail -5 "$work/err" >&2; exit 1; }
    wall=$(cat "$work/t")
    sim=$(sed -n 's/.*: \([0-9.]*\) us, checksum.*/\1/p' "$work/out")
    grants=$(sed -n 's/.* \([0-9]*\) scheduler grants.*/\1/p' "$work/err")
    events=$(sed -n 's/.* simulated; \([0-9]*\) events,.*/\1/p' "$work/err")
    per=$(python3 -c "print(f'{$grants / ($n * max($iters, 1)):.1f}')")
    eper=$(python3 -c "print(f'{$events / ($n * max($iters, 1)):.1f}')")
    m=-
    [ "$mem" = 1 ] && m=$(python3 "$work/pss.py" "$work/dn/bin/mpiexec" -np "$n" -ppn "$ppn" --timeout 3600 "$work/ring" "$iters" "$bytes")
    sgw=- sgm=- ratio=-
    if [ "$simgrid" = 1 ]; then
        /usr/bin/time -o "$work/t" -f "%e %M" smpirun -np "$n" -platform "$work/cluster.xml" \
            -hostfile "$work/hosts" "$work/ring.sg" "$iters" "$bytes" >"$work/sgout" 2>"$work/sgerr" ||
            { echo "bench-sim-scale: SimGrid failed at $n ranks:" >&2; tail -5 "$work/sgerr" >&2; exit 1; }
        read -r sgw kib <"$work/t"
        sgm=$((kib / 1024))
        ratio=$(python3 -c "print(f'{$wall / max($sgw, 0.01):.1f}')")
    fi
    echo "| $n | $wall | $sim | $per | $eper | $m | $sgw | $sgm | $ratio |"
done
