#!/usr/bin/env python3
"""`validate train` and `validate kernels` on the GEMM shapes of the cluster runs, with hold-outs chosen
before any error was seen (docs/validation.md, "Whole training steps"):
  training steps (test/data/gpu/h100_train.json): a calibration fitted to the layer measurements and
    the in-stream kernels without their held-out ones (scripts/kernel_holdout.py), the allocator's
    reserve on the runs with an odd id number (t01, t03, ..., t13), the even ones (t02, ..., t12)
    predicted;
  GEMMs at the shapes of the cluster runs (test/data/gpu/h100_gemm_shapes.json, timed isolated on
    another host; nothing fitted on them): every pass, with the shipped calibration
    (systems/H100-calibrated.yaml); then with the measuring host's isolated-call overhead fitted
    (`--call-overhead-from`) to the shapes whose number is not divisible by 3 and the others
    predicted: median < 8%, p90 < 15%, and the tensor-parallel shards of 4 and 8 within 10% in
    signed median per pass.
Targets: held-out step time median |relative error| < 5% (measured 4.1%) and p90 < 15%, peak memory median < 5%,
fits/OOM right for >= 95% of runs; the GEMM shapes median < 8%. The CSVs are parsed and their
numbers recomputed here; the stderr summaries must agree. `estimate --train-step` on
models/llama3_2_1b.yaml (run t13's model) must print the step and peak `validate train` predicts for
t13: the two tools share one composition. (The held-out kernels themselves: test_validate_kernels.py.)

usage: test_validate_train.py VALIDATE ESTIMATE SOURCE_DIR WORK_DIR
"""
import csv
import io
import json
import os
import statistics
import subprocess
import sys

TRAIN_FIT = ["t01", "t03", "t05", "t07", "t09", "t11", "t13"]
STEP_MEDIAN, STEP_P90, PEAK_MEDIAN, FITS_ACCURACY, KERNEL_MEDIAN = 0.05, 0.15, 0.05, 0.95, 0.08
# the tensor-parallel shards' signed median per pass (isolated calls: the host's overhead varies
# with the call; +8.0% forward at tp 8 since the GEMMs are the in-stream fit's, docs/validation.md)
SHARD_BIAS = 0.10


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout, p.stderr


def p90(values):
    v = sorted(values)
    pos = 0.9 * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def kernel_holdout(source, kernels, fit=False):
    """scripts/kernel_holdout.py's held-out (or, with fit, fit-part) ids of a kernel file."""
    return run([sys.executable, os.path.join(source, "scripts", "kernel_holdout.py"), kernels]
               + (["--fit"] if fit else []))[0].strip()


def holdout_system(validate, source, work, fit_args):
    """systems/H100.yaml with a calibration `validate fit-kernels FIT_ARGS` fits, in WORK."""
    run([validate, "-q", "fit-kernels", "--system", os.path.join(source, "systems", "H100.yaml"), *fit_args,
         "-o", os.path.join(work, "fit_part.yaml")])
    system = os.path.join(work, "H100-holdout.yaml")
    with open(os.path.join(source, "systems", "H100.yaml")) as f:
        text = f.read().replace("name: H100\n", "name: H100-holdout\n")
    with open(system, "w") as f:
        f.write(text + "kernels: fit_part.yaml\n")
    return system


