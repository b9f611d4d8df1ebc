#!/usr/bin/env bash
# The in-stream kernel validation of docs/validation.md ("Kernels in a stream"): a calibration
# fitted to the layer measurements and to the in-stream kernels of test/data/gpu/h100_kernels_fp8.json
# without the held-out ones (the llama3_70b shard shapes of fp8_linear, and of the other kinds the
# ids whose number is divisible by 3), the layer blocks without c03, c06, c09 and the allocator's
# reserve from the odd-numbered training runs; compared on the held-out kernels (in-stream and
# isolated), blocks and runs, and on the fit part; the shipped calibration
# (systems/H100-calibrated.yaml) on everything. Summaries on stdout, the CSVs in OUTDIR.
# Usage: scripts/make_kernel_validation.sh [OUTDIR]      (after the build: build/bin/validate)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
D=test/data/gpu
F=$D/h100_kernels_fp8.json
K_HELD=$(/usr/bin/python3 scripts/kernel_holdout.py "$F")
L_HELD=c03,c06,c09
T_FIT=t01,t03,t05,t07,t09,t11,t13
V=build/bin/validate
$V -q fit-kernels -m $D/h100_layers.json --except "$L_HELD" --system systems/H100.yaml \
  --kernel-measurements "$F" --kernel-except "$K_HELD" \
  --train-measurements $D/h100_train.json --train-only "$T_FIT" -o "$OUT/fit_part.yaml"
{ sed 's/^name: H100$/name: H100-fit-part/' systems/H100.yaml; echo "kernels: fit_part.yaml"; } > "$OUT/H100-fit-part.yaml"
echo "== held out: $K_HELD"
echo "== kernels in-stream: fitted without the held-out ones, on those"
$V -q kernels -m "$F" --system "$OUT/H100-fit-part.yaml" --only "$K_HELD" 2>&1 > "$OUT/kernels_held_out.csv"
echo "== kernels isolated: the same"
$V -q kernels -m "$F" --system "$OUT/H100-fit-part.yaml" --only "$K_HELD" --timing isolated 2>&1 > /dev/null
echo "== kernels in-stream: the same calibration, on the fit part"
$V -q kernels -m "$F" --system "$OUT/H100-fit-part.yaml" --except "$K_HELD" 2>&1 > /dev/null
echo "== kernels in-stream: shipped calibration, all"
$V -q kernels -m "$F" --system systems/H100-calibrated.yaml 2>&1 > "$OUT/kernels.csv"
echo "== layer blocks: fitted without $L_HELD and the held-out kernels, on $L_HELD"
$V -q layers -m $D/h100_layers.json --system "$OUT/H100-fit-part.yaml" --only "$L_HELD" 2>&1 > /dev/null | grep block
echo "== layer blocks: the same, fit part"
$V -q layers -m $D/h100_layers.json --system "$OUT/H100-fit-part.yaml" --except "$L_HELD" 2>&1 > /dev/null | grep block
echo "== training steps: held-out runs"
$V -q train -m $D/h100_train.json --system "$OUT/H100-fit-part.yaml" --except "$T_FIT" 2>&1 > /dev/null
echo "== training steps: fit-part runs"
$V -q train -m $D/h100_train.json --system "$OUT/H100-fit-part.yaml" --only "$T_FIT" 2>&1 > /dev/null
