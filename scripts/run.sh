#!/usr/bin/env bash
# The flagship job: set up, build, and run the paper's sweep (gpt3_1T, 1D tensor parallelism, the
# nine systems of sweeps/paper.yaml, 4..16384 GPUs) on 9 MPI ranks, as a user would on a cluster.
# Extra arguments go to `sweep` (e.g. --strat 2d --model vit_era5).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -np "${NP:-9}" build/bin/sweep --model gpt3_1T --strat 1d "$@"
/usr/bin/python3 scripts/perfsweep_h5.py summary outputs/exec_1d_gpt3_1T.h5 2>/dev/null || true
