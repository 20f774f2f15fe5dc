#!/bin/sh
# The cgroup source in a real CPU-limited cgroup (v1 CPU controller, 50% quota): a process that
# busy-loops for 1 s must see about 0.5 s of cgroup CPU time and throttled periods. Skipped
# (exit 77) where no v1 CPU controller can be written (not root, pure cgroup v2 host).
set -eu
app=$1; work=$2
base=/sys/fs/cgroup/cpu
[ -w "$base" ] && [ -f "$base/cpu.cfs_quota_us" ] || { echo "no writable cgroup v1 cpu controller: skipped"; exit 77; }
cg=$base/invmw-sampler-test-$$
mkdir "$cg"
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
echo 100000 > "$cg/cpu.cfs_period_us"
echo 50000 > "$cg/cpu.cfs_quota_us"
rm -rf "$work"
# The paths are arguments of the inner shell, never part of its script.
sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec env INVMW_SAMPLER_SOURCES=proc,cgroup "$@"' \
  sh "$cg" "$app" "$work" 0 1 1 1.0 busy
/usr/bin/python3 - "$work" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/raw/resources-000000.json"))["metrics"]
for k in sorted(m):
    if k.startswith("cgroup."):
        print(k, m[k]["value"])
thr = m["cgroup.cpu.throttled_periods"]["value"]
quota = m["cgroup.cpu.quota"]["value"]
cpu = m["proc.cpu.user"]["value"] + m["proc.cpu.system"]["value"]
ok = abs(quota - 0.5) < 1e-9 and thr >= 5 and 0.35 < cpu < 0.7
if "cgroup.cpu.usage" in m:
    ok = ok and abs(m["cgroup.cpu.usage"]["value"] - cpu) < 0.1
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
