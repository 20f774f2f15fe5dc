// The collector fed directly: loss from sequence numbers, interpolation of lost samples and
// of lost parts of split samples, confidence intervals, and rejection of bad datagrams.
#include "sampler/collector.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

namespace invmw::sampler {
namespace {

using namespace stream;

// Builds datagrams the way a sampler does.
struct Sender {
  DatagramHeader head{};
  uint64_t seq = 0;
  Sender(uint32_t node, int32_t rank) {
    head.magic = kMagic;
    head.version = kVersion;
    head.header_size = sizeof(DatagramHeader);
    head.node_id = node;
    head.rank = rank;
    head.stream_id = 1000 + uint32_t(rank);
  }
  std::vector<unsigned char> Make(Kind kind, uint64_t sample, uint64_t ticks, uint16_t part,
                                  uint16_t nparts, uint16_t first, uint16_t count,
                                  const void* payload, size_t size) {
    DatagramHeader h = head;
    h.kind = kind;
    h.seq = seq++;
    h.sample = sample;
    h.ticks = ticks;
    h.part = part;
    h.nparts = nparts;
    h.first = first;
    h.count = count;
    std::vector<unsigned char> d(sizeof h + size);
    std::memcpy(d.data(), &h, sizeof h);
    if (size) std::memcpy(d.data() + sizeof h, payload, size);
    h.checksum = Checksum(d.data(), d.size());
    std::memcpy(d.data(), &h, sizeof h);
    return d;
  }
  std::vector<unsigned char> Info(uint32_t metrics, const char* host) {
    InfoPayload i{};
    i.ticks_per_second = 1e9;
    i.anchor_ticks = 0;
    i.anchor_realtime_ns = 1000000000000ll;
    i.interval_s = 0.01;
    i.num_metrics = metrics;
    i.world_size = 4;
    std::snprintf(i.host, sizeof i.host, "%s", host);
    return Make(kInfo, 0, 0, 0, 1, 0, 0, &i, sizeof i);
  }
  std::vector<unsigned char> Names(const std::vector<std::string>& names) {
    std::vector<unsigned char> p;
    for (const auto& n : names) {
      p.push_back(1);
      p.push_back(uint8_t(n.size()));
      p.insert(p.end(), n.begin(), n.end());
    }
    return Make(kNames, 0, 0, 0, 1, 0, uint16_t(names.size()), p.data(), p.size());
  }
};

TEST(Collector, LossRateAndInterpolation) {
  Collector c;
  Sender s(7, 0);
  auto info = s.Info(2, "nodeA");
  ASSERT_EQ(c.Feed(info.data(), info.size()), Collector::Verdict::kAccepted);
  auto names = s.Names({"a", "b"});
  ASSERT_EQ(c.Feed(names.data(), names.size()), Collector::Verdict::kAccepted);
  // 200 samples every 10 ms; a rises at 3/s with noise-free steps, b at 0.5/s. Drop every 7th
  // datagram of the stream (as INVMW_SAMPLER_TEST_DROP_EVERY=7 does).
  uint64_t sent = 2, dropped = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    const double t = double(i) * 0.01;
    const double v[2] = {3 * t, 0.5 * t};
    auto d = s.Make(kSample, i, uint64_t(t * 1e9), 0, 1, 0, 2, v, sizeof v);
    ++sent;
    if (s.seq % 7 == 0) {
      ++dropped;
      continue;
    }
    ASSERT_EQ(c.Feed(d.data(), d.size()), Collector::Verdict::kAccepted);
  }
  const CollectorReport r = c.Analyze();
  ASSERT_EQ(r.streams.size(), 1u);
  const StreamReport& sr = r.streams[0];
  EXPECT_EQ(sr.host, "nodeA");
  EXPECT_EQ(sr.lost, dropped);
  EXPECT_NEAR(sr.loss_rate, double(dropped) / double(sent), 0.01);
  EXPECT_NEAR(sr.loss_rate, 1.0 / 7, 0.02);
  ASSERT_EQ(sr.series.size(), 200u);
  EXPECT_GT(sr.samples_interpolated, 20u);
  for (const auto& pt : sr.series) {
    const double t = double(pt.sample) * 0.01;
    EXPECT_NEAR(pt.values[0], 3 * t, 1e-9) << "sample " << pt.sample;
    EXPECT_NEAR(pt.time, 1000 + t, 1e-6);
  }
  ASSERT_EQ(sr.stats.size(), 2u);
  EXPECT_NEAR(sr.stats[0].mean, 3.0, 1e-6);
  EXPECT_LE(sr.stats[0].ci_low, 3.0 + 1e-9);
  EXPECT_GE(sr.stats[0].ci_high, 3.0 - 1e-9);
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].lost, dropped);
}

