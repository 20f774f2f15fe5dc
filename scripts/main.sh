#!/usr/bin/env bash
# The main job: build invmw, run the bundled MPI example (examples/heat1d.c) on 2 ranks under
# `invmw run`, and show its profile.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
bash "$here/scripts/build.sh"
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
out=${INVMW_MAIN_OUT:-$here/invmw-main-$(date -u +%Y%m%d-%H%M%S)}
"$build/bin/invmw" run --out "$out" -- mpirun.openmpi -np 2 "$build/bin/heat1d" 200000 2000 50
"$build/bin/invmw" profile "$out"
echo
echo "main job done: profile in $out/profile.txt and $out/profile.json"
