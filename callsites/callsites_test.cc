// The call-site file parser (errors name line and field) and the resolver on this test's own
// code: a return address taken at a known line resolves to this file and that line, using the
// mappings the recording core writes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "callsites/callsite_file.h"
#include "callsites/callsites.h"
#include "callsites/resolve.h"
#include "recording/callsite_live.h"
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

// ---- the live call-site file (recording/callsite_live.h) -----------------------------------

namespace {

const char* const kLiveNames[] = {"MPI_Send", "MPI_Recv", "MPI_Bcast"};

// A live file as the runtime lays it out: 3 functions, 16 entries per slot, `slots` slots used.
struct LiveFile {
  std::vector<char> bytes;
  recording::LiveSitesHeader* h() {
    return reinterpret_cast<recording::LiveSitesHeader*>(&bytes[0]);
  }
  char* slot(uint32_t t) { return &bytes[h()->slots_offset + t * h()->slot_size]; }
  recording::CallSiteEntry* entries(uint32_t t) {
    return reinterpret_cast<recording::CallSiteEntry*>(slot(t));
  }
  bool Parse(callsites::LiveTables* out, std::string* err) {
    const std::vector<char>& b = bytes;
    return callsites::ParseLiveTables(
        b.size(),
        [&b](void* buf, size_t n, uint64_t at) {
          if (at > b.size() || n > b.size() - at) return false;
          std::memcpy(buf, b.data() + at, n);
          return true;
        },
        out, err);
  }
};

LiveFile MakeLive(uint32_t slots, uint32_t depth = 1) {
  LiveFile f;
  const uint64_t names = sizeof(recording::LiveSitesHeader), slots_off = 4096;
  const uint64_t slot_size = recording::LiveSitesSlotSize(16, 3);
  f.bytes.assign(slots_off + slots * slot_size, '\0');
  recording::LiveSitesHeader* h = f.h();
  h->magic = recording::kLiveSitesMagic;
  h->version = recording::kLiveSitesVersion;
  h->header_size = sizeof *h;
  h->entry_size = sizeof(recording::CallSiteEntry);
  h->counters_size = sizeof(recording::CallSiteCounters);
  h->num_funcs = 3;
  h->capacity = 16;
  h->slot_count = slots;
  h->slots_used = slots;
  h->rank = 1;
  h->depth = depth;
  h->names_offset = names;
  h->slots_offset = slots_off;
  h->slot_size = slot_size;
  for (int i = 0; i < 3; ++i) std::strcpy(&f.bytes[names + 48 * i], kLiveNames[i]);
  return f;
}

uint64_t CallsOf(const std::vector<callsites::SiteRow>& rows, const std::string& fn, uint64_t pc) {
  uint64_t n = 0;
  for (const auto& r : rows)
    if (r.function == fn && r.pcs.size() == 1 && r.pcs[0] == pc) n += r.c.calls;
  return n;
}

// The tables the runtime keeps in the file (CallSiteTable::Place) read back exactly, over two
// thread slots, overflow rows included.
TEST(LiveCallSiteFile, ReadsTheTablesPlacedInIt) {
  LiveFile f = MakeLive(2);
  recording::CallSiteTable* t0 = recording::CallSiteTable::Place(f.slot(0), 16, 3);
  recording::CallSiteTable* t1 = recording::CallSiteTable::Place(f.slot(1), 16, 3);
  ASSERT_TRUE(t0 && t1);
  const uint64_t a = 0x401000, b = 0x401010;
  for (int i = 0; i < 3; ++i) t0->Add(0, &a, 1, 100, 8, 0);
  t0->Add(1, &b, 1, 50, 0, 16);
  t1->Add(0, &a, 1, 7, 8, 0);
  for (uint64_t pc = 0x500000; pc < 0x500000 + 40; ++pc) t1->Add(2, &pc, 1, 1, 0, 0);
  callsites::LiveTables lt;
  std::string err;
  ASSERT_TRUE(f.Parse(&lt, &err)) << err;
  EXPECT_EQ(lt.rank, 1);
  EXPECT_EQ(lt.depth, 1);
  EXPECT_EQ(lt.slots, 2u);
  EXPECT_EQ(CallsOf(lt.sites, "MPI_Send", a), 4u);
  EXPECT_EQ(CallsOf(lt.sites, "MPI_Recv", b), 1u);
  uint64_t bcast = 0;
  for (const auto& r : lt.sites)
    if (r.function == "MPI_Bcast") bcast += r.c.calls;
  EXPECT_EQ(bcast + lt.unattributed_calls, 40u);
  EXPECT_EQ(lt.unattributed_calls, t1->unattributed(2).calls);
  EXPECT_GT(lt.unattributed_calls, 0u);
  EXPECT_EQ(lt.damaged, 0u);
  recording::CallSiteTable::Destroy(t0);
  recording::CallSiteTable::Destroy(t1);
}

// What a SIGKILL during an update can leave, and what the reader does with it: an entry being
// filled (function not yet stored) is free; an entry whose function is stored but whose first
// call is not yet counted is skipped; a call counted with its time not yet added is taken as it
// is (one call in flight per thread). Entries no kill can leave (function or depth out of
// range) are counted as damaged and left out; nothing else of the file is lost.
TEST(LiveCallSiteFile, TornAndDamagedEntries) {
  LiveFile f = MakeLive(1, 2);
  recording::CallSiteEntry* e = f.entries(0);
  e[0].depth = 1, e[0].pcs[0] = 0x1000;  // being filled: func1 not stored yet
  e[0].c.calls = 0;
  e[1].func1 = 1, e[1].depth = 1, e[1].pcs[0] = 0x1010;  // stored, first call not counted
  e[2].func1 = 2, e[2].depth = 2, e[2].pcs[0] = 0x1020, e[2].pcs[1] = 0x2000;
  e[2].c.calls = 5, e[2].c.ticks = 40, e[2].c.bytes_recv = 32;  // 5th call's ticks missing
  e[3].func1 = 9, e[3].depth = 1, e[3].c.calls = 1;             // no such function
  e[4].func1 = 1, e[4].depth = 3, e[4].c.calls = 1;             // deeper than the file's depth
  e[5].func1 = 1, e[5].depth = 0, e[5].c.calls = 1;
  callsites::LiveTables lt;
  std::string err;
  ASSERT_TRUE(f.Parse(&lt, &err)) << err;
  ASSERT_EQ(lt.sites.size(), 1u);
  EXPECT_EQ(lt.sites[0].function, "MPI_Recv");
  EXPECT_EQ(lt.sites[0].c.calls, 5u);
  EXPECT_EQ(lt.sites[0].pcs, (std::vector<uint64_t>{0x1020, 0x2000}));
  EXPECT_EQ(lt.damaged, 3u);
}

TEST(LiveCallSiteFile, HeaderErrorsNameTheField) {
  struct Case {
    void (*edit)(LiveFile&);
    const char* want;
  } cases[] = {
      {[](LiveFile& f) { f.h()->magic = 0; }, "magic 0"},
      {[](LiveFile& f) { f.h()->version = 7; }, "header field version = 7"},
      {[](LiveFile& f) { f.h()->entry_size = 8; }, "header field entry_size = 8"},
      {[](LiveFile& f) { f.h()->capacity = 24; }, "header field capacity = 24"},
      {[](LiveFile& f) { f.h()->depth = 9; }, "header field depth = 9"},
      {[](LiveFile& f) { f.h()->slots_used = 3; }, "header field slots_used = 3"},
      {[](LiveFile& f) { f.bytes.resize(f.bytes.size() - 1); }, "header field slots_used = 2"},
      {[](LiveFile& f) { f.h()->slot_size = 64; }, "header field slot_size = 64"},
      {[](LiveFile& f) { f.h()->slots_offset = 8; }, "header field slots_offset = 8"},
      {[](LiveFile& f) { std::strcpy(&f.bytes[f.h()->names_offset + 48], "rm -rf"); },
       "function name 1"},
      {[](LiveFile& f) { f.bytes.resize(40); }, "shorter than its header"},
  };
  for (const Case& c : cases) {
    LiveFile f = MakeLive(2);
    c.edit(f);
    callsites::LiveTables lt;
    std::string err;
    EXPECT_FALSE(f.Parse(&lt, &err)) << c.want;
    EXPECT_EQ(err.rfind(c.want, 0), 0u) << err;
  }
  int r = -1;
  EXPECT_TRUE(callsites::ParseLiveFileName("live-000042.bin", &r));
  EXPECT_EQ(r, 42);
  EXPECT_FALSE(callsites::ParseLiveFileName("live-000042.txt", &r));
  EXPECT_FALSE(callsites::ParseLiveFileName("rank-000042.bin", &r));
}

class LiveBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/invmw-live-build-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(mkdir((dir_ + "/callsites").c_str(), 0755), 0);
  }
  void TearDown() override {
    for (const char* n : {"rank-000001.txt", "live-000001.bin", "live-000002.bin"})
      unlink((dir_ + "/callsites/" + n).c_str());
    rmdir((dir_ + "/callsites").c_str());
    rmdir(dir_.c_str());
  }
  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ + "/callsites/" + name, std::ios::binary) << bytes;
  }
  static std::string Text(bool cut_in_table) {
    std::string t =
        "invmw-callsites 1\nrank 1\ndepth 1\nticks_per_second 1000000000.0\nmaps init\n"
        "m 400000 500000 0 400000 - /nonexistent/app\nend-maps\n"
        "maps finalize\nm 400000 500000 0 400000 - /nonexistent/app\nend-maps\n";
    return cut_in_table ? t + "site MPI_Send 3 300 100 24 0 401000\nsite MPI_Re" : t;
  }
  static uint64_t SendCalls(const nlohmann::json& cs) {
    uint64_t n = 0;
    for (const auto& s : cs["sites"])
      if (s["function"] == "MPI_Send") n += s["calls"].get<uint64_t>();
    return n;
  }
  std::string dir_;
};

