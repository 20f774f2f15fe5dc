// The measuring half of `invmw platform probe`: the probes' command lines (on this machine or
// inside an emulated platform), running them and capturing their JSON lines, and pooling the
// --raw files of earlier runs. What the numbers mean is fitter/probe.h's business.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fitter/probe.h"

namespace invmw::platforms::cli {

// The settings of one `platform probe` run (its options, as given).
struct ProbeSettings {
  std::string name, title, out, emu, launcher, probes_dir, raw, tables_dir;
  std::vector<std::string> from_raw;
  std::string sizes = "0,8,64,512,4096,32768,262144,1048576", pp_reps = "200", bar_reps = "1000",
              replications = "3", bar_ranks = "2", n = "2000", rc = "10", k_reps = "3", pp_max_time,
              k_min_time = "0.25", bar_compute_us = "2000", bar_rounds = "200",
              k_replications,             // empty: --replications
      only = "pingpong,barrier,kernels";  // --only: the probes to run
  bool force = false, quiet = false;
};

// The probe name ("pingpong", "barrier", "kernels") -> its command line. `bin` holds the probe
// binaries, `self` is this `invmw` (for `platform exec` and `platform slot` with --platform).
std::map<std::string, std::vector<std::string>> ProbeCommands(const ProbeSettings& s,
                                                              const std::string& bin,
                                                              const std::string& self);

// The probes --only names, in the order they run ("pingpong", "barrier", "kernels"); empty with
// *error for an empty list or an unknown or repeated name.
std::vector<std::string> OnlyProbes(const std::string& only, std::string* error);

// Runs the commands of `probes` in that order and pools their records; *all gets their JSON lines
// and context->commands the command lines without the directories in `hidden_dirs` (the provenance
// names the probe's own arguments, not the absolute paths of this build). Throws ProbeError.
fit::ProbeSamples RunProbes(const std::map<std::string, std::vector<std::string>>& cmds,
                            const std::vector<std::string>& probes,
                            const std::vector<std::string>& hidden_dirs, bool quiet,
                            fit::ProbeContext* context, std::string* all);

// Pools the records of earlier runs' --raw files, renumbering the replications so that *all
// (for a new --raw) pools again as it did the first time; context->commands names the files.
// Throws ProbeError ("--from-raw FILE: ...") for a file that cannot be read, holds no records
// or was measured with other settings than the files before it.
fit::ProbeSamples PoolRawFiles(const std::vector<std::string>& files, fit::ProbeContext* context,
                               std::string* all);

}  // namespace invmw::platforms::cli
