#!/usr/bin/env python3
"""Instructions per 0-byte eager send+receive pair, by layer, from two
callgrind profiles of `dnbench latency --sizes 0` with different iteration
counts (the difference removes start-up and shut-down).

usage: callgrind-layers.py SHORT_PROFILE SHORT_ITERS LONG_PROFILE LONG_ITERS
"""
import re
import subprocess
import sys


def inclusive(path):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in out.splitlines():
        # "COST (PCT%)  FILE:FUNCTION [OBJECT]", the object being optional.
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+[^\s:]+:(.+?)(?: \[[^\]]+\])?$", line)
        if m:
            # A function inlined into several files is listed once per file;
            # the largest entry is its inclusive cost (the others are parts).
            fn = m.group(2)
            costs[fn] = max(costs.get(fn, 0), int(m.group(1).replace(",", "")))
    return costs


def pick(costs, *needles):
    return sum(v for k, v in costs.items() if any(k == n or k.startswith(n) for n in needles))


def layers(costs):
    total = pick(costs, "dnbench::main")
    transport = pick(costs, "<adi::backend::dimmnet::DimmnetTransport as adi::transport::Transport>::")
    handoff = pick(costs, "driver::platform::SimActor::yield_now")
    return {"total": total, "mpi+adi": total - transport, "backend+driver": transport - handoff, "sim hand-off": handoff}


def main():
    a, na, b, nb = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    la, lb = layers(inclusive(a)), layers(inclusive(b))
    for k in la:
        print(f"{k:>16}: {(lb[k] - la[k]) / (nb - na):10.1f} instructions per send+receive pair")


if __name__ == "__main__":
    main()
