#!/usr/bin/env bash
# Builds invmw and runs its test suite: every CTest test except those labelled `slow`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
bash "$here/scripts/build.sh"
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cd "$build"
ctest -LE slow --output-on-failure --timeout 600 "$@"
