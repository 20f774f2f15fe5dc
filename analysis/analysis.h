// The inverse mapping: from a trace of an unmodified run back to the application's own terms.
//
// Why: models of parallel programs (Opal's t_par_comp + t_seq_comp + t_comm + t_sync, Dyana,
// master-worker) speak of computation, communication, synchronisation and idle time per
// process, and the thesis (../shared/seeds/000_*.txt, ch. 8) classifies workloads by the
// resource that explains their time. Opal's authors inserted barriers and timers by hand to get
// that split; invmw gets it from the middleware calls it observed (docs/analysis.md).
//
// Contract:
// - Analyze() works on any trace ReadTrace() returns (invmw's or another tool's OTF2 with MPI
//   records). Per rank and phase, the categories of categories.h add up to the rank's window
//   (end of MPI_Init to start of MPI_Finalize); see timeline.h for how a call is split and how
//   phases are found, resources.h for the use of sampler metrics, critical_path.h for the path.
// - Run level: load imbalance (max/mean of computation), the ranks others waited for, the
//   critical path with its composition, and a classification with the shares behind it.
// - ToJson() gives the document `invmw analyze` writes (analysis.json); FormatText() the report.
// - OpalResponses() derives the response variables of the Opal model (contract B) for a run
//   with opal-mini's structure (rank 0 client, others servers); it throws std::runtime_error
//   when the trace has no client/server request-reply rounds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/categories.h"
#include "analysis/critical_path.h"
#include "analysis/resources.h"
#include "analysis/run_windows.h"
#include "analysis/timeline.h"
#include "otf2_reader/trace_reader.h"

namespace invmw::otf2 {
// Contract C names the reader's result TraceData; the reader calls it Trace.
using TraceData = Trace;
}  // namespace invmw::otf2

namespace invmw::analysis {

struct AnalyzeOptions {
  // A run is middleware-inefficient when at least this share of its observed rank-time cannot
  // be allocated (the thesis' query 8 had 75-80% unallocated; ordinary runs have a few %).
  double unallocated_threshold = 0.4;
  // Ranks whose computation exceeds the mean by this fraction are listed as the heavy ranks.
  double heavy_rank_margin = 0.05;
  // Use the sampler's metrics to allocate time outside MPI (resources.h).
  bool use_resources = true;
  // Rank windows (seconds on the trace's axis; end < 0: unknown) for traces without MPI_Init /
  // MPI_Finalize records, e.g. RankWindowsFromRun() of the run directory (run_windows.h).
  std::map<int32_t, std::pair<double, double>> rank_windows;
  // Threads for the per-rank work (timelines); the result does not depend on it.
  int threads = 1;
  // Keep every segment (Analysis::timelines' RankTimeline::segments) and every message
  // (Analysis::p2p), which AnalyzeOpal needs; false keeps only what the figures need (the
  // compact segments of the critical path): less memory on large traces, same figures.
  // Segments are kept anyway when sampler metrics are used (resources.h reads them).
  bool keep_details = true;

