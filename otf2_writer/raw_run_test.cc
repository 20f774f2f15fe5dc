#include "otf2_writer/raw_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "otf2_writer/clock_model.h"
#include "otf2_writer/comm_map.h"
#include "otf2_writer/testing/synthetic_run.h"

namespace invmw::otf2 {
namespace {
namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  return (fs::temp_directory_path() / ("invmw-otf2-" + name + "-" + std::to_string(::getpid())))
      .string();
}

bool AnyContains(const std::vector<std::string>& v, const std::string& a,
                 const std::string& b = "") {
  for (const auto& s : v)
    if (s.find(a) != std::string::npos && s.find(b) != std::string::npos) return true;
  return false;
}

TEST(RawRun, LoadsEveryRecordOfEveryThread) {
  const std::string dir = TempDir("load");
  testing::Expected e = testing::WriteSyntheticRun(dir);
  RawRun run = LoadRawRun(dir);
  EXPECT_TRUE(run.problems.empty()) << run.problems.front();
  ASSERT_EQ(run.ranks.size(), 3u);
  EXPECT_EQ(run.world_size, 3);
  EXPECT_EQ(run.ranks[0].threads.size(), 2u);
  EXPECT_EQ(run.ranks[0].threads[1].name, "thread 1");
  EXPECT_EQ(run.NumRecords(), e.records);
  EXPECT_EQ(run.ranks[2].host, "node-b");
  EXPECT_TRUE(run.ranks[1].has_finalize_clock);
  fs::remove_all(dir);
}

TEST(RawRun, ToleratesCrashTruncationAndMissingFiles) {
  const std::string dir = TempDir("crash");
  testing::SyntheticOptions o;
  o.crash = true;
  testing::Expected e = testing::WriteSyntheticRun(dir, o);
  fs::remove(fs::path(dir) / "raw" / EventsFileName(0, 1));
  RawRun run = LoadRawRun(dir);
  EXPECT_TRUE(AnyContains(run.problems, "events-000002-000.bin", "cut short"))
      << ::testing::PrintToString(run.problems);
  EXPECT_TRUE(AnyContains(run.problems, "defs-000002.jsonl", "no \"end\" line"));
  EXPECT_TRUE(AnyContains(run.problems, "events-000000-001.bin", "missing"));
  const uint64_t thread1 = 2;  // the send and the flush of rank 0's second thread
  EXPECT_EQ(run.NumRecords(), e.records - thread1);
  fs::remove_all(dir);
}

TEST(RawRun, MissingRankAndMissingDirectory) {
  const std::string dir = TempDir("missing");
  testing::WriteSyntheticRun(dir);
  fs::remove(fs::path(dir) / "raw" / DefsFileName(1));
  RawRun run = LoadRawRun(dir);
  EXPECT_EQ(run.ranks.size(), 2u);
  EXPECT_TRUE(AnyContains(run.problems, "defs-000001.jsonl", "rank 1 is absent"));
  fs::remove_all(dir);
  EXPECT_THROW(LoadRawRun(dir), std::runtime_error);
}

TEST(RawRun, DamagedDefsLineIsReportedWithItsLineNumber) {
  const std::string dir = TempDir("baddefs");
  testing::WriteSyntheticRun(dir);
  std::ofstream(fs::path(dir) / "raw" / DefsFileName(1), std::ios::app)
      << "{\"type\":\"comm\",\"id\":";
  RawRun run = LoadRawRun(dir);
  EXPECT_EQ(run.ranks.size(), 3u);
  EXPECT_TRUE(AnyContains(run.problems, "defs-000001.jsonl:", "unusable line"));
  fs::remove_all(dir);
}

TEST(ClockModel, InterpolatesBetweenInitAndFinalizeAndIsMonotone) {
  RawRank r;
  r.rank = 1;
  r.has_init_clock = r.has_finalize_clock = true;
  r.init_clock = {1000000, 5000, 10};       // local ahead of rank 0 by 5000 at 1e6
  r.finalize_clock = {11000000, 6000, 10};  // ... by 6000 ten million ticks later
  std::string warn;
  ClockModel m = ClockModel::For(r, &warn);
  EXPECT_TRUE(warn.empty());
  EXPECT_EQ(m.ToGlobal(1000000), 1000000u - 5000);
  EXPECT_EQ(m.ToGlobal(11000000), 11000000u - 6000);
  EXPECT_EQ(m.ToGlobal(6000000), 6000000u - 5500);
  for (uint64_t t = 0; t < 20000000; t += 999) EXPECT_LE(m.ToGlobal(t), m.ToGlobal(t + 1));

  r.finalize_clock = {2000000, 900000, 10};  // 90% drift: a measurement error
  m = ClockModel::For(r, &warn);
  EXPECT_FALSE(m.has_second);
  EXPECT_NE(warn.find("finalize clock offset ignored"), std::string::npos);
  EXPECT_EQ(m.ToGlobal(9000000), 9000000u - 5000);
}

TEST(CommMap, UnifiesCommunicatorsAcrossRanks) {
  const std::string dir = TempDir("comms");
  testing::WriteSyntheticRun(dir);
  RawRun run = LoadRawRun(dir, {false});
  std::vector<std::string> problems;
  CommMap m;
  m.Build(run, &problems);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(m.comms().size(), 3u);  // world, {0,2}, {1}
  EXPECT_EQ(m.Global(0, 0), 0u);
  EXPECT_EQ(m.Global(0, 1), m.Global(2, 1));
  EXPECT_NE(m.Global(0, 1), m.Global(1, 1));
  EXPECT_EQ(m.CommRank(m.Global(2, 1), 2), 1u);
  EXPECT_EQ(m.CommRank(m.Global(2, 1), 1), UINT32_MAX);
  EXPECT_EQ(m.Global(1, 7), kNoComm);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace invmw::otf2
