#!/usr/bin/env bash
# Install what the project needs beyond the Rust toolchain, on Debian.
# Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail
need=()
command -v gcc >/dev/null || need+=(gcc)          # the C-header test compiles the exported header
command -v ip >/dev/null || need+=(iproute2)      # network-namespace tests of the UDP backend
# The outside MPI reference of scripts/bench-udp-vs-tcp.sh (mpicc.mpich,
# mpiexec.hydra); later, hydra as a standard PMI-1 launcher.
command -v mpicc.mpich >/dev/null || need+=(mpich libmpich-dev)
# The DPDK backend: the system's DPDK (headers, libraries and the memif,
# af_packet and null PMDs), bound at build time with bindgen (libclang).
command -v pkg-config >/dev/null || need+=(pkg-config)
# C++ programs and the build systems users bring (sim-tests/tests/build_systems.rs:
# CMake's FindMPI and Meson's dependency('mpi') must find our install).
command -v g++ >/dev/null || need+=(g++)
# Fortran programs (mpifort, mpif.h, use mpi: scripts/install.sh compiles the
# bindings with it; sim-tests/tests/fortran_programs.rs).
command -v gfortran >/dev/null || need+=(gfortran)
command -v cmake >/dev/null || need+=(cmake)
command -v meson >/dev/null || need+=(meson)
command -v ninja >/dev/null || need+=(ninja-build)
# mpi4py built from source the way its documentation says (scripts/mpi4py.sh,
# in CI): a virtualenv and the Python headers.
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
[ -f "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h" ] || need+=(python3-dev)
pkg-config --exists libdpdk 2>/dev/null || need+=(libdpdk-dev dpdk)
# (libclang-cpp, which other packages bring, is not libclang.)
ls /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1 || ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need+=(libclang-dev)
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
echo "setup: ok"
