// Builds the OTF2 archive (traces.otf2, traces.def, traces/) of a run from its raw trace.
//
// Why offline: see common/event_format.h. One process writes every location through the OTF2
// library in serial mode, rank by rank, so memory stays bounded by the largest rank's raw
// events. The same function serves the normal end of a run and `invmw trace recover` after a
// crash; a damaged raw trace gives a partial archive and a list of problems, not a failure.
//
// What is written (docs/otf2.md has the full mapping): one location group per rank, one
// location per recorded thread, MPI-paradigm regions with roles, the MPI records (p2p with
// peers as communicator ranks, nonblocking requests, collectives, communicator creation),
// "invmw:flush", "invmw:paused" and "invmw:init" regions, communicators with COMM_LOCATIONS /
// COMM_GROUP groups, clock properties, and per-location ClockOffset definitions. Event timestamps
// are each rank's own ticks; OTF2 readers apply the clock offsets (see clock_model.h).
//
// Contract: returns a result whose `problems` lists everything dropped or doubtful; throws
// std::runtime_error naming the archive when nothing can be converted (no raw trace) or the
// OTF2 library fails (a write error included). The archive is written under a temporary name
// and renamed into place once complete (otf2_writer/output_files.h), so after a failure the
// previous archive of that name is unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace invmw::otf2 {

struct ConvertOptions {
  std::string archive_name = "traces";  // traces.otf2 / traces.def / traces/
  bool overwrite = true;                // replace an existing archive of that name
  uint64_t chunk_size_events = 1 << 20;
  uint64_t chunk_size_defs = 4 << 20;

  bool IsValid(std::string* error) const;
};

struct ConvertResult {
  std::string archive;  // path of the .otf2 anchor file
  int32_t world_size = 0;
  int32_t ranks_converted = 0;
  uint64_t locations = 0;
  uint64_t records_in = 0;     // raw records read
  uint64_t events_out = 0;     // OTF2 events written (metric events included)
  uint64_t metric_events = 0;  // of which sampler metrics (OTF2 Metric records)
  bool partial = false;        // some rank did not end cleanly, or data was dropped
  // Raw records the ranks' full rings dropped (INVMW_TRACE_ON_FULL=stop), summed over ranks.
  uint64_t dropped_events = 0;
  // Calls and requests the preload runtime could not record (thread slots, request table).
  uint64_t dropped_calls = 0;
  uint64_t dropped_requests = 0;
  std::vector<std::string> problems;
};

ConvertResult ConvertToOtf2(const std::string& run_dir, const ConvertOptions& options = {});

// The sampler's samples (raw/samples-R.bin, common/sample_format.h) become asynchronous OTF2
// metrics on one location of type METRIC per rank, in the rank's location group, with
// MetricMember / MetricClass / MetricClassRecorder definitions.
constexpr int32_t kMetricLocationThread = 1 << 20;  // thread index of the metric location

// OTF2 location id of (rank, thread index); the location group id of a rank is the rank.
inline uint64_t LocationId(int32_t rank, int32_t thread) {
  return (uint64_t(uint32_t(thread)) << 32) | uint32_t(rank);
}

}  // namespace invmw::otf2