TEST(Collector, SplitSampleWithALostPart) {
  Collector c;
  Sender s(9, 1);
  const uint32_t m = uint32_t(kMaxValues * 2 + 5);  // three parts
  auto info = s.Info(m, "nodeB");
  ASSERT_EQ(c.Feed(info.data(), info.size()), Collector::Verdict::kAccepted);
  for (uint64_t i = 0; i < 3; ++i) {
    std::vector<double> v(m);
    for (uint32_t k = 0; k < m; ++k) v[k] = double(k) + 10.0 * double(i);
    for (uint16_t p = 0; p < 3; ++p) {
      const size_t first = p * kMaxValues, count = std::min<size_t>(kMaxValues, m - first);
      auto d = s.Make(kSample, i, i * 1000, p, 3, uint16_t(first), uint16_t(count), &v[first],
                      count * 8);
      ASSERT_LT(d.size(), 512u);
      if (i == 1 && p == 1) continue;  // lost middle part of the middle sample
      ASSERT_EQ(c.Feed(d.data(), d.size()), Collector::Verdict::kAccepted);
    }
  }
  const CollectorReport r = c.Analyze();
  ASSERT_EQ(r.streams.size(), 1u);
  const auto& sr = r.streams[0];
  ASSERT_EQ(sr.series.size(), 3u);
  EXPECT_TRUE(sr.series[1].interpolated);
  EXPECT_FALSE(sr.series[0].interpolated);
  for (uint32_t k = 0; k < m; ++k) EXPECT_NEAR(sr.series[1].values[k], k + 10.0, 1e-9) << k;
  EXPECT_EQ(sr.lost, 1u);
}

TEST(Collector, RejectsBadDatagramsWithoutCrashing) {
  Collector c;
  Sender s(3, 2);
  auto info = s.Info(4, "nodeC");
  ASSERT_EQ(c.Feed(info.data(), info.size()), Collector::Verdict::kAccepted);
  const double v[4] = {1, 2, 3, 4};
  auto good = s.Make(kSample, 0, 100, 0, 1, 0, 4, v, sizeof v);

  uint64_t foreign = 0, malformed = 0;
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {  // random garbage of every size
    std::vector<unsigned char> g(rng() % 600);
    for (auto& b : g) b = uint8_t(rng());
    if (g.size() >= 5 && rng() % 2) {  // half of them with our magic and version
      std::memcpy(g.data(), &kMagic, 4);
      g[4] = kVersion;
    }
    const auto v = c.Feed(g.data(), g.size());
    ASSERT_NE(v, Collector::Verdict::kAccepted);
    (v == Collector::Verdict::kForeign ? foreign : malformed)++;
  }
  for (size_t cut = 0; cut < good.size(); ++cut) {  // every truncation
    const auto v = c.Feed(good.data(), cut);
    ASSERT_NE(v, Collector::Verdict::kAccepted) << "cut at " << cut;
    (v == Collector::Verdict::kForeign ? foreign : malformed)++;
  }
  auto flipped = good;  // a flipped bit fails the checksum
  flipped[sizeof(DatagramHeader) + 3] ^= 4;
  EXPECT_EQ(c.Feed(flipped.data(), flipped.size()), Collector::Verdict::kMalformed);
  ++malformed;
  auto other = good;  // another protocol on the same port
  other[0] = 'G';
  EXPECT_EQ(c.Feed(other.data(), other.size()), Collector::Verdict::kForeign);
  ++foreign;
  const double many[8] = {};
  auto beyond = s.Make(kSample, 1, 200, 0, 1, 2, 8, many, sizeof many);  // indices past 4
  EXPECT_EQ(c.Feed(beyond.data(), beyond.size()), Collector::Verdict::kMalformed);
  ++malformed;
  ASSERT_EQ(c.Feed(good.data(), good.size()), Collector::Verdict::kAccepted);
  EXPECT_EQ(c.Feed(good.data(), good.size()), Collector::Verdict::kDuplicate);

  const CollectorReport r = c.Analyze();
  EXPECT_EQ(r.foreign, foreign);
  EXPECT_EQ(r.malformed, malformed);
  EXPECT_EQ(r.duplicate, 1u);
  EXPECT_EQ(r.accepted, 2u);
  EXPECT_FALSE(Collector::RenderSummary(r).empty());
}

