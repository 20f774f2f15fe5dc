#include "fitter/probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

namespace invmw::fit {
namespace {

// Probe output as contract F prints it, from known parameters with 1% noise.
std::string ProbeText(double a1, double b1, double b5, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 0.01);
  std::ostringstream s;
  s.precision(17);
  s << "Warning: launcher chatter that is not JSON\n";
  for (int k = 0; k < 3; ++k) {
    for (double bytes : {0.0, 8.0, 512.0, 4096.0, 65536.0, 1048576.0})
      s << R"({"probe":"pingpong","bytes":)" << bytes << R"(,"reps":100,"replication":)" << k
        << R"(,"mean_s":)" << (b1 + bytes / (a1 * 1e6)) * (1 + z(rng)) << "}\n";
    s << R"({"probe":"barrier","ranks":2,"reps":1000,"replication":)" << k << R"(,"mean_s":)"
      << b5 * (1 + 0.1 * (k - 1)) << "}\n";
    s << R"({"probe":"kernel","kernel":"pair_check","per_unit_s":)" << 2e-9 * (1 + z(rng))
      << R"(,"units":1999000,"replication":)" << k << "}\n";
    s << R"({"probe":"kernel","kernel":"pair_energy","per_unit_s":)" << 3e-8 * (1 + z(rng))
      << R"(,"units":50000,"replication":)" << k << "}\n";
    s << R"({"probe":"kernel","kernel":"bonded","per_unit_s":)" << 4e-7 * (1 + z(rng))
      << R"(,"units":2000,"replication":)" << k << "}\n";
  }
  return s.str();
}

// Ping-pong lines plus one barrier round and the three kernels at fixed values, parsed: for
// tests about the link alone.
ProbeSamples WithBarrierAndKernels(std::string text) {
  text += R"({"probe":"barrier","ranks":2,"reps":100,"replication":0,"mean_s":1e-5})"
          "\n";
  for (const char* k : {"pair_check", "pair_energy", "bonded"})
    text += std::string(R"({"probe":"kernel","kernel":")") + k +
            R"(","per_unit_s":1e-8,"units":10})" + "\n";
  ProbeSamples s;
  ParseProbeLines(text, "probe.out", &s);
  return s;
}

ProbeContext Context() {
  ProbeContext c;
  c.name = "node";
  c.where = "host test";
  c.date = "2026-01-01";
  c.commands["pingpong"] = "mpirun -np 2 probe-pingpong";
  return c;
}

TEST(Probe, EstimatesEveryParameterWithSpreadAndSource) {
  ProbeSamples s;
  ParseProbeLines(ProbeText(500, 2e-6, 5e-6, 1), "probe.out", &s);
  ASSERT_EQ(s.pingpong.size(), 18u);
  ASSERT_EQ(s.barrier.size(), 3u);
  EXPECT_EQ(s.barrier_ranks, 2);
  PlatformTable t = EstimatePlatform(s, Context());
  const TableValue* a1 = t.Parameter("a1");
  const TableValue* b1 = t.Parameter("b1");
  ASSERT_TRUE(a1 && b1);
  EXPECT_NEAR(a1->value, 500, 15);
  EXPECT_NEAR(b1->value, 2e-6, 0.1e-6);
  EXPECT_GT(a1->std_error, 0);
  EXPECT_EQ(a1->unit, "MB/s");
  EXPECT_NE(a1->source.find("slope of t = b1 + bytes/a1"), std::string::npos) << a1->source;
  EXPECT_NE(b1->source.find("mean half round trip of 0-byte messages"), std::string::npos)
      << b1->source;
  EXPECT_NE(a1->source.find("6 sizes 0..1048576 bytes x 3 replications"), std::string::npos)
      << a1->source;
  EXPECT_NE(a1->source.find("(`mpirun -np 2 probe-pingpong`)"), std::string::npos);
  const TableValue* b5 = t.Parameter("b5");
  ASSERT_TRUE(b5);
  EXPECT_DOUBLE_EQ(b5->value, 5e-6);
  // Replications 4.5, 5, 5.5 us: sample sd 0.5 us, standard error 0.5/sqrt(3).
  EXPECT_NEAR(b5->std_error, 0.5e-6 / std::sqrt(3.0), 1e-12);
  EXPECT_NE(b5->source.find("2 ranks, 3 replications, 4.5e-06..5.5e-06 s"), std::string::npos)
      << b5->source;
  for (const auto& [name, truth] :
       std::map<std::string, double>{{"a2", 2e-9}, {"a3", 3e-8}, {"a4", 4e-7}}) {
    const TableValue* p = t.Parameter(name);
    const TableValue* k = t.Kernel(name);
    ASSERT_TRUE(p && k) << name;
    EXPECT_NEAR(p->value, truth, 0.03 * truth) << name;
    // The parameter is the mean, the transfer rule's kernel time the fastest replication.
    const std::string kernel = name == "a2"   ? "pair_check"
                               : name == "a3" ? "pair_energy"
                                              : "bonded";
    EXPECT_EQ(k->value, *std::min_element(s.kernels[kernel].begin(), s.kernels[kernel].end()));
    EXPECT_LT(k->value, p->value);
    EXPECT_GT(p->std_error, 0);
  }
  ASSERT_TRUE(t.Measure("latency"));
  EXPECT_NEAR(t.Measure("latency")->value, 2e-6, 0.1e-6);
  // What is written reads back.
  PlatformTable back = ParsePlatformTable(FormatPlatformTable(t), "node.toml");
  EXPECT_EQ(back.name, "node");
  EXPECT_EQ(back.parameters.size(), 7u);  // a1..a4, b1, b5 and b5_loop
  EXPECT_EQ(back.kernels.size(), 3u);
  EXPECT_NEAR(back.Parameter("a1")->value, a1->value, 1e-6 * a1->value);
}

