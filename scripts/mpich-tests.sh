#!/usr/bin/env bash
# MPICH's own test suite (test/mpi), an outside check nobody here wrote:
# installs our library into a prefix, builds MPICH's small `mtest` helper
# and each test program with our mpicc, and runs every program x rank-count
# line of each directory's testlist with our launcher. A run passes when it
# prints "No Errors", as MPICH's `runtests` decides. Nothing of MPICH is
# copied into this repository: its sources are fetched into WORK.
#
#   scripts/mpich-tests.sh [--backend sim|udp|dpdk] [--work DIR] [--timeout S]
#                          [--failed RESULTS] [TESTDIR...]
#
# --failed RESULTS runs again only the runs a results file lists as failed
# (after a fix, without the hour the whole suite takes on 2 cores).
# TESTDIR defaults to the directories issue 32 names: pt2pt coll comm group
# datatype init errhan info attr topo (MPICH's `basic` has no testlist and
# is not part of its suite). MPICH's MPI_THREAD_MULTIPLE tests are under
# threads/: give threads/pt2pt threads/coll threads/comm ... to run them.
# Fortran: give f77/DIR (mpif.h), f90/DIR (use mpi) or f08/DIR (use
# mpi_f08), DIR one of attr coll comm datatype ext info init pt2pt rma topo
# profile io (f90 and f08 also misc timer, f08 subarray; not spawn):
#   scripts/mpich-tests.sh f77/pt2pt f90/coll ...
# They are built with our mpifort as MPICH's makefiles build them: the
# mtest_f77/f90/f08 helper, a Makefile.am's SOURCES (C ones with our
# mpicc), the *.h.in headers configure would write (8-byte MPI_Aint and
# MPI_Offset: integer*8), and the f90 directories generated from the f77
# ones by MPICH's maint/f77tof90 (perl) into WORK/gen, as its autogen.sh
# does, and the io directories' programs its maint/testmerge makes.
# Without mpi_f08.mod in the prefix, f08 programs are "nolink".
# The MPICH sources come from, in this order:
#   MPICH_SRC=DIR   a checkout whose test/mpi is used as is
#   MPICH_GIT=DIR   a git directory holding commit $MPICH_COMMIT
#   otherwise       a sparse, blob-less fetch of $MPICH_COMMIT from GitHub
# Results: WORK/results-BACKEND.txt (one line per run, then one summary line
# per directory); the figures are in docs/BENCHMARKS.md. A program's build
# log is WORK/bin/TESTDIR/NAME.build.txt, a run's output NAME.NP.txt.
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
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        -*) echo "mpich-tests: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
case $backend in sim | udp | dpdk) ;; *) echo "mpich-tests: --backend is sim, udp or dpdk, not $backend" >&2; exit 2 ;; esac
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

