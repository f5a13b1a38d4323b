#!/usr/bin/env bash
# Issue 50's collective-write benchmark: bench/io-strided.c (8 ranks, each
# owning every 8th block of 4 KiB, 256 MiB in all, one MPI_File_write_all
# through a strided view) built with our mpicc and with Debian MPICH's
# (ROMIO), each run once with the byte-for-byte check and then timed,
# ours over UDP and on the simulator, MPICH under mpiexec.hydra.
#
#   scripts/bench-io.sh [RANKS] [MIB] [BLOCK]     default: 8 256 4096
#
# The file goes to $DIR (default a new directory under /tmp) and is
# removed. Not part of the test suite: it measures wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-8}
mib=${2:-256}
block=${3:-4096}
dir=${DIR:-$(mktemp -d /tmp/dn-bench-io.XXXXXX)}
prefix=target/bench-io/prefix
./scripts/install.sh "$prefix" >/dev/null
mkdir -p target/bench-io
"$prefix/bin/mpicc" -O2 -o target/bench-io/io-strided bench/io-strided.c
have_mpich=0
if command -v mpicc.mpich >/dev/null && command -v mpiexec.hydra >/dev/null; then
    mpicc.mpich -O2 -o target/bench-io/io-strided.mpich bench/io-strided.c
    have_mpich=1
fi
f=$dir/io-strided.dat
run() { echo "== $*"; /usr/bin/time -f "   %e s wall, %M KB peak" "$@"; rm -f "$f"; }
run "$prefix/bin/dnrun" -n "$np" --backend udp -- target/bench-io/io-strided "$f" "$mib" "$block" check
run "$prefix/bin/dnrun" -n "$np" --backend udp -- target/bench-io/io-strided "$f" "$mib" "$block"
run "$prefix/bin/dnrun" -n "$np" --nodes "$np" -- target/bench-io/io-strided "$f" "$mib" "$block" check
if [ $have_mpich = 1 ]; then
    run mpiexec.hydra -n "$np" target/bench-io/io-strided.mpich "$f" "$mib" "$block" check
    run mpiexec.hydra -n "$np" target/bench-io/io-strided.mpich "$f" "$mib" "$block"
fi
[ -n "${DIR:-}" ] || rmdir "$dir"