  bool IsValid(std::string* error) const;
};

struct RankAnalysis {
  int32_t rank = -1;
  double start = 0, end = 0;  // window
  std::vector<Times> phases;  // by phase index (Analysis::phase_names)
  Times total{};
  ResourceUse resources;
  double wait_caused = 0;  // idle + sync_wait time of others spent waiting for this rank
  uint64_t calls = 0, messages_sent = 0, bytes_sent = 0;
};

struct LoadImbalance {
  double mean = 0, max = 0, min = 0;
  double max_over_mean = 0;  // 1 = perfectly balanced
  int32_t max_rank = -1, min_rank = -1;
  std::vector<int32_t> heavy_ranks;  // computation above mean x (1 + margin)
};

struct PhaseSummary {
  std::string name;
  Times total{};    // over ranks
  double span = 0;  // earliest start to latest end of the phase over ranks
  LoadImbalance imbalance;
};

struct Classification {
  std::string label;  // computation-bound, communication-bound, synchronization-bound,
                      // memory/I-O-bound, middleware-inefficient
  // Shares of observed rank-time (they add up to 1).
  double computation = 0, communication = 0, synchronization = 0, memory_io = 0, unallocated = 0;
  std::string reason;
};

// A point-to-point message, kept for the Opal responses.
struct MessageSummary {
  int32_t src, dst;
  uint64_t bytes;
  double send_time, recv_post_time, recv_time;
};

// The time of the MPI calls made at one call site (one MPI function at one calling context of
// the trace, over all ranks), split as the calls are: "this MPI_Recv at solver.c:212 waits 40%
// of its time for a late sender" is idle / time.
struct CallSiteWait {
  std::string function;  // MPI function
  std::string caller;    // the application function that made the call ("" unknown)
  std::string file;      // "" without debug information
  uint32_t line = 0;
  std::string location;  // file:line, else the caller
  uint64_t calls = 0;
  int ranks = 0;    // ranks that called there
  Times t{};        // over ranks
  double time = 0;  // all of it
};
struct Analysis {
  std::string trace_path;
  double start = 0, end = 0, wall = 0;  // earliest window start, latest window end
  PhaseSource phase_source = PhaseSource::kWholeRun;
  std::vector<std::string> phase_names;
  std::vector<RankAnalysis> ranks;  // ascending world rank
  std::vector<PhaseSummary> phases;
  Times total{};  // over ranks and phases
  LoadImbalance imbalance;
  CriticalPath critical_path;
  Classification classification;
  std::vector<int32_t> waited_for;  // ranks others waited for most, descending, >= 10% of waits
  uint64_t events = 0, other_thread_events = 0;
  uint64_t messages = 0, unmatched_sends = 0, unmatched_recvs = 0;
  uint64_t collective_instances = 0, incomplete_collectives = 0;
  bool partial = false;  // the archive says it is partial
  bool has_metrics = false;
  std::vector<std::string> notes;  // caveats found while analysing

  Timelines timelines;              // the segments behind the figures
  std::vector<MessageSummary> p2p;  // every matched message (AnalyzeOptions::keep_details)
  // Calls with a calling context (traces with invmw:callsite), by idle + sync_wait, largest
  // first.
  std::vector<CallSiteWait> callsites;
};

Analysis Analyze(const invmw::otf2::TraceData& trace, const AnalyzeOptions& options = {});
// The same, releasing trace.messages (left empty) as soon as the analysis has taken what it
// needs from them, before it scans the events: for a large trace read once for the analysis
// (`invmw analyze`). The rest of the trace is left as it was.
Analysis Analyze(invmw::otf2::TraceData&& trace, const AnalyzeOptions& options = {});

nlohmann::json ToJson(const Analysis& a);
std::string FormatText(const Analysis& a);

// Opal's structure seen in the trace: request-reply rounds between the client (rank 0) and the
// servers, grouped into steps. See opal_responses.cc for the rule.
struct OpalBreakdown {
  std::map<std::string, double> responses;  // t_wall, t_par_comp, t_seq_comp, t_comm, t_sync,
                                            // t_idle (contract B)
  int p = 0;                                // servers
  int rounds = 0, steps = 0;
  double window_start = 0, window_end = 0;  // the client's step window
  double t_wait = 0;  // the client's idle + sync_wait in the window (servers computing)
  double t_comm_after_return = 0;  // part of t_comm: requests in flight after the send returned
  double t_unallocated = 0;  // client time in the window in no category above (part of t_idle)
  std::vector<std::string> notes;
};
OpalBreakdown AnalyzeOpal(const Analysis& a);
std::map<std::string, double> OpalResponses(const Analysis& a);
nlohmann::json ToJson(const OpalBreakdown& o);

}  // namespace invmw::analysis
