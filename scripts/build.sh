#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds invmw in ./build (or $BUILD_DIR).
# INVMW_TARGETS="t1 t2 ..." builds only those targets (the main job needs no test programs).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
bash "$here/scripts/setup.sh"
node_path=()
[[ -d "$here/.deps/npm/node_modules" ]] && node_path=(-DINVMW_NODE_PATH="$here/.deps/npm/node_modules")
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} \
  "${node_path[@]}" >/dev/null
targets=()
for t in ${INVMW_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j"$(nproc)" "${targets[@]}"
