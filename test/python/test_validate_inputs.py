#!/usr/bin/env python3
"""`validate megatron|vtrain|nanotron|train --inputs DIR` on the measured runs of test/data/cluster
and test/data/gpu/h100_train.json: every
line of DIR/commands.tsv (`ID<TAB>estimate ARGS`) is run from DIR as `estimate ARGS --json`, and
its totals.t must equal the run's predicted_iteration_s of validate's CSV bit for bit (both print
the double with 17 significant digits): a line for every run with a prediction, in every set
(megatron, vtrain, nanotron --unfitted, nanotron with its fitted host floor in the runtime files,
pipelined runs with nanotron's uneven stages among them), and none for the runs without one.
Every model and runtime file holds a content no other file of its folder holds.

usage: test_validate_inputs.py VALIDATE ESTIMATE SOURCE_DIR WORK_DIR
"""
import collections
import concurrent.futures
import csv
import io
import json
import os
import shutil
import subprocess
import sys

# The sets' files and the check log of the cluster validation's test, beside this one.
from test_validate_clusters import FAILURES, FILES, check


def file_lines(path):
    """The 1-based line of each data row of a measurements CSV (blank lines skipped, as validate does)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        next(reader)
        return [reader.line_num for row in reader if any(cell.strip() for cell in row)]


def validate(validate_bin, set_name, data, out, *extra):
    shutil.rmtree(out, ignore_errors=True)
    measurements = os.path.join(data, FILES[set_name])
    p = subprocess.run([validate_bin, "-q", set_name, "-m", measurements, "--inputs", out, *extra],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"validate {set_name}: exit {p.returncode}\n{p.stderr}")
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    # The commands.tsv id of each row: the run's id, with @LINE where the file repeats it.
    count = collections.Counter(r["id"] for r in rows)
    lines = file_lines(measurements)
    assert len(lines) == len(rows), (len(lines), len(rows))
    by_id = {}
    for r, line in zip(rows, lines):
        by_id[r["id"] if count[r["id"]] == 1 else f"{r['id']}@{line}"] = r
    print(p.stderr.strip().splitlines()[-1])
    return by_id


def estimate_steps(estimate_bin, out):
    """Each commands.tsv line run from `out` with --json: (id, note, totals.t or the error)."""
    with open(os.path.join(out, "commands.tsv"), encoding="utf-8") as f:
        lines = [line.rstrip("\n").split("\t") for line in f if line.strip()]

    def run(fields):
        args = fields[1].split()
        assert args[0] == "estimate", fields
        p = subprocess.run([estimate_bin, *args[1:], "--json", "-q"], capture_output=True, text=True, cwd=out)
        note = fields[2] if len(fields) > 2 else ""
        if p.returncode != 0:
            return fields[0], note, p.stderr.strip()
        return fields[0], note, json.loads(p.stdout)["totals"]["t"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(run, lines))


def distinct_files(out, folder):
    texts = []
    for name in sorted(os.listdir(os.path.join(out, folder))):
        with open(os.path.join(out, folder, name), encoding="utf-8") as f:
            texts.append(f.read())
    return len(texts) == len(set(texts))


def compare(set_name, by_id, steps, expect_ids):
    """Every expected run has one line, and each reproduces the prediction bit for bit."""
    ids = [s[0] for s in steps]
    check(len(ids) == len(set(ids)), f"{set_name}: ids unique")
    check(sorted(ids) == sorted(expect_ids), f"{set_name}: a line for each of the {len(expect_ids)} runs expected")
    errors = [(i, t) for i, _, t in steps if isinstance(t, str)]
    check(not errors, f"{set_name}: every line runs" + (f" (first failure: {errors[0]})" if errors else ""))
    check(not any(note for _, note, _ in steps), f"{set_name}: no line has a note")
    same = sum(1 for i, _, t in steps if not isinstance(t, str) and i in by_id and
               t == float(by_id[i]["predicted_iteration_s"]))
    check(same == len(steps), f"{set_name}: {same} of {len(steps)} lines reproduce the prediction bit for bit")
    return same


def main():
    validate_bin, estimate_bin, source, work = sys.argv[1:5]
    data = os.path.join(source, "test", "data", "cluster")
    for set_name in ("megatron", "vtrain"):
        out = os.path.join(work, set_name)
        by_id = validate(validate_bin, set_name, data, out)
        compare(set_name, by_id, estimate_steps(estimate_bin, out), list(by_id))
        check(distinct_files(out, "models") and distinct_files(out, "runtimes"), f"{set_name}: files distinct")

    # nanotron: every run with a prediction, pipelined or not, unfitted and with the fitted host floor.
    for mode, extra in (("unfitted", ["--unfitted"]), ("fitted", [])):
        out = os.path.join(work, "nanotron_" + mode)
        by_id = validate(validate_bin, "nanotron", data, out, *extra)
        with open(os.path.join(data, FILES["nanotron"]), newline="", encoding="utf-8-sig") as f:
            pp = [int(row["pp"]) for row in csv.DictReader(f)]
        expect = [i for i, r in by_id.items() if r["predicted_iteration_s"] != ""]
        pipelined = sum(1 for (i, r), p in zip(by_id.items(), pp) if r["predicted_iteration_s"] != "" and p > 1)
        check(pipelined > 1000, f"nanotron {mode}: {pipelined} pipelined runs among the lines")
        compare(f"nanotron {mode}", by_id, estimate_steps(estimate_bin, out), expect)
        check(distinct_files(out, "models") and distinct_files(out, "runtimes"), f"nanotron {mode}: files distinct")

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
