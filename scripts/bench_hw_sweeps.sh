#!/usr/bin/env bash
# Benchmark: the paper's full 896-point HBM bandwidth x capacity sweep of gpt3_1T for each
# strategy, on all cores of this machine (NP ranks, default nproc), printing wall times and the
# CPU time of all ranks (user + system: what the sweep cost, whatever else shares the machine).
# Usage: scripts/bench_hw_sweeps.sh [sweep-file]      (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
SWEEP=${1:-sweeps/bw_capacity.yaml}
NP=${NP:-$(nproc)}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One host: ranks talk through shared memory (Open MPI's ob1 with vader). Left to choose, Open MPI
# first probes UCX for InfiniBand devices, 0.2 s of every start on a host without them. Set
# OMPI_MCA_pml to measure another transport.
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
total=0
total_cpu=0
printf '%-8s %-8s %6s %10s %12s %12s\n' strategy model ranks seconds points/s cpu-seconds
for strat in 1d 2d 2d-seqp; do
  start=$EPOCHREALTIME
  /usr/bin/time -f '%U %S' -o "$OUT/time" mpirun --oversubscribe -np "$NP" build/bin/sweep --sweep "$SWEEP" \
    --model gpt3_1T --strat "$strat" -q -o "$OUT/$strat.h5"
  end=$EPOCHREALTIME
  cpu=$(awk '{print $1 + $2}' "$OUT/time")
  total_cpu=$(awk "BEGIN {print $total_cpu + $cpu}")
  points=$(/usr/bin/python3 -c "import h5py; print(len(h5py.File('$OUT/$strat.h5', 'r')['points']))")
  s=$(awk "BEGIN {print $end - $start}")
  total=$(awk "BEGIN {print $total + $s}")
  printf '%-8s %-8s %6s %10.1f %12.1f %12.1f\n' "$strat" gpt3_1T "$NP" "$s" "$(awk "BEGIN {print $points / $s}")" "$cpu"
done
printf '%-8s %-8s %6s %10.1f %12s %12.1f\n' all gpt3_1T "$NP" "$total" "" "$total_cpu"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); OMPI_MCA_pml=$OMPI_MCA_pml"
