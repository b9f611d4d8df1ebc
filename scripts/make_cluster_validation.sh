#!/usr/bin/env bash
# The training-run validation of docs/validation.md: the named fitters on the sets they fitted
# (kernel_scales on vTrain's fit part, checked against the shipped systems/calibrations/
# a100_kernels.yaml; host_floor on nanotron's, checked against validation/nanotron/fitted;
# carried_efficiency on the Blackwell set's, MLPerf held out, checked against the shipped
# b200_ and gb200_kernels_from_h100.yaml but for their comments and source), then
# `validate runs` on every validation set (rows CSVs in OUTDIR, summaries on stdout) and one figure
# per set in docs/figures/.
# Usage: scripts/make_cluster_validation.sh [OUTDIR]      (after the build: build/bin/validate)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT" docs/figures
V=build/bin/validate
$V -q fit kernel_scales --sets vtrain --kernels systems/calibrations/a100_kernels_from_h100.yaml \
  -o "$OUT/a100_kernels.yaml"
if cmp -s "$OUT/a100_kernels.yaml" systems/calibrations/a100_kernels.yaml; then
  echo "== the fit reproduces systems/calibrations/a100_kernels.yaml"
else
  echo "== the fit differs from systems/calibrations/a100_kernels.yaml" >&2
  exit 1
fi
$V -q fit host_floor --sets nanotron --kernels systems/calibrations/h100_kernels.yaml -o "$OUT/nanotron_fitted"
if diff -r "$OUT/nanotron_fitted" validation/nanotron/fitted > /dev/null; then
  echo "== the fit reproduces validation/nanotron/fitted"
else
  echo "== the fit differs from validation/nanotron/fitted" >&2
  exit 1
fi
$V -q fit carried_efficiency --sets nvidia_blackwell --held-out mlperf --kernels systems/calibrations/h100_kernels.yaml \
  -o "$OUT/carried"
for f in b200_kernels_from_h100.yaml gb200_kernels_from_h100.yaml gb300_kernels_from_h100.yaml; do
  if diff <(grep -v -e '^#' -e '^source:' "$OUT/carried/$f") <(grep -v -e '^#' -e '^source:' "systems/calibrations/$f") > /dev/null; then
    echo "== the fit reproduces systems/calibrations/$f"
  else
    echo "== the fit differs from systems/calibrations/$f" >&2
    exit 1
  fi
done
for set in validation/*/; do
  name=$(basename "$set")
  echo "== $name"
  $V -q runs "$set" -o "$OUT/$name.csv"
  /usr/bin/python3 scripts/plot_validation_set.py "$OUT/$name.csv" --out "docs/figures/validation_$name" \
    --title "$name: measured against predicted"
  rm -f "docs/figures/validation_$name.pdf"  # the PNG is kept, as scripts/make_figures.sh does
done