// probe-barrier --compute-us (issue 20): b5 is the stall-aware time per synchronization, the
// tight-loop barrier time stays as measures.barrier_loop; old records without it keep b5 as
// before (the test above).
TEST(Probe, StallAwareBarrierGivesB5AndKeepsTheLoopTime) {
  std::string text = ProbeText(500, 2e-6, 5e-6, 1), stall;
  std::istringstream in(text);
  int k = 0;
  for (std::string l; std::getline(in, l);) {
    if (l.find(R"("probe":"barrier")") != std::string::npos) {
      l.pop_back();  // the closing brace
      l += R"(,"compute_us":4000,"rounds":200,"stall_mean_s":)" +
           std::to_string(0.001 * (1 + k++)) + R"(,"stall_max_s":0.02})";
    }
    stall += l + "\n";
  }
  ProbeSamples s;
  ParseProbeLines(stall, "probe.out", &s);
  ASSERT_EQ(s.barrier_stall.size(), 3u);
  PlatformTable t = EstimatePlatform(s, Context());
  const TableValue* b5 = t.Parameter("b5");
  ASSERT_TRUE(b5);
  EXPECT_NEAR(b5->value, 0.002, 1e-12);  // mean of 1, 2, 3 ms
  EXPECT_NEAR(b5->std_error, 0.001 / std::sqrt(3.0), 1e-12);
  EXPECT_NE(b5->source.find("probe-barrier --compute-us 4000"), std::string::npos) << b5->source;
  const TableValue* loop = t.Measure("barrier_loop");
  ASSERT_TRUE(loop);
  EXPECT_DOUBLE_EQ(loop->value, 5e-6);
  EXPECT_NE(loop->source.find("tight loop"), std::string::npos) << loop->source;
  // What is written reads back.
  PlatformTable back = ParsePlatformTable(FormatPlatformTable(t), "node.toml");
  EXPECT_NEAR(back.Parameter("b5")->value, 0.002, 1e-9);
  ASSERT_TRUE(back.Measure("barrier_loop"));
}

