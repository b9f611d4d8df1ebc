#!/usr/bin/env python3
"""The held-out ids of an in-stream kernel file (h100_kernels_fp8.json format), fixed before any
error was computed (docs/validation.md, "Kernels in a stream"): of fp8_linear the shard shapes of
one published run, llama3_70b (tp 2, 4 and 8); of every other kind the ids whose number is
divisible by 3 (as h100_kernels.json's hold-out: k06, k12, ...). Prints them comma-separated;
`--fit` prints the others.

usage: kernel_holdout.py FILE [--fit]
"""
import json
import re
import sys

HELD_MODEL = "llama3_70b"


def held_out(entry):
    cfg = entry["cfg"]
    if cfg["kind"] == "fp8_linear":
        return cfg.get("model") == HELD_MODEL
    return int(re.sub(r"\D", "", cfg["id"]) or 1) % 3 == 0


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--fit"):
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        kernels = json.load(f)["kernels"]
    fit = len(sys.argv) == 3
    print(",".join(k["cfg"]["id"] for k in kernels if held_out(k) != fit))


if __name__ == "__main__":
    main()
