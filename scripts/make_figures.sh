#!/usr/bin/env bash
# Regenerates the README figures (docs/figures/*.png, described in docs/figures.md) from the
# paper's runs: the nine systems of sweeps/paper.yaml at 4..16384 GPUs, gpt3_1T with 1d, 2d and
# 2d-seqp tensor parallelism, vit_era5 with 2d and 2d-seqp, and the two hardware sweeps of
# sweeps/ on gpt3_1T 1d. Runs `sweep` only for outputs not already in RUNS (FORCE=1 reruns).
#   scripts/make_figures.sh              (after building: cmake --build build)
# Environment: SWEEP (default build/bin/sweep), RUNS (default outputs/paper), OUT (default docs/figures)
set -euo pipefail
cd "$(dirname "$0")/.."
SWEEP=${SWEEP:-build/bin/sweep}
RUNS=${RUNS:-outputs/paper}
OUT=${OUT:-docs/figures}
PY=/usr/bin/python3
mkdir -p "$RUNS" "$OUT"

run() {  # run OUTPUT SWEEP-ARGS...
  local out=$1; shift
  if [ "${FORCE:-0}" = 1 ] || [ ! -f "$out" ]; then
    echo "sweep $* -> $out"
    "$SWEEP" "$@" -q --force -o "$out"
  fi
}
for strat in 1d 2d 2d-seqp; do run "$RUNS/exec_${strat}_gpt3_1T.h5" --model gpt3_1T --strat "$strat"; done
for strat in 2d 2d-seqp; do run "$RUNS/exec_${strat}_vit_era5.h5" --model vit_era5 --strat "$strat"; done
for sweep in bw_capacity flops_capacity; do
  run "$RUNS/sweep_${sweep}_1d_gpt3_1T.h5" --model gpt3_1T --strat 1d --sweep "$sweep"
done

plot() {  # plot SCRIPT NAME ARGS...: only the PNG is kept for the docs
  local script=$1 name=$2; shift 2
  $PY "scripts/$script.py" "$@" --out "$OUT/$name" >/dev/null
  rm -f "$OUT/$name.pdf"
  echo "$OUT/$name.png"
}
plot plot_training_time training_time_gpt3_1T_1d "$RUNS/exec_1d_gpt3_1T.h5"
plot plot_training_time training_time_vit_era5_2d-seqp "$RUNS/exec_2d-seqp_vit_era5.h5"
plot plot_throughput_per_gpu throughput_per_gpu_gpt3_1T_1d "$RUNS/exec_1d_gpt3_1T.h5"
plot plot_throughput_per_gpu throughput_per_gpu_vit_era5_2d-seqp "$RUNS/exec_2d-seqp_vit_era5.h5"
plot plot_breakdown breakdown_gpt3_1T_1d_B200-NVS8 "$RUNS/exec_1d_gpt3_1T.h5" --system B200-NVS8
plot plot_breakdown breakdown_gpt3_1T_2d_B200-NVS8 "$RUNS/exec_2d_gpt3_1T.h5" --system B200-NVS8
plot plot_breakdown breakdown_vit_era5_2d-seqp_B200-NVS8 "$RUNS/exec_2d-seqp_vit_era5.h5" --system B200-NVS8
plot plot_compare compare_gpt3_1T_2d_vs_1d "$RUNS/exec_2d_gpt3_1T.h5" "$RUNS/exec_1d_gpt3_1T.h5"
plot plot_compare compare_gpt3_1T_2d-seqp_vs_1d "$RUNS/exec_2d-seqp_gpt3_1T.h5" "$RUNS/exec_1d_gpt3_1T.h5"
plot plot_compare compare_vit_era5_2d-seqp_vs_2d "$RUNS/exec_2d-seqp_vit_era5.h5" "$RUNS/exec_2d_vit_era5.h5"
plot plot_hw_sweep hw_bw_capacity_days_8192 "$RUNS/sweep_bw_capacity_1d_gpt3_1T.h5" --n-gpus 8192 --days
plot plot_hw_sweep hw_bw_capacity_speedup_8192 "$RUNS/sweep_bw_capacity_1d_gpt3_1T.h5" --n-gpus 8192 --speedup
plot plot_hw_sweep hw_flops_capacity_days_8192 "$RUNS/sweep_flops_capacity_1d_gpt3_1T.h5" --n-gpus 8192 --days \
  --mark A100:1555,312 --mark H200:4800,989.4
plot plot_hw_sweep hw_flops_capacity_speedup_8192 "$RUNS/sweep_flops_capacity_1d_gpt3_1T.h5" --n-gpus 8192 --speedup \
  --mark A100:1555,312 --mark H200:4800,989.4
# docs/comm.md: both collective models on the held-out node counts
M=test/data/nccl_tests_perlmutter.csv
build/bin/comm fit -q --measurements $M --nodes 1,2,8,32,128 --out "$RUNS/perlmutter.yaml"
build/bin/comm validate -q --measurements $M --calibration "$RUNS/perlmutter.yaml" --nodes 4,16,64,256 \
  > "$RUNS/calibrated.csv" 2>/dev/null
build/bin/comm validate -q --measurements $M --system A100 --nodes 4,16,64,256 > "$RUNS/analytical_heldout.csv" 2>/dev/null
$PY scripts/plot_comm_validation.py "$RUNS/analytical_heldout.csv" "$RUNS/calibrated.csv" \
  --title "analytical model" --title "calibrated (fit on 1, 2, 8, 32, 128 nodes)" -o "$OUT/comm_validation.png"
# the notebook's TP-fixed pipeline sweep at 16384 GPUs
build/bin/configs --model gpt3_1T --strat 1d --system B200 --nvs 8 --n-gpus 16384 --tp 8 --pp 1:128 \
  -o "$RUNS/configs_gpt3_1T_1d_B200-NVS8_16384.csv"
plot plot_configs configs_gpt3_1T_1d_B200-NVS8_16384 "$RUNS/configs_gpt3_1T_1d_B200-NVS8_16384.csv"
