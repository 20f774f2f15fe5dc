#!/usr/bin/env bash
# The sanitizer stage of CI (called by scripts/test.sh, README "Sanitizer builds"): configures
# invmw with ASan+UBSan (-DINVMW_SANITIZE=address) in ./build-asan (or $ASAN_BUILD_DIR), builds
# only what the selected tests need (target invmw_sanitize_tests) and runs the unit tests and the
# MPI tests labelled `sanitize` except those labelled `slow`; then the threaded e2e program under
# ThreadSanitizer in ./build-tsan (or $TSAN_BUILD_DIR), building only libinvmw.so and that
# program. Extra arguments go to the first ctest.
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
# The sanitizer options and suppression files of the build (cmake/InvmwSanitize.cmake), for
# every test: the MPI tests set them themselves, the unit tests' programs need them as well.
source "$build/sanitizer-env.sh"
rc=0
(cd "$build" && ctest -L '^(unit|sanitize)$' -LE slow --output-on-failure --timeout 600 "$@") ||
  rc=$?

# TSan: only the preload library and the threaded e2e program (test sanitize.tsan_threads).
tbuild=${TSAN_BUILD_DIR:-$here/build-tsan}
cmake -S "$here" -B "$tbuild" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  "-DCMAKE_Fortran_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DINVMW_SANITIZE=thread "${launchers[@]}" >/dev/null
time cmake --build "$tbuild" -j"$(nproc)" --target invmw_preload sanitize_tsan_c_threads
(cd "$tbuild" && ctest -R '^sanitize\.tsan_' --output-on-failure --timeout 600) || rc=$((rc ? rc : $?))
exit "$rc"
