#!/usr/bin/env bash
# MPICH's own test suite (test/mpi), an outside check nobody here wrote:
# installs our library into a prefix, builds MPICH's small `mtest` helper
# and each test program with our mpicc, and runs every program x rank-count
# line of each directory's testlist with our launcher. A run passes when it
# prints "No Errors", as MPICH's `runtests` decides. Nothing of MPICH is
# copied into this repository: its sources are fetched into WORK.
#
#   scripts/mpich-tests.sh [--backend sim|udp] [--work DIR] [--timeout S]
#                          [--failed RESULTS] [TESTDIR...]
#
# --failed RESULTS runs again only the runs a results file lists as failed
# (after a fix, without the hour the whole suite takes on 2 cores).
# TESTDIR defaults to the directories issue 32 names: pt2pt coll comm group
# datatype init errhan info attr topo (MPICH's `basic` has no testlist and
# is not part of its suite). MPICH's MPI_THREAD_MULTIPLE tests are under
# threads/: give threads/pt2pt threads/coll threads/comm ... to run them.
# The MPICH sources come from, in this order:
#   MPICH_SRC=DIR   a checkout whose test/mpi is used as is
#   MPICH_GIT=DIR   a git directory holding commit $MPICH_COMMIT
#   otherwise       a sparse, blob-less fetch of $MPICH_COMMIT from GitHub
# Results: WORK/results-BACKEND.txt (one line per run, then one summary line
# per directory); the figures are in docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
backend=sim
work=target/mpich-tests
failed_from=
# MPICH's runtests gives each run 180 s unless its testlist line says
# timeLimit= (MPITEST_TIMEOUT); so do we.
limit=180
while [ $# -gt 0 ]; do
    case $1 in
        --backend) backend=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --timeout) limit=$2; shift 2 ;;
        --failed) failed_from=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
        -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
        -*) echo "mpich-tests: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
case $backend in sim | udp) ;; *) echo "mpich-tests: --backend is sim or udp, not $backend" >&2; exit 2 ;; esac
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(pt2pt coll comm group datatype init errhan info attr topo)
commit=${MPICH_COMMIT:-6a79bf6575c3b5b41cabbd3d59340634d6f9412d}
mkdir -p "$work"
work=$(cd "$work" && pwd)

# --- the sources -----------------------------------------------------------
if [ -n "${MPICH_SRC:-}" ]; then
    src=$(cd "$MPICH_SRC" && pwd)/test/mpi
elif [ -d "$work/src/test/mpi" ]; then
    src=$work/src/test/mpi
elif [ -n "${MPICH_GIT:-}" ]; then
    mkdir -p "$work/src"
    git --git-dir="$MPICH_GIT" archive "$commit" test/mpi | tar -x -C "$work/src"
    src=$work/src/test/mpi
else
    rm -rf "$work/src"
    git init -q "$work/src"
    git -C "$work/src" remote add origin https://github.com/pmodels/mpich.git
    git -C "$work/src" sparse-checkout set test/mpi
    git -C "$work/src" fetch -q --depth 1 --filter=blob:none origin "$commit"
    git -C "$work/src" checkout -q FETCH_HEAD
    src=$work/src/test/mpi
fi
[ -f "$src/util/mtest.c" ] || { echo "mpich-tests: no MPICH test/mpi under $src" >&2; exit 1; }