// Forged datagrams (issue 16): each of these once aborted the collector or made it allocate
// gigabytes. Valid data before and after must be kept and every bad datagram counted.
struct Rss {
  static long KiB() {
    FILE* f = std::fopen("/proc/self/status", "r");
    long v = -1;
    char line[256];
    while (f && std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmRSS: %ld", &v) == 1) break;
    if (f) std::fclose(f);
    return v;
  }
};

TEST(Collector, NonUtf8AndControlCharacterNamesAreRejected) {
  EXPECT_TRUE(ValidWireName("cpu.user", 8));
  EXPECT_TRUE(
      ValidWireName("temp.\xc2\xb0"
                    "C",
                    8));
  EXPECT_FALSE(ValidWireName("", 0));
  EXPECT_TRUE(ValidWireName("", 0, true));
  EXPECT_FALSE(ValidWireName("a\xff", 2));
  EXPECT_FALSE(ValidWireName("\xc0\xaf", 2));      // overlong '/'
  EXPECT_FALSE(ValidWireName("\xed\xa0\x80", 3));  // surrogate
  EXPECT_FALSE(ValidWireName("\xe2\x82", 2));      // truncated
  EXPECT_FALSE(ValidWireName("a\x1b[2J", 5));      // terminal escape
  EXPECT_FALSE(ValidWireName("a\nb", 3));

  Collector c;
  Sender s(5, 0);
  auto good = s.Names({"a", "b"});
  ASSERT_EQ(c.Feed(good.data(), good.size()), Collector::Verdict::kAccepted);
  auto bad = s.Names({"ok", std::string("x\xff\xfe", 3)});
  EXPECT_EQ(c.Feed(bad.data(), bad.size()), Collector::Verdict::kMalformed);
  auto info = s.Info(2, "host\xff");
  EXPECT_EQ(c.Feed(info.data(), info.size()), Collector::Verdict::kMalformed);
  const double v[2] = {1, 2};
  auto d = s.Make(kSample, 0, 10, 0, 1, 0, 2, v, sizeof v);
  ASSERT_EQ(c.Feed(d.data(), d.size()), Collector::Verdict::kAccepted);
  const CollectorReport r = c.Analyze();
  EXPECT_EQ(r.malformed, 2u);
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.streams[0].names, (std::vector<std::string>{"a", "b"}));
  const std::string dir = ::testing::TempDir() + "/collector-names-" + std::to_string(getpid());
  std::string err;
  ASSERT_TRUE(Collector::WriteLogs(dir, r, &err)) << err;
}

TEST(Collector, AbsurdSampleNumbersDoNotAllocateTheGap) {
  Collector c;
  Sender s(6, 0);
  const double v[1] = {1};
  const long before = Rss::KiB();
  for (uint64_t num : {uint64_t(0), uint64_t(100000000), uint64_t(1) << 62, ~uint64_t(0)}) {
    auto d = s.Make(kSample, num, num, 0, 1, 0, 1, v, sizeof v);
    ASSERT_EQ(c.Feed(d.data(), d.size()), Collector::Verdict::kAccepted);
  }
  const CollectorReport r = c.Analyze();
  const long after = Rss::KiB();
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.streams[0].series.size(), 4u);  // the received samples, no points in the gaps
  EXPECT_EQ(r.streams[0].gaps_not_interpolated, 3u);
  EXPECT_EQ(r.streams[0].samples_interpolated, 0u);
  EXPECT_LT(after - before, 50 * 1024) << "KiB";
}

