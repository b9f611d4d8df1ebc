#!/usr/bin/env python3
"""`validate` on the H100 layer measurements (test/data/gpu/h100_layers.json) with a hold-out:
fit-kernels on every configuration but c03, c06 and c09 (ids divisible by 3, chosen before any
error was seen), then `validate layers` on those three alone, against the accuracy targets:
block (forward + backward) median |relative error| < 3% and worst < 8%; layer passes median < 8%.
The CSV on stdout is parsed and its numbers recomputed here; the stderr summary must agree.

usage: test_validate_layers.py VALIDATE SOURCE_DIR WORK_DIR
"""
import csv
import io
import os
import statistics
import subprocess
import sys

HELD_OUT = ["c03", "c06", "c09"]
BLOCK_MEDIAN, BLOCK_WORST, LAYER_MEDIAN = 0.03, 0.08, 0.08


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout, p.stderr


def main():
    validate, source, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    measurements = os.path.join(source, "test", "data", "gpu", "h100_layers.json")
    fitted = os.path.join(work, "fit_part.yaml")
    run([validate, "-q", "fit-kernels", "-m", measurements, "--system", os.path.join(source, "systems", "H100.yaml"),
         "--except", ",".join(HELD_OUT), "-o", fitted])
    system = os.path.join(work, "H100-holdout.yaml")
    with open(os.path.join(source, "systems", "H100.yaml")) as f:
        text = f.read().replace("name: H100\n", "name: H100-holdout\n")
    with open(system, "w") as f:
        f.write(text + "kernels: fit_part.yaml\n")
    out, err = run([validate, "layers", "-m", measurements, "--system", system, "--only", ",".join(HELD_OUT)])

    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and list(rows[0].keys()) == ["id", "layer", "pass", "measured_s", "predicted_s", "rel_err"], rows[:1]
    assert {r["id"] for r in rows} == set(HELD_OUT), {r["id"] for r in rows}
    layer_errors, blocks = [], {}
    for r in rows:
        measured, predicted = float(r["measured_s"]), float(r["predicted_s"])
        assert r["pass"] in ("fwd", "bwd"), r
        assert abs(predicted / measured - 1 - float(r["rel_err"])) < 1e-5, r
        if r["layer"] == "block":
            m, p = blocks.get(r["id"], (0.0, 0.0))
            blocks[r["id"]] = (m + measured, p + predicted)
        else:
            layer_errors.append(abs(predicted / measured - 1))
    assert len(layer_errors) == 3 * 14 * 2, len(layer_errors)
    block_errors = [abs(p / m - 1) for m, p in blocks.values()]
    block_median, block_worst = statistics.median(block_errors), max(block_errors)
    layer_median = statistics.median(layer_errors)
    print(f"held-out {HELD_OUT}: block fwd+bwd median {block_median:.4f} worst {block_worst:.4f}; "
          f"layer passes median {layer_median:.4f}")

    summary = {line.split(",")[0]: line.split(",")[1:] for line in err.strip().splitlines()[1:]}
    assert abs(float(summary["block fwd+bwd"][1]) - block_median) < 1e-4, summary["block fwd+bwd"]
    assert abs(float(summary["all layer passes"][1]) - layer_median) < 1e-4, summary["all layer passes"]

    failures = []
    if not block_median < BLOCK_MEDIAN:
        failures.append(f"block median {block_median:.4f} >= {BLOCK_MEDIAN}")
    if not block_worst < BLOCK_WORST:
        failures.append(f"block worst {block_worst:.4f} >= {BLOCK_WORST}")
    if not layer_median < LAYER_MEDIAN:
        failures.append(f"layer-pass median {layer_median:.4f} >= {LAYER_MEDIAN}")
    if failures:
        sys.exit("; ".join(failures))


if __name__ == "__main__":
    main()
