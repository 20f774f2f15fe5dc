#!/usr/bin/env bash
# Builds invmw and runs its test suite: every CTest test except those labelled `slow`; then the
# sanitizer stage (scripts/test-sanitize.sh: unit tests and an MPI subset built with ASan+UBSan
# in ./build-asan), unless SANITIZE=0; then the fuzz stage (scripts/fuzz.sh: every parser's
# libFuzzer target for FUZZ_SECONDS, default 10, each), unless FUZZ=0. Extra arguments go to the
# first stage's ctest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
bash "$here/scripts/build.sh"
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
rc=0
(cd "$build" && ctest -LE slow --output-on-failure --timeout 600 "$@") || rc=$?
if [[ ${SANITIZE:-1} != 0 ]]; then
  # Run even after failures above, so that CI reports both stages.
  bash "$here/scripts/test-sanitize.sh" || rc=$((rc ? rc : $?))
fi
if [[ ${FUZZ:-1} != 0 ]]; then
  bash "$here/scripts/fuzz.sh" --seconds "${FUZZ_SECONDS:-10}" || rc=$((rc ? rc : $?))
fi
exit "$rc"