# --- our library and the mtest helper --------------------------------------
prefix=$work/prefix
./scripts/install.sh "$prefix" >/dev/null
mpicc=$prefix/bin/mpicc
obj=$work/obj
mkdir -p "$obj"
# What MPICH's configure would find on this machine (test/mpi/configure.ac).
# HAVE_MPI_WIN_CREATE: mtest.c's window helpers (MTestGetWin, used by
# rma/winname and rma/fkeyvalwin) are built only with it.
cat >"$obj/mpitestconf.h.new" <<'EOF'
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_STDARG_H 1
#define HAVE_STRING_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_STDLIB_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDINT_H 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define USE_STRICT_MPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define THREAD_PACKAGE_POSIX 1
EOF
# Replaced only when it changes, so that the helpers below are rebuilt
# exactly when their configuration does.
cmp -s "$obj/mpitestconf.h.new" "$obj/mpitestconf.h" || mv -f "$obj/mpitestconf.h.new" "$obj/mpitestconf.h"
rm -f "$obj/mpitestconf.h.new"
# configure writes MPIX (MPICH extension) declarations here; we have none.
: >"$obj/mtest_mpix.h"
# dtpools includes "../dtpoolsconf.h": found through -I$obj/inc.
mkdir -p "$obj/inc"
printf '#define HAVE_STDLIB_H 1\n#define HAVE_STRING_H 1\n#define HAVE_STDINT_H 1\n' >"$obj/dtpoolsconf.h"
cflags=(-O1 -w -I"$obj" -I"$obj/inc" -I"$src/include" -I"$src/dtpools/include")
helpers=()
for c in util/mtest.c util/mtest_common.c util/dtypes.c $(cd "$src" && echo dtpools/src/*.c); do
    o=$obj/$(echo "$c" | tr / _).o
    [ "$o" -nt "$src/$c" ] && [ "$o" -nt "$obj/mpitestconf.h" ] || "$mpicc" "${cflags[@]}" -c -o "$o" "$src/$c"
    helpers+=("$o")
done
# Single-threaded programs link mtest_single, those under threads/ (MPICH's
# MPI_THREAD_MULTIPLE tests) mtest_thread, as MPICH's makefiles do.
for c in util/mtest_single.c util/mtest_thread.c; do
    o=$obj/$(echo "$c" | tr / _).o
    [ "$o" -nt "$src/$c" ] && [ "$o" -nt "$obj/mpitestconf.h" ] || "$mpicc" "${cflags[@]}" -c -o "$o" "$src/$c"
done
# Programs that define `run` instead of `main` get MPICH's main from here.
runner=$obj/util_run_mpitests.c.o
[ "$runner" -nt "$src/util/run_mpitests.c" ] || "$mpicc" "${cflags[@]}" -c -o "$runner" "$src/util/run_mpitests.c"

# Did a run pass? As MPICH's runtests judges it (its check_result and
# Test* functions): OUTPUT, STATUS (the launcher's exit status), and the
# testlist's resultTest= (default TestNormal).
judge() {
    local out=$1 status=$2 how=$3 noerr=0 skipped=0 stray=0 warn=0
    while IFS= read -r line; do
        if [[ $line =~ ^[[:space:]]*No\ [Ee]rrors[[:space:]]*$ ]]; then
            noerr=1
        elif [[ $line =~ ^[[:space:]]*Test\ Skipped[[:space:]]*$ ]]; then
            skipped=1
        elif [[ $line =~ ^(MPICH:\ |WARNING:\ |(Abort.*)?application\ called\ MPI_Abort) ]]; then
            warn=1
        else
            stray=1
        fi
    done <"$out"
    case $how in
        TestStatus | TestErrFatal) [ "$status" -ne 0 ] ;;
        TestStatusNoErrors) [ $noerr = 1 ] && [ $stray = 0 ] && [ "$status" -ne 0 ] ;;
        TestAllowWarnings) [ $((noerr + skipped)) -gt 0 ] && [ $stray = 0 ] && [ "$status" -eq 0 ] ;;
        *) [ $((noerr + skipped)) -gt 0 ] && [ $((stray + warn)) = 0 ] && [ "$status" -eq 0 ] ;;
    esac
}

# --- one directory ---------------------------------------------------------
results=$work/results-$backend.txt
if [ -n "$failed_from" ]; then
    only=$(grep -E ' (fail|nolink)' "$failed_from" | awk '{print $1, $2, $3}')
    results=$work/results-$backend-failed.txt
fi
: >"$results"
# The value of `NAME_VAR = ...` in a directory's Makefile.am, without $(...).
makevar() {
    sed -n "s/^$1_$2[[:space:]]*=[[:space:]]*//p" "$3" | sed 's/\$([A-Z_]*)//g'
}
total_pass=0
total_runs=0
for dir in "${dirs[@]}"; do
    list=$src/$dir/testlist.in
    [ -f "$list" ] || list=$src/$dir/testlist
    [ -f "$list" ] || { echo "$dir: no testlist, skipped" | tee -a "$results"; continue; }
    bin=$work/bin/$dir
    mkdir -p "$bin"
    pass=0
    runs=0
    while read -r name np rest; do
        [[ -z $name || $name == \#* ]] && continue
        [[ $np =~ ^[0-9]+$ ]] || continue
        if [ -n "$failed_from" ] && ! grep -qxF "$dir $name $np" <<<"$only"; then
            continue
        fi
        args=()
        envs=()
        t=$limit
        how=TestNormal
        for w in $rest; do
            case $w in
                arg=*) args+=("${w#arg=}") ;;
                resultTest=*) how=${w#resultTest=} ;;
                env=*) envs+=(-x "${w#env=}") ;;
                timeLimit=*) t=${w#timeLimit=} ;;
            esac
        done
        runs=$((runs + 1))
        case $dir in
            threads*) mtest=$obj/util_mtest_thread.c.o ;;
            *) mtest=$obj/util_mtest_single.c.o ;;
        esac
        if [ ! -x "$bin/$name" ]; then
            mk=$src/$dir/Makefile.am
            sources=$(makevar "$name" SOURCES "$mk")
            [ -n "$sources" ] || sources=$name.c
            extra=()
            grep -qE '^int main' "$src/$dir/${sources%% *}" || extra=("$runner")
            # shellcheck disable=SC2046 # word splitting of the lists is intended
            if ! "$mpicc" "${cflags[@]}" $(makevar "$name" CPPFLAGS "$mk") -o "$bin/$name" \
                $(for s in $sources; do echo "$src/$dir/$s"; done) "${extra[@]}" "${helpers[@]}" "$mtest" -lm \
                >"$bin/$name.build.txt" 2>&1; then
                echo "$dir $name $np nolink" >>"$results"
                continue
            fi
        fi
        out=$bin/$name.$np.txt
        status=0
        (cd "$bin" && timeout $((t + 30)) "$prefix/bin/dnrun" -n "$np" --nodes $(((np + 3) / 4)) \
            --backend "$backend" --timeout "$t" "${envs[@]}" -- "./$name" "${args[@]}") >"$out" 2>&1 || status=$?
        if judge "$out" "$status" "$how"; then
            pass=$((pass + 1))
            echo "$dir $name $np pass" >>"$results"
        else
            echo "$dir $name $np fail ($how, exit $status)" >>"$results"
        fi
    # `@comm_overlap@` and its kind are what MPICH's configure turns into
    # nothing (the test is built) or a comment: built, as for a library
    # with MPI_THREAD_MULTIPLE.
    done < <(sed 's/^@[A-Za-z_]*@[[:space:]]*//' "$list")
    echo "$dir $backend: $pass of $runs runs pass" | tee -a "$results"
    total_pass=$((total_pass + pass))
    total_runs=$((total_runs + runs))
done
echo "all $backend: $total_pass of $total_runs runs pass ($results)" | tee -a "$results"
cd "$repo"
