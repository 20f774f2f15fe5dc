// The profile merge (MergeDirectory) on raw/ directories holding what a crashed or tampered run
// leaves: copies, duplicate ranks, directories, FIFOs, symlinks, corrupt dumps, counters that
// overflow when summed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "recording/profile_report.h"

namespace invmw::profile {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class Merge : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("invmw-merge-" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
             std::to_string(getpid())))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/raw");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  static raw::RankHeader Header(int rank, int world) {
    raw::RankHeader h{};
    h.magic = raw::kMagic;
    h.version = raw::kVersion;
    h.header_size = sizeof h;
    h.record_size = sizeof(raw::FuncRecord);
    h.rank = rank;
    h.world_size = world;
    h.pid = 100 + rank;
    h.ticks_per_second = 1e9;
    h.wall_s = 2.0;
    h.num_funcs = 1;
    std::strcpy(h.host, "node-a");
    return h;
  }
  static raw::FuncRecord Send(uint64_t calls) {
    raw::FuncRecord f{};
    std::strcpy(f.name, "MPI_Send");
    f.calls = calls;
    f.ticks = 1000000;
    f.bytes_sent = 8 * calls;
    f.hist[raw::HistBin(8)] = calls;
    return f;
  }
  // Writes raw/<name> holding header h and one MPI_Send record with `calls` calls.
  void Write(const std::string& name, const raw::RankHeader& h, uint64_t calls = 5,
             const std::string& extra = "") {
    std::ofstream out(dir_ + "/raw/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    const raw::FuncRecord f = Send(calls);
    out.write(reinterpret_cast<const char*>(&f), sizeof f);
    out << extra;
  }
  void WriteRanks(int world) {
    for (int r = 0; r < world; ++r) Write(RawDumpPath("", r).substr(5), Header(r, world));
  }
  json Profile() {
    std::ifstream in(dir_ + "/profile.json");
    return json::parse(in);
  }
  std::string Text() {
    std::ifstream in(dir_ + "/profile.txt");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  bool Merged(std::vector<std::string>* problems = nullptr) {
    std::string err;
    const bool ok = MergeDirectory(dir_, &err, nullptr, problems);
    EXPECT_TRUE(ok) << err;
    return ok;
  }
  static bool AnyHas(const std::vector<std::string>& v, const std::string& a,
                     const std::string& b = "", const std::string& c = "") {
    for (const auto& s : v)
      if (s.find(a) != std::string::npos && s.find(b) != std::string::npos &&
          s.find(c) != std::string::npos)
        return true;
    return false;
  }
  uint64_t SendCalls() { return Profile()["functions"]["MPI_Send"]["calls"].get<uint64_t>(); }

  std::string dir_;
};

TEST_F(Merge, StrayCopyIsNotCountedAndIsNamed) {
  WriteRanks(2);
  fs::copy_file(dir_ + "/raw/rank-000000.bin", dir_ + "/raw/rank-000000 copy.bin");
  fs::copy_file(dir_ + "/raw/rank-000001.bin", dir_ + "/raw/rank-1.bin");
  fs::copy_file(dir_ + "/raw/rank-000001.bin", dir_ + "/raw/rank-0000001.bin");
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_EQ(SendCalls(), 10u);
  EXPECT_FALSE(Profile()["incomplete"].get<bool>());
  EXPECT_TRUE(AnyHas(problems, "rank-000000 copy.bin", "not a rank dump name"))
      << ::testing::PrintToString(problems);
  EXPECT_TRUE(AnyHas(problems, "rank-1.bin", "not a rank dump name"));
  EXPECT_TRUE(AnyHas(problems, "rank-0000001.bin", "not a rank dump name"));
  EXPECT_EQ(Profile()["raw_problems"].size(), 3u);
  EXPECT_NE(Text().find("rank-000000 copy.bin"), std::string::npos);
}

TEST_F(Merge, DuplicateRankIsAnErrorNamingBothFilesAndCountedOnce) {
  WriteRanks(1);
  fs::copy_file(dir_ + "/raw/rank-000000.bin", dir_ + "/raw/rank-000001.bin");
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_EQ(SendCalls(), 5u);
  EXPECT_EQ(Profile()["summary"]["ranks_reported"].get<int>(), 1);
  EXPECT_TRUE(
      AnyHas(problems, "raw/rank-000001.bin: holds the dump of rank 0", "raw/rank-000000.bin"))
      << ::testing::PrintToString(problems);
}

TEST_F(Merge, HighestRankNameIsNotCountedAgain) {
  WriteRanks(2);
  fs::copy_file(dir_ + "/raw/rank-000000.bin", dir_ + "/raw/rank-2147483647.bin");
  fs::copy_file(dir_ + "/raw/rank-000000.bin", dir_ + "/raw/rank-2147483648.bin");
  fs::copy_file(dir_ + "/raw/rank-000000.bin", dir_ + "/raw/rank-99999999999.bin");
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_EQ(SendCalls(), 10u);
  EXPECT_TRUE(AnyHas(problems, "rank-2147483647.bin", "rank 0"));
  EXPECT_TRUE(AnyHas(problems, "rank-2147483648.bin", "not a rank dump name"));
  EXPECT_TRUE(AnyHas(problems, "rank-99999999999.bin", "not a rank dump name"));
}

TEST_F(Merge, DirectoryAndSymlinkAreNamedNotRead) {
  WriteRanks(2);
  fs::create_directory(dir_ + "/raw/rank-000002.bin");
  fs::create_symlink("/dev/zero", dir_ + "/raw/rank-000003.bin");
  fs::create_symlink(dir_ + "/raw/rank-000000.bin", dir_ + "/raw/rank-000004.bin");
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_EQ(SendCalls(), 10u);
  EXPECT_TRUE(AnyHas(problems, "rank-000002.bin", "directory"))
      << ::testing::PrintToString(problems);
  EXPECT_TRUE(AnyHas(problems, "rank-000003.bin", "symbolic link"));
  EXPECT_TRUE(AnyHas(problems, "rank-000004.bin", "symbolic link"));
}

// Before the fix this test hung in open(2) of the FIFO (CTest's timeout ends it).
TEST_F(Merge, FifoDoesNotBlock) {
  WriteRanks(1);
  ASSERT_EQ(mkfifo((dir_ + "/raw/rank-000001.bin").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((dir_ + "/raw/resources-000000.json").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((dir_ + "/meta.json").c_str(), 0600), 0);
  std::string err;
  EXPECT_FALSE(MergeDirectory(dir_, &err));  // meta.json is unusable: named
  EXPECT_NE(err.find("meta.json: is a FIFO"), std::string::npos) << err;
  fs::remove(dir_ + "/meta.json");
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_EQ(SendCalls(), 5u);
  EXPECT_TRUE(AnyHas(problems, "rank-000001.bin", "FIFO")) << ::testing::PrintToString(problems);
  EXPECT_NE(Profile()["resources"]["problems"].dump().find("FIFO"), std::string::npos);
}

TEST_F(Merge, CorruptDumpsAreNamedWithWhatIsWrong) {
  const int world = 8;
  Write("rank-000000.bin", Header(0, world));
  auto h = Header(1, world);
  h.ticks_per_second = 0;
  Write("rank-000001.bin", h);
  h = Header(2, world);
  h.ticks_per_second = std::numeric_limits<double>::quiet_NaN();
  Write("rank-000002.bin", h);
  h = Header(3, world);
  h.ticks_per_second = std::numeric_limits<double>::infinity();
  Write("rank-000003.bin", h);
  h = Header(4, world);
  h.magic = 0;
  Write("rank-000004.bin", h);
  Write("rank-000005.bin", Header(5, world), 5, "trailing");
  h = Header(6, world);
  h.num_funcs = 3;  // claims more records than the file holds
  Write("rank-000006.bin", h);
  h = Header(7, world);
  h.world_size = 2147483647;
  h.rank = 7;
  Write("rank-000007.bin", h);
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  const json p = Profile();
  EXPECT_EQ(SendCalls(), 5u);
  EXPECT_TRUE(p["incomplete"].get<bool>());  // ranks 1..7 are missing
  EXPECT_EQ(p["missing_ranks"].size(), 7u);
  EXPECT_TRUE(AnyHas(problems, "rank-000001.bin", "ticks_per_second is 0"))
      << ::testing::PrintToString(problems);
  EXPECT_TRUE(AnyHas(problems, "rank-000002.bin", "ticks_per_second is nan"));
  EXPECT_TRUE(AnyHas(problems, "rank-000003.bin", "ticks_per_second is inf"));
  EXPECT_TRUE(AnyHas(problems, "rank-000004.bin", "bad magic"));
  EXPECT_TRUE(AnyHas(problems, "rank-000005.bin", "8 bytes after the last"));
  EXPECT_TRUE(AnyHas(problems, "rank-000006.bin", "truncated"));
  EXPECT_TRUE(AnyHas(problems, "rank-000007.bin", "world_size 2147483647"));
  EXPECT_EQ(p["raw_problems"].size(), 7u);
}

TEST_F(Merge, DumpOfAnotherWorldSizeIsLeftOut) {
  WriteRanks(2);
  Write("rank-000002.bin", Header(2, 3));
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_EQ(SendCalls(), 10u);
  EXPECT_TRUE(AnyHas(problems, "rank-000002.bin", "world of 3 ranks", "says 2"))
      << ::testing::PrintToString(problems);
}

TEST_F(Merge, CounterSumsSaturateAndAreFlagged) {
  Write("rank-000000.bin", Header(0, 2), std::numeric_limits<uint64_t>::max() - 1);
  Write("rank-000001.bin", Header(1, 2), 5);
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  const json p = Profile();
  EXPECT_EQ(SendCalls(), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(p["counters_saturated"].get<bool>());
  EXPECT_TRUE(p["functions"]["MPI_Send"]["saturated"].get<bool>());
  EXPECT_TRUE(AnyHas(problems, "functions.MPI_Send.calls", "saturated"))
      << ::testing::PrintToString(problems);
  EXPECT_TRUE(AnyHas(problems, "functions.MPI_Send.histogram", "saturated"));
  EXPECT_NE(Text().find("saturated"), std::string::npos);
}

// Direction histograms are merged per rank and summed over ranks; profile.txt shows sent and
// received sizes apart, and a record without them (the PVM runtime's) by its per-call histogram.
TEST_F(Merge, DirectionHistogramsAndTheirText) {
  WriteRanks(2);
  ASSERT_TRUE(Merged());
  EXPECT_NE(Text().find("MPI_Send                 all :  [8-15 B] 10"), std::string::npos)
      << Text();
  raw::RankHeader h = Header(0, 1);
  h.num_funcs = 1;
  raw::FuncRecord f{};
  std::strcpy(f.name, "MPI_Irecv");
  f.calls = 3;
  f.bytes_recv = 3 * 400000;
  f.hist[raw::HistBin(400000)] = 3;
  f.hist_recv[raw::HistBin(400000)] = 3;
  fs::remove_all(dir_ + "/raw");
  fs::create_directories(dir_ + "/raw");
  {
    std::ofstream out(dir_ + "/raw/rank-000000.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(&f), sizeof f);
  }
  ASSERT_TRUE(Merged());
  const json irecv = Profile()["functions"]["MPI_Irecv"];
  ASSERT_EQ(irecv["histogram_recv"].size(), 1u);
  EXPECT_EQ(irecv["histogram_recv"][0]["bin"], "262144-524287");
  EXPECT_EQ(irecv["histogram_recv"][0]["count"], 3u);
  EXPECT_TRUE(irecv["histogram_sent"].empty());
  EXPECT_NE(Text().find("MPI_Irecv                recv:  [262144-524287 B] 3"), std::string::npos)
      << Text();
  EXPECT_EQ(Text().find("MPI_Irecv                all"), std::string::npos);
}

// Beyond RLIMIT_FSIZE the profile is an error, not SIGXFSZ ending `invmw run` (before: the
// test binary died of the signal).
TEST_F(Merge, FileSizeLimitIsAnErrorNotASignal) {
  WriteRanks(2);
  struct rlimit old, low;
  getrlimit(RLIMIT_FSIZE, &old);
  low = old;
  low.rlim_cur = 0;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &low), 0);
  std::string err;
  const bool ok = MergeDirectory(dir_, &err);
  setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_FALSE(ok);
  EXPECT_NE(err.find("profile.json"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir_ + "/profile.json"));
  struct sigaction sa;
  sigaction(SIGXFSZ, nullptr, &sa);
  EXPECT_EQ(sa.sa_handler, SIG_DFL);
}

// The runtime's path: rank 0 gathers every dump; one that did not parse stays a default
// RankData and must not become a second rank 0.
// A rank ended inside a call: the dump's OpenCallRecord becomes ranks[].in_call and a
// profile.txt sentence; a dump without one (older ones too) reads as in no call; a trailer that
// is not an open-call record is rejected, named.
TEST_F(Merge, OpenCallIsNamedInJsonAndText) {
  raw::RankHeader h0 = Header(0, 2), h1 = Header(1, 2);
  h0.flags = h1.flags = raw::kFlagIncomplete;
  h0.end_reason = h1.end_reason = raw::kEndSignal;
  h0.end_signal = 15;
  h0.end_ticks = 5000000000ull;
  raw::OpenCallRecord o{};
  o.magic = raw::kOpenCallMagic;
  o.record_size = sizeof o;
  std::strcpy(o.name, "MPI_Recv");
  o.peer = 1;
  o.tag = 7;
  o.comm = 0;
  o.flags = raw::kOpenPeerKnown | raw::kOpenCommKnown;
  o.enter_ticks = 4020000000ull;  // 0.98 s before the end at 1e9 ticks/s
  Write("rank-000000.bin", h0, 5, std::string(reinterpret_cast<const char*>(&o), sizeof o));
  Write("rank-000001.bin", h1);
  ASSERT_TRUE(Merged());
  const json p = Profile();
  const json& c = p["ranks"][0]["in_call"];
  ASSERT_TRUE(c.is_object()) << p["ranks"][0].dump();
  EXPECT_EQ(c["function"], "MPI_Recv");
  EXPECT_EQ(c["peer"], 1);
  EXPECT_EQ(c["tag"], 7);
  EXPECT_EQ(c["communicator"], 0);
  EXPECT_NEAR(c["seconds"].get<double>(), 0.98, 1e-9);
  EXPECT_TRUE(p["ranks"][1]["in_call"].is_null());
  EXPECT_NE(Text().find("rank 0 was in MPI_Recv from rank 1, tag 7, for 0.98 s when the run "
                        "ended"),
            std::string::npos)
      << Text();

  o.magic = 0x12345678;
  Write("rank-000000.bin", h0, 5, std::string(reinterpret_cast<const char*>(&o), sizeof o));
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_TRUE(AnyHas(problems, "rank-000000.bin", "not an open-call record")) << problems.size();
}

// raw/live-NNNNNN.bin as the runtime leaves it for a SIGKILLed rank: names MPI_Send and
// MPI_Recv, slot_count slots of which `used` hold counts (slot t: MPI_Send sends[t] calls of
// 8 bytes), the rest of the file a hole.
class LiveMerge : public Merge {
 protected:
  void WriteLive(int rank, int world, std::vector<uint64_t> sends, uint32_t slot_count = 4,
                 uint32_t magic = raw::kLiveMagic, uint32_t used_override = 0) {
    raw::LiveHeader h{};
    h.magic = magic;
    h.version = raw::kLiveVersion;
    h.header_size = sizeof h;
    h.counters_size = sizeof(raw::FuncCounters);
    h.num_funcs = 2;
    h.slot_count = slot_count;
    h.slots_used = used_override ? used_override : uint32_t(sends.size());
    h.names_offset = sizeof h;
    h.slots_offset = 4096;
    h.slot_size = 2 * sizeof(raw::FuncCounters);
    h.rank = Header(rank, world);
    h.rank.num_funcs = 0;
    h.rank.wall_s = 0;
    h.rank.flags = raw::kFlagIncomplete;
    h.rank.end_reason = raw::kEndKilled;
    std::string f(h.slots_offset + slot_count * h.slot_size, '\0');
    std::memcpy(&f[0], &h, sizeof h);
    std::strcpy(&f[h.names_offset], "MPI_Send");
    std::strcpy(&f[h.names_offset + 48], "MPI_Recv");
    for (size_t t = 0; t < sends.size() && t < slot_count; ++t) {
      raw::FuncCounters c{};
      c.calls = sends[t];
      c.ticks = 1000 * sends[t];
      c.bytes_sent = 8 * sends[t];
      c.max_ticks = 1000 + t;
      c.hist[raw::HistBin(8)] = sends[t];
      c.hist_sent[raw::HistBin(8)] = sends[t];
      std::memcpy(&f[h.slots_offset + t * h.slot_size], &c, sizeof c);
    }
    std::ofstream out(dir_ + "/raw/" + LiveCountersPath("", rank).substr(5), std::ios::binary);
    out.write(f.data(), std::streamsize(f.size()));
  }
};

// Rank 1 was SIGKILLed: its dump file is empty (created at MPI_Init, never written), its live
// file holds what its two threads completed; rank 0 saved a dump.
TEST_F(LiveMerge, RankWithoutADumpCountsFromItsLiveFile) {
  Write("rank-000000.bin", Header(0, 2), 5);
  std::ofstream(dir_ + "/raw/rank-000001.bin").close();
  WriteLive(1, 2, {3, 4});
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_TRUE(problems.empty()) << problems.front();
  const json p = Profile();
  EXPECT_TRUE(p["incomplete"].get<bool>());
  EXPECT_TRUE(p["missing_ranks"].empty()) << p["missing_ranks"].dump();
  ASSERT_EQ(p["ranks"].size(), 2u);
  const json& r1 = p["ranks"][1];
  EXPECT_EQ(r1["rank"], 1);
  EXPECT_EQ(r1["end"], "killed");
  EXPECT_TRUE(r1["incomplete"].get<bool>());
  EXPECT_EQ(r1["threads"], 2);
  EXPECT_EQ(r1["functions"]["MPI_Send"]["calls"], 7);
  EXPECT_EQ(r1["functions"]["MPI_Send"]["bytes_sent"], 56);
  EXPECT_FALSE(r1["functions"].contains("MPI_Recv"));  // no calls: left out, as in a dump
  EXPECT_EQ(SendCalls(), 12u);
}

// Only slots below slots_used count; a dump, when the rank wrote one, wins over its live file.
TEST_F(LiveMerge, UnusedSlotsAndSupersededFilesDoNotCount) {
  WriteLive(0, 1, {3, 4}, 4, raw::kLiveMagic, 1);
  ASSERT_TRUE(Merged());
  EXPECT_EQ(SendCalls(), 3u);
  Write("rank-000000.bin", Header(0, 1), 9);
  ASSERT_TRUE(Merged());
  EXPECT_EQ(SendCalls(), 9u);
  EXPECT_EQ(Profile()["ranks"][0]["end"], "finalize");
}

// A rank that died inside MPI_Init (no magic yet), a layout pointing past the file's end, and a
// live file of another rank are named and left out, never read as counts.
TEST_F(LiveMerge, BadLiveFilesAreNamedAndLeftOut) {
  Write("rank-000000.bin", Header(0, 3), 5);
  WriteLive(1, 3, {3}, 4, 0);
  WriteLive(2, 3, {3}, 2, raw::kLiveMagic, 3);
  std::vector<std::string> problems;
  ASSERT_TRUE(Merged(&problems));
  EXPECT_TRUE(AnyHas(problems, "live-000001.bin", "died inside MPI_Init")) << problems.size();
  EXPECT_TRUE(AnyHas(problems, "live-000002.bin", "layout out of range"));
  json p = Profile();
  EXPECT_EQ(p["missing_ranks"], json({1, 2}));
  EXPECT_EQ(SendCalls(), 5u);

  fs::remove(dir_ + "/raw/live-000002.bin");
  WriteLive(1, 3, {3});
  fs::rename(dir_ + "/raw/live-000001.bin", dir_ + "/raw/live-000002.bin");
  problems.clear();
  ASSERT_TRUE(Merged(&problems));
  EXPECT_TRUE(AnyHas(problems, "live-000002.bin", "holds the dump of rank 1"));
  EXPECT_EQ(SendCalls(), 5u);
}

TEST(BuildProfile, UnparsedAndRepeatedEntriesAreLeftOut) {
  std::vector<RankData> ranks(3);
  ASSERT_TRUE([&] {
    raw::RankHeader h{};
    h.magic = raw::kMagic;
    h.version = raw::kVersion;
    h.header_size = sizeof h;
    h.record_size = sizeof(raw::FuncRecord);
    h.world_size = 2;
    h.ticks_per_second = 1e9;
    h.num_funcs = 1;
    std::string buf(reinterpret_cast<const char*>(&h), sizeof h);
    raw::FuncRecord f{};
    std::strcpy(f.name, "MPI_Send");
    f.calls = 3;
    buf.append(reinterpret_cast<const char*>(&f), sizeof f);
    std::string err;
    return ParseDump(buf.data(), buf.size(), &ranks[0], &err) &&
           ParseDump(buf.data(), buf.size(), &ranks[2], &err);
  }());
  RunMeta meta;
  meta.world_size = 2;
  const json p = BuildProfile(ranks, meta, false);
  EXPECT_EQ(p["summary"]["ranks_reported"].get<int>(), 1);
  EXPECT_EQ(p["functions"]["MPI_Send"]["calls"].get<uint64_t>(), 3u);
  EXPECT_EQ(p["raw_problems"].size(), 2u) << p["raw_problems"].dump();
  EXPECT_EQ(p["missing_ranks"], json({1}));
}

TEST(DumpFileName, OnlyTheExactPattern) {
  int r = -1;
  EXPECT_TRUE(ParseDumpFileName("rank-000000.bin", &r));
  EXPECT_EQ(r, 0);
  EXPECT_TRUE(ParseDumpFileName("rank-1234567.bin", &r));
  EXPECT_EQ(r, 1234567);
  EXPECT_TRUE(ParseDumpFileName("rank-2147483647.bin", &r));
  for (const char* bad : {"rank-000000 copy.bin", "rank-0.bin", "rank-0000000.bin",
                          "rank-+00000.bin", "rank--00001.bin", "rank-000000.bin.tmp",
                          "rank-2147483648.bin", "rank-000000.BIN", "rank-.bin"})
    EXPECT_FALSE(ParseDumpFileName(bad, &r)) << bad;
}

}  // namespace
}  // namespace invmw::profile
