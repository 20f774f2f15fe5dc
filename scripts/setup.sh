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
  valgrind                            # helgrind thread tests (e2e.c.threads.helgrind*)
  pvm pvm-dev libtirpc-dev               # libpvm3.a needs its XDR routines (test pvm.static)
  clang-14 libclang-rt-14-dev            # fuzz targets (scripts/fuzz.sh): libFuzzer, ASan, UBSan
  libsimgrid-dev                         # smpicc/smpirun: SMPI round trip of platform export
  lammps lammps-examples                 # a real application (replay and model-search designs)
  slurm-wlm munge                        # single-host Slurm for the tests labelled slurm (ctest/slurm)
  libdw-dev                              # call-site resolution (callsites/, e2e.callsites.*)
)

missing=()
for p in "${PACKAGES[@]}"; do
  [[ "$p" == \#* ]] && continue
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
else
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
fi

# An independent reader of the Perfetto/Chrome trace-event export for its test
# (otf2_writer.perfetto_devtools): Chrome DevTools' own trace model, from the npm registry, into
# .deps/npm of the checkout (ignored by git; build.sh points CMake at it). Optional: without
# node/npm that one test is not registered, and the build says so.
here=$(cd "$(dirname "$0")/.." && pwd)
npm_dir="$here/.deps/npm"
if [[ -d "$npm_dir/node_modules/devtools-timeline-model" ]]; then
  :
elif command -v npm >/dev/null && command -v node >/dev/null; then
  echo "setup: installing npm devtools-timeline-model@1.4.0 into $npm_dir"
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error \
    devtools-timeline-model@1.4.0 >/dev/null ||
    echo "setup: warning: npm install of devtools-timeline-model failed; the Perfetto export's" \
      "DevTools test will not be registered" >&2
else
  echo "setup: note: no node/npm; the Perfetto export's DevTools test will not be registered" >&2
fi
