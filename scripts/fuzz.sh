#!/usr/bin/env bash
# Coverage-guided fuzzing of the register protocol with AFL++ (issue 51).
#
#   scripts/fuzz.sh [registers|raw] [MINUTES]     fuzz for MINUTES (default 10)
#   scripts/fuzz.sh compare MINUTES               the guided fuzzer against the
#                                                 old generator, same wall time,
#                                                 one CPU each, same edge counter
#   scripts/fuzz.sh minimize [registers|raw]      rebuild fuzz/corpus/TARGET from
#                                                 the last run's queue (the smallest
#                                                 input for every edge, as afl-cmin)
#
# Targets (fuzz/src/bin): `registers` reads the input as structured
# operations (valid commands of every kind, planted defects, mutated and raw
# descriptors, words anywhere in the slot, doorbells), `raw` as unstructured
# words, descriptors and doorbells only; both drive a fresh simulator per
# input through the driver and check the invariants of `dimmnet-sim fuzz`
# (no panic, no write outside the slot's rights, no lost IVS payload, every
# planted defect refused). A violation is a crash: AFL++ keeps its input in
# target/fuzz/TARGET/default/crashes; replay one with
#   fuzz/target/release/fuzz-tool replay TARGET DIR
# fix it, and keep the input in fuzz/regressions/TARGET (the test suite
# replays the corpus and the regressions: hw-tools/tests/fuzz_corpus.rs).
#
# Needs cargo-afl (installed here from crates.io when missing), which builds
# its own AFL++.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-registers}
minutes=${2:-10}
afl_version=0.18.2
if ! cargo afl --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-afl $afl_version"
    cargo install --locked cargo-afl --version "$afl_version"
fi
cargo afl build --release --locked --manifest-path fuzz/Cargo.toml -q
bin=fuzz/target/release
mkdir -p target/fuzz
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1

run_afl() { # target seconds cpu-list
    local t=$1 secs=$2 out=target/fuzz/$1
    rm -rf "$out"
    mkdir -p "$out"
    local seeds=target/fuzz/$t.seeds
    rm -rf "$seeds"
    mkdir -p "$seeds"
    cp fuzz/corpus/"$t"/* "$seeds"/ 2>/dev/null || true
    cp fuzz/regressions/"$t"/* "$seeds"/ 2>/dev/null || true
    [ -n "$(ls "$seeds")" ] || "$bin/fuzz-tool" seed 50 "$seeds"
    AFL_NO_AFFINITY=1 taskset -c "$3" cargo afl fuzz -V "$secs" -i "$seeds" -o "$out" "$bin/$t" >"$out.log" 2>&1 || true
    grep -E "^(execs_done|execs_per_sec|corpus_count|edges_found|total_edges|saved_crashes|saved_hangs|stability) " "$out/default/fuzzer_stats" | sed "s/^/fuzz: $t: /"
    local crashes
    crashes=$(find "$out/default/crashes" -name 'id:*' 2>/dev/null | wc -l)
    if [ "$crashes" -gt 0 ]; then
        echo "fuzz: $t: $crashes crashing inputs in $out/default/crashes (replay: $bin/fuzz-tool replay $t $out/default/crashes)"
        return 1
    fi
}

case "$mode" in
registers | raw)
    run_afl "$mode" $((minutes * 60)) 0-"$(($(nproc) - 1))"
    ;;
compare)
    [ "$(nproc)" -ge 2 ] || { echo "fuzz: compare needs 2 CPUs (one per fuzzer)"; exit 1; }
    secs=$((minutes * 60))
    echo "fuzz: $minutes min each, at once: AFL++ on CPU 0, the old generator on CPU 1"
    taskset -c 1 "$bin/fuzz-tool" generate "$secs" 7 --edges target/fuzz/generator.edges >target/fuzz/generator.log 2>&1 &
    gen=$!
    status=0
    run_afl registers "$secs" 0 || status=$?
    wait $gen
    tail -1 target/fuzz/generator.log | sed 's/^/fuzz: old /'
    "$bin/fuzz-tool" replay registers target/fuzz/registers/default/queue --edges target/fuzz/afl.edges |
        sed 's/^/fuzz: AFL++ queue /'
    # The same edges by crate (hw_model is the device model).
    fuzz/edges-by-crate.py "$bin/fuzz-tool" target/fuzz/generator.edges target/fuzz/afl.edges | sed 's/^/fuzz: /'
    exit $status
    ;;
minimize)
    # afl-cmin's rule (the smallest input for every edge) with the same
    # edge counter as `compare`; inputs named by a hash of their bytes.
    t=${2:-registers}
    q=target/fuzz/$t/default/queue
    [ -d "$q" ] || { echo "fuzz: no queue in $q: run scripts/fuzz.sh $t first"; exit 1; }
    rm -rf target/fuzz/"$t".min
    "$bin/fuzz-tool" minimize "$t" target/fuzz/"$t".min "$q" | sed 's/^/fuzz: /'
    rm -rf fuzz/corpus/"$t"
    mkdir -p fuzz/corpus
    mv target/fuzz/"$t".min fuzz/corpus/"$t"
    echo "fuzz: fuzz/corpus/$t: $(ls fuzz/corpus/"$t" | wc -l) inputs ($(du -sh fuzz/corpus/"$t" | cut -f1))"
    ;;
*)
    sed -n '2,25p' "$0"
    exit 2
    ;;
esac
