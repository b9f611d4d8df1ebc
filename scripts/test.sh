#!/usr/bin/env bash
# Set up, build, and run every test (unit, golden against the reference, MPI, Python); then build
# the sanitizer preset (CMakePresets.json "asan": AddressSanitizer + UndefinedBehaviorSanitizer, in
# build-asan/) and run its unit, fault and fuzz tests (ctest --preset asan). PERFSWEEP_SANITIZE=0
# skips that second stage. Arguments go to the first stage's ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "${PERFSWEEP_SANITIZE:-1}" != 0 ]; then
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$(nproc)"
  ctest --preset asan -j "$(nproc)"
fi