// A rank SIGKILLed in MPI_Finalize while writing its table: the text file's rows are cut off,
// and the live file (removed only once the table is complete) replaces them, never adds to them.
TEST_F(LiveBuild, AnInterruptedTableIsReplacedByTheLiveFile) {
  LiveFile f = MakeLive(1);
  recording::CallSiteTable* t = recording::CallSiteTable::Place(f.slot(0), 16, 3);
  const uint64_t a = 0x401000, b = 0x401010;
  for (int i = 0; i < 3; ++i) t->Add(0, &a, 1, 100, 8, 0);
  t->Add(1, &b, 1, 50, 0, 16);
  recording::CallSiteTable::Destroy(t);
  Write("rank-000001.txt", Text(true));
  Write("live-000001.bin", std::string(f.bytes.begin(), f.bytes.end()));
  Write("live-000002.bin", std::string(f.bytes.begin(), f.bytes.end()));
  nlohmann::json cs;
  std::vector<std::string> problems;
  ASSERT_TRUE(callsites::Build(dir_, &cs, &problems));
  EXPECT_EQ(cs["ranks_incomplete"], nlohmann::json::array({1}));
  EXPECT_EQ(cs["ranks_live"], nlohmann::json::array({1}));
  EXPECT_EQ(SendCalls(cs), 3u);
  uint64_t recv = 0;
  for (const auto& s : cs["sites"])
    if (s["function"] == "MPI_Recv") recv += s["calls"].get<uint64_t>();
  EXPECT_EQ(recv, 1u);
  // A live file without the text file's mappings cannot be resolved: named, left out.
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("live-000002.bin: no rank-000002.txt"), std::string::npos)
      << problems[0];
}