# --- Fortran: f77/ (mpif.h), f90/ (use mpi), f08/ (use mpi_f08) ----------
# Set up only when a Fortran directory is asked for.
fortran=0
for dir in "${dirs[@]}"; do
    case $dir in f77/* | f90/* | f08/*) fortran=1 ;; esac
done
gen=$work/gen
mpifort=$prefix/bin/mpifort
if [ $fortran = 1 ]; then
    command -v perl >/dev/null || { echo "mpich-tests: the f90 tests are generated with perl; install it" >&2; exit 1; }
    # What configure substitutes into the *.h.in headers (F77_MPI_ADDRESS,
    # F77_MPI_OFFSET: integer*N, N the size of MPI_Aint, MPI_Offset) and
    # writes into mpitestconf.h for the C parts (gfortran's names: lower
    # case and one underscore); its FFLAGS and FCFLAGS get gfortran's flag
    # for the Cray pointers allocmemf uses (CRAYPTR_FFLAGS).
    aint=integer*8
    offset=integer*8
    fflags=(-O1 -w -fcray-pointer)
    mkdir -p "$obj/fort/include" "$obj/fort/inc/c"
    { cat "$obj/mpitestconf.h"; printf '#define HAVE_FORTRAN_BINDING 1\n#define F77_NAME_LOWER_USCORE 1\n'; } >"$obj/fort/include/mpitestconf.h.new"
    cmp -s "$obj/fort/include/mpitestconf.h.new" "$obj/fort/include/mpitestconf.h" ||
        mv -f "$obj/fort/include/mpitestconf.h.new" "$obj/fort/include/mpitestconf.h"
    rm -f "$obj/fort/include/mpitestconf.h.new"
    # The C files include "../../include/mpitestconf.h": found through
    # -I$obj/fort/inc/c.
    fcflags=(-I"$obj/fort/include" -I"$obj/fort/inc/c" "${cflags[@]}")
    # The MPI 5.0 ABI leaves MPI_Fint and the MPI_*_c2f/_f2c conversions
    # to the Fortran binding: ours declares them in mpi_abi_fort.h, which a
    # program's C half includes after mpi.h (docs/FORTRAN.md). MPICH's C
    # halves expect them in mpi.h, as in an MPI without the ABI: they get it
    # included.
    [ ! -f "$prefix/include/mpi_abi_fort.h" ] || fcflags+=(-include mpi.h -include mpi_abi_fort.h)
    # WORK/gen/DIR: what configure and autogen.sh write for DIR. f77: the
    # headers from *.h.in. f90: the f90-only sources, with what MPICH's
    # maint/f77tof90 makes of f77/DIR (sources with `use mpi`, Makefile.am
    # and testlist, Makefile.ap and testlist.ap appended), as autogen.sh
    # runs it for every f77 directory.
    rm -rf "$gen"
    mkdir -p "$gen/f77" "$gen/f90" "$gen/f08"
    # The io directories' programs are made from ioharness.defn and
    # ioharness.tlt by maint/testmerge, as their Makefile.am's
    # gen-src-stamp rule makes them: f77 and f08 here, f90 by f77tof90
    # from the f77 ones.
    sed 's|^#! @PERL@|#!/usr/bin/env perl|' "$src/maint/testmerge.in" >"$gen/testmerge"
    testmerge() {
        [ -f "$1/ioharness.defn" ] || return 0
        (cd "$1" && perl "$gen/testmerge" -defn="$src/maint/common.defn" ioharness.defn ioharness.tlt) \
            >>"$gen/testmerge.log" 2>&1 || {
            echo "mpich-tests: maint/testmerge failed in $1 (see $gen/testmerge.log)" >&2
            exit 1
        }
    }
    for d in "$src"/f77/*/; do
        leaf=$(basename "$d")
        mkdir -p "$gen/f77/$leaf"
        cp -R "$d." "$gen/f77/$leaf/"
        for h in "$d"*.h.in; do
            [ -f "$h" ] || continue
            sed -e "s/@F77_MPI_ADDRESS@/$aint/g" -e "s/@F77_MPI_OFFSET@/$offset/g" "$h" \
                >"$gen/f77/$leaf/$(basename "$h" .in)"
        done
        testmerge "$gen/f77/$leaf"
    done
    for d in "$src"/f08/*/; do
        [ -f "$d/ioharness.defn" ] || continue
        leaf=$(basename "$d")
        mkdir -p "$gen/f08/$leaf"
        cp -R "$d." "$gen/f08/$leaf/"
        testmerge "$gen/f08/$leaf"
    done
    for d in "$src"/f77/*/ "$src"/f90/*/; do
        leaf=$(basename "$d")
        [ -d "$gen/f90/$leaf" ] && continue
        mkdir -p "$gen/f90/$leaf"
        [ ! -d "$src/f90/$leaf" ] || cp -R "$src/f90/$leaf/." "$gen/f90/$leaf/"
        if [ -d "$src/f77/$leaf" ] && ! perl "$src/maint/f77tof90" "$gen/f77/$leaf" "$gen/f90/$leaf" \
            Makefile.am Makefile.ap >>"$gen/f77tof90.log" 2>&1; then
            echo "mpich-tests: maint/f77tof90 failed on f77/$leaf (see $gen/f77tof90.log)" >&2
            exit 1
        fi
    done
    # The helpers MPICH links every Fortran program with (LDADD of its
    # Makefile_f77/f90/f08.mtest). mtest_f08 needs mpi_f08.mod: without it
    # this fails, and so does the link of each f08 program.
    for f in util/mtest_f77.f util/mtest_f90.f90 util/mtest_f08.f90; do
        o=$obj/$(echo "$f" | tr / _).o
        rm -f "$o"
        mkdir -p "$obj/fort/mod"
        "$mpifort" "${fflags[@]}" -J"$obj/fort/mod" -c -o "$o" "$src/$f" >"$o.build.txt" 2>&1 || rm -f "$o"
    done
    # Our programs link libmpi_abi_f.a into themselves: when it, mpif.h or
    # the module change, every Fortran program is built again.
    { cat "$prefix/lib/libmpi_abi_f.a" "$prefix/include/mpif.h" "$prefix/include/"*.mod 2>/dev/null || :; } |
        cksum >"$obj/fort/stamp.new"
    cmp -s "$obj/fort/stamp.new" "$obj/fort/stamp" || mv -f "$obj/fort/stamp.new" "$obj/fort/stamp"
    rm -f "$obj/fort/stamp.new"
fi
# The directory DIR's sources, Makefile.am and testlist are in.
srcdir_of() {
    case $1 in
        f77/* | f90/*) echo "$gen/$1" ;;
        f08/*) if [ -d "$gen/$1" ]; then echo "$gen/$1"; else echo "$src/$1"; fi ;;
        *) echo "$src/$1" ;;
    esac
}
# Where the source FILE of directory DIR is: in the directory, or where a
# copy rule of its Makefile.am (`FILE: $(srcdir)/../../f90/ext/FILE`)
# takes it from.
findsrc() {
    local sd from
    sd=$(srcdir_of "$1")
    if [ -f "$sd/$2" ]; then
        echo "$sd/$2"
        return
    fi
    from=$(sed -n "s|^$2:[[:space:]]*\\\$(srcdir)/||p" "$sd/Makefile.am" | head -n 1)
    [ -n "$from" ] || return 1
    from=$(realpath -m --relative-to=/ "/$1/$from")
    sd=$(srcdir_of "$(dirname "$from")")
    [ -f "$sd/$(basename "$from")" ] && echo "$sd/$(basename "$from")"
}
# Build program NAME of Fortran directory DIR into BIN/NAME as automake
# would: each source compiled (C with mpicc, Fortran with mpifort, in the
# order given), linked with mpifort and the mtest helper of the
# directory's kind, or NAME_LDADD's (the C one for $(mtest_c_objects)).
build_fortran() {
    local dir=$1 name=$2 bin=$3 sd mk sources ext s path o objs=() fort=0 ldadd=() am=() flag
    sd=$(srcdir_of "$dir")
    mk=$sd/Makefile.am
    sources=$(makevar "$name" SOURCES "$mk")
    if [ -z "$sources" ]; then
        ext=$(sed -n 's/^AM_DEFAULT_SOURCE_EXT[[:space:]]*=[[:space:]]*//p' "$mk" | head -n 1)
        sources=$name${ext:-.c}
    fi
    # AM_FFLAGS's include directories (-I. and, for f77/rma, -I../attr),
    # which hold the generated headers.
    for flag in -I. $(sed -n 's/^AM_FFLAGS[[:space:]]*+\{0,1\}=//p' "$mk"); do
        case $flag in
            -I/*) am+=("$flag") ;;
            -I*) am+=(-I"$gen/$dir/${flag#-I}") ;;
        esac
    done
    local objdir=$bin/$name.objs
    rm -rf "$objdir"
    mkdir -p "$objdir"
    for s in $sources; do
        path=$(findsrc "$dir" "$s") || { echo "no source $s for $name in $sd"; return 1; }
        o=$objdir/$s.o
        case $s in
            *.c) "$mpicc" "${fcflags[@]}" -c -o "$o" "$path" || return 1 ;;
            *.f | *.F | *.f90 | *.F90)
                fort=1
                "$mpifort" "${fflags[@]}" "${am[@]}" -J"$objdir" -I"$objdir" -c -o "$o" "$path" || return 1 ;;
            *) echo "$name: source $s of an unknown kind"; return 1 ;;
        esac
        objs+=("$o")
    done
    # A program's own LDADD replaces the directory's, unless it names it
    # (`$(LDADD) $(F77_GETARG_LIBS)`: f77/spawn's spawnargvf).
    if grep -qE "^${name}_LDADD[[:space:]]*=" "$mk" && ! grep -qE "^${name}_LDADD[[:space:]]*=.*\\$\(LDADD\)" "$mk"; then
        if grep -qE "^${name}_LDADD[[:space:]]*=.*mtest_c_objects" "$mk"; then
            ldadd=("${helpers[@]}" "$obj/util_mtest_single.c.o")
            [ $fort = 1 ] || grep -qE '^int main' "$path" || ldadd+=("$runner")
        fi
    else
        case $dir in
            f77/*) o=$obj/util_mtest_f77.f.o ;;
            f90/*) o=$obj/util_mtest_f90.f90.o ;;
            *) o=$obj/util_mtest_f08.f90.o ;;
        esac
        [ -f "$o" ] || { echo "$name: no mtest helper $o:"; cat "$o.build.txt"; return 1; }
        ldadd=("$o")
    fi
    # Linked with mpifort even when all its sources are C (c2fmult): its
    # MPI_*_c2f/_f2c are in the Fortran binding's library (see above).
    "$mpifort" "${fflags[@]}" -o "$bin/$name" "${objs[@]}" "${ldadd[@]}" -lm
}

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
    lang=c
    case $dir in f77/* | f90/* | f08/*) lang=fortran ;; esac
    list=$(srcdir_of "$dir")/testlist.in
    [ -f "$list" ] || list=$(srcdir_of "$dir")/testlist
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
        if [ $lang = fortran ]; then
            if [ ! -x "$bin/$name" ] || [ "$obj/fort/stamp" -nt "$bin/$name" ]; then
                rm -f "$bin/$name"
                if ! build_fortran "$dir" "$name" "$bin" >"$bin/$name.build.txt" 2>&1; then
                    echo "$dir $name $np nolink" >>"$results"
                    continue
                fi
            fi
        elif [ ! -x "$bin/$name" ]; then
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
        # spawn/: room for the processes the tests start (hydra's default
        # universe is the hosts' cores; ours is the job unless told).
        usize=()
        nodes=$(((np + 3) / 4))
        if [ "${dir##*/}" = spawn ]; then
            u=$((np + ${MPICH_SPAWN_ROOM:-140}))
            usize=(--universe-size $u)
            # A simulated node has at most 16 slots.
            [ $nodes -ge $(((u + 15) / 16)) ] || nodes=$(((u + 15) / 16))
        fi
        (cd "$bin" && timeout $((t + 30)) "$prefix/bin/dnrun" -n "$np" --nodes $nodes \
            --backend "$backend" --timeout "$t" "${usize[@]}" "${envs[@]}" -- "./$name" "${args[@]}") >"$out" 2>&1 || status=$?
        if judge "$out" "$status" "$how"; then
            pass=$((pass + 1))
            echo "$dir $name $np pass" >>"$results"
        else
            echo "$dir $name $np fail ($how, exit $status)" >>"$results"
        fi
    # `@comm_overlap@` and its kind are what MPICH's configure turns into
    # nothing (the test is built) or a comment: built, as for a library
    # with MPI_THREAD_MULTIPLE.
    # `@ALLOCMEMF@` (f77/ext) and `@ALLOCMEMFC@` (f90/ext) become the
    # allocmemf line when the compiler has Cray pointers, as gfortran has.
    # `@F77SPAWNARGTEST@` and `@F03SPAWNARGTEST@` (f77/spawn, f90/spawn)
    # become nothing when the compiler can read the command line (getarg,
    # get_command_argument), as gfortran can.
    done < <(sed -e 's/^@ALLOCMEMF@/allocmemf 1/' -e 's/^@ALLOCMEMFC@/allocmemf90 1/' \
        -e 's/^@F77SPAWNARGTEST@//' -e 's/^@F03SPAWNARGTEST@//' \
        -e 's/^@[A-Za-z_]*@[[:space:]]*//' "$list")
    echo "$dir $backend: $pass of $runs runs pass" | tee -a "$results"
    total_pass=$((total_pass + pass))
    total_runs=$((total_runs + runs))
done
echo "all $backend: $total_pass of $total_runs runs pass ($results)" | tee -a "$results"
cd "$repo"
