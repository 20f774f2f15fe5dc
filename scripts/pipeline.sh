#!/usr/bin/env bash
# The end-to-end pipeline on a built tree: profile and trace the bundled example; probe the
# emulated platforms; calibrate opal-mini's model on a reference platform (an emulated cluster on
# shared memory); predict held-out points there and, through the transfer rule, on target
# platforms that differ in network and CPU share; run those points on every platform and measure
# the prediction errors from the results database; predict the source documents' platforms;
# draw the plots and write the HTML report.
#
#   scripts/pipeline.sh [--quick] [--out DIR]
#
# --quick: small designs, one target platform (100 Mbit/s) and no reverse direction: under
# 3 minutes on a built tree. Without it: the full calibration design, five target platforms
# (TCP, 1 Gbit/s, 100 Mbit/s, 10 Mbit/s, another CPU share) and the reverse direction
# (calibrate on the 10 Mbit/s network, predict shared memory).
# Every artefact goes under DIR (default ./invmw-pipeline-YYYYMMDD-HHMMSS), including its own
# results database, so runs never mix with build/experiments/results.db. BUILD_DIR picks the
# build tree (default ./build). Emulated platforms need root (cgroups, network namespaces).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
invmw=$build/bin/invmw
quick=0
out=
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1; shift ;;
    --out) [[ $# -ge 2 ]] || { echo "pipeline: --out needs a directory" >&2; exit 2; }
           out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "pipeline: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x $invmw ]] || { echo "pipeline: $invmw not found: build first (scripts/build.sh)" >&2; exit 2; }
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
out=${out:-$PWD/invmw-pipeline-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"/plots "$out"/tables "$out"/validation
out=$(cd "$out" && pwd)
db=$out/results.db
designs=$here/experiments/designs
paper=(cray-j90 cray-t3e-900 fast-cops slow-cops smp-cops)

# Probes must see a platform as an application does: kernels much longer than the 10 ms quota
# period, messages well above the 80 KiB token-bucket burst, means over replications. The
# ping-pong's time budget per size keeps the 10 Mbit/s platform's probe short.
probe_opts=(--replications 3 --sizes 0,1024,65536,262144,1048576 --pingpong-reps 50
            --pingpong-max-time 0.5 --barrier-reps 200 --n 3000 --kernel-reps 3)
if [[ $quick -eq 1 ]]; then
  ref=emu-4x50-shm
  calibration=pipeline-quick
  validation=validation-quick
  targets=(emu-4x50-100mbit)
  reverse=
  heat=(200000 500 50)
  breakdown_where=(--where n=2000 --where u=1)
  probe_opts=(--replications 2 --sizes 0,1024,65536,262144,1048576 --pingpong-reps 20
              --pingpong-max-time 0.3 --barrier-reps 100 --n 3000 --kernel-reps 2)
else
  ref=emu-4x50-shm
  calibration=pipeline-full
  validation=validation-full
  targets=(emu-4x50-tcp emu-4x50-1gbit emu-4x50-100mbit emu-4x50-10mbit emu-8x25-shm)
  reverse=emu-4x50-10mbit
  heat=(200000 2000 50)
  breakdown_where=(--where n=3000 --where u=1)
fi
t0=$(date +%s)
step() { printf '\n== [%3ds] %s\n' $(($(date +%s) - t0)) "$*"; }

# Runs a design on a platform into the pipeline's database. Exit status 1 means some run failed:
# the fit and the validation use the successful ones, so go on, but say so.
run_design() {  # design platform log
  local rc=0
  "$invmw" experiment run --no-progress --db "$db" --runs-dir "$out/runs" \
    --platform "$2" "$designs/$1.toml" > "$3" 2>&1 || rc=$?
  tail -1 "$3"
  if [[ $rc -gt 1 ]]; then
    echo "pipeline: design $1 could not run on $2 (status $rc; see $3)" >&2
    exit 1
  elif [[ $rc -eq 1 ]]; then
    echo "pipeline: warning: some runs of $1 on $2 failed (see $3):" >&2
    grep -i 'failed' "$3" | grep -v '0 failed' | head -5 >&2
  fi
}

probe() {  # platform
  "$invmw" platform probe --quiet --force --name "probed-$1" --title "$1 (probed)" \
    --platform "$1" "${probe_opts[@]}" --out "$out/tables/$1.toml" \
    --raw "$out/tables/$1-probes.jsonl" > "$out/tables/$1-probe.txt"
  sed 's/^/  /' "$out/tables/$1-probe.txt" | tail -n +2 | tr '\n' ' '
  echo
}

# Calibrates the opal model on the runs of the calibration design on a platform, and writes the
# fitted table with that platform's probed kernel times (for the transfer rule).
calibrate() {  # platform fit-name
  local rc=0
  "$invmw" fit --model opal --design "$calibration" --platform "$1" --db "$db" --json \
    > "$out/$2.json" || rc=$?
  [[ $rc -le 1 ]] || { echo "pipeline: fit on $1 failed (see $out/$2.json)" >&2; exit 1; }
  "$invmw" fit --model opal --design "$calibration" --platform "$1" --db "$db" --no-cv \
    --base-table "$out/tables/$1.toml" --out "$out/tables/$2.toml" \
    --platform-name "$2" > "$out/$2.txt" || true
  [[ $rc -eq 0 ]] || echo "pipeline: warning: the fit on $1 did not converge (see $out/$2.txt)"
  grep -E '^ *(a[1-4]|b[15]) ' "$out/$2.txt" | head -6 | sed 's/^/  /'
}

# Validates predictions against the validation design's runs on a platform.
validate() {  # file label run-platform table [reference]
  local args=(--model opal --design "$validation" --platform "$3" --db "$db" --table "$4"
              --label "$2" --out "$out/validation/$1.json")
  [[ $# -ge 5 ]] && args+=(--reference "$5")
  "$invmw" validate "${args[@]}" > "$out/validation/$1.txt"
  printf '  %-34s' "$2"
  awk '$1 ~ /^t_/ && NF >= 6 { printf " %s %s/%s%%", $1, $4, $6 } END { print "" }' \
    "$out/validation/$1.txt"
}

step "profile and trace: heat1d on 2 ranks"
"$invmw" run --trace --quiet --out "$out/profile" -- \
  mpirun --oversubscribe -np 2 "$build/bin/heat1d" "${heat[@]}" > "$out/heat1d.out"
"$invmw" trace check "$out/profile" > "$out/profile/trace-check.txt"
"$invmw" analyze "$out/profile" > "$out/profile/analysis.txt"
cp "$out/profile/profile.txt" "$out/profile-summary.txt"

step "probe the reference platform $ref"
probe "$ref"

step "calibration design $calibration on $ref"
run_design "$calibration" "$ref" "$out/experiment-$calibration-$ref.log"

step "fit of the opal model on $ref"
calibrate "$ref" calibrated
cp "$out/calibrated.json" "$out/fit.json"  # the report's and the plots' fit

step "validation design $validation on $ref (held-out points)"
run_design "$validation" "$ref" "$out/experiment-$validation-$ref.log"
echo "  prediction errors (median/worst |error| per response):"
validate "00-$ref-holdout" "$ref held-out (calibrated)" "$ref" "$out/tables/calibrated.toml"

i=1
for t in "${targets[@]}"; do
  step "target $t: probe, run $validation, validate the transferred prediction"
  probe "$t"
  run_design "$validation" "$t" "$out/experiment-$validation-$t.log"
  validate "$(printf '%02d' $i)-$t" "$t from $ref" "$t" "$out/tables/$t.toml" \
    "$out/tables/calibrated.toml"
  i=$((i + 1))
done

if [[ -n $reverse ]]; then
  step "reverse direction: calibrate on $reverse, predict $ref"
  [[ -f $out/tables/$reverse.toml ]] || probe "$reverse"
  run_design "$calibration" "$reverse" "$out/experiment-$calibration-$reverse.log"
  calibrate "$reverse" "calibrated-$reverse"
  validate "90-$ref-from-$reverse" "$ref from $reverse (reverse)" "$ref" \
    "$out/tables/$ref.toml" "$out/tables/calibrated-$reverse.toml"
fi

step "probe this machine (platform table local)"
"$invmw" platform probe --quiet --force --name local --title "this machine (probed)" \
  "${probe_opts[@]}" --out "$out/tables/local.toml" --raw "$out/tables/local-probes.jsonl" \
  > "$out/tables/local-probe.txt"

step "predict the source documents' platforms and the probed and calibrated ones"
pred=(--model opal --set n=4289 --set nt=140 --set s=10 --set u=1 --sweep p=1..7)
for p in "${paper[@]}"; do pred+=(--platform "$here/platforms/tables/$p.toml"); done
pred+=(--platform "$out/tables/local.toml" --platform "$out/tables/calibrated.toml")
"$invmw" predict "${pred[@]}" --json > "$out/predictions.json"
"$invmw" predict "${pred[@]}" > "$out/predictions.txt"
# The emulated targets through the transfer rule, at the calibration's own sizes.
pred=(--model opal --set n=2000 --set nt=1000000 --set s=10 --set u=1 --sweep p=1..3
      --reference "$out/tables/calibrated.toml" --platform "$out/tables/calibrated.toml")
for t in "${targets[@]}"; do pred+=(--platform "$out/tables/$t.toml"); done
"$invmw" predict "${pred[@]}" > "$out/predictions-emulated.txt"

step "plots"
"$invmw" plot measured-vs-predicted --fit "$out/fit.json" --out "$out/plots/measured-vs-predicted"
"$invmw" plot breakdown --design "$calibration" --platform "$ref" --db "$db" \
  "${breakdown_where[@]}" --out "$out/plots/breakdown"
"$invmw" plot predict --prediction "$out/predictions.json" --out "$out/plots/predict"

step "report"
"$invmw" report "$out"

step "done in $(($(date +%s) - t0)) s; artefacts in $out:"
cat <<SUMMARY
  profile, trace, analysis   $out/profile/ (profile.txt, profile.json, traces.otf2, analysis.txt)
  experiment runs            $db (designs $calibration, $validation), run directories in $out/runs/
  fit on $ref       $out/fit.txt, $out/fit.json (also calibrated.{txt,json})
  platform tables            $out/tables/ (calibrated.toml fitted; probed: $ref ${targets[*]} local)
  prediction errors          $out/validation/*.txt and *.json (median/worst per platform above)
  predictions                $out/predictions.txt (+ .json; source documents' platforms),
                             $out/predictions-emulated.txt (emulated targets)
  plots                      $out/plots/{measured-vs-predicted,breakdown,predict}.{svg,png}
  report                     $out/report.html
SUMMARY
