// What profile.json says about all ranks together (per function and for the run), as a value
// that ranks can combine pairwise: the runtime reduces it over a binomial tree at MPI_Finalize
// (pmpi_wrap/runtime.cc), so that rank 0 receives log2(ranks) aggregates, never every rank's
// table; BuildProfile folds the same value over parsed dumps rank by rank. One value, one
// rendering (ProfileFromAggregate in profile_report.h): both ways give the same profile.
//
// Why Merge needs its right-hand side to hold higher ranks only: min/max over ranks name the
// lowest rank with the extreme value, as a rank-by-rank fold does. The tree keeps this order
// (a rank's subtree is a contiguous range right of it). Sums of seconds are doubles added in
// tree order, so they may differ from the rank-by-rank fold in the last bits (docs/profile.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "common/raw_format.h"

namespace invmw::profile {

struct RankData;

// A value per rank (a function's time, a rank's wall time): min, max, their ranks, the sum.
struct AcrossRanks {
  double min = INFINITY, max = -INFINITY, sum = 0;
  int32_t n = 0, argmin = -1, argmax = -1;
  void Add(double v, int rank) {
    if (v < min) min = v, argmin = rank;
    if (v > max) max = v, argmax = rank;
    sum += v;
    ++n;
  }
  void Merge(const AcrossRanks& right) {  // right: higher ranks only (ties keep the lower rank)
    if (right.min < min) min = right.min, argmin = right.argmin;
    if (right.max > max) max = right.max, argmax = right.argmax;
    sum += right.sum;
    n += right.n;
  }
};

struct FunctionAggregate {
  enum Saturated : uint32_t {
    kCalls = 1,
    kBytesSent = 2,
    kBytesRecv = 4,
    kHist = 8,
    kHistSent = 16,
    kHistRecv = 32,
  };
  uint64_t calls = 0, bytes_sent = 0, bytes_recv = 0;
  double time_s = 0;
  AcrossRanks time;
  uint64_t hist[3 * raw::kHistBins] = {};  // histogram, histogram_sent, histogram_recv
  uint32_t saturated = 0;                  // Saturated bits: a sum over ranks hit 2^64-1
};

struct RunAggregate {
  int32_t ranks = 0;  // ranks added
  AcrossRanks wall, mpi;
  double mpi_after_init_sum = 0, wall_after_init_sum = 0;
  bool incomplete = false;
  uint64_t dropped_thread_calls = 0, dropped_requests = 0;
  std::set<std::string> hosts;
  // Of the lowest rank added: the profile's fallback when meta.json has none.
  std::string first_mpi_library, first_invmw_version;
  std::map<std::string, FunctionAggregate> functions;

  // Adds one rank's parsed dump (ParseDump); ranks must come in increasing rank order.
  void AddRank(const RankData& r);
  // Adds right, which holds only ranks above every rank added here.
  void Merge(const RunAggregate& right);
  // A self-contained byte string for MPI; Decode checks every length and count against size
  // and fails (false, *error) on anything malformed rather than reading past it.
  std::string Encode() const;
  static bool Decode(const void* data, size_t size, RunAggregate* out, std::string* error);
};

// What a rank's own figures in profile.json are computed from: its MPI time, the part of it in
// MPI_Init. Shared by the aggregate and the per-rank entry, so both add the same doubles.
struct RankFigures {
  double ticks_per_second, mpi_s = 0, init_call_s = 0;
  explicit RankFigures(const RankData& r);
  double Seconds(uint64_t ticks) const { return double(ticks) / ticks_per_second; }
};

}  // namespace invmw::profile
