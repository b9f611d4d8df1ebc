#!/usr/bin/env python3
"""`validate train --inputs DIR` on the measured steps of test/data/gpu/h100_train.json: every line
of DIR/commands.tsv (`ID<TAB>estimate ARGS`) is run from DIR as `estimate ARGS --json`, and its
totals.t and totals.mem must equal the run's predicted step and peak memory of validate's CSV bit
for bit (both print the doubles with 17 significant digits). The validation sets' rows are
reproduced by test_validation_sets.py (each row's estimate command).

usage: test_validate_inputs.py VALIDATE ESTIMATE SOURCE_DIR WORK_DIR
"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys

FAILURES = []


def check(ok, what):
    print(('ok    ' if ok else 'FAIL  ') + what)
    if not ok:
        FAILURES.append(what)


def main():
    validate_bin, estimate_bin, source, work = sys.argv[1:5]
    # train: every measured step on the shipped H100 calibration, step (where it ran) and peak
    # memory bit for bit (validate's CSV prints both predictions with 17 digits).
    out = os.path.join(work, "train")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([validate_bin, "-q", "train", "-m", os.path.join(source, "test", "data", "gpu", "h100_train.json"),
                        "--system", "H100-calibrated", "--inputs", out], capture_output=True, text=True)
    check(p.returncode == 0, f"validate train --inputs: exit {p.returncode} {p.stderr[-300:]}")
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(p.stdout))}
    with open(os.path.join(out, "commands.tsv"), encoding="utf-8") as f:
        lines = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    check(sorted(fields[0] for fields in lines) == sorted(rows), f"train: a line for each of the {len(rows)} runs")
    same = 0
    for fields in lines:
        args = fields[1].split()
        r = subprocess.run([estimate_bin, *args[1:], "--json", "-q"], capture_output=True, text=True, cwd=out)
        if r.returncode != 0:
            check(False, f"train {fields[0]}: {r.stderr.strip()}")
            continue
        totals = json.loads(r.stdout)["totals"]
        row = rows[fields[0]]
        same += (row["predicted_step_s"] == "" or float(row["predicted_step_s"]) == totals["t"]) and \
            float(row["predicted_peak_gb"]) == totals["mem"]
    check(same == len(rows), f"train: {same} of {len(rows)} lines reproduce step and peak bit for bit")

    if FAILURES:
        sys.exit(f"{len(FAILURES)} check(s) failed")


if __name__ == "__main__":
    main()
