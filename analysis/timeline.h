// A rank's run cut into contiguous, categorised segments: the common ground of the per-rank
// breakdown and the critical path.
//
// Why segments and not just sums: the critical path walks backwards through time and must know,
// at any instant, what a rank was doing and, when it was waiting, for whom. A segment that is a
// wait carries that answer (the partner rank and the time it arrived), so the walk can jump.
//
// Contract of BuildTimelines:
// - One timeline per world rank that has events, from its main (lowest id) location; events of
//   other threads are not analysed (counted in `other_thread_events`).
// - The window of a rank runs from the end of MPI_Init(_thread) to the start of MPI_Finalize.
//   When the trace has no such records (invmw records neither call), the rank's own sampler
//   metrics bound it (the sampler starts as MPI_Init returns and takes its last sample as
//   MPI_Finalize begins); without them `windows` gives it (run_windows.h: from MPI_Init's
//   clock anchor, which comes before invmw's own start-up work); failing that, every rank starts at
//   the earliest timestamp of the trace (MPI_Init ends nearly together on all ranks: it
//   synchronises) and ends at its last event or its last sampler metric, whichever is later.
//   Segments tile the window without gaps.
// - Point-to-point: a call that receives a message whose send started after the call was entered
//   is idle until that send began (late sender); a call that completes a send whose receive was
//   posted after the call was entered, and that ends after the post, is idle until the post
//   (late receiver: a send that returned before the receive was posted was buffered and waited
//   for nobody). Several messages in one call (Waitall, Sendrecv): idle until the latest such
//   partner. The rest of the call is transfer.
// - Collectives are matched across ranks per communicator by their order of initiation (MPI
//   requires every member to call them in the same order; nonblocking ones by their request
//   call). Waiting for the last arrival is sync_wait: one-to-all ops wait only for the root,
//   the root of all-to-one ops waits for everyone, the other members of all-to-one ops wait for
//   nobody. The remainder is sync_op, or transfer when the collective moved data.
// - MPI-IO calls: io. Other MPI calls (environment, communicator set-up without a collective
//   record, MPI_Pcontrol) and trace flushes inside calls: unallocated. Paused recording: paused.
// - Phases: each MPI_Pcontrol call that does not pause recording starts a new phase (invmw does
//   not record the level, so phases are numbered in call order: "pcontrol 0" before the first
//   call, "pcontrol 1" after it, ...); without MPI_Pcontrol calls, the outermost open user
//   region (non-MPI paradigm, e.g. Score-P user regions) names the phase, "(outside regions)"
//   when none is open; without either, one phase "run".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "analysis/categories.h"
#include "otf2_reader/trace_reader.h"

namespace invmw::analysis {

struct Segment {
  double start = 0, end = 0;
  // A wait ends when its partner arrived: the critical path jumps to the partner at `end`.
  int32_t jump_rank = -1;  // waits: the late partner (world rank), -1 none
  uint16_t phase = 0;      // index into Timelines::phase_names
  Category cat = kComputation;
};

// The segments of a rank as the critical path needs them, 12 bytes each instead of a Segment's
// 24: segments tile the window, so a segment starts where the one before it ended (or at the
// window's start) and only its end is kept; the rare segment that starts elsewhere (a call's
// flush rounded before its wait's end) is flagged and its start kept apart. Phases are summed
// as the segments are cut (RankTimeline::phase_times), so they need not be kept.
struct CompactSegments {
  std::vector<double> ends;
  // Bits 0-3 the category, bit 4 the start is in `starts`, bits 5-31 jump_rank + 1.
  std::vector<uint32_t> info;
  std::vector<std::pair<size_t, double>> starts;  // (segment, start) for flagged segments

  size_t size() const { return ends.size(); }
  Category cat(size_t i) const { return Category(info[i] & 15u); }
  int32_t jump_rank(size_t i) const { return int32_t(info[i] >> 5) - 1; }
  double start(size_t i, double window_start) const;
};

struct RankTimeline {
  int32_t rank = -1;
  size_t location = 0;  // index into Trace::locations
  double start = 0, end = 0;
  // Every segment, only when asked for (TimelineOptions::keep_segments: resources, Opal, tests).
  std::vector<Segment> segments;
  CompactSegments compact;  // always: the critical path walks these
  // By phase index: the time per category, and the earliest start and latest end of the
  // rank's segments in the phase (+inf / -inf when none), summed in segment order.
  std::vector<Times> phase_times;
  std::vector<double> phase_first, phase_last;
  uint64_t calls = 0;  // MPI calls in the window
  uint64_t messages_sent = 0, bytes_sent = 0;
  // Per (MPI function region, calling context) of the calls that carry one (Enter attribute
  // invmw:callsite, Trace::callsites): calls and their time per category.
  struct SiteTimes {
    uint64_t calls = 0;
    Times t{};
  };
  std::map<std::pair<uint32_t, uint32_t>, SiteTimes> callsites;
};

enum class PhaseSource { kPcontrol, kUserRegions, kWholeRun };
const char* PhaseSourceName(PhaseSource s);

struct Timelines {
  std::vector<RankTimeline> ranks;  // ascending world rank
  std::vector<std::string> phase_names;
  PhaseSource phase_source = PhaseSource::kWholeRun;
  uint64_t events = 0;               // events on the analysed locations
  uint64_t other_thread_events = 0;  // events on other threads (not analysed)
  uint64_t collective_instances = 0, incomplete_collectives = 0;
  // Per world rank: idle and sync_wait time that this rank made others spend waiting for it.
  std::vector<double> wait_caused;
};

// threads: ranks scanned (when the run is one phase) and cut into segments on that many
// threads; the result is the same for any number.
Timelines BuildTimelines(const invmw::otf2::Trace& trace,
                         const std::map<int32_t, std::pair<double, double>>& windows = {},
                         int threads = 1);

struct TimelineOptions {
  int threads = 1;
  // Keep every Segment (RankTimeline::segments); the compact form is always kept.
  bool keep_segments = true;
  // When set (it must be &trace.messages): emptied (memory freed) once each location's message
  // partners are taken from it, before the events are scanned (`invmw analyze` on large traces).
  std::vector<invmw::otf2::Message>* release_messages = nullptr;
};

// Gives the events of a world rank's locations to fn(location index, event), each location's in
// order; called for different ranks on different threads at once.
using EventFn = std::function<void(size_t, const invmw::otf2::TraceEvent&)>;
using RankEventSource = std::function<void(int32_t, const EventFn&)>;
// The same from events that need not be in memory: those of a trace read with
// ReadOptions::keep_events false are streamed from the archive by the overload above (a second
// pass per rank; the first pass, ReadTrace, kept only the messages and counts).
Timelines BuildTimelines(const invmw::otf2::Trace& trace,
                         const std::map<int32_t, std::pair<double, double>>& windows, int threads,
                         const RankEventSource& source);
Timelines BuildTimelines(const invmw::otf2::Trace& trace,
                         const std::map<int32_t, std::pair<double, double>>& windows,
                         const TimelineOptions& options);
Timelines BuildTimelines(const invmw::otf2::Trace& trace,
                         const std::map<int32_t, std::pair<double, double>>& windows,
                         const TimelineOptions& options, const RankEventSource& source);

}  // namespace invmw::analysis