// mdl20: opal_quota takes the barrier without stalls (b5_loop), the token bucket's depth and the
// virtual nodes (burst, nodes: from the emulated platform's definition) from the table.
TEST(Probe, TableCarriesTheLoopBarrierAndTheBurst) {
  ProbeSamples s;
  ParseProbeLines(ProbeText(500, 2e-6, 5e-6, 1), "probe.out", &s);
  ProbeContext c = Context();
  PlatformTable plain = EstimatePlatform(s, c);
  ASSERT_TRUE(plain.Parameter("b5_loop"));
  EXPECT_DOUBLE_EQ(plain.Parameter("b5_loop")->value, 5e-6);
  EXPECT_FALSE(plain.Parameter("burst"));  // not known: not written
  EXPECT_FALSE(plain.Parameter("nodes"));
  c.burst_bytes = 16384;
  c.nodes = 4;
  PlatformTable t = EstimatePlatform(s, c);
  ASSERT_TRUE(t.Parameter("nodes"));
  EXPECT_DOUBLE_EQ(t.Parameter("nodes")->value, 4);
  ASSERT_TRUE(t.Parameter("burst"));
  EXPECT_DOUBLE_EQ(t.Parameter("burst")->value, 16384);
  EXPECT_EQ(t.Parameter("burst")->unit, "bytes");
  PlatformTable back = ParsePlatformTable(FormatPlatformTable(t), "node.toml");
  ASSERT_TRUE(back.Parameter("burst") && back.Parameter("b5_loop") && back.Parameter("nodes"));
  EXPECT_DOUBLE_EQ(back.Parameter("burst")->value, 16384);
}

// qc20: opal_quota's stall law takes the quota, its period (the platform's definition) and the
// CPUs the ranks are placed on from the table; unknown (not an emulated platform): not written.
TEST(Probe, TableCarriesTheQuotaItsPeriodAndTheCores) {
  ProbeSamples s;
  ParseProbeLines(ProbeText(500, 2e-6, 5e-6, 1), "probe.out", &s);
  ProbeContext c = Context();
  PlatformTable plain = EstimatePlatform(s, c);
  EXPECT_FALSE(plain.Parameter("cpu_quota"));
  EXPECT_FALSE(plain.Parameter("quota_period"));
  EXPECT_FALSE(plain.Parameter("cores"));
  c.cpu_quota = 0.25;
  c.quota_period_s = 0.01;
  c.cores = 2;
  PlatformTable back = ParsePlatformTable(FormatPlatformTable(EstimatePlatform(s, c)), "node.toml");
  ASSERT_TRUE(back.Parameter("cpu_quota") && back.Parameter("quota_period") &&
              back.Parameter("cores"));
  EXPECT_DOUBLE_EQ(back.Parameter("cpu_quota")->value, 0.25);
  EXPECT_DOUBLE_EQ(back.Parameter("quota_period")->value, 0.01);
  EXPECT_EQ(back.Parameter("quota_period")->unit, "s");
  EXPECT_DOUBLE_EQ(back.Parameter("cores")->value, 2);
  // A platform without a quota says so (0), so that the stall law gives no stall there.
  c.cpu_quota = 0;
  c.quota_period_s = 0;
  PlatformTable none = EstimatePlatform(s, c);
  ASSERT_TRUE(none.Parameter("cpu_quota") && none.Parameter("quota_period"));
  EXPECT_DOUBLE_EQ(none.Parameter("quota_period")->value, 0);
}

