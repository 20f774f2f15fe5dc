#include "otf2_writer/raw_run.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "otf2_writer/clock_model.h"
#include "otf2_writer/comm_map.h"
#include "otf2_writer/tests/synthetic_run.h"

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

// Rewrites raw/<file> with `from` replaced by `to` (first occurrence).
void Edit(const std::string& dir, const std::string& file, const std::string& from,
          const std::string& to) {
  const fs::path p = fs::path(dir) / "raw" / file;
  std::ifstream in(p);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
  std::ofstream(p, std::ios::trunc) << s;
}

TEST(RawRun, OnlyExactFileNamesAreRead) {
  const std::string dir = TempDir("names");
  testing::Expected e = testing::WriteSyntheticRun(dir);
  const fs::path raw = fs::path(dir) / "raw";
  fs::copy_file(raw / EventsFileName(1, 0), raw / "events-000001-000 copy.bin");
  fs::copy_file(raw / EventsFileName(1, 0), raw / "events-1-0.bin");
  // Before: std::stoi threw out_of_range out of the loader (an abort in `invmw run`).
  fs::copy_file(raw / EventsFileName(1, 0), raw / "events-99999999999-000.bin");
  fs::copy_file(raw / DefsFileName(1), raw / "defs-1.jsonl");
  RawRun run;
  ASSERT_NO_THROW(run = LoadRawRun(dir));
  EXPECT_EQ(run.ranks.size(), 3u);
  EXPECT_EQ(run.NumRecords(), e.records);
  for (const char* name :
       {"events-000001-000 copy.bin", "events-1-0.bin", "events-99999999999-000.bin"})
    EXPECT_TRUE(AnyContains(run.problems, name, "not an events file name"))
        << name << ::testing::PrintToString(run.problems);
  EXPECT_TRUE(AnyContains(run.problems, "defs-1.jsonl", "not a defs file name"));
  fs::remove_all(dir);
}

TEST(RawRun, DirectoriesSymlinksAndHugeFilesAreNamedNotRead) {
  const std::string dir = TempDir("types");
  testing::Expected e = testing::WriteSyntheticRun(dir);
  const fs::path raw = fs::path(dir) / "raw";
  fs::create_directory(raw / EventsFileName(1, 5));
  fs::create_symlink("/dev/zero", raw / EventsFileName(2, 5));
  fs::create_symlink(raw / DefsFileName(1), raw / DefsFileName(7));
  // A sparse file of a terabyte: before, the loader tried to allocate it (std::bad_alloc out
  // of LoadRawRun, or the OOM killer).
  {
    const fs::path big = raw / EventsFileName(2, 0);
    fs::resize_file(big, uint64_t(1) << 40);
  }
  RawRun run;
  ASSERT_NO_THROW(run = LoadRawRun(dir));
  EXPECT_TRUE(AnyContains(run.problems, EventsFileName(1, 5), "directory"))
      << ::testing::PrintToString(run.problems);
  EXPECT_TRUE(AnyContains(run.problems, EventsFileName(2, 5), "symbolic link"));
  EXPECT_TRUE(AnyContains(run.problems, DefsFileName(7), "symbolic link"));
  EXPECT_TRUE(AnyContains(run.problems, EventsFileName(2, 0), "more than"));
  EXPECT_LT(run.NumRecords(), e.records);
  fs::remove_all(dir);
}

// Before the fix this test hung in open(2) of the FIFOs (CTest's timeout ends it).
TEST(RawRun, FifosDoNotBlock) {
  const std::string dir = TempDir("fifo");
  testing::Expected e = testing::WriteSyntheticRun(dir);
  const fs::path raw = fs::path(dir) / "raw";
  ASSERT_EQ(mkfifo((raw / EventsFileName(1, 3)).c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((raw / DefsFileName(5)).c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((raw / "samples-000001.bin").c_str(), 0600), 0);
  RawRun run;
  ASSERT_NO_THROW(run = LoadRawRun(dir));
  EXPECT_EQ(run.NumRecords(), e.records);
  EXPECT_TRUE(AnyContains(run.problems, EventsFileName(1, 3), "FIFO"))
      << ::testing::PrintToString(run.problems);
  EXPECT_TRUE(AnyContains(run.problems, DefsFileName(5), "FIFO"));
  fs::remove_all(dir);
}

TEST(RawRun, WorldSizeAndTickRateAreChecked) {
  const std::string dir = TempDir("world");
  testing::WriteSyntheticRun(dir);
  Edit(dir, DefsFileName(1), "\"world_size\":3", "\"world_size\":4");
  Edit(dir, DefsFileName(2), "\"ticks_per_second\":1000000000.0", "\"ticks_per_second\":1e-300");
  RawRun run = LoadRawRun(dir);
  EXPECT_EQ(run.world_size, 3);
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_TRUE(AnyContains(run.problems, DefsFileName(1) + ": world size 4", DefsFileName(0)))
      << ::testing::PrintToString(run.problems);
  EXPECT_TRUE(AnyContains(run.problems, DefsFileName(2), "ticks_per_second"));

  // A world of 2^31-1 ranks claimed by every file: refused, not 2^31 "missing rank" lines.
  testing::WriteSyntheticRun(dir);
  for (int r = 0; r < 3; ++r)
    Edit(dir, DefsFileName(r), "\"world_size\":3", "\"world_size\":2147483647");
  EXPECT_THROW(LoadRawRun(dir), std::runtime_error);
  fs::remove_all(dir);
}

TEST(RawRun, ParseDefsWorksOnABuffer) {
  RawRank r;
  std::vector<std::string> problems;
  EXPECT_FALSE(ParseDefs("{\"type\":\"rank\",\"rank\":0,\"world_size\":1,\"ticks_per_second\":0}\n",
                         "x", &r, &problems));
  EXPECT_TRUE(AnyContains(problems, "x:1", "ticks_per_second"));
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
