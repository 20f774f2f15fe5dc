// The call-site file parser (errors name line and field) and the resolver on this test's own
// code: a return address taken at a known line resolves to this file and that line, using the
// mappings the recording core writes.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "callsites/callsite_file.h"
#include "callsites/resolve.h"
#include "recording/callsite_table.h"

using namespace invmw;

namespace {

const char kGood[] =
    "invmw-callsites 1\nrank 2\ndepth 1\nticks_per_second 1000000000.0\nmaps init\n"
    "m 1000 2000 0 1000 abcd /usr/bin/my app\nend-maps\n"
    "site MPI_Send 3 300 200 24 0 1010\nsite MPI_Recv 1 5 5 0 8 1020,1030\n"
    "unattributed MPI_Send 2 10 6 16 0\nend 2\n";

TEST(CallSiteFile, ParsesWhatTheRuntimeWrites) {
  callsites::RankFile f;
  std::string err;
  ASSERT_TRUE(callsites::ParseRankFile(kGood, &f, &err)) << err;
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.depth, 1);
  ASSERT_EQ(f.snapshots.size(), 1u);
  ASSERT_EQ(f.snapshots[0].maps.size(), 1u);
  EXPECT_EQ(f.snapshots[0].maps[0].path, "/usr/bin/my app");
  EXPECT_EQ(f.snapshots[0].maps[0].build_id, "abcd");
  ASSERT_EQ(f.sites.size(), 2u);
  EXPECT_EQ(f.sites[1].pcs.size(), 2u);
  EXPECT_EQ(f.sites[0].c.bytes_sent, 24u);
  ASSERT_EQ(f.unattributed.size(), 1u);
  EXPECT_EQ(f.unattributed_calls, 2u);
  EXPECT_TRUE(f.complete);
}

// Format 2: the thread lines and slots that link the trace's records to the sites.
TEST(CallSiteFile, ParsesThreadsAndSlotsOfFormat2) {
  std::string text = kGood;
  text.replace(text.find("invmw-callsites 1"), 17, "invmw-callsites 2");
  text.replace(text.find("site MPI_Send 3 300 200 24 0 1010\n"), 34,
               "thread 3\nsite MPI_Send 3 300 200 24 0 1010 @17\n");
  callsites::RankFile f;
  std::string err;
  ASSERT_TRUE(callsites::ParseRankFile(text, &f, &err)) << err;
  ASSERT_EQ(f.sites.size(), 2u);
  EXPECT_EQ(f.sites[0].thread, 3);
  EXPECT_EQ(f.sites[0].slot, 17);
  EXPECT_EQ(f.sites[1].slot, -1);
  text.replace(text.find("@17"), 3, "@x");
  EXPECT_FALSE(callsites::ParseRankFile(text, &f, &err));
  EXPECT_EQ(err.rfind("line 9: site slot", 0), 0u) << err;
}

TEST(CallSiteFile, ErrorsNameLineAndField) {
  struct Case {
    std::string from, to, want;
  } cases[] = {
      {"site MPI_Send 3 300", "site MPI_Send x3 300", "line 8: site calls"},
      {"m 1000 2000", "m 1000 0800", "line 6: mapping end"},
      {"abcd /usr", "abcd usr", "line 6: mapping path"},
      {"1020,1030", "1020,,1030", "line 9: site addresses"},
      {"depth 1", "depth 9", "line 3: depth"},
      {"invmw-callsites 1", "invmw-callsites 3", "line 1:"},
      {"end 2\n", "end 2\nsite MPI_Send 1 1 1 1 1 1\n", "line 12: text after"},
  };
  for (const Case& c : cases) {
    std::string text = kGood;
    text.replace(text.find(c.from), c.from.size(), c.to);
    callsites::RankFile f;
    std::string err;
    EXPECT_FALSE(callsites::ParseRankFile(text, &f, &err)) << c.to;
    EXPECT_EQ(err.rfind(c.want, 0), 0u) << err;
  }
  // Cut off before MPI_Finalize: parses, incomplete.
  std::string text = kGood;
  text.resize(text.find("end 2"));
  callsites::RankFile f;
  std::string err;
  ASSERT_TRUE(callsites::ParseRankFile(text, &f, &err)) << err;
  EXPECT_FALSE(f.complete);
}

