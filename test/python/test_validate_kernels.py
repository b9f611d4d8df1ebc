#!/usr/bin/env python3
"""The in-stream kernel calibration held out (docs/validation.md, "Kernels in a stream"): a calibration
fitted to test/data/gpu/h100_layers.json without c03, c06, c09 and to the in-stream kernels of
test/data/gpu/h100_kernels_fp8.json without the held-out ones (scripts/kernel_holdout.py: the
llama3_70b shard shapes of fp8_linear, and of every other kind the ids whose number is divisible by
3, fixed before any error was computed) predicts the held-out kernels in-stream and the held-out
layer blocks. Targets (the measurements are the expected values):
  FP8 linear passes (fp8_linear fwd, dgrad, wgrad) median |relative error| < 5%, p90 < 12%;
  quantization kernels (fp8_cast.*) median < 10%;
  attention median < 8%, p90 < 20%;
  all kernel passes median < 5%, p90 < 15%;
  layer blocks (forward + backward) median < 3%, worst < 8%.
The CSVs are parsed, their columns and numbers checked against the stderr summary; the isolated
timing (`--timing isolated`) gives one row per isolated time, `--timing both` the two sets.

usage: test_validate_kernels.py VALIDATE SOURCE_DIR WORK_DIR
"""
import csv
import io
import os
import statistics
import sys

# The commands and the hold-out's calibration of the training-step check, beside this one.
from test_validate_train import holdout_system, kernel_holdout, run

LAYERS_HELD_OUT = "c03,c06,c09"
TARGETS = {  # kind: (median, p90 or None)
    "fp8_linear": (0.05, 0.12),
    "fp8_cast": (0.10, None),
    "attention": (0.08, 0.20),
    "all": (0.05, 0.15),
}
BLOCK_MEDIAN, BLOCK_WORST = 0.03, 0.08
COLUMNS = ["id", "layer", "pass", "measured_s", "predicted_s", "rel_err", "timing"]


def quantile(values, q):
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def rows_of(out):
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and list(rows[0].keys()) == COLUMNS, rows[:1]
    for r in rows:
        measured, predicted = float(r["measured_s"]), float(r["predicted_s"])
        assert measured > 0 and predicted > 0, r
        assert abs(predicted / measured - 1 - float(r["rel_err"])) < 1e-5, r
    return rows


def summary_of(err):
    return {line.split(",")[0]: line.split(",")[1:] for line in err.strip().splitlines()[1:]}


def main():
    validate, source, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    data = os.path.join(source, "test", "data", "gpu")
    kernels = os.path.join(data, "h100_kernels_fp8.json")
    held, fit = kernel_holdout(source, kernels), kernel_holdout(source, kernels, fit=True)
    assert held and fit and not set(held.split(",")) & set(fit.split(",")), (held, fit)
    system = holdout_system(validate, source, work, [
        "-m", os.path.join(data, "h100_layers.json"), "--except", LAYERS_HELD_OUT, "--kernel-measurements", kernels,
        "--kernel-except", held])
    failures = []

    out, err = run([validate, "kernels", "-m", kernels, "--system", system, "--only", held])
    rows = rows_of(out)
    assert {r["timing"] for r in rows} == {"stream"}, {r["timing"] for r in rows}
    assert {r["id"] for r in rows} == set(held.split(",")), {r["id"] for r in rows}
    summary = summary_of(err)
    errors = {}
    for r in rows:
        kind = r["layer"].split(".")[0]
        e = abs(float(r["rel_err"]))
        errors.setdefault(kind, []).append(e)
        errors.setdefault("all", []).append(e)
    assert abs(float(summary["all kernel passes"][1]) - statistics.median(errors["all"])) < 1e-4, summary
    # every pass of a linear layer in both data types, per GEMM
    assert {(r["layer"], r["pass"]) for r in rows if "linear" in r["layer"]} == {
        (layer, p) for layer in ("fp8_linear", "linear") for p in ("fwd", "dgrad", "wgrad")}
    for kind, (median_bound, p90_bound) in TARGETS.items():
        v = errors[kind]
        median, p90 = statistics.median(v), quantile(v, 0.9)
        print(f"held-out {kind}: {len(v)} passes, median {median:.4f} p90 {p90:.4f} max {max(v):.4f}")
        if not median < median_bound:
            failures.append(f"{kind} median {median:.4f} >= {median_bound}")
        if p90_bound is not None and not p90 < p90_bound:
            failures.append(f"{kind} p90 {p90:.4f} >= {p90_bound}")

    # Isolated times: one row per measured isolated time, the FP8 linear layer's forward and backward.
    out, _ = run([validate, "-q", "kernels", "-m", kernels, "--system", system, "--only", held, "--timing",
                  "isolated"])
    isolated = rows_of(out)
    assert {r["timing"] for r in isolated} == {"isolated"}
    assert {r["pass"] for r in isolated if r["layer"] == "fp8_linear"} == {"fwd", "bwd"}
    out, err = run([validate, "kernels", "-m", kernels, "--system", system, "--only", held, "--timing", "both"])
    both = rows_of(out)
    assert len(both) == len(rows) + len(isolated), (len(both), len(rows), len(isolated))
    assert "all kernel passes isolated" in summary_of(err), err

    out, err = run([validate, "layers", "-m", os.path.join(data, "h100_layers.json"), "--system", system,
                    "--only", LAYERS_HELD_OUT])
    blocks = {}
    for r in csv.DictReader(io.StringIO(out)):
        if r["layer"] == "block":
            m, p = blocks.get(r["id"], (0.0, 0.0))
            blocks[r["id"]] = (m + float(r["measured_s"]), p + float(r["predicted_s"]))
    block_errors = [abs(p / m - 1) for m, p in blocks.values()]
    print(f"held-out blocks {sorted(blocks)}: median {statistics.median(block_errors):.4f} "
          f"worst {max(block_errors):.4f}")
    if not statistics.median(block_errors) < BLOCK_MEDIAN:
        failures.append(f"block median {statistics.median(block_errors):.4f} >= {BLOCK_MEDIAN}")
    if not max(block_errors) < BLOCK_WORST:
        failures.append(f"block worst {max(block_errors):.4f} >= {BLOCK_WORST}")
    if failures:
        sys.exit("; ".join(failures))


if __name__ == "__main__":
    main()
