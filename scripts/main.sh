#!/usr/bin/env bash
# The main job: install what is missing, build what the pipeline runs, and run the pipeline
# (scripts/pipeline.sh): profile and trace of the bundled example, probes of the emulated
# platforms, calibration of the Opal model on the reference platform, predictions for the source
# documents' platforms and the emulated ones, their validation against measured runs (errors
# from the results database), plots and the HTML report.
#
#   scripts/main.sh [--quick] [--out DIR]
#
# Arguments go to scripts/pipeline.sh (--quick: under 3 minutes on a built tree). Emulated
# platforms need root. BUILD_DIR picks the build tree (default ./build).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
# Only what the pipeline runs; `scripts/test.sh` builds everything.
INVMW_TARGETS="invmw invmw_preload opal-mini heat1d probe-pingpong probe-barrier probe-kernels" \
  bash "$here/scripts/build.sh"
exec bash "$here/scripts/pipeline.sh" "$@"
