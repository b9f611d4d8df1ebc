#!/usr/bin/env bash
# The training-step validation of docs/validation.md ("Whole training steps"): a calibration
# fitted without the held-out in-stream kernels (scripts/kernel_holdout.py) and with the
# allocator's reserve from the odd-numbered runs only, compared on the held-out runs and on the
# fit part; the shipped calibration (systems/H100-calibrated.yaml) and the reference's roofline on
# all; an H200 (H100-calibrated with hbm_bandwidth 4800, hbm_capacity 141) predicted for the same
# runs. (The kernels themselves: scripts/make_kernel_validation.sh.)
# Summaries on stdout, the CSVs in OUTDIR.
# Usage: scripts/make_train_validation.sh [OUTDIR]      (after the build: build/bin/validate)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
D=test/data/gpu
K_HELD=$(/usr/bin/python3 scripts/kernel_holdout.py $D/h100_kernels_fp8.json)
T_FIT=t01,t03,t05,t07,t09,t11,t13
V=build/bin/validate
$V -q fit-kernels -m $D/h100_layers.json --system systems/H100.yaml \
  --kernel-measurements $D/h100_kernels_fp8.json --kernel-except "$K_HELD" \
  --train-measurements $D/h100_train.json --train-only "$T_FIT" -o "$OUT/fit_part.yaml"
{ sed 's/^name: H100$/name: H100-fit-part/' systems/H100.yaml; echo "kernels: fit_part.yaml"; } > "$OUT/H100-fit-part.yaml"
{ sed -e 's/^name: H100-calibrated/name: H200-from-H100/' -e 's/^hbm_bandwidth: 3350 /hbm_bandwidth: 4800 /' \
      -e 's/^hbm_capacity: 80  /hbm_capacity: 141 /' -e '/^kernels:/d' systems/H100-calibrated.yaml
  echo "kernels: $PWD/systems/calibrations/h100_kernels.yaml"; } > "$OUT/H200-from-H100.yaml"
echo "== training steps: reserve fitted on $T_FIT, held-out runs"
$V -q train -m $D/h100_train.json --system "$OUT/H100-fit-part.yaml" --except "$T_FIT" 2>&1 > "$OUT/train_held_out.csv"
echo "== training steps: the same calibration, fit-part runs"
$V -q train -m $D/h100_train.json --system "$OUT/H100-fit-part.yaml" --only "$T_FIT" 2>&1 > /dev/null
echo "== training steps: shipped calibration, all runs"
$V -q train -m $D/h100_train.json --system systems/H100-calibrated.yaml 2>&1 > "$OUT/train.csv"
echo "== training steps: the reference's roofline (no calibration), all runs"
$V -q train -m $D/h100_train.json --system systems/H100.yaml 2>&1 > /dev/null
echo "== an H200 from the H100 calibration (4.8 TB/s, 141 GB): predicted steps and fits (the measured columns are the H100's)"
$V -q train -m $D/h100_train.json --system "$OUT/H200-from-H100.yaml" 2>/dev/null
