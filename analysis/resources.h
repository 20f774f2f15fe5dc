// What the sampler's metrics (OTF2 asynchronous metrics of the trace) say about a rank's time
// outside MPI: was it on the CPU, starved of it, or off it doing I/O or nothing measurable.
//
// Why: the trace alone calls everything outside MPI "computation". Chapter 8 of the thesis
// (../shared/seeds/000_*.txt) allocates time to the resources that explain it (CPU, disk,
// network) and calls the rest unallocated, a sign of middleware or software inefficiency. The
// sampler's process CPU time, I/O bytes and page faults, and the node's CPU states, make that
// allocation possible for the time between MPI calls.
//
// Rule (per rank, per pair of consecutive samples inside the rank's window):
//   comp_i  = computation time of the rank in the interval (from its segments)
//   on_i    = min(cpu_i, comp_i)     cpu_i: process user+system CPU seconds in the interval
//   off_i   = comp_i - on_i          time outside MPI not spent on the CPU
// Off-CPU time counts as voluntary (the process slept or blocked) when the node had idle CPU in
// that interval (node_cpu idle share > kIdleShare); otherwise the process was waiting for a CPU
// (contention, cgroup throttling), which is still computation (CPU-bound). Without node_cpu
// metrics off-CPU time stays computation. When the voluntary off-CPU share of the sampled
// computation exceeds kMinOffShare, that share of the rank's computation moves to memory_io if
// the rank read or wrote storage or took major page faults in its window, else to unallocated.
#pragma once

#include <string>

#include "analysis/timeline.h"
#include "otf2_reader/trace_reader.h"

namespace invmw::analysis {

struct ResourceUse {
  bool sampled = false;        // the rank has CPU-time metrics covering its computation
  double covered_s = 0;        // computation time inside sampled intervals
  double cpu_s = 0;            // process CPU time in the window
  double comp_on_cpu_s = 0;    // sampled computation on the CPU
  double comp_off_cpu_s = 0;   // sampled computation off the CPU
  double voluntary_off_s = 0;  // ... while the node had idle CPU
  double io_bytes = 0;         // storage bytes read + written in the window
  double major_faults = 0;
  double throttled_s = -1;  // cgroup throttled time, -1 unknown
  double cpi = -1;          // cycles per instruction (user) when counters exist
  double moved_share = 0;   // share of computation moved out (to memory_io/unallocated)
  Category moved_to = kComputation;
  std::string note;  // what was concluded, for the report
};

constexpr double kIdleShare = 0.2;
constexpr double kMinOffShare = 0.1;

ResourceUse AttributeResources(const invmw::otf2::Trace& trace, const RankTimeline& rank);

}  // namespace invmw::analysis
