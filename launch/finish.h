// Finishing `invmw run` once the job has ended: the PVM tasks' data merged, a profile built from
// the per-rank data when the job ended before MPI_Finalize wrote one, the OTF2 trace recovered
// from what the ranks flushed, and the job's exit status passed on. invmw's own failures here
// are messages on stderr; the exit status stays the job's.
#pragma once

#include <string>

namespace invmw::launch {

struct FinishOptions {
  std::string out;              // the experiment directory
  bool profile_enabled = true;  // INVMW_PROFILE_ENABLE as the ranks saw it
  bool ranks_quiet = false;     // the ranks were told INVMW_RUNTIME_QUIET
  bool quiet = false;           // --quiet
};

// Everything after the job; `status` is its wait status (for the reason a profile is missing).
void FinishRun(const FinishOptions& options, int status);

// The exit status of `invmw run` for a job with wait status `status`: its exit status, or, for
// a job killed by a signal, death by the same signal, so the caller sees the job's real status.
int PassOnStatus(int status);

}  // namespace invmw::launch
