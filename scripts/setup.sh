#!/usr/bin/env bash
# Install what the project needs beyond the Rust toolchain, on Debian.
# Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail
need=()
command -v gcc >/dev/null || need+=(gcc)          # the C-header test compiles the exported header
command -v ip >/dev/null || need+=(iproute2)      # network-namespace tests of the UDP backend
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
echo "setup: ok"
