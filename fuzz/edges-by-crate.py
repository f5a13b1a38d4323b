#!/usr/bin/env python3
"""Edges by crate: which crate each AFL++ edge of an instrumented binary
belongs to, and how many of each crate's edges the given edge files hold.

    fuzz/edges-by-crate.py BINARY EDGES_FILE...

An edge is a guard of the binary's __sancov_guards section (AFL++ numbers
them in section order from 5: afl-compiler-rt's
__sanitizer_cov_trace_pc_guard_init). Each instrumented basic block passes
its guard's address to __sanitizer_cov_trace_pc_guard with a `lea` in the
function that holds the block, so disassembling the binary gives every
guard's function, and the function's demangled path its crate. Code inlined
into another crate's function counts for that function's crate.
"""
import re
import subprocess
import sys
from collections import Counter

binary, edge_files = sys.argv[1], sys.argv[2:]
sections = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
m = re.search(r"__sancov_guards\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", sections)
if not m:
    sys.exit(f"{binary}: no __sancov_guards section (not built by cargo afl?)")
start, size = int(m.group(1), 16), int(m.group(2), 16)
func_re = re.compile(r"^[0-9a-f]+ <(.*)>:$")
lea_re = re.compile(r"\slea\s.*#\s*([0-9a-f]+)")
crate_re = re.compile(r"^[<&\s]*(?:dyn )?([A-Za-z_][A-Za-z0-9_]*)::")
crate_of = {}
func = ""
dis = subprocess.Popen(["objdump", "-d", "-C", "--no-show-raw-insn", binary], stdout=subprocess.PIPE, text=True)
for line in dis.stdout:
    f = func_re.match(line)
    if f:
        c = crate_re.match(f.group(1))
        func = c.group(1) if c else "other"
        continue
    if "lea" in line:
        l = lea_re.search(line)
        if l:
            addr = int(l.group(1), 16)
            if start <= addr < start + size:
                crate_of.setdefault(5 + (addr - start) // 4, func)
dis.wait()
total = Counter(crate_of.values())
shown = ["hw_model", "driver", "fpga_regs", "simlink", "hw_tools"]
print(f"{'edges seen / in the binary':<34}" + "".join(f"{c:>18}" for c in shown + ["all"]))
for path in edge_files:
    seen = Counter(crate_of.get(int(x), "other") for x in open(path).read().split())
    cells = [f"{seen[c]} / {total[c]}" for c in shown] + [f"{sum(seen.values())} / {len(crate_of)}"]
    print(f"{path:<34}" + "".join(f"{x:>18}" for x in cells))
