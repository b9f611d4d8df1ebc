#!/usr/bin/env bash
# The layer validation of docs/validation.md: the reference's roofline (systems/H100.yaml), the
# calibration fitted without the held-out configurations (c03, c06, c09: ids divisible by 3), and
# the shipped calibration (systems/H100-calibrated.yaml, fitted on all ten), each against
# test/data/gpu/h100_layers.json, and leave-one-out fits; summaries on stdout, figures in
# docs/figures/.
# Usage: scripts/make_validation.sh [OUTDIR]      (after the build: build/bin/validate)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
M=test/data/gpu/h100_layers.json
HELD=c03,c06,c09
V=build/bin/validate
$V -q fit-kernels -m "$M" --system systems/H100.yaml --except "$HELD" -o "$OUT/fit_part.yaml"
{ sed 's/^name: H100$/name: H100-fit-part/' systems/H100.yaml; echo "kernels: fit_part.yaml"; } > "$OUT/H100-fit-part.yaml"
echo "== reference roofline, all configurations"
$V layers -m "$M" --system systems/H100.yaml 2>&1 > "$OUT/reference.csv"
echo "== reference roofline, held-out $HELD"
$V layers -m "$M" --system systems/H100.yaml --only "$HELD" 2>&1 > /dev/null
echo "== fitted without $HELD, on $HELD"
$V layers -m "$M" --system "$OUT/H100-fit-part.yaml" --only "$HELD" 2>&1 > /dev/null
echo "== fitted without $HELD, on the fit part"
$V layers -m "$M" --system "$OUT/H100-fit-part.yaml" --except "$HELD" 2>&1 > /dev/null
$V layers -m "$M" --system "$OUT/H100-fit-part.yaml" > "$OUT/fit_part.csv" 2>/dev/null
echo "== shipped calibration (all configurations), all configurations"
$V layers -m "$M" --system systems/H100-calibrated.yaml 2>&1 > "$OUT/calibrated.csv"
/usr/bin/python3 scripts/plot_layer_validation.py "$OUT/reference.csv" "$OUT/fit_part.csv" "$OUT/calibrated.csv" \
  --title "reference roofline (systems/H100.yaml)" --title "fitted without c03, c06, c09 (stars)" \
  --title "shipped: fitted on all (H100-calibrated)" --held-out "$HELD" -o docs/figures/validation_h100
echo "== leave one out: each configuration predicted by a calibration fitted on the nine others"
for id in $(/usr/bin/python3 -c "import json; print(' '.join(c['cfg']['id'] for c in json.load(open('$M'))['configs']))"); do
  $V -q fit-kernels -m "$M" --system systems/H100.yaml --except "$id" -o "$OUT/loo_$id.yaml"
  { sed 's/^name: H100$/name: H100-loo/' systems/H100.yaml; echo "kernels: loo_$id.yaml"; } > "$OUT/H100-loo-$id.yaml"
  $V layers -m "$M" --system "$OUT/H100-loo-$id.yaml" --only "$id" 2>/dev/null | tail -n +2
done > "$OUT/loo.csv"
/usr/bin/python3 - "$OUT/loo.csv" <<'PY'
import sys
import pandas as pd
d = pd.read_csv(sys.argv[1], names=["id", "layer", "pass", "measured_s", "predicted_s", "rel_err"])
b = d[d.layer == "block"].groupby("id")[["measured_s", "predicted_s"]].sum()
e = (b.predicted_s / b.measured_s - 1).abs()
l = d[d.layer != "block"].rel_err.abs()
print(f"block fwd+bwd median {e.median():.4f} worst {e.max():.4f} ({e.idxmax()}); "
      f"layer passes median {l.median():.4f} p90 {l.quantile(0.9):.4f}")
PY
