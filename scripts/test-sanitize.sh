#!/usr/bin/env bash
# The sanitizer stage of CI (called by scripts/test.sh, README "Sanitizer builds"): configures
# invmw with ASan+UBSan (-DINVMW_SANITIZE=address) in ./build-asan (or $ASAN_BUILD_DIR), builds
# only what the selected tests need (target invmw_sanitize_tests) and runs the unit tests and the
# MPI tests labelled `sanitize` except those labelled `slow`. Extra arguments go to ctest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${ASAN_BUILD_DIR:-$here/build-asan}
launchers=()
if command -v ccache >/dev/null; then
  for l in C CXX Fortran; do launchers+=("-DCMAKE_${l}_COMPILER_LAUNCHER=ccache"); done
fi
# -O1 -g1 (line tables): whole stacks with lines in the reports, and a build about a third
# cheaper than -O2 -g, which counts on CI's two cores.
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  "-DCMAKE_Fortran_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DINVMW_SANITIZE=address "${launchers[@]}" >/dev/null
time cmake --build "$build" -j"$(nproc)" --target invmw_sanitize_tests
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cd "$build"
ctest -L '^(unit|sanitize)$' -LE slow --output-on-failure --timeout 600 "$@"
