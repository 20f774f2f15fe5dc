// The sampler: one background thread per process that records machine resources and counters
// over time, on the same cycle clock as the MPI events.
//
// Why a thread and not a timer signal: signals interrupt the application's system calls and
// would run /proc reads inside its threads; a thread that sleeps between samples costs nothing
// the application notices and never calls MPI.
//
// What it writes (common/sample_format.h): raw/metrics-R.jsonl, raw/samples-R.bin while it
// runs, raw/resources-R.json when it stops; optionally UDP datagrams to a collector
// (sampler/stream_format.h). otf2_writer turns the raw files into OTF2 metrics, and
// profile::AttachResources puts the summaries into the profile.
//
// The interval can be changed while the job runs: write a line `interval=5ms` (units s, ms,
// us, ns) into <run dir>/control; every sampler polls that file once per second and applies a
// changed value (recorded as an "interval" line in metrics-R.jsonl).
//
// Contract:
//   Start: validates the options, opens the sources and takes their first reading (on the
//     caller's thread, so MPI_Init waits for no other thread), starts the thread, returns
//     true when it runs. On false, *error says why in one line; the application is
//     unaffected. Never throws. Call once per process, after MPI_Init (or at load for
//     INVMW_RUNTIME_NONMPI=1); a second Start while running fails. Deferred sources (the
//     counters: PAPI's start-up and the kernel's first per-task perf event cost 2-15 ms) are
//     opened by the thread min(interval, 10 ms) after Start has returned (Start waits for
//     them only when no other source opened); their metrics are 0 until their first reading,
//     a sample of its own whose time their definitions record ("start_ticks"; resources:
//     "counters_start_s"). A run stopped before then has no deferred sources.
//   Stop: takes a last sample, joins the thread, writes the "end" line and resources-R.json.
//     Safe to call when Start failed or was never called, and more than once.
//   Warnings (unreadable files, bad settings) go to options.warn, or when it is unset to stderr
//     with the "invmw: " prefix from rank 0 only, each once. Notes (a fallback taken: the
//     kernel's software events for hardware counters that are not there) go to options.note,
//     or when it is unset the way warnings go.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/config.h"

namespace invmw::sampler {

struct StartOptions {
  std::string run_dir;  // the experiment directory; files go to run_dir/raw/
  int rank = 0;
  int world_size = 1;
  bool node_leader = true;  // samples the node-wide sources (local rank 0)
  std::string host;         // empty: gethostname()
  // Maps invmw::clock::Ticks() to the trace clock (the runtime's TraceTime); null: identity.
  uint64_t (*trace_time)(uint64_t ticks) = nullptr;
  double ticks_per_second = 0;  // 0: calibrated here (2 ms)
  // Configuration (INVMW_SAMPLER_*); null: read from the environment.
  const config::Config* config = nullptr;
  std::function<void(const std::string&)> warn;  // see the contract above
  std::function<void(const std::string&)> note;  // see the contract above
  // Called with the path of an output file not written because an entry of its name existed
  // (files are created exclusively and links never followed); null: a warning says so.
  std::function<void(const std::string&)> existing;

  bool IsValid(std::string* error) const;
};

bool Start(const StartOptions& options, std::string* error);
void Stop();

// For tests and the benchmark: what the last sampler did (filled by Stop).
struct Stats {
  uint64_t samples = 0;
  uint64_t datagrams_sent = 0, datagrams_dropped = 0;  // dropped: send failed or test drop
  double interval_s = 0;
  double thread_cpu_s = 0;  // CPU time of the sampling thread itself (after Stop)
  double open_cpu_s = 0;    // of which opening the sources (PAPI initialisation, files)
  double close_cpu_s = 0;   // and the end: the last sample, resources-R.json (at Stop)
  size_t num_metrics = 0;
  bool wrote_resources = false;  // Stop created raw/resources-R.json
  // Per open source, its tier schedule (sampler/tiers.h) at the end.
  struct SourceTier {
    std::string source, tier;  // tier: "fast", "slow" or "measured"
    uint32_t every = 1, phase = 0;
    double cost_s = 0;   // one full reading's cost N was planned from (slow, measured; tiers.h)
    uint64_t reads = 0;  // full readings, the first and last sample included
    bool fixed = false;  // N from INVMW_SAMPLER_EVERY
  };
  std::vector<SourceTier> tiers;
};
Stats LastStats();

}  // namespace invmw::sampler