def main():
    validate, estimate, source, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    data = os.path.join(source, "test", "data", "gpu")
    kernels = os.path.join(data, "h100_kernels_fp8.json")
    system = holdout_system(validate, source, work, [
        "-m", os.path.join(data, "h100_layers.json"), "--kernel-measurements", kernels,
        "--kernel-except", kernel_holdout(source, kernels), "--train-measurements",
        os.path.join(data, "h100_train.json"), "--train-only", ",".join(TRAIN_FIT)])
    failures = []

    out, err = run([validate, "kernels", "-m", os.path.join(data, "h100_gemm_shapes.json"), "--system",
                    os.path.join(source, "systems", "H100-calibrated.yaml")])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 2 * 173 and {r["layer"] for r in rows} == {"gemm"}, (len(rows), rows[:1])
    assert {r["timing"] for r in rows} == {"isolated"}, rows[:1]  # the file has isolated times only
    gemm_errors = [abs(float(r["predicted_s"]) / float(r["measured_s"]) - 1) for r in rows]
    gemm_median = statistics.median(gemm_errors)
    summary = {line.split(",")[0]: line.split(",")[1:] for line in err.strip().splitlines()[1:]}
    assert abs(float(summary["all kernel passes"][1]) - gemm_median) < 1e-4, summary["all kernel passes"]
    print(f"GEMM shapes of the cluster runs: {len(gemm_errors)} passes, median {gemm_median:.4f} "
          f"p90 {p90(gemm_errors):.4f} max {max(gemm_errors):.4f}")
    if not gemm_median < KERNEL_MEDIAN:
        failures.append(f"GEMM-shape median {gemm_median:.4f} >= {KERNEL_MEDIAN}")

    with open(os.path.join(data, "h100_gemm_shapes.json")) as f:
        shape_ids = [k["cfg"]["id"] for k in json.load(f)["kernels"]]
    number = lambda i: int(i.split("-")[0][1:])  # "g83-l2048-tp8-b1-o" -> 83
    shapes_fit = [i for i in shape_ids if number(i) % 3 != 0]
    shapes_held = [i for i in shape_ids if number(i) % 3 == 0]
    out, err = run([validate, "kernels", "-m", os.path.join(data, "h100_gemm_shapes.json"), "--system",
                    os.path.join(source, "systems", "H100-calibrated.yaml"), "--call-overhead-from",
                    ",".join(shapes_fit), "--only", ",".join(shapes_held)])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted({r["id"] for r in rows}) == sorted(shapes_held), len(rows)
    held_errors = [abs(float(r["predicted_s"]) / float(r["measured_s"]) - 1) for r in rows]
    print(f"GEMM shapes, host overhead fitted on {len(shapes_fit)}, held out {len(shapes_held)}: "
          f"median {statistics.median(held_errors):.4f} p90 {p90(held_errors):.4f} max {max(held_errors):.4f}")
    if not statistics.median(held_errors) < KERNEL_MEDIAN:
        failures.append(f"held-out GEMM-shape median {statistics.median(held_errors):.4f} >= {KERNEL_MEDIAN}")
    if not p90(held_errors) < STEP_P90:
        failures.append(f"held-out GEMM-shape p90 {p90(held_errors):.4f} >= {STEP_P90}")
    for tp in ("tp4", "tp8"):
        for pass_ in ("fwd", "bwd"):
            signed = [float(r["predicted_s"]) / float(r["measured_s"]) - 1 for r in rows
                      if f"-{tp}-" in r["id"] and r["pass"] == pass_]
            bias = statistics.median(signed)
            print(f"  {tp} {pass_}: {len(signed)} held out, signed median {bias:+.4f}")
            if not abs(bias) < SHARD_BIAS:
                failures.append(f"held-out {tp} {pass_} signed median {bias:+.4f}")

    out, err = run([validate, "train", "-m", os.path.join(data, "h100_train.json"), "--system", system,
                    "--except", ",".join(TRAIN_FIT)])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and list(rows[0].keys()) == ["id", "measured_step_s", "predicted_step_s", "measured_peak_gb",
                                             "predicted_peak_gb", "oom_measured", "fits_predicted"], rows[:1]
    assert [r["id"] for r in rows] == ["t02", "t04", "t06", "t08", "t10", "t12"], [r["id"] for r in rows]
    step, peak, right = [], [], 0
    for r in rows:
        oom = r["oom_measured"] == "true"
        right += (r["fits_predicted"] == "true") == (not oom)
        if oom:
            assert r["measured_step_s"] == "" and r["predicted_step_s"] == "", r
            continue
        step.append(abs(float(r["predicted_step_s"]) / float(r["measured_step_s"]) - 1))
        peak.append(abs(float(r["predicted_peak_gb"]) / float(r["measured_peak_gb"]) - 1))
    accuracy = right / len(rows)
    summary = {line.split(",")[0]: line.split(",")[1:] for line in err.strip().splitlines()[1:]}
    assert abs(float(summary["step_time"][1]) - statistics.median(step)) < 1e-4, summary["step_time"]
    assert abs(float(summary["peak_memory"][1]) - statistics.median(peak)) < 1e-4, summary["peak_memory"]
    assert summary["fits_vs_oom"][1] == f"{right} right", summary["fits_vs_oom"]
    print(f"held-out runs: step median {statistics.median(step):.4f} p90 {p90(step):.4f} max {max(step):.4f}; "
          f"peak median {statistics.median(peak):.4f} max {max(peak):.4f}; fits/OOM {right}/{len(rows)}")
    out, _ = run([validate, "-q", "train", "-m", os.path.join(data, "h100_train.json"), "--system", system,
                  "--only", "t13"])
    t13 = list(csv.DictReader(io.StringIO(out)))[0]
    out, _ = run([estimate, "-q", "--model", os.path.join(source, "models", "llama3_2_1b.yaml"), "--system", system,
                  "--mbs", "2", "--global-batch-size", "2", "--train-step", "--json"])
    printed = json.loads(out)
    assert printed["inputs"]["runtime"]["name"] == "pytorch_amp", printed["inputs"]
    assert abs(printed["totals"]["t"] / float(t13["predicted_step_s"]) - 1) < 1e-5, (printed["totals"], t13)
    assert abs(printed["totals"]["mem"] / float(t13["predicted_peak_gb"]) - 1) < 1e-5, (printed["totals"], t13)

    if not statistics.median(step) < STEP_MEDIAN:
        failures.append(f"step median {statistics.median(step):.4f} >= {STEP_MEDIAN}")
    if not p90(step) < STEP_P90:
        failures.append(f"step p90 {p90(step):.4f} >= {STEP_P90}")
    if not statistics.median(peak) < PEAK_MEDIAN:
        failures.append(f"peak median {statistics.median(peak):.4f} >= {PEAK_MEDIAN}")
    if not accuracy >= FITS_ACCURACY:
        failures.append(f"fits/OOM accuracy {accuracy:.3f} < {FITS_ACCURACY}")
    if failures:
        sys.exit("; ".join(failures))


if __name__ == "__main__":
    main()