// A complete table supersedes a live file left behind; a damaged live file is named, and the
// rank keeps what its text file has.
TEST_F(LiveBuild, CompleteTextWinsAndADamagedLiveFileIsNamed) {
  LiveFile f = MakeLive(1);
  recording::CallSiteTable* t = recording::CallSiteTable::Place(f.slot(0), 16, 3);
  const uint64_t a = 0x401000;
  t->Add(0, &a, 1, 100, 8, 0);
  recording::CallSiteTable::Destroy(t);
  Write("live-000001.bin", std::string(f.bytes.begin(), f.bytes.end()));
  Write("rank-000001.txt", Text(false) + "site MPI_Send 3 300 100 24 0 401000\nend 0\n");
  nlohmann::json cs;
  std::vector<std::string> problems;
  ASSERT_TRUE(callsites::Build(dir_, &cs, &problems));
  EXPECT_EQ(SendCalls(cs), 3u);
  EXPECT_TRUE(cs["ranks_live"].empty());
  EXPECT_TRUE(problems.empty());

  f.h()->slots_used = 5;
  Write("live-000001.bin", std::string(f.bytes.begin(), f.bytes.end()));
  Write("rank-000001.txt", Text(true));
  problems.clear();
  ASSERT_TRUE(callsites::Build(dir_, &cs, &problems));
  EXPECT_EQ(SendCalls(cs), 3u);  // the text's own row
  EXPECT_TRUE(cs["ranks_live"].empty());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("live-000001.bin: header field slots_used = 5"), std::string::npos)
      << problems[0];
}

}  // namespace
