#!/usr/bin/env bash
# The CI fuzz stage: builds the libFuzzer targets of fuzz/ with clang (separate build directory,
# -DINVMW_FUZZ=ON) and runs each for a bounded time, one after the other. Fails when a target
# crashes (sanitizer report, uncaught exception, broken contract) or a regression input of
# fuzz/regressions/<target>/ fails again. Crash inputs are left in <build>/fuzz-artifacts/<target>/;
# commit a minimized one to fuzz/regressions/<target>/ with the fix (README "Fuzzing").
#
# usage: scripts/fuzz.sh [--seconds N] [--build DIR] [--jobs N] [--no-build] [TARGET...]
#   --seconds N   fuzzing time per target (default 60)
#   --build DIR   build directory (default build-fuzz in the source tree)
#   --jobs N      parallel compile jobs (default 2)
#   --no-build    use the binaries already in DIR
#   TARGET        run only these targets (default: all, see fuzz/CMakeLists.txt)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=60
build="$root/build-fuzz"
jobs=2
do_build=1
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds needs a whole number" >&2; exit 2; }
if ((${#targets[@]} == 0)); then
  targets=(design model platform_table expr csv rank_dump raw_run raw_samples collector smpi_paje
           callsite_file callsite_live validation_pool emulated_platform)
fi

start=$(date +%s)
if ((do_build)); then
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    launcher=()
    if command -v ccache >/dev/null; then
      launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -DINVMW_FUZZ=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
  fi
  cmake --build "$build" -j"$jobs" --target "${targets[@]/#/fuzz_}"
fi

# Inputs longer than this reach no new code in the expression parser, only deeper recursion.
# rank_dump: the profile of one rank with a few functions; longer inputs only cost time.
declare -A max_len=([expr]=512 [rank_dump]=2400)

# The file-based targets write their inputs under TMPDIR: a memory file system when there is
# one (ext4 flushes on every replace-by-rename, which slows rank_dump 30-fold).
shm=/dev/shm
[[ -d "$shm" && -w "$shm" ]] || shm="$build"
TMPDIR=$(mktemp -d "$shm/invmw-fuzz-sh.XXXXXX")
export TMPDIR
trap 'rm -rf -- "$TMPDIR"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=()
for t in "${targets[@]}"; do
  bin="$build/bin/fuzz_$t"
  [[ -x "$bin" ]] || { echo "fuzz.sh: $bin not built" >&2; exit 2; }
  seeds="$root/fuzz/corpus/$t"
  work="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts/$t"
  mkdir -p "$work" "$artifacts"
  opts=(-timeout=30 -print_final_stats=1 "-artifact_prefix=$artifacts/")
  [[ -f "$root/fuzz/dict/$t.dict" ]] && opts+=("-dict=$root/fuzz/dict/$t.dict")
  [[ -n "${max_len[$t]:-}" ]] && opts+=("-max_len=${max_len[$t]}")
  regressions=("$root/fuzz/regressions/$t"/*)
  if [[ -e "${regressions[0]}" ]]; then
    echo "== $t: ${#regressions[@]} regression inputs"
    if ! "$bin" "${opts[@]}" "${regressions[@]}" >"$build/fuzz-$t-regressions.log" 2>&1; then
      echo "fuzz.sh: $t: a regression input fails again (log: $build/fuzz-$t-regressions.log)" >&2
      tail -n 30 "$build/fuzz-$t-regressions.log" >&2
      failed+=("$t")
      continue
    fi
  fi
  echo "== $t: fuzzing for ${seconds}s"
  log="$build/fuzz-$t.log"
  if "$bin" "${opts[@]}" -max_total_time="$seconds" "$work" "$seeds" >"$log" 2>&1; then
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' "$log" |
      sed "s/^/   $t /"
  else
    echo "fuzz.sh: $t crashed (log: $log; input in $artifacts/)" >&2
    grep -A 30 -m 1 -E 'ERROR: |runtime error|terminate called|deadly signal' "$log" >&2 || tail -n 30 "$log" >&2
    failed+=("$t")
  fi
done

echo "fuzz.sh: ${#targets[@]} targets in $(($(date +%s) - start))s"
if ((${#failed[@]})); then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no crashes"