// q20: opal_stall scales its quota stall by b5_stall, the median over the replications of the
// stall alone (stall-aware time less the tight-loop barrier), so one round caught in a burst of
// throttling moves it no more than any other; opal_refill refills the token bucket at the
// definition's rate (burst_rate), written only when the platform is known.
TEST(Probe, StallIsTheMedianOverRoundsAndTheBucketRateComesFromTheDefinition) {
  std::string text = ProbeText(500, 2e-6, 5e-6, 1), stall;
  std::istringstream in(text);
  const double means[] = {0.001, 0.0012, 0.009};  // one round far off
  int k = 0;
  for (std::string l; std::getline(in, l);) {
    if (l.find(R"("probe":"barrier")") != std::string::npos) {
      l.pop_back();
      l += R"(,"compute_us":2000,"rounds":200,"stall_mean_s":)" + std::to_string(means[k++]) +
           R"(,"stall_max_s":0.02})";
    }
    stall += l + "\n";
  }
  ProbeSamples s;
  ParseProbeLines(stall, "probe.out", &s);
  ProbeContext c = Context();
  PlatformTable plain = EstimatePlatform(s, c);
  const TableValue* st = plain.Parameter("b5_stall");
  ASSERT_TRUE(st);
  EXPECT_NEAR(st->value, 0.0012 - 5e-6, 1e-12);  // the median, less the loop barrier
  EXPECT_NE(st->source.find("median over 3 replications"), std::string::npos) << st->source;
  EXPECT_FALSE(plain.Parameter("burst_rate"));  // platform not known: not written
  c.burst_bytes = 81920;
  c.burst_rate_mbs = 125;  // 1 Gbit/s
  PlatformTable t = EstimatePlatform(s, c);
  ASSERT_TRUE(t.Parameter("burst_rate"));
  EXPECT_DOUBLE_EQ(t.Parameter("burst_rate")->value, 125);
  EXPECT_EQ(t.Parameter("burst_rate")->unit, "MB/s");
  c.burst_bytes = 0;
  c.burst_rate_mbs = 0;  // no rate limit: a placeholder a table can hold (rates are > 0)
  PlatformTable shm = EstimatePlatform(s, c);
  ASSERT_TRUE(shm.Parameter("burst_rate"));
  EXPECT_GT(shm.Parameter("burst_rate")->value, 0);
  PlatformTable back = ParsePlatformTable(FormatPlatformTable(shm), "node.toml");
  ASSERT_TRUE(back.Parameter("burst_rate") && back.Parameter("b5_stall"));
  // Old records without stall figures give no b5_stall.
  ProbeSamples old;
  ParseProbeLines(text, "probe.out", &old);
  EXPECT_FALSE(EstimatePlatform(old, Context()).Parameter("b5_stall"));
}

// Separate probe runs (the pipeline's rounds, each from its own --raw file) pool into one table
// whose replications are all of theirs.
TEST(Probe, RunsPoolTheirReplications) {
  ProbeSamples s;
  ParseProbeLines(ProbeText(500, 2e-6, 5e-6, 1), "round1.jsonl", &s);
  ParseProbeLines(ProbeText(500, 2e-6, 5e-6, 2), "round2.jsonl", &s);
  ASSERT_EQ(s.pingpong.size(), 36u);
  int highest = 0;
  for (const auto& p : s.pingpong) highest = std::max(highest, p.replication);
  EXPECT_EQ(highest, 5);
  EXPECT_EQ(s.barrier.size(), 6u);
  EXPECT_EQ(s.kernels["pair_energy"].size(), 6u);
  PlatformTable t = EstimatePlatform(s, Context());
  EXPECT_NE(t.Parameter("a1")->source.find("x 6 replications"), std::string::npos)
      << t.Parameter("a1")->source;
  EXPECT_NE(t.Parameter("b5")->source.find("6 replications"), std::string::npos);
  EXPECT_NEAR(t.Parameter("a1")->value, 500, 15);
}

// The transfer rule divides two platforms' [kernels] times, and other work on the machine only
// slows a round: the table's parameters stay the means, its kernel times are the fastest rounds
// (issue 20: two slow rounds of three gave a ratio of 1.24 between equal CPU shares).
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

TEST(Probe, KernelTimesForTheTransferAreTheFastestRound) {
  auto rounds = [](std::vector<double> energy) {
    std::string text = ProbeText(500, 2e-6, 5e-6, 1);
    // Keep the ping-pong and barrier lines; the kernels come from `energy`, one per round.
    std::string kept;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.find("\"kernel\"") == std::string::npos) kept += line + "\n";
    for (size_t r = 0; r < energy.size(); ++r)
      for (const char* k : {"pair_check", "pair_energy", "bonded"})
        kept += std::string(R"({"probe":"kernel","kernel":")") + k + R"(","per_unit_s":)" +
                Num(std::string(k) == "pair_energy" ? energy[r] : 1e-8) +
                R"(,"units":10,"replication":)" + std::to_string(r) + "}\n";
    ProbeSamples s;
    ParseProbeLines(kept, "rounds.jsonl", &s);
    return EstimatePlatform(s, Context());
  };
  const PlatformTable quiet = rounds({1.40e-8, 1.42e-8, 1.44e-8});
  const PlatformTable hit = rounds({1.39e-8, 1.99e-8, 1.99e-8});
  auto kernel = [](const PlatformTable& t, const std::string& name) {
    for (const auto& k : t.kernels)
      if (k.name == name) return k;
    ADD_FAILURE() << "no kernel " << name;
    return TableValue{};
  };
  EXPECT_NEAR(hit.Parameter("a3")->value, (1.39e-8 + 2 * 1.99e-8) / 3, 1e-12);
  EXPECT_NEAR(kernel(hit, "a3").value, 1.39e-8, 1e-12);
  EXPECT_NEAR(kernel(quiet, "a3").value, 1.40e-8, 1e-12);
  // The ratio the transfer rule takes: 0.99 from the fastest rounds, 1.26 from the means.
  EXPECT_NEAR(kernel(hit, "a3").value / kernel(quiet, "a3").value, 0.993, 0.001);
  EXPECT_NE(kernel(hit, "a3").source.find("fastest replication"), std::string::npos)
      << kernel(hit, "a3").source;
  EXPECT_NE(kernel(hit, "a3").source.find("mean 1.79e-08 s"), std::string::npos)
      << kernel(hit, "a3").source;
  // The values survive the table's text form.
  const PlatformTable back = ParsePlatformTable(FormatPlatformTable(hit), "hit.toml");
  EXPECT_NEAR(kernel(back, "a3").value, 1.39e-8, 1e-12);
  EXPECT_NEAR(back.Parameter("a3")->value, hit.Parameter("a3")->value, 1e-12);
}

