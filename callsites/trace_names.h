// The trace's calling contexts given file:line names after the run: the converters name them
// by object+offset (the preload links no DWARF reader); `invmw run`'s finish step and
// `invmw profile DIR` resolve each rank's sites as for the profile and rewrite the archive's
// global definitions only (otf2_writer/callsite_names.h), never its event files.
#pragma once

#include <string>
#include <vector>

namespace invmw::callsites {

struct TraceNames {
  bool ok = true;       // false: the archive could not be updated (problems says why)
  size_t contexts = 0;  // calling contexts in the archive
  size_t renamed = 0;   // of them, named
  double seconds = 0;   // wall time of the step
};

// dir: the run directory; archive_name: "traces". An archive without contexts, or no archive,
// is left alone (ok).
TraceNames NameTraceCallSites(const std::string& dir, const std::string& archive_name,
                              std::vector<std::string>* problems);

}  // namespace invmw::callsites
