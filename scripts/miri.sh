#!/bin/sh
# Run the engine's zero-copy tests under Miri (Stacked and Tree Borrows).
# Needs a nightly toolchain with the miri component; not part of CI.
#   rustup +nightly component add miri rust-src
set -eu
cd "$(dirname "$0")/.."
cargo +nightly miri test -p adi --test engine_borrowed
MIRIFLAGS=-Zmiri-tree-borrows cargo +nightly miri test -p adi --test engine_borrowed
# The other engine tests, without the large ping-pong: under Miri its 300 KB
# messages take longer than the local backend's 60 s deadlock limit.
cargo +nightly miri test -p adi --test engine_local -- --skip ping_pong
# The datatype engine's safe packing over its raw copies, and the
# progress hooks (a hook that sends from inside a blocking receive).
cargo +nightly miri test -p mpi --lib datatype::typemap
# Raw datatype buffers: packing, staging and partial unpacking
# (mpi::staged), and reductions on raw elements.
cargo +nightly miri test -p mpi --lib staged
cargo +nightly miri test -p adi --test engine_hooks
