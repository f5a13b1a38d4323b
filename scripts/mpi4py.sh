#!/usr/bin/env bash
# mpi4py, a real MPI client nobody here wrote, against libmpi_abi:
# installs the library into a prefix, builds mpi4py from its source
# distribution with our mpicc in a virtualenv the way mpi4py's
# documentation tells a user to (`MPICC=... pip install --no-binary
# mpi4py mpi4py`: no probing, every MPI 5.0 function the header declares is
# linked), imports it, then runs mpi4py's own benchmarks under our mpiexec
# on the simulator and over UDP, and under MPICH's hydra when installed.
# Needs PyPI (pip) and about 10 minutes on 2 cores; the result is recorded
# in docs/BENCHMARKS.md.
#   scripts/mpi4py.sh [WORKDIR]       (default target/mpi4py)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-target/mpi4py}
version=4.1.2
mkdir -p "$work"
work=$(cd "$work" && pwd)
./scripts/install.sh "$work/prefix" >/dev/null
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
MPICC="$work/prefix/bin/mpicc" \
    "$work/venv/bin/pip" install -q --no-cache-dir --force-reinstall --no-binary mpi4py "mpi4py==$version"
mpiexec="$work/prefix/bin/mpiexec"
run() { echo "== $*"; timeout 600 "$@"; }
"$py" -c "from mpi4py import MPI; print(MPI.Get_library_version())"
for backend in sim udp; do
    run "$mpiexec" -np 4 --backend "$backend" "$py" -m mpi4py.bench helloworld
    run "$mpiexec" -np 4 --backend "$backend" "$py" -m mpi4py.bench ringtest
    run "$mpiexec" -np 2 --backend "$backend" "$py" -m mpi4py.bench pingpong -n 100
done
if command -v mpiexec.hydra >/dev/null; then
    run mpiexec.hydra -n 4 "$py" -m mpi4py.bench helloworld
    run mpiexec.hydra -n 4 "$py" -m mpi4py.bench ringtest
fi
echo "mpi4py: ok"
