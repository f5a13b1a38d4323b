#!/usr/bin/env bash
# Install the MPI library for C and C++ programs into PREFIX:
#   PREFIX/include/mpi.h              the MPI 5.0 standard ABI header
#   PREFIX/lib/libmpi_abi.so.1        the library (and libmpi_abi.so)
#   PREFIX/lib/pkgconfig/mpi.pc       pkg-config: mpi, mpi-c, mpi-cxx
#   PREFIX/bin/mpicc                  cc with our header, library and rpath
#   PREFIX/bin/mpicxx, mpic++         the same for C++ (c++)
#   PREFIX/bin/mpifort, mpif90, mpif77 the same for Fortran ($FC, else
#                                     gfortran), with PREFIX/include/mpif.h,
#                                     mpi.mod, mpi_f08.mod, mpi_abi_fort.h
#                                     (C's MPI_Fint, MPI_*_c2f/_f2c) and
#                                     PREFIX/lib/libmpi_abi_f.a
#                                     (skipped, and said so, without one)
#   PREFIX/bin/dnrun, mpiexec, mpirun the launcher (the last two take
#                                     -np, -ppn, -genv/-env, -l as well)
#   PREFIX/bin/dimmnet-sim            the simulator dnrun starts
#
#   scripts/install.sh PREFIX
#   PREFIX/bin/mpicc -o hello hello.c && PREFIX/bin/mpiexec -np 4 ./hello
#
#   scripts/install.sh --from DIR PREFIX
#       no build: link the library and programs already built in DIR
#       (target/debug, target/release) into PREFIX; the tests use this.
set -euo pipefail
usage() {
    echo "usage: scripts/install.sh [--from BUILD_DIR] PREFIX" >&2
    exit 2
}
from=""
if [ "${1:-}" = "--from" ]; then
    [ $# -eq 3 ] || usage
    from=$(cd "$2" && pwd)
    shift 2
fi
if [ $# -ne 1 ] || [ -z "$1" ]; then
    usage
fi
cd "$(dirname "$0")/.."
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || { echo "install.sh: no workspace version in Cargo.toml" >&2; exit 1; }
if [ -z "$from" ]; then
    cargo build --release --locked -p capi -p mpi-tools -p hw-tools -p mpi-fortran --bins --lib
    build=target/release
    put() { install -m "$1" "$2" "$3"; }
else
    build=$from
    put() { ln -sfn "$2" "$3"; }
fi
for f in libmpi_abi.so dnrun dimmnet-sim gen-fortran; do
    [ -f "$build/$f" ] || { echo "install.sh: $build/$f is missing (build it first)" >&2; exit 1; }
done
build=$(cd "$build" && pwd)
install -d "$prefix/bin" "$prefix/lib/pkgconfig" "$prefix/include"
put 0644 "$PWD/capi/include/mpi.h" "$prefix/include/mpi.h"
put 0755 "$build/libmpi_abi.so" "$prefix/lib/libmpi_abi.so.1"
ln -sf libmpi_abi.so.1 "$prefix/lib/libmpi_abi.so"
# The wrappers: one script that takes its language from its name.
sed "s/@VERSION@/$version/" capi/mpicc > "$prefix/bin/.mpicc.tmp"
chmod 0755 "$prefix/bin/.mpicc.tmp"
mv -f "$prefix/bin/.mpicc.tmp" "$prefix/bin/mpicc"
ln -sf mpicc "$prefix/bin/mpicxx"
ln -sf mpicc "$prefix/bin/mpic++"
# Fortran: generate the bindings from the ABI's tables (fortran/), compile
# them with this machine's compiler (a module file is only good for the
# compiler that wrote it), and archive the glue: a program links it into
# itself, so each rank of a job run as contexts has its own.
fc=${FC:-gfortran}
fortran="skipped: no Fortran compiler ($fc); scripts/setup.sh installs gfortran"
rm -f "$prefix/lib/libmpi_abi_f.a"
if command -v "$fc" >/dev/null 2>&1 && ! "$fc" --version 2>/dev/null | grep -q "GNU Fortran"; then
    fortran="skipped: $fc is not gfortran, and the bindings follow gfortran's conventions (docs/FORTRAN.md)"
elif command -v "$fc" >/dev/null 2>&1; then
    [ -x "$build/gen-fortran" ] || { echo "install.sh: $build/gen-fortran is missing (build it first)" >&2; exit 1; }
    gen=$(mktemp -d)
    "$build/gen-fortran" "$gen"
    cp fortran/glue/mpif_glue.h fortran/glue/special.c fortran/glue/interop.c fortran/glue/mpi_abi_fort.h "$gen/"
    cc=${CC:-cc}
    for c in mpif_glue special interop; do
        $cc -std=c11 -O2 -fPIC -I"$prefix/include" -c "$gen/$c.c" -o "$gen/$c.o"
    done
    (cd "$gen" && $fc -O2 -fPIC -c mpi.f90 -o mpi_module.o && $fc -O2 -fPIC -c mpi_f08.f90 -o mpi_f08_module.o)
    install -m 0644 "$gen/mpi.mod" "$gen/mpi_f08.mod" "$gen/mpif.h" "$gen/mpi_abi_fort.h" "$prefix/include/"
    ar rcs "$gen/libmpi_abi_f.a" "$gen/mpif_glue.o" "$gen/special.o" "$gen/interop.o" "$gen/mpi_module.o" \
        "$gen/mpi_f08_module.o"
    install -m 0644 "$gen/libmpi_abi_f.a" "$prefix/lib/libmpi_abi_f.a"
    rm -rf "$gen"
    fortran="bin/mpifort (with $fc), include/mpif.h, include/mpi.mod, include/mpi_f08.mod, lib/libmpi_abi_f.a"
fi
for f in mpifort mpif90 mpif77; do
    ln -sf mpicc "$prefix/bin/$f"
done
for b in dnrun dimmnet-sim; do
    put 0755 "$build/$b" "$prefix/bin/$b"
done
ln -sf dnrun "$prefix/bin/mpiexec"
ln -sf dnrun "$prefix/bin/mpirun"
# pkg-config: C++ programs use the C bindings, so the three say the same.
for pc in mpi mpi-c mpi-cxx; do
    cat > "$prefix/lib/pkgconfig/$pc.pc" <<EOF
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: $pc
Description: DIMMnet-2 MPI: the MPI 5.0 standard ABI (libmpi_abi.so.1) on the simulator, UDP and DPDK
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lmpi_abi
EOF
done
rm -f "$prefix/lib/pkgconfig/mpi-fort.pc"
if [ -f "$prefix/lib/libmpi_abi_f.a" ]; then
    cat > "$prefix/lib/pkgconfig/mpi-fort.pc" <<EOF
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: mpi-fort
Description: DIMMnet-2 MPI for Fortran (mpif.h, use mpi) over the MPI 5.0 standard ABI; built with $fc
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lmpi_abi_f -Wl,-rpath,\${libdir} -lmpi_abi
EOF
fi
echo "installed into $prefix: bin/mpicc, bin/mpicxx, bin/mpiexec (dnrun), lib/libmpi_abi.so.1, lib/pkgconfig/mpi.pc, include/mpi.h"
echo "Fortran: $fortran"
