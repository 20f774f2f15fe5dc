#!/usr/bin/env bash
# The end-to-end pipeline on a built tree: profile and trace the bundled example; probe the
# emulated platforms; calibrate opal-mini's model on a reference platform (an emulated cluster on
# shared memory); predict held-out points there and, through the transfer rule, on target
# platforms that differ in network and CPU share; run those points on every platform and measure
# the prediction errors from the results database; predict the source documents' platforms;
# draw the plots and write the HTML report.
#
#   scripts/pipeline.sh [--quick] [--replications K] [--out DIR] [--schedule-only]
#                       [--model NAME] [--from DIR] [--max-replications K]
#
# --quick: small designs, one target platform (100 Mbit/s) and no reverse direction: under
# 3 minutes on a built tree. Without it: the full calibration design, five target platforms
# (TCP, 1 Gbit/s, 100 Mbit/s, 10 Mbit/s, another CPU share) and the reverse direction
# (calibrate on the 10 Mbit/s network, predict shared memory). --replications K runs every
# calibration and validation point K times (default: the designs' own, 3 and 5, issue 20;
# K = 4 was the benchmark of docs/report.md, ~15 min). The probe rounds and the runs of
# every platform are interleaved in time, so that the machine's drifting speed does not turn
# into a difference between platforms. --schedule-only: write DIR/designs and DIR/schedule.txt
# (every design checked by the runner's --dry-run) and stop before measuring anything.
# Every artefact goes under DIR (default ./invmw-pipeline-YYYYMMDD-HHMMSS), including its own
# results database, so runs never mix with build/experiments/results.db. BUILD_DIR picks the
# build tree (default ./build). Emulated platforms need root (cgroups, network namespaces).
# --model NAME: the model calibrated and validated (default opal_quota: opal with the CPU quota's
# stall and the token bucket's burst, docs/fitter.md; `--model opal` is the paper's model). The
# source documents' platforms are always predicted with opal (their tables have no stall terms).
# --from DIR: measure nothing; take DIR's results database and probe rounds (a finished
# pipeline's output, with the same --quick setting) and redo the tables, fits and validations
# under --out (DIR is only read), then stop: a model or method change checked offline.
# --max-replications K: replications where the noise is (issue 20). After the schedule, each
# target's validation is computed once (validation/first-pass/); a point whose total time's
# noise floor is above 2% (invmw validate's floor target; 0.25% with --quick) gets extra
# replications, each paired with a reference run beside it as in the first pass, up to the
# count its own spread needs for that floor (validate's last column) and at most K in all
# (default 15: about 10 minutes on the full pipeline with plfD's spreads; 7 with --quick).
# The held-out validation on the reference gets the same, unpaired (without the replications
# its first target's partners already add), and so do the calibration design's points on the
# reference and the reverse platform (then the reference is fitted again on all its runs).
# K <= the validation design's replications: no extra stage.
# Logged in validation/extra-replications.txt.
# Skipped with --from (nothing measured).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
invmw=$build/bin/invmw
quick=0
replications=
out=
schedule_only=0
model=opal_quota
from=
max_replications=
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1; shift ;;
    --replications)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] ||
        { echo "pipeline: --replications needs a positive whole number" >&2; exit 2; }
      replications=$2; shift 2 ;;
    --out) [[ $# -ge 2 ]] || { echo "pipeline: --out needs a directory" >&2; exit 2; }
           out=$2; shift 2 ;;
    --schedule-only) schedule_only=1; shift ;;
    --model) [[ $# -ge 2 ]] || { echo "pipeline: --model needs a model name" >&2; exit 2; }
             model=$2; shift 2 ;;
    --from) [[ $# -ge 2 && -f $2/results.db && -d $2/tables/rounds ]] ||
              { echo "pipeline: --from needs a finished pipeline's directory (results.db," \
                  "tables/rounds/)" >&2; exit 2; }
            from=$(cd "$2" && pwd); shift 2 ;;
    --max-replications)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] ||
        { echo "pipeline: --max-replications needs a positive whole number" >&2; exit 2; }
      max_replications=$2; shift 2 ;;
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
# The designs as they run, kept with the results (with --replications, changed to K).
designs=$out/designs
mkdir -p "$designs"
for f in "$here"/experiments/designs/{pipeline,validation}-*.toml; do
  if [[ -n $replications ]]; then
    sed "s/^replications = .*/replications = $replications/" "$f" > "$designs/$(basename "$f")"
  else
    cp "$f" "$designs/"
  fi
done
if [[ -n $from ]]; then
  # The designs as they ran, their results and the raw probe rounds; the source stays untouched.
  cp "$from"/designs/*.toml "$designs/"
  for f in results.db results.db-wal results.db-shm; do
    [[ ! -f $from/$f ]] || cp "$from/$f" "$out/$f"
  done
  mkdir -p "$out/tables/rounds"
  cp "$from"/tables/rounds/*.jsonl "$out/tables/rounds/"
fi
paper=(cray-j90 cray-t3e-900 fast-cops slow-cops smp-cops)

# Probes must see a platform as an application does: kernels much longer than the 10 ms quota
# period, messages well above the 80 KiB token-bucket burst, means over replications. The
# transfer rule's kernel time is the fastest kernel replication, so each round takes three:
# short moments of interference slow about half of the quarter-second measurements. Three rounds
# were not enough moments: in plfJ and plfK all nine of the reference's kernel replications were
# slow (ratios 0.84-0.94 for equal CPU shares; docs/fitter.md), the replications of one round
# being slow together more often than not. So each platform also gets kernel_rounds short
# kernels-only rounds (platform probe --only kernels, kernel_opts) as a stream of their own,
# spread over the whole schedule like everything else. The
# ping-pong's time budget per size keeps the 10 Mbit/s platform's probe short.
probe_rounds=3
probe_opts=(--sizes 0,1024,65536,262144,1048576 --pingpong-reps 50
            --pingpong-max-time 0.5 --barrier-reps 200 --n 3000 --kernel-reps 3
            --kernel-replications 3)
kernel_rounds=8
kernel_opts=(--n 3000 --kernel-reps 3 --kernel-replications 2)
if [[ $quick -eq 1 ]]; then
  ref=emu-4x50-shm
  calibration=pipeline-quick
  validation=validation-quick
  targets=(emu-4x50-100mbit)
  reverse=
  heat=(200000 500 50)
  breakdown_where=(--where n=2000 --where u=1)
  probe_rounds=2
  probe_opts=(--sizes 0,1024,65536,262144,1048576 --pingpong-reps 20
              --pingpong-max-time 0.3 --barrier-reps 100 --n 3000 --kernel-reps 2
              --kernel-replications 3)
  kernel_rounds=2
  kernel_opts=(--n 3000 --kernel-reps 2 --kernel-replications 2)
  max_replications=${max_replications:-7}
  # The quick design's points are quiet on 100 Mbit/s (floors about 1%): a lower target, so that
  # the stage runs here too (at most 2 points x 2 extra pairs with the cap of 7).
  floor_target=0.25
else
  ref=emu-4x50-shm
  calibration=pipeline-full
  validation=validation-full
  targets=(emu-4x50-tcp emu-4x50-1gbit emu-4x50-100mbit emu-4x50-10mbit emu-8x25-shm)
  reverse=emu-4x50-10mbit
  heat=(200000 2000 50)
  breakdown_where=(--where n=3000 --where u=1)
  max_replications=${max_replications:-15}
  floor_target=2  # invmw validate's own (--floor-target's default)
fi
t0=$(date +%s)
step() { printf '\n== [%3ds] %s\n' $(($(date +%s) - t0)) "$*"; }

# Every measurement (probe rounds and experiment runs, on every platform) goes into one schedule
# that spreads each platform's share evenly over the whole time: this machine's speed drifts by
# 10-40% over minutes (other virtual machines on the host), and measured in blocks one platform
# after another the drift became a difference between platforms, which the transfer rule then
# carried into the predictions (docs/report.md). Interleaved, the calibration, each platform's
# probes and each validation see the same mix of fast and slow moments. The schedule only orders
# when things are measured: the predictions still use nothing but the reference's calibration
# runs and each target's probes.
#
# A stream is a sequence of measurements of one kind on one platform. Item i (i = 0..L-1) of
# stream j (j = 0..S-1) of length L goes at position (i + (j + 0.5) / S) / L, and the schedule
# is all items sorted by position: each stream is spread evenly over the whole time, and streams
# of equal length take turns instead of always running in the same order at the same moments.
schedule=$out/schedule.txt
streams=0
: > "$schedule.unsorted"
add_round_stream() {  # kind (probe or kernels) rounds platform
  local r
  for ((r = 1; r <= $2; r++)); do
    echo "$((r - 1)) $2 $streams $1 $3 $r" >> "$schedule.unsorted"
  done
  streams=$((streams + 1))
}
add_run_stream() {  # design platform: the runner's own randomized order of the design's runs
  [[ -z $from ]] || return 0  # --from: measured already
  check_ranks "$1" "$2"
  : > "$out/experiment-$1-$2.log"
  if ! "$invmw" experiment run --dry-run --db "$db" --platform "$2" "$designs/$1.toml" |
    awk -v d="$1" -v p="$2" -v j="$streams" '$1 == "point" && $3 == "rep" {
        sub(":", "", $4); k[n++] = $2 " " $4 }
      END { for (i = 0; i < n; i++) print i, n, j, "run", d, p, k[i] }' \
      >> "$schedule.unsorted"; then
    echo "pipeline: design $1 cannot run on $2 (see the error above)" >&2
    exit 1
  fi
  streams=$((streams + 1))
}
# Quota stalls (issue 20, item 5): a rank that has used its CPU share waits for the next quota
# period (opal_quota's stall law, docs/fitter.md, models it for ranks on cores with CPU to spare:
# the quarter core's 4 ranks sit 2 per core, half of each core idle). With more than 2 ranks per core a rank's
# stall also waits for the others sharing its core, and the error grew beyond what a parameter
# could carry (the quarter-core platform's 39-44%). So the pipeline runs at most 2 ranks per core
# of this machine on every emulated platform, and refuses a design that needs more.
cores=$(nproc)
check_ranks() {  # design platform
  local most
  most=$("$invmw" experiment run --dry-run --db "$db" --platform "$2" "$designs/$1.toml" |
    awk '{ for (f = 1; f < NF; f++) if ($f == "--ranks" && $(f + 1) + 0 > m) m = $(f + 1) + 0 }
         END { print m + 0 }')
  if ((most > 2 * cores)); then
    echo "pipeline: design $1 runs $most ranks on $2: more than 2 per core of this machine" \
      "($cores cores); quota stalls would then dominate what the model predicts" >&2
    exit 1
  fi
}
# A validation stream on a target with the reference's runs of the same points beside it: each
# target run (point k, replication r) is preceded at once by the reference's run of (k, r) of
# design ref-design, at the same position, so that the pair sees the same machine speed and
# `invmw validate --pair-platform` can divide the drift out (issue 20).
add_paired_stream() {  # design ref-design reference target
  [[ -z $from ]] || return 0  # --from: measured already
  check_ranks "$1" "$4"
  check_ranks "$2" "$3"
  "$invmw" experiment run --dry-run --db "$db" --platform "$3" "$designs/$2.toml" > /dev/null ||
    { echo "pipeline: design $2 cannot run on $3 (see the error above)" >&2; exit 1; }
  : > "$out/experiment-$1-$4.log"
  : > "$out/experiment-$2-$3.log"
  if ! "$invmw" experiment run --dry-run --db "$db" --platform "$4" "$designs/$1.toml" |
    awk -v d="$1" -v rd="$2" -v r="$3" -v p="$4" -v j="$streams" \
      '$1 == "point" && $3 == "rep" { sub(":", "", $4); k[n++] = $2 " " $4 }
      END { for (i = 0; i < n; i++) { print i, n, j, "run", rd, r, k[i]
                                       print i, n, j, "run", d, p, k[i] } }' \
      >> "$schedule.unsorted"; then
    echo "pipeline: design $1 cannot run on $4 (see the error above)" >&2
    exit 1
  fi
  streams=$((streams + 1))
}
# Runs the schedule. A failed run or probe round is a warning (the fits, tables and validations
# use the others); a design that cannot run at all stops the pipeline, an interrupt too.
sort_schedule() {
  awk -v S="$streams" '{ printf "%.9f %s\n", ($1 + ($3 + 0.5) / S) / $2, $0 }' \
    "$schedule.unsorted" | LC_ALL=C sort -s -k1,1n | cut -d' ' -f5- > "$schedule.tmp"
  mv "$schedule.tmp" "$schedule"
  rm -f "$schedule.unsorted"
}
run_schedule() {
  local total done=0 failed=0 rc kind a b c d log
  total=$(wc -l < "$schedule")
  mkdir -p "$out/tables/rounds"
  # The schedule comes in on fd 3: mpirun reads standard input, which would swallow it.
  while read -r kind a b c d <&3; do
    rc=0
    if [[ $kind == probe || $kind == kernels ]]; then  # platform round
      # P-kN: kernels only, raw records; P-rN: a full round, also its own table.
      local stem=$out/tables/rounds/$a-k$b what=(--only kernels "${kernel_opts[@]}")
      if [[ $kind == probe ]]; then
        stem=$out/tables/rounds/$a-r$b
        what=(--name "probed-$a" "${probe_opts[@]}" --replications 1 --out "$stem.toml")
      fi
      log=$stem.txt
      "$invmw" platform probe --quiet --force --platform "$a" "${what[@]}" --raw "$stem.jsonl" \
        > "$log" 2>&1 || rc=$?
      if [[ $rc -ne 0 ]]; then
        rm -f "$stem.jsonl"
        [[ $rc -lt 128 ]] || exit "$rc"
        failed=$((failed + 1))
        echo "pipeline: warning: $kind round $b on $a failed (see $log)" >&2
      fi
    else  # design platform point replication
      log=$out/experiment-$a-$b.log
      "$invmw" experiment run --no-progress --db "$db" --runs-dir "$out/runs" --platform "$b" \
        --point "$c" --replication "$d" "$designs/$a.toml" >> "$log" 2>&1 || rc=$?
      if [[ $rc -ge 128 ]]; then
        exit "$rc"
      elif [[ $rc -gt 1 ]]; then
        echo "pipeline: design $a could not run on $b (status $rc; see $log)" >&2
        exit 1
      elif [[ $rc -eq 1 ]]; then
        failed=$((failed + 1))
        echo "pipeline: warning: point $c rep $d of $a on $b failed (see $log)" >&2
      fi
    fi
    done=$((done + 1))
    if ((done % 20 == 0 || done == total)); then
      printf '  %3d of %d measurements done (%ds)\n' "$done" "$total" $(($(date +%s) - t0))
    fi
  done 3< "$schedule"
  [[ $failed -eq 0 ]] ||
    echo "pipeline: warning: $failed measurements failed; the tables, fits and validations" \
      "use the others" >&2
}
# The validation design's replications per point in the first pass (its copy under designs/).
first_replications() {
  awk -F' = ' '/^replications = / { print $2; exit }' "$designs/$validation.toml"
}
# Replications where the noise is (issue 20): the quota platforms' p = 1 points stall by
# different amounts from run to run (plfD, emu-4x50-1gbit, n = 1500: 0.57-0.80 s over 5 runs,
# the reference 0.59-0.65 s) and a median of 5 leaves an exact model 5-10% off there, while the
# p = 3 points are quiet (floors under 1%). So each target's first-pass validation (the same
# pairing as the final one) gives every point its noise floor and the replications its own
# spread needs for a 2% floor (invmw validate: FLOOR% and FOR2% of the total, drift divided out);
# a point over the floor gets replications up to that count, at most --max-replications, with
# replication numbers continuing the design's (the runner accepts numbers below the design's
# `replications`, so the design copies are raised to the cap). Every extra target run has its
# reference run of the same point and replication right before it, and the targets' streams are
# interleaved in time as in the first schedule (schedule-extra.txt).
# One stream of extra runs from a first-pass validation's text (validation/first-pass/T.txt):
# its per-point rows are POINT FACTORS... REPS MEASURED[s] SD[s] PREDICTED ERROR% FLOOR%
# FOR<target>% (the factors are several words: the rest counts from the end). The stream goes
# replication by replication, each point over the floor in turn; with a partner design, every
# target run right after the reference's run of the same point and replication; without one
# (the held-out reference itself), unpaired and without the replications already scheduled.
# A calibration design's stream (extra_stream P "" DESIGN FIRST STEM) is unpaired the same way:
# its runs are the fit's rows, each point's count chosen from its own spread.
extra_stream() {  # platform partner-design-or-empty [design first-replications first-pass-stem]
  local before d=${3:-$validation} f=${4:-$first} stem=${5:-$1} kind=${6:-held-out}
  before=$(wc -l < "$schedule.unsorted")
  awk -v t="$1" -v rd="$2" -v first="$f" -v cap="$max_replications" \
      -v target="$floor_target" -v j="$streams" -v r="$ref" -v d="$d" -v kind="$kind" \
      -v sched="$schedule.unsorted" '
    FILENAME == sched { if (rd == "" && $4 == "run" && $5 == d && $6 == t) have[$7 " " $8] = 1
                        next }
    $1 == "POINT" { table = 1; next }
    table && NF == 0 { table = 0 }
    table && $1 ~ /^[0-9]+$/ {
      f = $2; for (i = 3; i <= NF - 7; i++) f = f " " $i
      floor = $(NF - 1); need = $NF + 0; want = need < cap ? need : cap
      desc = sprintf("  point %s (%s): floor %s%% at %s replications (needs %s for %s%%)", $1,
                     f, floor, $(NF - 6), need, target)
      if (floor == "-" || floor + 0 <= target + 0 || want <= first) {
        quiet[++nq] = desc ": no extra"
        next
      }
      no++; pt[no] = $1; upto[no] = want; if (want > most) most = want
      add = 0
      for (k = first; k < want; k++) add += !((pt[no] " " k) in have)
      beside_first = sprintf(", %d of them beside the first target", want - first - add)
      over[no] = sprintf("%s: %d replications (+%d%s)", desc, want, want - first,
                         rd != "" || kind != "held-out" ? "" : beside_first)
      runs += add; count[add]++
    }
    END {
      i = 0
      for (k = first; k < most; k++)
        for (o = 1; o <= no; o++)
          if (k < upto[o] && !((pt[o] " " k) in have)) {
            if (rd != "") print i, runs, j, "run", rd, r, pt[o], k >> sched
            print i++, runs, j, "run", d, t, pt[o], k >> sched
          }
      got = ""
      for (e in count) got = got sprintf("%s%d point%s +%d", got == "" ? "" : ", ", count[e],
                                         count[e] == 1 ? "" : "s", e)
      if (rd != "")
        printf "%s: %d of %d points over the %s%% floor get %d extra runs, each beside a " \
               "reference run (%s)\n", t, no + 0, no + nq, target, runs + 0, no ? got : "none"
      else
        printf "%s (%s, unpaired): %d of %d points over the %s%% floor get %d extra " \
               "runs\n", t, kind, no + 0, no + nq, target, runs + 0
      for (o = 1; o <= no; o++) print over[o]
      for (o = 1; o <= nq; o++) print quiet[o]
    }' "$schedule.unsorted" "$out/validation/first-pass/$stem.txt" >> "$log.tmp"
  (($(wc -l < "$schedule.unsorted") == before)) || streams=$((streams + 1))
}
extra_replications() {
  local t first log=$out/validation/extra-replications.txt
  first=$(first_replications)
  mkdir -p "$out/validation/first-pass"
  schedule=$out/schedule-extra.txt streams=0
  : > "$schedule.unsorted"
  printf '%s\n' \
    "Extra replications (scripts/pipeline.sh, issue 20). After the first $first replications per" \
    "point, each target's validation (validation/first-pass/, paired with $ref as the final one)" \
    "gives every point the noise floor of its total time (FLOOR%: the median |error| an exact" \
    "model would show) and the replications its own spread needs for a $floor_target% floor" \
    "(FOR$floor_target%). A point whose floor is above $floor_target% gets replications up to" \
    "that count, at most $max_replications" \
    "(--max-replications), each target run with the reference's run of the same point and" \
    "replication right before it (schedule-extra.txt); the held-out validation on $ref the" \
    "same, unpaired, and the calibration design's points on $ref${reverse:+ and $reverse}" \
    "(first pass: validation/first-pass/calibration-P.*), unpaired. Per target, the held-out" \
    "and the calibrations: each point, its floor before the extra runs, and what it got." \
    > "$log.tmp"
  for t in "${targets[@]}"; do
    "$invmw" validate --model "$model" --design "$validation" --platform "$t" --db "$db" \
      --table "$out/tables/$t.toml" --reference "$out/tables/calibrated.toml" \
      --pair-platform "$ref" --pair-design "${beside[$t]}" --label "$t (first pass)" \
      --floor-target "$floor_target" \
      --out "$out/validation/first-pass/$t.json" > "$out/validation/first-pass/$t.txt"
    extra_stream "$t" "${beside[$t]}"
  done
  # The held-out validation on the reference itself (its runs are the first target's partners,
  # so the streams above may have added some): its points over the floor get unpaired runs up
  # to what their own spread needs, leaving out the replications already scheduled. Its p = 1
  # points spread as much as the targets' (plfE: 0.61-0.88 s at n = 1500, u = 1).
  "$invmw" validate --model "$model" --design "$validation" --platform "$ref" --db "$db" \
    --table "$out/tables/calibrated.toml" --label "$ref held-out (first pass)" \
    --floor-target "$floor_target" \
    --out "$out/validation/first-pass/$ref.json" > "$out/validation/first-pass/$ref.txt"
  extra_stream "$ref" ""
  # The calibration design on the reference (and the reverse's platform): its points are the
  # fit's rows, three runs each in the first pass; a median of 3 at plfQ's p = 1 spread (sd(log)
  # 0.09-0.10 per run) is itself 7% off, and that draw went into every target's prediction
  # (plfQ: the same 4-8% on all four 50% platforms). A point over the floor gets runs up to what
  # its spread needs, at most the cap, unpaired. With the count proportional to the variance
  # (the FOR column), equal row weights give each point about the same weight n / sigma^2.
  local c cfirst
  cfirst=$(awk -F' = ' '/^replications = / { print $2; exit }' "$designs/$calibration.toml")
  for c in "$ref" ${reverse:+"$reverse"}; do
    # Only the floors matter here; the reverse platform's probed table has no fitted parameters,
    # so its predictions are transferred from the reference's fit as the targets' are.
    local tables=(--table "$out/tables/calibrated.toml")
    [[ $c == "$ref" ]] ||
      tables=(--table "$out/tables/$c.toml" --reference "$out/tables/calibrated.toml")
    "$invmw" validate --model "$model" --design "$calibration" --platform "$c" --db "$db" \
      "${tables[@]}" --label "$c calibration (first pass)" --floor-target "$floor_target" \
      --out "$out/validation/first-pass/calibration-$c.json" \
      > "$out/validation/first-pass/calibration-$c.txt"
    extra_stream "$c" "" "$calibration" "$cfirst" "calibration-$c" "calibration $calibration"
  done
  mv "$log.tmp" "$log"
  # The output: each target's line and its points over the floor (the file has every point).
  awk '/ points over the .* floor get / || /^  point .*\(\+[0-9]+(, .*)?\)$/ { print "  " $0 }' "$log"
  if [[ ! -s $schedule.unsorted ]]; then
    rm -f "$schedule.unsorted"
    schedule=$out/schedule.txt
    echo "  no point over the floor: no extra runs"
    return 0
  fi
  # The runner takes replication numbers below the design's `replications`: the validation
  # design and its copies beside the targets are raised to the cap (the first pass ran $first).
  for t in "${targets[@]}"; do
    for f in "$designs/$validation.toml" "$designs/${beside[$t]}.toml"; do
      sed -i "s/^replications = .*/replications = $max_replications/" "$f"
    done
  done
  ((max_replications <= cfirst)) ||
    sed -i "s/^replications = .*/replications = $max_replications/" "$designs/$calibration.toml"
  sort_schedule
  run_schedule
  schedule=$out/schedule.txt
}
# A platform's table from its probe rounds, pooled.
pool_probes() {  # platform
  local r raw=()
  for ((r = 1; r <= probe_rounds; r++)); do
    local f=$out/tables/rounds/$1-r$r.jsonl
    [[ ! -f $f ]] || raw+=(--from-raw "$f")
  done
  [[ ${#raw[@]} -gt 0 ]] || { echo "pipeline: every probe round on $1 failed" >&2; exit 1; }
  # The kernels-only rounds (absent in runs from before they existed, or failed: the others).
  for ((r = 1; r <= kernel_rounds; r++)); do
    local f=$out/tables/rounds/$1-k$r.jsonl
    [[ ! -f $f ]] || raw+=(--from-raw "$f")
  done
  "$invmw" platform probe --quiet --force --name "probed-$1" --title "$1 (probed)" \
    --platform "$1" "${raw[@]}" --out "$out/tables/$1.toml" --raw "$out/tables/$1-probes.jsonl" \
    > "$out/tables/$1-probe.txt"
  printf '  %-18s' "$1"
  tail -n +2 "$out/tables/$1-probe.txt" | awk '{ printf " %s %s", $1, $2 } END { print "" }'
}

# Calibrates the opal model on the runs of the calibration design on a platform, and writes the
# fitted table with that platform's probed kernel times (for the transfer rule). Components are
# weighted against their run's total (docs/fitter.md): on quota platforms the small ones are
# mostly noise and would otherwise pull the fit away from the run times. The Huber loss keeps a
# stalled run from pulling the fit (issue 20). Parameters the design cannot determine (the fit's
# identifiability report: at a bound, interval spanning zero, near-singular covariance) are then
# taken from the platform's probes (--fix-from: the table says so) and the rest refitted; extra
# arguments are fixes made up front (the reverse calibration's compute parameters).
calibrate() {  # platform fit-name [--fix-from P=TABLE ...]
  local rc=0 p name fit=("$invmw" fit --model "$model" --weighting total --loss huber) fixes=("${@:3}")
  # The burst, its rate and the virtual nodes (the platform's definition), the barrier without
  # stalls and the probe's stall are the table's, never fitted: the calibration design does not
  # vary them (opal_quota, opal_refill, opal_stall).
  local mfile=$model
  [[ -f $mfile ]] || mfile=$here/fitter/models/$model.toml
  for p in burst burst_rate b5_loop nodes b5_stall cpu_quota quota_period cores; do
    grep -q "^$p = " "$mfile" 2>/dev/null && fixes+=(--fix-from "$p=$out/tables/$1.toml")
  done
  # A model with a CPU copy time per byte (b8, opal_quota): a1 is the link's, from the probes;
  # fitted, it takes the copy time instead and the link's rate is lost (cmp20, docs/fitter.md).
  grep -q "^b8 = " "$mfile" 2>/dev/null && fixes+=(--fix-from "a1=$out/tables/$1.toml")
  "${fit[@]}" --design "$calibration" --platform "$1" --db "$db" "${fixes[@]}" --no-cv \
    > "$out/$2-first.txt" 2>&1 || true
  : > "$out/$2-fixed.txt"
  for name in $(awk '/^not determined by this design: / { print $6 }' "$out/$2-first.txt"); do
    # No probe measures the copy time (b8: a link slower than the copies hides it, 10 Mbit/s),
    # the full-speed start of a compute phase (b9) or the client barrier's share of the quota
    # stall (b10, opal_quota revision 4): b8 = b9 = 0 is the model without them, b10 = 1 one
    # rank's wait, the stall law's own.
    local value=
    case $name in b8 | b9) value=0 ;; b10) value=1 ;; esac
    if [[ -n $value ]]; then
      fixes+=(--fix "$name=$value")
      grep "^not determined by this design: $name " "$out/$2-first.txt" >> "$out/$2-fixed.txt"
      echo "  $name: not determined by the design on $1; fixed at $value (no probe measures it)"
      continue
    fi
    fixes+=(--fix-from "$name=$out/tables/$1.toml")
    grep "^not determined by this design: $name " "$out/$2-first.txt" >> "$out/$2-fixed.txt"
    echo "  $name: not determined by the design on $1; fixed from its probes (tables/$1.toml)"
  done
  "${fit[@]}" --design "$calibration" --platform "$1" --db "$db" "${fixes[@]}" --json \
    > "$out/$2.json" || rc=$?
  [[ $rc -le 1 ]] || { echo "pipeline: fit on $1 failed (see $out/$2.json)" >&2; exit 1; }
  "${fit[@]}" --design "$calibration" --platform "$1" --db "$db" "${fixes[@]}" --no-cv \
    --base-table "$out/tables/$1.toml" --out "$out/tables/$2.toml" --force \
    --platform-name "$2" > "$out/$2.txt" || true
  [[ $rc -eq 0 ]] || echo "pipeline: warning: the fit on $1 did not converge (see $out/$2.txt)"
  grep -E '^ *(a[1-4]|b[15]) ' "$out/$2.txt" | head -6 | sed 's/^/  /'
}

# Validates predictions against the validation design's runs on a platform: medians of the
# replications, each figure with its noise floor, 80/90/95% intervals from the calibration's fit
# (--fit), and with a paired platform every run divided by the drift of its partner run, taken
# beside it in the schedule.
validate() {  # file label run-platform table fit design [reference [pair-platform pair-design]]
  local args=(--model "$model" --design "$6" --platform "$3" --db "$db" --table "$4"
              --label "$2" --fit "$5" --out "$out/validation/$1.json")
  [[ $# -ge 7 ]] && args+=(--reference "$7")
  [[ $# -ge 9 ]] && args+=(--pair-platform "$8" --pair-design "$9")
  for c in "${checks[@]}"; do args+=(--transfer-check "$c"); done
  "$invmw" validate "${args[@]}" > "$out/validation/$1.txt"
  printf '  %-34s' "$2"
  awk '$1 ~ /^t_/ && NF >= 9 { printf " %s %s/%s%% (floor %s/%s%%, in90 %s%%)", $1, $4, $6, $7,
         $8, $9 } END { print "" }' "$out/validation/$1.txt"
  grep -E '^(drift |replications per point)' "$out/validation/$1.txt" | sed 's/^/    /' || true
}

if [[ $schedule_only -eq 0 && -z $from ]]; then
step "profile and trace: heat1d on 2 ranks"
"$invmw" run --trace --quiet --out "$out/profile" -- \
  mpirun --oversubscribe -np 2 "$build/bin/heat1d" "${heat[@]}" > "$out/heat1d.out"
"$invmw" trace check "$out/profile" > "$out/profile/trace-check.txt"
"$invmw" analyze "$out/profile" > "$out/profile/analysis.txt"
cp "$out/profile/profile.txt" "$out/profile-summary.txt"
fi

platforms=("$ref" "${targets[@]}")
[[ -z $reverse || " ${platforms[*]} " == *" $reverse "* ]] || platforms+=("$reverse")
step "measurements, interleaved in time: $probe_rounds probe rounds and $kernel_rounds kernels" \
  "rounds on each of ${platforms[*]};" \
  "$calibration on $ref${reverse:+ and $reverse}; $validation on every platform"
for p in "${platforms[@]}"; do add_round_stream probe "$probe_rounds" "$p"; done
for p in "${platforms[@]}"; do add_round_stream kernels "$kernel_rounds" "$p"; done
add_run_stream "$calibration" "$ref"
# The reference's held-out runs are the first target's partners; every further target gets its
# own copy of the validation design on the reference (same points, its own name), run beside it.
declare -A beside=()
for t in "${targets[@]}"; do
  if [[ $t == "${targets[0]}" ]]; then
    beside[$t]=$validation
  else
    beside[$t]=$validation-beside-$t
    # Only the design's own name (the first one, before any [[factor]]): factors have names too.
    sed "0,/^name = .*/s//name = \"${beside[$t]}\"/" "$designs/$validation.toml" \
      > "$designs/${beside[$t]}.toml"
  fi
  add_paired_stream "$validation" "${beside[$t]}" "$ref" "$t"
done
[[ -z $reverse || -n ${beside[$reverse]:-} ]] || add_run_stream "$validation" "$reverse"
[[ -z $reverse ]] || add_run_stream "$calibration" "$reverse"
sort_schedule
if [[ $schedule_only -eq 1 ]]; then
  echo "schedule of $(wc -l < "$schedule") measurements: $schedule (designs in $designs)"
  if ((max_replications > $(first_replications))); then
    echo "then adaptive extra replications (not in this schedule): each target's validation" \
      "points whose noise floor exceeds $floor_target% after this schedule get more, paired" \
      "with the" \
      "reference, up to $max_replications per point (--max-replications); so do the" \
      "calibration points, unpaired"
  else
    echo "no extra replications (--max-replications $max_replications <= the validation" \
      "design's $(first_replications))"
  fi
  exit 0
fi
if [[ -z $from ]]; then
  run_schedule
  for f in "$out"/experiment-*.log; do
    awk -v f="$(basename "$f" .log)" '/: ok, / { ok++ } /: FAILED/ { bad++ }
      END { printf "  %-50s %d ok, %d failed\n", f, ok, bad }' "$f"
  done
fi

step "platform tables: each platform's probe rounds pooled"
for p in "${platforms[@]}"; do pool_probes "$p"; done

step "fit of the $model model on $ref"
calibrate "$ref" calibrated
cp "$out/calibrated.json" "$out/fit.json"  # the report's and the plots' fit

if [[ -z $from ]] && ((max_replications > $(first_replications))); then
  step "extra replications where the noise is: validation and calibration points over a" \
    "$floor_target% floor, up to $max_replications per point, the targets' each paired with" \
    "$ref beside it"
  extra_replications
  # The fit again, with the calibration points' extra runs.
  step "fit of the $model model on $ref, with the extra calibration runs"
  calibrate "$ref" calibrated
  cp "$out/calibrated.json" "$out/fit.json"
fi

# Transfer checks (issue 20, item 6): the calibration design's runs predicted through the
# transfer rule, never the held-out runs. A transferred prediction's intervals hold, beyond the
# calibration's model error, the larger error of: the reference's own probes instead of its fit,
# and (with --reverse) the other calibrated platform's calibration runs (leave one platform out).
transfer_check() {  # file run-platform table reference fit
  mkdir -p "$out/transfer-checks"
  "$invmw" validate --model "$model" --design "$calibration" --platform "$2" --db "$db" \
    --table "$3" --reference "$4" --fit "$5" --out "$out/transfer-checks/$1.json" \
    > "$out/transfer-checks/$1.txt"
  checks+=("$out/transfer-checks/$1.json")
}

step "prediction errors (median/worst |error| per response, each with its noise floor)"
checks=()
validate "00-$ref-holdout" "$ref held-out (calibrated)" "$ref" "$out/tables/calibrated.toml" \
  "$out/calibrated.json" "$validation"
transfer_check "$ref-from-own-probes" "$ref" "$out/tables/$ref.toml" \
  "$out/tables/calibrated.toml" "$out/calibrated.json"
[[ -z $reverse ]] || transfer_check "$reverse-from-$ref" "$reverse" "$out/tables/$reverse.toml" \
  "$out/tables/calibrated.toml" "$out/calibrated.json"
i=1
for t in "${targets[@]}"; do
  validate "$(printf '%02d' $i)-$t" "$t from $ref" "$t" "$out/tables/$t.toml" \
    "$out/calibrated.json" "$validation" "$out/tables/calibrated.toml" "$ref" "${beside[$t]}"
  i=$((i + 1))
done

if [[ -n $reverse ]]; then
  step "reverse direction: calibrate on $reverse, predict $ref"
  # The design cannot separate the computation from 10 Mbit/s runs (a2 and a4 ended at 0):
  # the compute parameters come from the kernel probes of that platform.
  calibrate "$reverse" "calibrated-$reverse" --fix-from "a2=$out/tables/$reverse.toml" \
    --fix-from "a3=$out/tables/$reverse.toml" --fix-from "a4=$out/tables/$reverse.toml"
  checks=()
  transfer_check "$reverse-from-own-probes" "$reverse" "$out/tables/$reverse.toml" \
    "$out/tables/calibrated-$reverse.toml" "$out/calibrated-$reverse.json"
  transfer_check "$ref-from-$reverse" "$ref" "$out/tables/$ref.toml" \
    "$out/tables/calibrated-$reverse.toml" "$out/calibrated-$reverse.json"
  if [[ -n ${beside[$reverse]:-} ]]; then
    validate "90-$ref-from-$reverse" "$ref from $reverse (reverse)" "$ref" \
      "$out/tables/$ref.toml" "$out/calibrated-$reverse.json" "${beside[$reverse]}" \
      "$out/tables/calibrated-$reverse.toml" "$reverse" "$validation"
  else
    validate "90-$ref-from-$reverse" "$ref from $reverse (reverse)" "$ref" \
      "$out/tables/$ref.toml" "$out/calibrated-$reverse.json" "$validation" \
      "$out/tables/calibrated-$reverse.toml"
  fi
fi

# The figures the prediction benchmark judges, over every validation above (issue 20): each
# total with its floor and 90% coverage, and each component where it is more than 10% of the
# measured total.
step "validations pooled: totals, coverage and the components larger than 10% of the total"
"$invmw" validate summary --out "$out/validation/summary.json" "$out"/validation/[0-9]*.json \
  > "$out/validation/summary.txt"
sed 's/^/  /' "$out/validation/summary.txt"

if [[ -n $from ]]; then
  echo
  echo "tables, fits and validations of $from's measurements (model $model) in $out"
  exit 0
fi

# The reference's traced validation runs replayed by SimGrid on every platform's probed table
# (issue 19): the report puts these next to the analytic model's predictions. A replay that
# fails (no SimGrid, a trace it cannot read) is a warning, as a failed run is.
step "trace replay: the $validation runs on $ref replayed on ${platforms[*]} (SimGrid)"
mkdir -p "$out/replay"
replay_tables=()
for p in "${platforms[@]}"; do replay_tables+=(--platform "$out/tables/$p.toml"); done
replay_names=$(printf '"%s",' "${platforms[@]}")
replayed=0
for d in "$out/runs/$validation/$ref"/p*-r*; do
  [[ -d $d ]] || continue
  b=$(basename "$d") k=${b#p} k=${k%%-r*} r=${b##*-r}
  [[ $k =~ ^[0-9]+$ && $r =~ ^[0-9]+$ ]] || continue
  if json=$("$invmw" predict --replay "$d" --reference "$out/tables/$ref.toml" \
      "${replay_tables[@]}" --json 2> "$out/replay/$b.err"); then
    printf '{"point": %s, "replication": %s, "run_platforms": [%s], "replay": %s}\n' \
      "$k" "$r" "${replay_names%,}" "$json" > "$out/replay/.$b.json.tmp"
    mv "$out/replay/.$b.json.tmp" "$out/replay/$b.json"
    rm -f "$out/replay/$b.err"
    replayed=$((replayed + 1))
  else
    echo "pipeline: warning: replay of $d failed (see $out/replay/$b.err)" >&2
  fi
done
echo "  $replayed runs replayed into $out/replay/"

step "probe this machine (platform table local)"
"$invmw" platform probe --quiet --force --name local --title "this machine (probed)" \
  "${probe_opts[@]}" --replications "$probe_rounds" --out "$out/tables/local.toml" \
  --raw "$out/tables/local-probes.jsonl" \
  > "$out/tables/local-probe.txt"

step "predict the source documents' platforms and the probed and calibrated ones"
pred=(--model opal --set n=4289 --set nt=140 --set s=10 --set u=1 --sweep p=1..7)
for p in "${paper[@]}"; do pred+=(--platform "$here/platforms/tables/$p.toml"); done
# Their tables have no stall terms, so they are predicted with opal; with another --model the
# reference is calibrated once more with opal for them (tables/calibrated-opal.toml).
paper_cal=$out/tables/calibrated.toml
if [[ $model != opal ]]; then
  saved_model=$model model=opal
  calibrate "$ref" calibrated-opal > /dev/null
  model=$saved_model paper_cal=$out/tables/calibrated-opal.toml
fi
pred+=(--platform "$out/tables/local.toml" --platform "$paper_cal")
"$invmw" predict "${pred[@]}" --json > "$out/predictions.json"
"$invmw" predict "${pred[@]}" > "$out/predictions.txt"
# The emulated targets through the transfer rule, at the calibration's own sizes.
pred=(--model "$model" --set n=2000 --set nt=1000000 --set s=10 --set u=1 --sweep p=1..3
      --reference "$out/tables/calibrated.toml" --platform "$out/tables/calibrated.toml"
      --fit "$out/calibrated.json")  # with 80/90/95% intervals (one run)
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
  prediction errors          $out/validation/*.txt and *.json (median/worst per platform above;
                             summary.txt and .json pool them)
  predictions                $out/predictions.txt (+ .json; source documents' platforms),
                             $out/predictions-emulated.txt (emulated targets)
  plots                      $out/plots/{measured-vs-predicted,breakdown,predict}.{svg,png}
  trace replay               $out/replay/*.json (the $ref validation runs on every table)
  report                     $out/report.html
SUMMARY
