#!/usr/bin/env bash
# Set up, build, and run every test (unit, golden against the reference, MPI, Python).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