TEST(CallSiteFile, FileNames) {
  int r = -1;
  EXPECT_TRUE(callsites::ParseRankFileName("rank-000042.txt", &r));
  EXPECT_EQ(r, 42);
  EXPECT_FALSE(callsites::ParseRankFileName("rank-42.txt", &r));
  EXPECT_FALSE(callsites::ParseRankFileName("rank-0000042.txt", &r));
  EXPECT_FALSE(callsites::ParseRankFileName("rank-000042.bin", &r));
}

__attribute__((noinline)) uint64_t ReturnAddressOfMyCaller() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

TEST(Resolver, ResolvesAReturnAddressToItsLine) {
  const int line = __LINE__ + 1;
  const uint64_t pc = ReturnAddressOfMyCaller();
  char path[] = "/tmp/invmw-callsites-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  recording::MappingLog maps;
  ASSERT_TRUE(recording::WriteCallSiteHeader(fd, 0, 1, 1e9));
  ASSERT_TRUE(maps.Snapshot(fd, "init"));
  EXPECT_TRUE(maps.Known(pc));
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path);
  callsites::RankFile f;
  std::string err;
  ASSERT_TRUE(callsites::ParseRankFile(ss.str(), &f, &err)) << err;
  callsites::Resolver r;
  const callsites::Frame fr = r.Resolve(f, pc);
  EXPECT_EQ(fr.how, "line");
  EXPECT_NE(fr.file.find("callsites_test.cc"), std::string::npos) << fr.file;
  EXPECT_EQ(fr.line, line);
  EXPECT_NE(fr.function.find("ResolvesAReturnAddressToItsLine"), std::string::npos) << fr.function;
  // An address no recorded object holds.
  EXPECT_EQ(r.Resolve(f, 8).how, "unknown");
}

TEST(CallSiteTable, OverflowGoesToTheFunctionsUnattributedRow) {
  recording::CallSiteTable* t = recording::CallSiteTable::Create(16, 4);
  ASSERT_NE(t, nullptr);
  uint64_t calls = 0;
  for (uint64_t pc = 1; pc <= 100; ++pc) {
    t->Add(1, &pc, 1, 10, 8, 0);
    t->Add(1, &pc, 1, 10, 8, 0);
    calls += 2;
  }
  uint64_t in_table = 0;
  for (uint32_t i = 0; i < t->capacity(); ++i)
    if (t->entry(i).func1 == 2) in_table += t->entry(i).c.calls;
  EXPECT_EQ(t->used(), 16u);
  EXPECT_EQ(in_table + t->unattributed(1).calls, calls);
  EXPECT_EQ(t->unattributed(1).calls, (100u - 16u) * 2);
  EXPECT_EQ(t->unattributed(1).bytes_sent, (100u - 16u) * 16);
  recording::CallSiteTable::Destroy(t);
}

}  // namespace

namespace {

TEST(FramePointerWalk, StaysInsideTheStack) {
  uintptr_t lo = 0, hi = 0;
  ASSERT_TRUE(recording::ThreadStackBounds(&lo, &hi));
  uint64_t pcs[8];
  // Values a function without frame pointers may leave in rbp: the walk records the first frame
  // only and reads nothing outside [lo, hi).
  const uintptr_t bad[] = {0, 1, lo - 16, hi, hi - 8, lo + 3, ~uintptr_t(0) - 15};
  for (uintptr_t fp : bad) {
    EXPECT_EQ(recording::FramePointerCallSite(0x1234, fp, pcs, 8, lo, hi), 1) << fp;
    EXPECT_EQ(pcs[0], 0x1234u);
  }
  // A chain built on this stack: two frames above this one, then the end (a zero link).
  uintptr_t chain[6] = {0, 0, 0, 0, 0, 0};
  chain[0] = reinterpret_cast<uintptr_t>(&chain[2]);
  chain[1] = 0xaaaa;
  chain[2] = reinterpret_cast<uintptr_t>(&chain[4]);
  chain[3] = 0xbbbb;
  chain[4] = 0;  // a link that does not go up the stack ends the walk
  chain[5] = 0xcccc;
  const int n =
      recording::FramePointerCallSite(0x1234, reinterpret_cast<uintptr_t>(chain), pcs, 8, lo, hi);
  ASSERT_EQ(n, 4);
  EXPECT_EQ(pcs[1], 0xaaaau);
  EXPECT_EQ(pcs[2], 0xbbbbu);
  EXPECT_EQ(pcs[3], 0xccccu);
}

}  // namespace