TEST(Collector, SequenceJumpsStartANewEpochInsteadOfAHugeLoss) {
  Collector c;
  Sender s(8, 0);
  const double v[1] = {1};
  for (uint64_t i = 0; i < 10; ++i) {
    auto d = s.Make(kSample, i, i * 100, 0, 1, 0, 1, v, sizeof v);
    ASSERT_EQ(c.Feed(d.data(), d.size()), Collector::Verdict::kAccepted);
  }
  s.seq = uint64_t(1) << 63;
  auto jump = s.Make(kSample, 10, 1000, 0, 1, 0, 1, v, sizeof v);
  ASSERT_EQ(c.Feed(jump.data(), jump.size()), Collector::Verdict::kAccepted);
  s.seq = 10;
  for (uint64_t i = 11; i < 20; ++i) {
    if (i == 15) {
      ++s.seq;  // one lost
      continue;
    }
    auto d = s.Make(kSample, i, i * 100, 0, 1, 0, 1, v, sizeof v);
    ASSERT_EQ(c.Feed(d.data(), d.size()), Collector::Verdict::kAccepted);
  }
  const CollectorReport r = c.Analyze();
  EXPECT_EQ(r.seq_jumps, 2u);  // there and back
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.streams[0].seq_epochs, 3u);
  EXPECT_EQ(r.streams[0].received, 19u);
  EXPECT_EQ(r.streams[0].lost, 1u);
  EXPECT_LT(r.streams[0].loss_rate, 0.1);
}

TEST(Collector, StreamCountIsBoundedAndAnnouncementsCostLittle) {
  Collector c;
  const long before = Rss::KiB();
  uint64_t refused = 0;
  for (int i = 0; i < 20000; ++i) {
    Sender s(uint32_t(1000 + i), i);
    auto info = s.Info(uint32_t(kMaxMetrics), "forged");
    auto v = c.Feed(info.data(), info.size());
    if (v == Collector::Verdict::kRefused)
      ++refused;
    else
      ASSERT_EQ(v, Collector::Verdict::kAccepted);
  }
  EXPECT_EQ(refused, 20000u - kMaxStreams);
  Sender big(1, 1);
  auto too_many = big.Info(uint32_t(kMaxMetrics + 1), "h");
  EXPECT_EQ(c.Feed(too_many.data(), too_many.size()), Collector::Verdict::kMalformed);
  const CollectorReport r = c.Analyze();
  EXPECT_EQ(r.refused, refused);
  EXPECT_EQ(r.streams.size(), kMaxStreams);
  for (const auto& sr : r.streams) EXPECT_TRUE(sr.names.empty());  // no metric was received
  EXPECT_LT(Rss::KiB() - before, 50 * 1024) << "KiB";
}

TEST(Collector, SparseHighMetricIndexesStayWithinTheSeriesBudget) {
  Collector c;
  Sender s(4, 0);
  const double v[1] = {1};
  for (uint64_t i = 0; i < 2000; ++i) {  // one value at the last index, samples 60 apart
    auto d = s.Make(kSample, i * 60, i, 0, 1, uint16_t(kMaxMetrics - 1), 1, v, sizeof v);
    ASSERT_EQ(c.Feed(d.data(), d.size()), Collector::Verdict::kAccepted);
  }
  const CollectorReport r = c.Analyze();
  ASSERT_EQ(r.streams.size(), 1u);
  // 2000 points of 1024 values would be 16 MB from 2000 values received.
  EXPECT_TRUE(r.streams[0].series.empty());
  EXPECT_TRUE(r.streams[0].series_omitted);
  EXPECT_EQ(r.streams[0].received, 2000u);
}

TEST(Collector, InterpolationIsBoundedByWhatWasReceived) {
  Collector c;
  Sender s(2, 0);
  const double v[1] = {1};
  uint64_t received = 0;
  for (uint64_t i = 0; i < 500; ++i, ++received) {  // gaps of 64 samples, just interpolable
    auto d = s.Make(kSample, i * 65, i, 0, 1, 0, 1, v, sizeof v);
    ASSERT_EQ(c.Feed(d.data(), d.size()), Collector::Verdict::kAccepted);
  }
  const CollectorReport r = c.Analyze();
  ASSERT_EQ(r.streams.size(), 1u);
  const auto& sr = r.streams[0];
  EXPECT_FALSE(sr.series_omitted);
  EXPECT_EQ(sr.series.size(), received);  // over the budget: the received samples only
  EXPECT_EQ(sr.samples_interpolated, 0u);
  EXPECT_LE(sr.series.size() * (1 + kSeriesPointCells),
            kSeriesBudgetFactor * (received + kSeriesPointCells * received) + kSeriesCellsSlack);
}

}  // namespace
}  // namespace invmw::sampler
