#!/usr/bin/env bash
# Run an MPI job over the UDP backend between two network namespaces joined
# by a veth pair — two "hosts" on one machine, a real network path (ARP,
# IP, the veth device) instead of loopback. Needs root and iproute2.
#   scripts/netns-udp.sh [TEST] [NETEM-ARGS...]
# e.g. scripts/netns-udp.sh allpairs loss 5% delay 50us   (netem, if the kernel has sch_netem)
set -euo pipefail
cd "$(dirname "$0")/.."
test_name="${1:-allpairs}"; shift || true
bin=target/release
[ -x $bin/dnrun ] || cargo build --release --bins
source scripts/netns-lib.sh
ns_a=dn-a-$$; ns_b=dn-b-$$
cleanup() { netns_down; rm -f "$hosts"; }
hosts=$(mktemp)
trap cleanup EXIT
netns_up $$
a=$ns_a; b=$ns_b
if [ $# -gt 0 ]; then
  ip netns exec $a tc qdisc add dev va-$$ root netem "$@"
  ip netns exec $b tc qdisc add dev vb-$$ root netem "$@"
fi
printf '10.199.0.1:17001\n10.199.0.1:17002\n10.199.0.2:17003\n10.199.0.2:17004\n' > "$hosts"
job=$RANDOM
ip netns exec $a $bin/dnrun -n 4 --backend udp --hostfile "$hosts" --ranks 0-1 --job-id $job --timeout 120 -x DN_STATS=1 -- $bin/mpi-suite "$test_name" &
pa=$!
ip netns exec $b $bin/dnrun -n 4 --backend udp --hostfile "$hosts" --ranks 2-3 --job-id $job --timeout 120 -x DN_STATS=1 -- $bin/mpi-suite "$test_name"
wait $pa
