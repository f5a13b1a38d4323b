# Sourced by scripts that need two "hosts" on one machine: network
# namespaces A and B joined by a veth pair, 10.199.0.1 in A and 10.199.0.2
# in B (root and iproute2). netns_up TAG creates them as dn-a-TAG / dn-b-TAG
# and sets $ns_a and $ns_b; netns_down removes them.
netns_up() {
  ns_a=dn-a-$1; ns_b=dn-b-$1
  ip netns add "$ns_a"; ip netns add "$ns_b"
  ip link add "va-$1" type veth peer name "vb-$1"
  ip link set "va-$1" netns "$ns_a"; ip link set "vb-$1" netns "$ns_b"
  ip -n "$ns_a" addr add 10.199.0.1/24 dev "va-$1"; ip -n "$ns_b" addr add 10.199.0.2/24 dev "vb-$1"
  ip -n "$ns_a" link set "va-$1" up; ip -n "$ns_b" link set "vb-$1" up
  ip -n "$ns_a" link set lo up; ip -n "$ns_b" link set lo up
}
netns_down() {
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
}
