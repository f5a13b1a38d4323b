#!/usr/bin/env bash
# MPICH's hydra (mpiexec.hydra) starting one job across two "hosts": network
# namespaces A (10.199.0.1) and B (10.199.0.2) joined by a veth pair, with a
# hosts file of their addresses, two slots each. hydra reaches a host
# through its launcher; ours (-launcher-exec) enters the host's namespace
# instead of ssh-ing to it. The ranks find each other through hydra's PMI-1
# key-value space and talk UDP, each bound to its host's address as the
# hosts file names it. Needs root, iproute2 and mpich.
#   scripts/netns-hydra.sh PROGRAM [NP] [ARGS...]     (default NP 4)
set -euo pipefail
cd "$(dirname "$0")/.."
prog=$(realpath "${1:?usage: scripts/netns-hydra.sh PROGRAM [NP] [ARGS...]}")
np=${2:-4}
shift $(( $# >= 2 ? 2 : 1 ))
command -v mpiexec.hydra >/dev/null || { echo "netns-hydra: no mpiexec.hydra (scripts/setup.sh installs mpich)" >&2; exit 2; }
source scripts/netns-lib.sh
tag=h$$
work=$(mktemp -d)
cleanup() { netns_down; rm -rf "$work"; }
trap cleanup EXIT
netns_up "$tag"
printf '10.199.0.1:2\n10.199.0.2:2\n' > "$work/hosts"
# hydra calls its launcher as ssh: [OPTIONS] HOST COMMAND...
cat > "$work/enter-host" <<EOS
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
case \$host in
  10.199.0.1) ns=$ns_a ;;
  10.199.0.2) ns=$ns_b ;;
  *) echo "netns-hydra: no namespace for host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
EOS
chmod +x "$work/enter-host"
ip netns exec "$ns_a" timeout 300 mpiexec.hydra -launcher ssh -launcher-exec "$work/enter-host" \
    -f "$work/hosts" -n "$np" "$prog" "$@"
