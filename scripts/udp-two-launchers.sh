#!/usr/bin/env bash
# A UDP job of NP ranks "on two hosts": two dnrun launchers on this
# machine, one starting the ranks RANKS_A and the other RANKS_B, meeting
# through a host file on loopback (as `dnrun --hostfile F --ranks ...` on
# two real hosts). Each launcher's ranks talk shared memory with each other
# and UDP with the other launcher's (docs/guide/udp.md).
#
#   scripts/udp-two-launchers.sh NP RANKS_A RANKS_B PROGRAM [ARGS...]
#   scripts/udp-two-launchers.sh 3 0-1 2 ./pair-latency 20000   # 0 and 1 share memory
#   scripts/udp-two-launchers.sh 3 0,2 1 ./pair-latency 20000   # 0 and 1 over UDP
#
# DNRUN (default: dnrun on PATH) and the environment (DN_STATS=1,
# DN_UDP_SHM=off, ...) go to both launchers.
set -euo pipefail
if [ $# -lt 4 ]; then
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
np=$1 a=$2 b=$3
shift 3
dnrun=${DNRUN:-dnrun}
hosts=$(mktemp)
trap 'rm -f "$hosts"' EXIT
python3 - "$np" > "$hosts" <<'PY'
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    held.append(s)
    print(f"127.0.0.1:{s.getsockname()[1]}")
PY
job=$(( (RANDOM << 15) | RANDOM ))
"$dnrun" -n "$np" --backend udp --job-id "$job" --ranks "$a" --hostfile "$hosts" -- "$@" &
first=$!
status=0
"$dnrun" -n "$np" --backend udp --job-id "$job" --ranks "$b" --hostfile "$hosts" -- "$@" || status=$?
wait "$first" || status=$?
exit "$status"
