#!/bin/sh
# Benchmark of the added cost per pvm_send/pvm_recv pair (see README of pvm_wrap: docs/pvm.md).
# Usage: pvm_overhead.sh BUILD_DIR   (starts and halts its own daemon in a private PVM_TMP)
set -eu
B=$(cd "${1:?build dir}" && pwd)
LIB=$B/lib/libinvmw-pvm.so
OUT=$(mktemp -d)
export PVM_ROOT=${PVM_ROOT:-/usr/lib/pvm3} PVM_ALLOW_ROOT=1 PVM_TMP=$OUT/pvmtmp
PVMD=$(dirname "$0")/../tests/pvmd.sh
trap 'sh "$PVMD" stop >/dev/null; rm -rf "$OUT"' EXIT INT TERM
echo "# wrapper cost, fake libpvm3 (no daemon): plain / preload / preload+trace"
for i in 1 2 3; do
  "$B/bin/pvm_wrapper_cost"
  INVMW_OUTPUT_DIR=$OUT/w$i LD_PRELOAD=$LIB "$B/bin/pvm_wrapper_cost"
  INVMW_TRACE_ENABLE=1 INVMW_OUTPUT_DIR=$OUT/t$i LD_PRELOAD=$LIB "$B/bin/pvm_wrapper_cost"
done
sh "$PVMD" start >/dev/null
echo "# ping-pong through pvmd, 8 bytes: plain / preload"
for i in 1 2 3; do
  "$B/bin/pvm_pingpong" 5000 8
  INVMW_OUTPUT_DIR=$OUT/p$i LD_PRELOAD=$LIB "$B/bin/pvm_pingpong" 5000 8
done
