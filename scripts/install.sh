#!/usr/bin/env bash
# Install the MPI library for C programs into PREFIX:
#   PREFIX/include/mpi.h              the MPI 5.0 standard ABI header
#   PREFIX/lib/libmpi_abi.so.1        the library (and libmpi_abi.so)
#   PREFIX/bin/mpicc                  cc with our header, library and rpath
#   PREFIX/bin/dnrun, mpiexec, mpirun the launcher (the last two take
#                                     -np, -ppn, -genv/-env, -l as well)
#   PREFIX/bin/dimmnet-sim            the simulator dnrun starts
#
#   scripts/install.sh PREFIX
#   PREFIX/bin/mpicc -o hello hello.c && PREFIX/bin/mpiexec -np 4 ./hello
set -euo pipefail
if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: scripts/install.sh PREFIX" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
cargo build --release --locked -p capi -p mpi-tools -p hw-tools --bins --lib
install -d "$prefix/bin" "$prefix/lib" "$prefix/include"
install -m 0644 capi/include/mpi.h "$prefix/include/mpi.h"
install -m 0755 target/release/libmpi_abi.so "$prefix/lib/libmpi_abi.so.1"
ln -sf libmpi_abi.so.1 "$prefix/lib/libmpi_abi.so"
install -m 0755 capi/mpicc "$prefix/bin/mpicc"
for b in dnrun dimmnet-sim; do
    install -m 0755 "target/release/$b" "$prefix/bin/$b"
done
ln -sf dnrun "$prefix/bin/mpiexec"
ln -sf dnrun "$prefix/bin/mpirun"
echo "installed into $prefix: bin/mpicc, bin/mpiexec (dnrun), lib/libmpi_abi.so.1, include/mpi.h"