std::string ErrorOf(const std::string& text) {
  try {
    ProbeSamples s;
    ParseProbeLines(text, "p.out", &s);
    EstimatePlatform(s, Context());
  } catch (const ProbeError& e) {
    return e.what();
  }
  return "(no error)";
}

// A token-bucket network: messages within the bucket's depth pass at memory speed, larger ones
// at the configured rate (here 12.5 MB/s, 100 Mbit/s). The rate must come from the large ones.
TEST(Probe, RateOfALimitedNetworkComesFromTheLargeMessages) {
  std::ostringstream text;
  text.precision(17);
  for (int k = 0; k < 2; ++k) {
    for (double bytes : {0.0, 1024.0, 65536.0, 262144.0, 1048576.0}) {
      double t = bytes <= 1024 ? 10e-6 : 10e-6 + bytes / 12.5e6 * (1 + 0.02 * (k - 0.5));
      text << R"({"probe":"pingpong","bytes":)" << bytes << R"(,"reps":3,"replication":)" << k
           << R"(,"mean_s":)" << t << "}\n";
    }
  }
  ProbeSamples s = WithBarrierAndKernels(text.str());
  PlatformTable t = EstimatePlatform(s, Context());
  EXPECT_NEAR(t.Parameter("a1")->value, 12.5, 0.05 * 12.5);
  EXPECT_NEAR(t.Parameter("b1")->value, 10e-6, 1e-9);
}

// Issue 20, item 3: a1 is the median of the rounds' own slopes. Three rounds at 12.5 MB/s and one
// caught in a slow moment (5 MB/s): the pooled slope would be pulled to about 10 MB/s, the
// median stays at the rate, and the source says how it was taken.
TEST(Probe, RateIsTheMedianOverRounds) {
  std::ostringstream text;
  text.precision(17);
  for (int k = 0; k < 4; ++k) {
    double rate = k == 2 ? 5e6 : 12.5e6;
    for (double bytes : {0.0, 262144.0, 1048576.0, 4194304.0})
      text << R"({"probe":"pingpong","bytes":)" << bytes << R"(,"reps":3,"replication":)" << k
           << R"(,"mean_s":)" << 10e-6 + bytes / rate * (1 + 0.01 * (k - 1.5)) << "}\n";
  }
  ProbeSamples s = WithBarrierAndKernels(text.str());
  PlatformTable t = EstimatePlatform(s, Context());
  EXPECT_NEAR(t.Parameter("a1")->value, 12.5, 0.02 * 12.5);
  EXPECT_NE(t.Parameter("a1")->source.find("median of the 4 replications' own slopes"),
            std::string::npos)
      << t.Parameter("a1")->source;
}

