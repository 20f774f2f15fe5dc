#!/usr/bin/env bash
# Installs the Debian packages invmw needs, only those that are missing.
# Safe to run repeatedly; needs root (or sudo) only when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config gfortran python3 git
  openmpi-bin libopenmpi-dev          # default MPI (PMPI interface)
  mpich libmpich-dev                  # second MPI the library must build against
  libpapi-dev papi-tools              # hardware/software counters
  libotf2-trace-dev otf2-tools python3-otf2
  libceres-dev                        # fitter (pulls Eigen, glog, gflags)
  libgtest-dev libgmock-dev
  libsqlite3-dev sqlite3
  libtomlplusplus-dev nlohmann-json3-dev
  gnuplot-nox iproute2
  pvm pvm-dev libtirpc-dev               # libpvm3.a needs its XDR routines (test pvm.static)
  clang-14 libclang-rt-14-dev            # fuzz targets (scripts/fuzz.sh): libFuzzer, ASan, UBSan
)

missing=()
for p in "${PACKAGES[@]}"; do
  [[ "$p" == \#* ]] && continue
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# Install MPICH after OpenMPI is present so the mpi alternatives keep pointing at OpenMPI;
# the build names each MPI's own wrappers explicitly anyway.
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
