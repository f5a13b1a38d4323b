"""Shared by the benchmark scripts: the best of several rounds per size."""
import json
import os


def best(d, rounds, name, key, better):
    """Rows of `{d}/{name}.1..rounds` (dnbench/tcpbench --json output) by
    size, keeping for each size the row whose `key` is `better`; missing or
    empty rounds (a failed run) are skipped."""
    out = {}
    for r in range(1, rounds + 1):
        p = f"{d}/{name}.{r}"
        if not os.path.exists(p) or os.path.getsize(p) == 0:
            continue
        for row in json.load(open(p)):
            s = row["size"]
            if s not in out or better(row[key], out[s][key]):
                out[s] = row
    return out


def lower(a, b):
    return a < b


def higher(a, b):
    return a > b
