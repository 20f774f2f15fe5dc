// Platform parameters from microbenchmarks: the JSON lines of probe-pingpong, probe-barrier and
// probe-kernels (platforms/probes, contract F) turned into a platform table.
//
// Why estimation is separate from running: `invmw platform probe` runs the probes on the local
// machine or inside an emulated platform, but what a table says must not depend on how the
// numbers were obtained, and it must be testable with known inputs. The rules:
//   a1, b1  fit of the ping-pong model t = b1 + bytes/a1 (fitter/models/pingpong.toml, MB =
//           10^6 bytes) to every (size, replication) mean, relative-error weighting so small and
//           large messages count alike; std_error from the fit.
//   b5      mean time per synchronization after a compute phase (probe-barrier --compute-us:
//           rank 0's exit minus the last rank's entry, quota stalls included; issue 20) over the
//           replications; from the tight-loop barrier time when the records have no such
//           figure. The tight-loop mean is kept as measures.barrier_loop and, for models that
//           add the quota stall themselves (opal_quota), as parameters.b5_loop.
//   burst   the emulated platform's token-bucket depth (ProbeContext::burst_bytes), when known.
//   nodes   the emulated platform's virtual nodes (ProbeContext::nodes), when known.
//   burst_rate  the token bucket's nominal rate (ProbeContext::burst_rate_mbs), when known.
//   cpu_quota, quota_period, cores  the emulated platform's CPU quota per rank, its CFS period
//           (from its definition) and the CPUs its ranks are placed on round-robin (slot r on
//           CPU r mod cores), when known: opal_quota's stall law (issue 20, qc20).
//   b5_stall    with --compute-us: the median over the replications of the barrier's quota stall.
//   a2..a4  mean time per pair checked, per pair energy, per mass center of bonded work.
// Means over replications carry their standard error (sample standard deviation / sqrt(K)) and
// the source text gives the spread (min..max), the counts and the commands. The kernel times are
// also written to [kernels], which the transfer rule of `invmw predict --reference` uses: there
// each is the fastest replication, not the mean, since the rule takes a ratio of two platforms'
// kernel times and interference from other work only slows a replication down (issue 20).
//
// Contract: ParseProbeLines throws ProbeError naming the source and line for a JSON line that is
// not a probe record of contract F; other lines (launcher chatter) are skipped. EstimatePlatform
// throws ProbeError when a probe produced nothing usable.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "fitter/platform_table.h"

namespace invmw::fit {

struct ProbeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ProbeSamples {
  struct PingPong {
    double bytes, mean_s;
    int replication;
  };
  std::vector<PingPong> pingpong;
  std::vector<double> barrier;        // per-barrier mean of each replication
  std::vector<double> barrier_stall;  // stall-aware mean of each replication (--compute-us)
  double barrier_compute_us = 0;      // their mean compute phase, for the record
  int barrier_ranks = 0;
  std::map<std::string, std::vector<double>> kernels;  // "pair_check" -> per-unit means
  std::map<std::string, double> kernel_units;          // units per call, for the record
};

// How many ping-pong replications `samples` holds (the highest number + 1).
int PingPongReplications(const ProbeSamples& samples);

// Adds the records of `text` (one JSON object per line) to *samples. Ping-pong replications are
// numbered after those already in *samples, so the texts of separate probe runs pool.
void ParseProbeLines(const std::string& text, const std::string& source, ProbeSamples* samples);

struct ProbeContext {
  std::string name, title, description;
  std::string where;  // e.g. "host node17" or "emulated platform emu-4x50-100mbit on host x"
  std::string date;   // ISO date of the measurement
  std::map<std::string, std::string> commands;  // probe name -> command line run
  // Token-bucket depth of the emulated platform the probes ran on (bytes; 0 = no rate limit;
  // < 0 = not known: the table gets no `burst`).
  double burst_bytes = -1;
  int nodes = 0;               // virtual nodes of that platform (0 = not known: no `nodes`)
  double burst_rate_mbs = -1;  // the token bucket's nominal rate in MB/s (0: none; -1: not known)
  // CPU quota per rank (fraction of a core) and CFS period in seconds of the emulated platform,
  // and the CPUs its ranks are spread over (< 0 / 0: not known: not written).
  double cpu_quota = -1;
  double quota_period_s = -1;
  int cores = 0;
};

PlatformTable EstimatePlatform(const ProbeSamples& samples, const ProbeContext& context);

}  // namespace invmw::fit
