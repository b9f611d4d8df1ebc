#!/usr/bin/env bash
# Installs what perfsweep needs from Debian 12 (only what is missing) and builds it (Release).
# Usage: scripts/setup.sh [build-dir]      (run as root, or with sudo available, to install)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}

PACKAGES=(cmake g++ make pkg-config libopenmpi-dev openmpi-bin libhdf5-dev hdf5-tools libyaml-cpp-dev
          libspdlog-dev libcli11-dev libgtest-dev python3-numpy python3-h5py python3-pandas python3-matplotlib
          python3-xarray jupyter-nbconvert python3-nbconvert python3-nbformat python3-ipykernel git
          python3-venv python3-setuptools strace pybind11-dev python3-dev chromium chromium-driver)  # venv + setuptools: the python_package test; strace: fault_publish_pair; pybind11 + python3-dev:
# the Python package's in-process estimate and search; chromium + chromium-driver: report_browser renders `report` pages
# ParaView (about 1 GB with its dependencies) only on request: its tests skip without it.
if [ "${PERFSWEEP_WITH_PARAVIEW:-0}" = 1 ]; then
  PACKAGES+=(paraview python3-paraview xvfb xauth)
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
