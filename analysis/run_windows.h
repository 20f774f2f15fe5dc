// Each rank's window (end of MPI_Init to start of MPI_Finalize) from the run directory, for
// traces that do not record those two calls.
//
// Why: invmw's trace starts recording after MPI_Init and stops inside MPI_Finalize, so the
// archive holds neither call; a rank's first and last recorded MPI calls would cut the
// computation before its first and after its last call out of the analysis (a compute-only
// rank would have no window at all). The raw per-rank definitions (raw/defs-R.jsonl) keep the
// tick at which MPI_Init ended and the tick at which recording stopped in MPI_Finalize; mapped
// through the same clock model the archive's offsets describe, they give the window on the
// trace's time axis.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "otf2_reader/trace_reader.h"

namespace invmw::analysis {

// rank -> (start, end) in seconds since the trace's global offset. Empty when run_dir has no
// raw/ definitions. A rank without an "end" line (crash) gets end = -1 (unknown).
std::map<int32_t, std::pair<double, double>> RankWindowsFromRun(const std::string& run_dir,
                                                                const invmw::otf2::Trace& trace);

}  // namespace invmw::analysis
