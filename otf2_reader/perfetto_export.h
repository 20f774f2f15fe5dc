// Export of a trace to the Chrome/Perfetto trace-event JSON format.
//
// Why: OTF2 viewers (Vampir) are not free; ui.perfetto.dev and chrome://tracing open this JSON
// in any browser. The mapping: one process per rank (pid = world rank, named "rank R"), one
// thread per location (tid = location index within the rank, named after the location), every
// region visit a complete ("X") slice, every matched message a flow arrow from the slice that
// sent it to the slice that received it ("s"/"f" with the same id, both bound to their
// enclosing slice with "bp":"e"). Timestamps are microseconds from the trace start. A slice's
// "args" hold what the trace says about the call: bytes, peer (world rank), tag and
// communicator of its MPI records, and "calls" for a visit that stands for several coalesced
// calls; metrics (the sampler's and per-call counters) are counter tracks ("C") of the rank.
//
// Contract: writes the whole file or throws std::runtime_error naming the output path; the file
// is written under a temporary name and renamed onto out_path once complete, so a failure
// leaves what was there before.
#pragma once

#include <cstdint>
#include <string>

#include "otf2_reader/trace_reader.h"

namespace invmw::otf2 {

struct PerfettoStats {
  uint64_t slices = 0;
  uint64_t flows = 0;  // arrows (each is one "s" and one "f" event)
  uint64_t slices_with_args = 0;
  uint64_t counters = 0;  // "C" events (one per metric value)
};

// `defs` from ReadTraceDefinitions(); the events are streamed (StreamTrace) and not kept, so a
// trace larger than memory can be exported: once for the messages (matched by StreamMatcher,
// their arrows sorted by send start aside, an external merge sort over an unnamed scratch
// file), then location by location for the slices and the counters. In the file: the metadata,
// each location's slices in location order, the counters (metric locations, then per-call
// counters of thread locations), then the arrows by send start (equal starts ordered by the
// send's location and event). Memory: O(locations + definitions + open regions and their
// records + open requests + messages not yet paired) and the sort's 5 MiB run plus 20 KiB per
// 65,536 messages, no event kept.
PerfettoStats ExportPerfettoStreaming(Trace* defs, const std::string& out_path);

}  // namespace invmw::otf2
