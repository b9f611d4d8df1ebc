#!/usr/bin/env bash
# The training-run validation of docs/validation.md: the A100 kernel calibration's two scales
# fitted on every third vTrain run (checked against the shipped systems/calibrations/a100_kernels.yaml),
# then `validate megatron|vtrain|nanotron` on test/data/cluster with the shipped systems (CSVs in
# OUTDIR, summaries on stdout) and one figure per set in docs/figures/.
# Usage: scripts/make_cluster_validation.sh [OUTDIR]      (after the build: build/bin/validate)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT" docs/figures
D=test/data/cluster
V=build/bin/validate
$V -q fit-cluster vtrain -m $D/vtrain_ground_truth_multi.csv \
  --kernels systems/calibrations/a100_kernels_from_h100.yaml -o "$OUT/a100_kernels.yaml"
if diff <(grep -v '^source:' "$OUT/a100_kernels.yaml") <(grep -v '^source:' systems/calibrations/a100_kernels.yaml) > /dev/null; then
  echo "== the fit reproduces systems/calibrations/a100_kernels.yaml"
else
  echo "== the fit differs from systems/calibrations/a100_kernels.yaml" >&2
  exit 1
fi
for set in megatron vtrain nanotron; do
  case $set in
    megatron) file=megatron_published.csv ;;
    vtrain) file=vtrain_ground_truth_multi.csv ;;
    nanotron) file=nanotron_bench_h100.csv ;;
  esac
  echo "== $set"
  $V -q $set -m $D/$file 2>&1 > "$OUT/$set.csv"
  /usr/bin/python3 scripts/plot_cluster_validation.py $set "$OUT/$set.csv" --out docs/figures/validation_$set
  rm -f docs/figures/validation_$set.pdf  # the PNG is kept, as scripts/make_figures.sh does
done
