// The report's trace-replay section (issue 19 item 4): for every validation point and platform,
// the SimGrid replay's prediction next to the analytic model's, each with its error against the
// same measured mean. Inputs: validation/*.json (`invmw validate --out`) and replay/*.json,
// which scripts/pipeline.sh writes per traced reference run as
//   {"point": K, "replication": R, "run_platforms": [P0, P1, ...],
//    "replay": <`invmw predict --replay ... --json` with one --platform per P>}.
#pragma once

#include <string>

namespace invmw::report {

// The section's HTML; a note instead of a table when DIR has no replay/ (pipelines run before
// the replay step). Throws ReportError naming the file and field of malformed input.
std::string ReplaySection(const std::string& dir);

}  // namespace invmw::report
