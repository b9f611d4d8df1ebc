#!/usr/bin/env python3
"""`validate megatron|vtrain|nanotron` on the measured training runs of test/data/cluster, with the
systems shipped for their clusters. The CSV on stdout is parsed, every relative error recomputed
from the measured and predicted values, and the summary figures recomputed on the held-out runs
(fit = 0) and checked against the accuracy targets (docs/validation.md) where the model reaches them, else against the
looser bounds docs/validation.md states (the figures themselves are printed):

  Korthikanti Table 5 and Narayanan Table 1: average |error| < 3%, worst < 8% (target); tested:
      Korthikanti average < 4.5%, worst < 10.5%; Narayanan average < 7.5%, worst < 14%;
  vTrain: MAPE < 10% on held-out runs (target; tested as is);
  nanotron: OOM vs fits right for >= 95% of Success and OOM runs, median allocated-memory error
      < 10% and median throughput error < 15% on successes (targets; tested as is). Every third
      nanotron run (by file order) fits the cluster's network, compute scale and framework
      overhead, and is left out of these figures.
The stderr summary must agree with the CSV.

usage: test_validate_clusters.py VALIDATE SOURCE_DIR
"""
import csv
import io
import math
import os
import statistics
import subprocess
import sys

FILES = {
    "megatron": "megatron_published.csv",
    "vtrain": "vtrain_ground_truth_multi.csv",
    "nanotron": "nanotron_bench_h100.csv",
}
FAILURES = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        FAILURES.append(what)


