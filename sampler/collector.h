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
//
// Limits (the collector listens on a socket anybody on the host may write to, so no datagram
// may make it allocate more than a small multiple of its own size, or end it):
//   kMaxStreams streams; datagrams of further streams are refused (counted, `refused`).
//   kMaxMetrics metrics per stream (an info datagram announcing more is malformed).
//   Names (metric names, host) must be valid UTF-8 without control characters (else malformed).
//   A sequence number more than kMaxSeqJump away from the stream's range so far starts a new
//     epoch of the stream (counted, `seq_jumps`): loss is counted within epochs, never across
//     an absurd jump.
//   Gaps of more than kMaxInterpolatedGap samples are not interpolated: the series has no
//     points there (counted per stream, `gaps_not_interpolated`).
//   A stream's series may cost at most kSeriesBudgetFactor times what was received, plus
//     kSeriesCellsSlack, counting a point as its values plus kSeriesPointCells (its own
//     overhead); beyond that it is not interpolated, and if even the received samples exceed
//     it, its series is left out (`series_omitted`), its counts kept.
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

constexpr size_t kMaxStreams = 1024;
constexpr size_t kMaxMetrics = 1024;
constexpr uint64_t kMaxSeqJump = uint64_t(1) << 20;
constexpr uint64_t kMaxInterpolatedGap = 64;
constexpr uint64_t kSeriesBudgetFactor = 4;
constexpr uint64_t kSeriesPointCells = 12;
constexpr uint64_t kSeriesCellsSlack = 1024;

// Whether a name from the wire may be stored and written: valid UTF-8 (no overlong forms,
// surrogates or code points past U+10FFFF), no control characters; `allow_empty` for the host.
bool ValidWireName(const char* s, size_t n, bool allow_empty = false);

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
  uint64_t seq_epochs = 0;                     // 1 + sequence jumps beyond kMaxSeqJump
  uint64_t gaps_not_interpolated = 0;          // gaps longer than kMaxInterpolatedGap samples
  bool series_omitted = false;                 // over the series budget (see Limits)
  uint64_t first_sample = 0, last_sample = 0;  // received
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
  uint64_t refused = 0;    // of streams beyond kMaxStreams
  uint64_t errors = 0;     // datagrams dropped by an internal failure (out of memory)
  uint64_t seq_jumps = 0;  // accepted datagrams that started a new epoch of their stream
  std::vector<StreamReport> streams;
  std::vector<NodeReport> nodes;
};

class Collector {
 public:
  enum class Verdict { kAccepted, kForeign, kMalformed, kDuplicate, kRefused, kError };
  // Any bytes, any length: never throws, never reads outside [data, data + n).
  Verdict Feed(const void* data, size_t n) noexcept;

  CollectorReport Analyze() const;
  // node-<host>.log per node and merged.log (all nodes by time), JSON lines; summary.json.
  static bool WriteLogs(const std::string& dir, const CollectorReport& r, std::string* error);
  static std::string RenderSummary(const CollectorReport& r);
  // One line for the live display: streams, datagrams, loss so far, rejected.
  std::string LiveLine() const;

  uint64_t accepted() const { return accepted_; }
  uint64_t rejected() const { return foreign_ + malformed_ + duplicate_ + refused_ + errors_; }

 private:
  Verdict FeedChecked(const unsigned char* d, size_t n);
  // Stored as they came (one chunk per datagram), so memory follows what was received.
  struct Chunk {
    uint16_t first = 0;
    std::vector<double> values;
  };
  struct Partial {
    uint64_t ticks = 0;
    std::vector<Chunk> chunks;
  };
  struct Stream {
    uint32_t node_id = 0, stream_id = 0;
    int32_t rank = 0;
    bool has_info = false;
    stream::InfoPayload info{};
    std::map<uint32_t, std::pair<std::string, bool>> names;  // index: name, accumulated
    uint32_t width = 0;  // 1 + the highest metric index received
    // The current epoch's sequence range; earlier epochs' totals.
    uint64_t min_seq = 0, max_seq = 0, received = 0;
    uint64_t past_expected = 0, past_received = 0, epochs = 0;
    uint64_t values_received = 0;
    std::set<uint64_t> seqs;
    std::map<uint64_t, Partial> samples;
    uint64_t Expected() const { return past_expected + (received ? max_seq - min_seq + 1 : 0); }
    uint64_t Received() const { return past_received + received; }
  };
  using Key = std::tuple<uint32_t, uint32_t, int32_t>;  // node, stream id, rank

  std::map<Key, Stream> streams_;
  uint64_t accepted_ = 0, foreign_ = 0, malformed_ = 0, duplicate_ = 0, refused_ = 0, errors_ = 0,
           seq_jumps_ = 0;
};

}  // namespace invmw::sampler
