// The tier schedule (sampler/tiers.h): N from a measured cost and the budget, which sources are
// read on which tick, INVMW_SAMPLER_EVERY; and in a real sampler, that the slow sources are read
// only on their ticks and their values still arrive in the samples.
#include "sampler/tiers.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "otf2_writer/raw_samples.h"
#include "sampler/sampler.h"
#include "sampler/source.h"

namespace invmw::sampler {
namespace {

namespace fs = std::filesystem;

TEST(Tiers, EveryFromCostAndBudget) {
  // 4 slow sources sharing 250 us/s: 62.5 us/s each; at 10 ms a 10 us reading fits every
  // 10 us / (62.5 us/s * 10 ms) = 16 ticks.
  EXPECT_EQ(tiers::ChooseEvery(10e-6, 0.010, 250e-6, 4, 100), 16u);
  // Cheap enough for every tick.
  EXPECT_EQ(tiers::ChooseEvery(0.1e-6, 0.010, 250e-6, 4, 100), 1u);
  // Capped by the longest gap (INVMW_SAMPLER_SLOW_MAX), even above the budget.
  EXPECT_EQ(tiers::ChooseEvery(10e-3, 0.010, 250e-6, 4, 100), 100u);
  // Budget 0, or a cost not measured yet: every tick.
  EXPECT_EQ(tiers::ChooseEvery(10e-6, 0.010, 0, 4, 100), 1u);
  EXPECT_EQ(tiers::ChooseEvery(0, 0.010, 250e-6, 4, 100), 1u);
  // A longer interval needs a smaller N for the same budget.
  EXPECT_EQ(tiers::ChooseEvery(10e-6, 0.100, 250e-6, 4, 100), 2u);
  EXPECT_EQ(tiers::MaxEvery(1.0, 0.010), 100u);
  EXPECT_EQ(tiers::MaxEvery(1.0, 2.0), 1u);
  EXPECT_EQ(tiers::MaxEvery(0, 0.010), 1u);
}

TEST(Tiers, WhichSourcesOnWhichTick) {
  // Three slow sources at N = 3 with consecutive offsets, and a fast one: each tick reads the
  // fast source and exactly one slow one, each slow one every third tick.
  const uint32_t every = 3;
  for (uint64_t tick = 0; tick < 30; ++tick) {
    int due = 0;
    for (size_t k = 0; k < 3; ++k) {
      const bool d = tiers::Due(every, tiers::Phase(k, every), tick);
      EXPECT_EQ(d, (tick + k) % 3 == 0) << "tick " << tick << " source " << k;
      due += d;
    }
    EXPECT_EQ(due, 1) << "tick " << tick;
    EXPECT_TRUE(tiers::Due(1, 0, tick));
  }
  EXPECT_TRUE(tiers::Due(5, 0, 0));
  EXPECT_FALSE(tiers::Due(5, 0, 4));
  EXPECT_TRUE(tiers::Due(5, 1, 4));
  EXPECT_EQ(tiers::Phase(7, 1), 0u);
}

TEST(Tiers, CostFromRecentReadings) {
  // Readings of node_cpu at 10 ms as measured here: one cheap outlier (13 us), one preempted
  // (90 us), the rest 18-22 us. N comes from the typical reading, not the least (which made the
  // slow sources take twice their budget) nor the preempted one.
  tiers::CostEstimate c;
  EXPECT_EQ(c.Median(), 0);
  for (double us : {13.0, 20.0, 21.0, 90.0, 19.0, 22.0, 20.0, 18.0}) c.Add(us * 1e-6);
  EXPECT_EQ(c.count(), 8u);
  EXPECT_DOUBLE_EQ(c.Median(), 20e-6);
  EXPECT_EQ(tiers::ChooseEvery(c.Median(), 0.010, 250e-6, 4, 100), 32u);
  // Only the last kRecent count: the cost follows the machine's load.
  for (int i = 0; i < 8; ++i) c.Add(40e-6);
  EXPECT_DOUBLE_EQ(c.Median(), 40e-6);
  // Of an even number, the lower middle one; a single reading is its own estimate.
  tiers::CostEstimate d;
  d.Add(30e-6);
  EXPECT_DOUBLE_EQ(d.Median(), 30e-6);
  d.Add(10e-6);
  EXPECT_DOUBLE_EQ(d.Median(), 10e-6);
}

TEST(Tiers, CountersEveryFromTheirOwnBudget) {
  // INVMW_SAMPLER_COUNTERS_BUDGET 250 us/s at 10 ms: 2.5 us per tick. A group read of a thread on
  // bare metal (1-2 us) is read every tick; the same read of a thread running on another CPU in
  // this VM (a cross-CPU call, 15-20 us) every 8th, 18 us / (250 us/s x 10 ms) = 7.2.
  EXPECT_EQ(tiers::MeasuredEvery(1.5e-6, 0.010, 250e-6, 100), 1u);
  EXPECT_EQ(tiers::MeasuredEvery(2.5e-6, 0.010, 250e-6, 100), 1u);
  EXPECT_EQ(tiers::MeasuredEvery(3e-6, 0.010, 250e-6, 100), 2u);
  EXPECT_EQ(tiers::MeasuredEvery(18e-6, 0.010, 250e-6, 100), 8u);
  // Not measured yet, or budget 0 (the user's "every tick"): every tick.
  EXPECT_EQ(tiers::MeasuredEvery(0, 0.010, 250e-6, 100), 1u);
  EXPECT_EQ(tiers::MeasuredEvery(18e-6, 0.010, 0, 100), 1u);
  // At 1 ms the same budget allows 0.25 us per tick; capped by INVMW_SAMPLER_SLOW_MAX.
  EXPECT_EQ(tiers::MeasuredEvery(1.5e-6, 0.001, 250e-6, 1000), 6u);
  EXPECT_EQ(tiers::MeasuredEvery(18e-6, 0.001, 250e-6, 50), 50u);
  // The budget is the counters' alone: the slow sources' count does not divide it.
  EXPECT_EQ(tiers::MeasuredEvery(18e-6, 0.010, 250e-6, 100),
            tiers::ChooseEvery(18e-6, 0.010, 250e-6, 1, 100));
}

TEST(Tiers, SettleKeepsSmallChanges) {
  // A re-planned N replaces the current one only when it moved by more than an eighth.
  EXPECT_FALSE(tiers::Settle(32, 32));
  EXPECT_FALSE(tiers::Settle(32, 36));
  EXPECT_FALSE(tiers::Settle(32, 28));
  EXPECT_TRUE(tiers::Settle(32, 37));
  EXPECT_TRUE(tiers::Settle(32, 27));
  EXPECT_TRUE(tiers::Settle(4, 5));
  EXPECT_TRUE(tiers::Settle(1, 2));
  EXPECT_FALSE(tiers::Settle(1, 1));
}

TEST(Tiers, ParseEvery) {
  std::map<std::string, uint32_t> m;
  std::string e;
  ASSERT_TRUE(tiers::ParseEvery({"net=10", "disk=1"}, &m, &e)) << e;
  EXPECT_EQ(m.at("net"), 10u);
  EXPECT_EQ(m.at("disk"), 1u);
  for (const char* bad : {"net", "net=", "=4", "net=0", "net=-3", "net=2x", "net=+2"}) {
    std::map<std::string, uint32_t> b;
    EXPECT_FALSE(tiers::ParseEvery({bad}, &b, &e)) << bad;
    EXPECT_NE(e.find(bad), std::string::npos) << e;
  }
}

TEST(Tiers, SlowSourcesReadOnTheirTicksAndArrive) {
  const std::string dir =
      fs::temp_directory_path() / ("invmw-sampler-test-tiers-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  config::Config cfg = config::Load();
  cfg.SAMPLER_INTERVAL = 0.005;
  cfg.SAMPLER_STREAM.clear();
  cfg.SAMPLER_SOURCES = {"proc", "node_cpu", "net"};
  cfg.SAMPLER_EVERY = {"node_cpu=4", "proc=3"};
  StartOptions o;
  o.run_dir = dir;
  o.config = &cfg;
  o.warn = [](const std::string& m) { ADD_FAILURE() << "warning: " << m; };
  std::string err;
  ASSERT_TRUE(Start(o, &err)) << err;
  // Busy, so the process's CPU time (fast tier) moves between the slow readings. Nothing
  // below depends on how many samples a loaded machine lets the thread take, beyond 16.
  const int64_t t0 = clock::MonotonicNs();
  volatile double sink = 0;
  while (clock::MonotonicNs() - t0 < 1500000000)
    for (int i = 0; i < 1000; ++i) sink = sink + i;
  Stop();
  const Stats st = LastStats();
  const Stats::SourceTier *cpu = nullptr, *proc = nullptr, *net = nullptr;
  for (const auto& t : st.tiers)
    (t.source == "node_cpu" ? cpu : t.source == "proc" ? proc : net) = &t;
  ASSERT_TRUE(cpu && proc && net);
  EXPECT_EQ(cpu->every, 4u);
  EXPECT_TRUE(cpu->fixed);
  EXPECT_EQ(proc->every, 3u);
  EXPECT_FALSE(net->fixed);
  EXPECT_GT(net->cost_s, 0) << "the budgeted source's cost is measured";

  otf2::RawSamples s;
  std::vector<std::string> problems;
  ASSERT_TRUE(otf2::LoadRawSamples(dir, 0, &s, &problems));
  ASSERT_GE(s.size(), 16u);
  const int user = s.Find("node_cpu.user"), idle = s.Find("node_cpu.idle"),
            rss = s.Find("proc.rss"), pcpu = s.Find("proc.cpu.user");
  ASSERT_TRUE(user >= 0 && idle >= 0 && rss >= 0 && pcpu >= 0);
  // All the node's CPU states together: the time of its CPUs, which always grows.
  auto node = [&](size_t i) {
    double sum = 0;
    for (size_t k = 0; k < s.metrics.size(); ++k)
      if (s.metrics[k].name.compare(0, 9, "node_cpu.") == 0) sum += s.at(i, k);
    return sum;
  };
  size_t node_changes = 0, node_due = 0, cpu_changes_off_tick = 0;
  // Sample 0 is the base (every source), the last one reads every source too.
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    const uint64_t tick = s.sample[i];
    const bool due = tiers::Due(cpu->every, cpu->phase, tick);
    node_due += due;
    if (node(i) != node(i - 1)) {
      ++node_changes;
      EXPECT_TRUE(due) << "node_cpu read on tick " << tick << ", not one of its ticks";
    }
    if (s.at(i, size_t(rss)) != s.at(i - 1, size_t(rss))) {
      EXPECT_TRUE(tiers::Due(proc->every, proc->phase, tick)) << "proc.rss read on tick " << tick;
    }
    if (!tiers::Due(proc->every, proc->phase, tick) &&
        s.at(i, size_t(pcpu)) != s.at(i - 1, size_t(pcpu)))
      ++cpu_changes_off_tick;
  }
  // The node's CPU time grows by 2 CPUs x 100 jiffies/s: 20 ms between readings always shows.
  EXPECT_GE(node_changes, node_due / 2) << "node_cpu's values do not arrive";
  EXPECT_GE(node_changes, 2u);
  EXPECT_GT(cpu_changes_off_tick, 0u) << "the process's CPU time is not read every tick";
  EXPECT_GT(s.at(s.size() - 1, size_t(rss)), 0) << "proc.rss never arrived";
  // The slow sources' readings: about one in N, plus the first and the last.
  EXPECT_LE(cpu->reads, s.size() / 4 + 3);
  EXPECT_GE(cpu->reads, s.size() / 4 - 1);

  // The schedule is in resources-R.json.
  std::ifstream in(dir + "/raw/resources-000000.json");
  const auto r = nlohmann::json::parse(in);
  EXPECT_EQ(r.at("tiers").at("node_cpu").at("every"), 4);
  EXPECT_EQ(r.at("tiers").at("proc").at("tier"), "slow");
  fs::remove_all(dir);
}

// Issue 23: the counters' reading is a cross-CPU call when the main thread runs on another CPU
// (15-20 us in this VM): their N comes from their measured cost and their own budget. A budget
// of 1 ns/s makes any measured reading too dear, so N is the INVMW_SAMPLER_SLOW_MAX cap (50 ms /
// 5 ms = 10) whatever the machine's speed; the values still arrive, change only on the
// counters' ticks, and the last sample reads them. Budget 0 or INVMW_SAMPLER_EVERY=counters=1:
// every tick, as before.
TEST(Tiers, CountersReadOnTheirTicksAndArrive) {
  struct Case {
    double budget;
    std::vector<std::string> every;
    uint32_t want_every;
    bool fixed;
  };
  for (const Case& c :
       {Case{1e-9, {}, 10, false}, Case{0, {}, 1, false}, Case{1e-9, {"counters=1"}, 1, true}}) {
    SCOPED_TRACE("budget " + std::to_string(c.budget) + (c.fixed ? " counters=1" : ""));
    const std::string dir =
        fs::temp_directory_path() / ("invmw-sampler-test-ctr-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    config::Config cfg = config::Load();
    cfg.SAMPLER_INTERVAL = 0.005;
    cfg.SAMPLER_STREAM.clear();
    cfg.SAMPLER_SOURCES = {"proc", "counters"};
    cfg.SAMPLER_PAPI = {"PAPI_TOT_INS"};
    cfg.SAMPLER_SLOW_MAX = 0.05;
    cfg.SAMPLER_COUNTERS_BUDGET = c.budget;
    cfg.SAMPLER_EVERY = c.every;
    StartOptions o;
    o.run_dir = dir;
    o.config = &cfg;
    o.warn = [](const std::string&) {};
    std::string err;
    ASSERT_TRUE(Start(o, &err)) << err;
    // Busy: the counters (the main thread's) move between their readings.
    const int64_t t0 = clock::MonotonicNs();
    volatile double sink = 0;
    while (clock::MonotonicNs() - t0 < 1000000000)
      for (int i = 0; i < 1000; ++i) sink = sink + i;
    Stop();
    const Stats st = LastStats();
    const Stats::SourceTier* ctr = nullptr;
    for (const auto& t : st.tiers)
      if (t.source == "counters") ctr = &t;
    if (!ctr) GTEST_SKIP() << "no counters and no kernel software events here";
    EXPECT_EQ(ctr->tier, "measured");
    EXPECT_EQ(ctr->every, c.want_every);
    EXPECT_EQ(ctr->fixed, c.fixed);
    if (!c.fixed) {
      EXPECT_GT(ctr->cost_s, 0) << "the counters' reading is measured";
    }

    otf2::RawSamples s;
    ASSERT_TRUE(otf2::LoadRawSamples(dir, 0, &s, nullptr));
    ASSERT_GE(s.size(), 40u);
    std::vector<size_t> cols;
    for (size_t k = 0; k < s.metrics.size(); ++k)
      if (s.metrics[k].source == "counters") cols.push_back(k);
    ASSERT_FALSE(cols.empty());
    size_t changes = 0;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
      bool changed = false;
      for (size_t k : cols) changed = changed || s.at(i, k) != s.at(i - 1, k);
      if (!changed) continue;
      ++changes;
      EXPECT_TRUE(tiers::Due(ctr->every, ctr->phase, s.sample[i]))
          << "counters read on tick " << s.sample[i] << ", not one of their ticks";
    }
    // Busy all along, so readings move the main thread's counters (task clock, instructions);
    // not every one on a loaded machine, where the main thread may not run between two.
    EXPECT_GE(changes, 2u) << "the counters' values do not arrive";
    double last = 0;
    for (size_t k : cols) last += s.at(s.size() - 1, k);
    EXPECT_GT(last, 0) << "the last sample reads the counters";
    EXPECT_LE(ctr->reads, s.size() / c.want_every + 3);
    std::ifstream in(dir + "/raw/resources-000000.json");
    const auto r = nlohmann::json::parse(in);
    EXPECT_EQ(r.at("tiers").at("counters").at("every"), c.want_every);
    EXPECT_EQ(r.at("tiers").at("counters").at("tier"), "measured");
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace invmw::sampler