TEST(Probe, BadOrMissingOutputIsAClearError) {
  EXPECT_NE(ErrorOf("{\"probe\":\"ping\"}\n").find("p.out:1: unknown probe 'ping'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("x\n{\"probe\":\"pingpong\",\"bytes\":8}\n")
                .find("p.out:2: field 'mean_s' is missing or not a number"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"probe\":\"kernel\",\"kernel\":\"fft\",\"per_unit_s\":1,\"units\":1}\n")
                .find("unknown kernel 'fft'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{broken\n").find("p.out:1: not a probe record"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("probe-pingpong gave 0 measurements"), std::string::npos);
  std::string no_barrier;
  std::istringstream in(ProbeText(500, 2e-6, 5e-6, 2));
  for (std::string l; std::getline(in, l);)
    if (l.find("barrier") == std::string::npos) no_barrier += l + "\n";
  EXPECT_NE(ErrorOf(no_barrier).find("probe-barrier gave no measurement (b5)"), std::string::npos);
}

// net20 (issue 20): b1 is the median over the rounds. plfC's TCP platform measured 0-byte half
// round trips of 5.3, 5.1 and 168 us in its three rounds (one round met a stall); the mean, 59
// us, made every message of the target's prediction cost ten times the link's latency.
TEST(Probe, LatencyIsTheMedianOverRounds) {
  std::ostringstream text;
  text.precision(17);
  const double zero_byte[3] = {5.28e-6, 5.14e-6, 168e-6};
  for (int k = 0; k < 3; ++k)
    for (double bytes : {0.0, 262144.0, 1048576.0})
      text << R"({"probe":"pingpong","bytes":)" << bytes << R"(,"reps":3,"replication":)" << k
           << R"(,"mean_s":)" << (bytes == 0 ? zero_byte[k] : 5.2e-6 + bytes / 500e6) << "}\n";
  ProbeSamples s = WithBarrierAndKernels(text.str());
  PlatformTable t = EstimatePlatform(s, Context());
  EXPECT_NEAR(t.Parameter("b1")->value, 5.28e-6, 1e-12);
  EXPECT_NE(t.Parameter("b1")->source.find("median over the replications"), std::string::npos)
      << t.Parameter("b1")->source;
  // The rate is unaffected by the outlying round's latency.
  EXPECT_NEAR(t.Parameter("a1")->value, 500, 0.01 * 500);
}

// net20 (issue 20): on a token bucket a1 is the marginal rate of the messages far above the burst.
// plfB-D's 1 Gbit/s rounds (80 KiB burst, 125 MB/s): every message beyond the burst pays a delay
// of its own (64 KiB 1-2.6 ms, where the rate says 0.5 ms); a line held at the 0-byte latency
// charges that delay to the bytes and gave 60-100 MB/s. Here: 2 ms per large message on a 125
// MB/s link, three rounds.
TEST(Probe, RateOfATokenBucketIsTheMarginalRateOfTheLargeMessages) {
  auto table = [](double rate, double nominal_mbs) {
    std::ostringstream text;
    text.precision(17);
    for (int k = 0; k < 3; ++k)
      for (double bytes : {0.0, 65536.0, 262144.0, 1048576.0}) {
        double t = bytes == 0 ? 7e-6 : 7e-6 + 2e-3 + bytes / rate * (1 + 0.01 * (k - 1));
        text << R"({"probe":"pingpong","bytes":)" << bytes << R"(,"reps":3,"replication":)" << k
             << R"(,"mean_s":)" << t << "}\n";
      }
    ProbeSamples s = WithBarrierAndKernels(text.str());
    ProbeContext c = Context();
    c.burst_bytes = 81920;
    c.burst_rate_mbs = nominal_mbs;
    return EstimatePlatform(s, c);
  };
  PlatformTable t = table(125e6, 125);
  EXPECT_NEAR(t.Parameter("a1")->value, 125, 0.02 * 125);
  EXPECT_NE(t.Parameter("a1")->source.find("marginal rate"), std::string::npos)
      << t.Parameter("a1")->source;
  EXPECT_NEAR(t.Parameter("b1")->value, 7e-6, 1e-12);
  // Rounds that measure faster than the bucket's rate are capped at it.
  PlatformTable fast = table(140e6, 125);
  EXPECT_DOUBLE_EQ(fast.Parameter("a1")->value, 125);
  EXPECT_NE(fast.Parameter("a1")->source.find("capped at the bucket's nominal 125 MB/s"),
            std::string::npos)
      << fast.Parameter("a1")->source;
}

}  // namespace
}  // namespace invmw::fit
