// Running SimGrid's trace replay (`smpirun -replay`, Debian's smpireplaymain) on a platform
// table, and reading back the simulated time and the per-rank split.
//
// Why Paje tracing: smpireplaymain prints only the job's simulated end; the per-rank split
// (computation, time inside MPI calls, time waiting for the job's end) comes from the Paje trace
// SMPI writes with --cfg=tracing/smpi (states "computing" and the MPI actions per "rank-N").
#pragma once

#include <string>
#include <vector>

#include "fitter/simgrid_export.h"

namespace invmw::replay {

struct RankTimes {
  int rank = 0;
  double computation_s = 0;    // simulated "computing" states
  double communication_s = 0;  // simulated time inside MPI actions (transfer and partner waits)
  double wait_s = 0;           // from the rank's end to the job's end, and gaps between actions
};

struct ReplayResult {
  double predicted_wall_s = 0;
  std::vector<RankTimes> ranks;
  std::string command;  // for error messages and --verbose
};

// Runs `smpirun` (argv exec, searched on PATH unless it contains '/') in `work_dir` (which
// must exist; the platform, hostfile and Paje trace are written there) for `ranks` ranks.
// Throws std::runtime_error with the command and SimGrid's last output lines on failure.
// Ranks go round-robin over the first `hosts` hosts (0: all of the platform's).
// split = false: no Paje trace (ranks stays empty), which makes SimGrid about 4x faster and
// keeps its memory constant (the trace costs ~1.6 KB per event; docs/fitter.md).
ReplayResult RunReplay(const fit::SimgridPlatform& platform, int ranks, int hosts,
                       const std::string& index_file, const std::string& work_dir,
                       const std::string& smpirun = "smpirun", bool split = true);

// Parses a Paje trace written by SMPI's replay into per-rank times (exposed for the tests).
// `last_end` (optional) receives the latest rank end in the trace.
std::vector<RankTimes> ParsePaje(const std::string& text, int ranks, double end_time,
                                 double* last_end = nullptr);

}  // namespace invmw::replay
