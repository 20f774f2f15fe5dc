// The collector behind `invmw collect`: receives the samplers' UDP streams (stream_format.h),
// rejects what is not a valid datagram, and turns what arrived into per-node series on one time
// axis, with lost samples interpolated and the loss measured.
//
// Why a class apart from the verb: the statistics (loss from sequence numbers, interpolation,
// confidence intervals) and the rejection of bad input are what must be right, and they are
// tested by feeding datagrams directly, without sockets or timing.
//
// Contract:
//   Feed(data, n): classifies one datagram; never throws, never trusts a length or index from
//     the wire; foreign (wrong magic/version), malformed (bad size, checksum, fields) and
//     duplicate datagrams are counted and otherwise ignored.
//   Analyze(): per stream (one sampling process) and per node: datagrams expected (from the
//     sequence numbers' range) and lost, the sample series from the first to the last sample
//     received with missing samples and values linearly interpolated in time, and for each
//     metric the rate per second over the intervals actually received (accumulated metrics:
//     sum of increments / sum of interval lengths) or the mean value (absolute ones), each
//     with a 95% confidence interval; interpolated values never enter the estimates.
//   Times: each stream's stamps become seconds of CLOCK_REALTIME through the anchor its info
//     datagrams carry, which places all nodes on one axis (as good as the nodes' NTP).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sampler/stream_format.h"

namespace invmw::sampler {

struct MetricStat {
  std::string name;
  bool accumulated = true;
  uint64_t n = 0;  // intervals (accumulated) or samples (absolute) the estimate is based on
  double mean = 0, ci_low = 0, ci_high = 0;  // per second for accumulated metrics
};

struct SeriesPoint {
  double time = 0;  // seconds, CLOCK_REALTIME (or stream-relative without an info datagram)
  uint64_t ticks = 0, sample = 0;
  bool interpolated = false;  // at least one value was interpolated
  std::vector<double> values;
};

struct StreamReport {
  std::string host;
  uint32_t node_id = 0, stream_id = 0;
  int32_t rank = -1;
  bool has_info = false, has_names = false;
  uint64_t expected = 0, received = 0, lost = 0;  // datagrams
  double loss_rate = 0;
  uint64_t samples_received = 0, samples_interpolated = 0;
  std::vector<std::string> names;
  std::vector<bool> accumulated;
  std::vector<SeriesPoint> series;
  std::vector<MetricStat> stats;
};

struct NodeReport {
  std::string host;
  uint32_t node_id = 0;
  std::vector<int32_t> ranks;
  uint64_t expected = 0, lost = 0;
  double loss_rate = 0;
  std::vector<MetricStat> stats;  // per metric name: sums over the node's streams
};

struct CollectorReport {
  uint64_t accepted = 0, foreign = 0, malformed = 0, duplicate = 0;
  std::vector<StreamReport> streams;
  std::vector<NodeReport> nodes;
};

class Collector {
 public:
  enum class Verdict { kAccepted, kForeign, kMalformed, kDuplicate };
  Verdict Feed(const void* data, size_t n);

  CollectorReport Analyze() const;
  // node-<host>.log per node and merged.log (all nodes by time), JSON lines; summary.json.
  static bool WriteLogs(const std::string& dir, const CollectorReport& r, std::string* error);
  static std::string RenderSummary(const CollectorReport& r);
  // One line for the live display: streams, datagrams, loss so far, rejected.
  std::string LiveLine() const;

  uint64_t accepted() const { return accepted_; }
  uint64_t rejected() const { return foreign_ + malformed_ + duplicate_; }

 private:
  struct Partial {
    uint64_t ticks = 0;
    std::vector<double> values;
    std::vector<bool> have;
  };
  struct Stream {
    uint32_t node_id = 0, stream_id = 0;
    int32_t rank = 0;
    bool has_info = false;
    stream::InfoPayload info{};
    std::vector<std::string> names;
    std::vector<bool> accumulated, named;
    uint64_t min_seq = UINT64_MAX, max_seq = 0, received = 0;
    std::set<uint64_t> seqs;
    std::map<uint64_t, Partial> samples;
  };
  using Key = std::tuple<uint32_t, uint32_t, int32_t>;  // node, stream id, rank

  std::map<Key, Stream> streams_;
  uint64_t accepted_ = 0, foreign_ = 0, malformed_ = 0, duplicate_ = 0;
};

}  // namespace invmw::sampler
