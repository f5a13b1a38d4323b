#!/usr/bin/env bash
# Run MPI programs over the DPDK backend between two network namespaces
# joined by a veth pair — two "hosts" on one machine. Each rank drives its
# end of the pair with DPDK's af_packet PMD (`dnrun --dpdk-vdev
# net_af_packet0,iface=...`); the ranks find each other's MAC by hello
# frames, and frames are as large as the veth MTU allows. Needs root,
# iproute2 and DPDK (scripts/setup.sh).
#   scripts/netns-dpdk.sh [TEST...]       (default: the 2-rank MPI suite)
# MTU=N sets the veth MTU (default 1500); VDEV_ARGS=K=V,... adds af_packet
# arguments (e.g. framesz=16384,blocksz=16384 for frames of a jumbo MTU).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(pingpong ring allpairs wildcard unexpected many-requests ordering rndv-large mixed probe sync comms
         poll-iprobe poll-test poll-testall collectives nbc)
fi
bin=target/release
cargo build --release --locked --bins >/dev/null 2>&1 || cargo build --release --bins >/dev/null
source scripts/netns-lib.sh
ns_a=dn-a-$$; ns_b=dn-b-$$
trap netns_down EXIT
netns_up $$
a=$ns_a; b=$ns_b
if [ -n "${MTU:-}" ]; then
  ip -n $a link set va-$$ mtu "$MTU"; ip -n $b link set vb-$$ mtu "$MTU"
fi
failed=()
for t in "${tests[@]}"; do
  job=$RANDOM
  run() { ip netns exec "$1" $bin/dnrun -n 2 --backend dpdk --dpdk-vdev "net_af_packet0,iface=$2${VDEV_ARGS:+,$VDEV_ARGS}" --ranks "$3" \
            --job-id $job --timeout 120 "${@:4}" -- $bin/mpi-suite "$t"; }
  run $b vb-$$ 1 >/dev/null 2>"/tmp/netns-dpdk-$$.err" &
  pb=$!
  if run $a va-$$ 0 -x DN_STATS="${DN_STATS:-0}" && wait $pb; then
    :
  else
    wait $pb 2>/dev/null || true
    echo "FAILED $t (rank 1 said:)"; cat "/tmp/netns-dpdk-$$.err"
    failed+=("$t")
  fi
done
rm -f "/tmp/netns-dpdk-$$.err"
if [ ${#failed[@]} -gt 0 ]; then
  echo "over af_packet: ${#failed[@]} of ${#tests[@]} failed: ${failed[*]}"; exit 1
fi
echo "over af_packet between two namespaces: all ${#tests[@]} programs passed"
