// Validation of a loaded trace: what `invmw trace check` reports and what the tests rely on.
//
// Why: a trace that looks fine in a viewer can still be wrong in the ways that break analysis
// (a receive without its send, time running backwards on a location, a receive that completes
// before its send began because clocks were not synchronised). Each check names the location,
// the event and what was expected.
//
// Contract: failures make ok false; warnings (a run that crashed, regions left open at the end
// of a location) do not. Counts are by event type, overall and per rank.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "otf2_reader/trace_reader.h"

namespace invmw::otf2 {

struct CheckReport {
  bool ok = true;
  std::vector<std::string> failures, warnings;
  std::map<std::string, uint64_t> by_type;
  std::map<int32_t, std::map<std::string, uint64_t>> by_rank;
  uint64_t events = 0, messages = 0;
  size_t peak_pending = 0;  // CheckTraceStreaming: most sends and receives held at once
};

// `defs` from ReadTraceDefinitions(), the events streamed (StreamTrace) once and not kept, so a
// trace larger than memory can be checked. max_listed: at most this many failures of one kind
// are spelled out (the rest are counted), the first ones in the archive's order (metric
// locations, thread locations in order and their events in order, unmatched sends, unmatched
// receives, then messages by send start; equal send times ordered by location and event).
// Memory: O(locations + definitions + open regions + open requests + messages not yet paired),
// see StreamMatcher.
CheckReport CheckTraceStreaming(Trace* defs, size_t max_listed = 10);
void PrintCheckReport(const Trace& trace, const CheckReport& report, FILE* out);

}  // namespace invmw::otf2