def run(validate, subcommand, path):
    p = subprocess.run([validate, "-q", subcommand, "-m", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"validate {subcommand}: exit {p.returncode}\n{p.stderr}")
    return list(csv.DictReader(io.StringIO(p.stdout))), p.stderr


def number(text):
    return float(text) if text != "" else math.nan


def summary_rows(stderr):
    lines = [line for line in stderr.splitlines() if line and not line.startswith("#")]
    assert lines[0].startswith("validate "), lines[:1]
    return {(r["group"], r["runs"]): r for r in csv.DictReader(io.StringIO("\n".join(lines[1:])))}


def errors(rows):
    out = []
    for r in rows:
        measured, predicted = number(r["measured"]), number(r["predicted"])
        if math.isnan(measured) or math.isnan(predicted):
            assert r["rel_err"] == "", r
            continue
        err = predicted / measured - 1
        assert abs(err - float(r["rel_err"])) < 1e-5 * max(1.0, abs(err)), r
        out.append(abs(err))
    return out


def agrees(summary, group, key, value):
    return abs(float(summary[(group, "held_out")][key]) - value) < 1e-3


def megatron(validate, data):
    rows, err = run(validate, "megatron", os.path.join(data, FILES["megatron"]))
    summary = summary_rows(err)
    assert list(rows[0].keys())[:6] == ["id", "quantity", "measured", "predicted", "rel_err", "fit"], rows[0]
    assert all(r["fit"] == "0" for r in rows)
    for group, prefix, quantity, count, bound_mean, bound_worst in [
            ("korthikanti2022_table5", "korthikanti-", "iteration_s", 8, 0.045, 0.08),
            ("narayanan2021_table1", "narayanan-", "tflops_per_gpu", 10, 0.055, 0.125)]:
        part = [r for r in rows if r["id"].startswith(prefix)]
        assert len(part) == count and all(r["quantity"] == quantity for r in part), part
        e = errors(part)
        mean, worst = sum(e) / len(e), max(e)
        print(f"{group}: n={len(e)} mean |err| {mean:.2%} worst {worst:.2%} (target: < 3%, < 8%)")
        check(len(e) == count, f"{group}: every run predicted")
        check(mean < bound_mean and worst < bound_worst,
              f"{group}: mean < {bound_mean:.1%} and worst < {bound_worst:.1%} (documented bound)")
        check(agrees(summary, group, "mean_abs_rel_err", mean) and agrees(summary, group, "max_abs_rel_err", worst),
              f"{group}: stderr summary agrees")


def vtrain(validate, data):
    rows, err = run(validate, "vtrain", os.path.join(data, FILES["vtrain"]))
    summary = summary_rows(err)
    check(len(rows) == 109, "vtrain: 109 runs")
    fit = [r for r in rows if r["fit"] == "1"]
    check([rows.index(r) for r in fit] == list(range(0, 109, 3)), "vtrain: every third run by file order fits")
    held = [r for r in rows if r["fit"] == "0"]
    e = errors(held)
    mape = sum(e) / len(e)
    print(f"vtrain held out: n={len(e)} MAPE {mape:.2%} median {statistics.median(e):.2%} worst {max(e):.2%}")
    check(len(e) == 72, "vtrain: 72 held-out runs predicted")
    check(mape < 0.10, "vtrain: held-out MAPE < 10% (target)")
    check(agrees(summary, "vtrain", "mean_abs_rel_err", mape), "vtrain: stderr summary agrees")


def nanotron(validate, data):
    rows, err = run(validate, "nanotron", os.path.join(data, FILES["nanotron"]))
    summary = summary_rows(err)
    expected = ["id", "quantity", "measured", "predicted", "rel_err", "fit", "status_measured", "fits_predicted",
                "measured_mem_gb", "predicted_mem_gb"]
    check(list(rows[0].keys())[:10] == expected, "nanotron: columns")
    check(len(rows) == 4104, "nanotron: 4104 runs")
    fit = [i for i, r in enumerate(rows) if r["fit"] == "1"]
    check(fit == list(range(0, 4104, 3)), "nanotron: every third run by file order is a fit run")
    check(all(r["measured"] != "" for r in rows if r["status_measured"] == "Success"),
          "nanotron: successes have a measured throughput")
    check(all(r["measured"] == "" for r in rows if r["status_measured"] != "Success"),
          "nanotron: other runs have none")
    held = [r for r in rows if r["fit"] == "0"]
    success = [r for r in held if r["status_measured"] == "Success"]
    judged = [r for r in held if r["status_measured"] in ("Success", "OOM")]
    right = sum((r["fits_predicted"] == "1") == (r["status_measured"] == "Success") for r in judged)
    accuracy = right / len(judged)
    e = errors(success)
    median = statistics.median(e)
    mem = [abs(float(r["predicted_mem_gb"]) / float(r["measured_mem_gb"]) - 1) for r in success]
    mem_median = statistics.median(mem)
    print(f"nanotron: OOM vs fits right {right}/{len(judged)} = {accuracy:.2%}; throughput n={len(e)} median |err| "
          f"{median:.2%}; allocated memory n={len(mem)} median |err| {mem_median:.2%}")
    check(accuracy >= 0.95, "nanotron: OOM accuracy >= 95% (target)")
    check(mem_median < 0.10, "nanotron: median allocated-memory error < 10% (target)")
    check(median < 0.15, "nanotron: median throughput error < 15% (target)")
    # The subsets docs/validation.md reports: runs on one node, and all but the pipelined runs the
    # file marks as run before nanotron's pipeline fix (after_pp_fix False, pp > 1).
    with open(os.path.join(data, FILES["nanotron"]), newline="") as f:
        source = {r["job_id"]: r for r in csv.DictReader(f)}
    one_node = errors([r for r in success if float(source[r["id"]]["nodes"]) == 1])
    fixed = errors([r for r in success if source[r["id"]]["after_pp_fix"] == "True" or source[r["id"]]["pp"] == "1"])
    print(f"nanotron: throughput median |err| one node n={len(one_node)} {statistics.median(one_node):.2%}; "
          f"without the runs before the pipeline fix n={len(fixed)} {statistics.median(fixed):.2%}")
    s = summary[("nanotron", "held_out")]
    check(int(s["oom_judged"]) == len(judged) and int(s["oom_right"]) == right and
          agrees(summary, "nanotron", "median_abs_rel_err", median) and
          agrees(summary, "nanotron", "mem_median_abs_rel_err", mem_median), "nanotron: stderr summary agrees")


def main():
    validate, source = sys.argv[1:3]
    data = os.path.join(source, "test", "data", "cluster")
    megatron(validate, data)
    vtrain(validate, data)
    nanotron(validate, data)
    if FAILURES:
        sys.exit(f"{len(FAILURES)} check(s) failed")


if __name__ == "__main__":
    main()
