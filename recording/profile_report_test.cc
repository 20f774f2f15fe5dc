// The profile built from a constructed table of per-rank counters (BuildProfile, RenderText,
// DroppedNote), checked against hand-computed values; the MPI runs cover the same code only
// end to end.
#include "recording/profile_report.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace invmw::profile {
namespace {

using nlohmann::json;

constexpr double kTps = 1e9;  // one tick per nanosecond: seconds are ticks / 1e9

RankData Rank(int rank, int world, double wall_s) {
  RankData r;
  raw::RankHeader& h = r.header;
  h.magic = raw::kMagic;
  h.version = raw::kVersion;
  h.header_size = sizeof h;
  h.record_size = sizeof(raw::FuncRecord);
  h.rank = rank;
  h.world_size = world;
  h.pid = 1000 + rank;
  h.ticks_per_second = kTps;
  h.wall_s = wall_s;
  h.num_threads = 1;
  std::snprintf(h.host, sizeof h.host, "node%d", rank);
  return r;
}

void AddFunc(RankData* r, const char* name, uint64_t calls, double seconds, uint64_t sent,
             uint64_t recv, uint64_t message_bytes) {
  raw::FuncRecord f{};
  std::snprintf(f.name, sizeof f.name, "%s", name);
  f.calls = calls;
  f.ticks = uint64_t(seconds * kTps);
  f.max_ticks = f.ticks / (calls ? calls : 1);
  f.bytes_sent = sent;
  f.bytes_recv = recv;
  f.hist[raw::HistBin(message_bytes)] = calls;
  r->funcs.push_back(f);
  ++r->header.num_funcs;
}

// Rank 0: 10 sends of 80 bytes (2 s), allreduce 4 calls (1 s); wall 10 s.
// Rank 1: 10 receives of 80 bytes (3 s), allreduce 4 calls (3 s); wall 8 s.
std::vector<RankData> Table(int world) {
  RankData r0 = Rank(0, world, 10.0), r1 = Rank(1, world, 8.0);
  AddFunc(&r0, "MPI_Send", 10, 2.0, 800, 0, 80);
  AddFunc(&r0, "MPI_Allreduce", 4, 1.0, 32, 32, 8);
  AddFunc(&r1, "MPI_Recv", 10, 3.0, 0, 800, 80);
  AddFunc(&r1, "MPI_Allreduce", 4, 3.0, 32, 32, 8);
  return {r0, r1};
}

RunMeta Meta(int world) {
  RunMeta m;
  m.invmw_version = "test";
  m.mpi_flavor = "openmpi";
  m.mpi_library = "Test MPI";
  m.world_size = world;
  return m;
}

TEST(ProfileReport, FunctionTotalsAcrossRanks) {
  const json p = BuildProfile(Table(2), Meta(2), false);
  EXPECT_FALSE(p["incomplete"].get<bool>());
  EXPECT_TRUE(p["missing_ranks"].empty());
  const json& f = p["functions"];
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f["MPI_Send"]["calls"].get<uint64_t>(), 10u);
  EXPECT_DOUBLE_EQ(f["MPI_Send"]["time_s"].get<double>(), 2.0);
  EXPECT_EQ(f["MPI_Send"]["bytes_sent"].get<uint64_t>(), 800u);
  EXPECT_EQ(f["MPI_Recv"]["bytes_recv"].get<uint64_t>(), 800u);
  EXPECT_EQ(f["MPI_Allreduce"]["calls"].get<uint64_t>(), 8u);
  EXPECT_EQ(f["MPI_Allreduce"]["bytes_sent"].get<uint64_t>(), 64u);
  EXPECT_DOUBLE_EQ(f["MPI_Allreduce"]["time_s"].get<double>(), 4.0);
  // Allreduce: 1 s and 3 s -> min 1, mean 2, max 3 on rank 1, imbalance 1.5.
  const json& a = f["MPI_Allreduce"]["time_across_ranks_s"];
  EXPECT_DOUBLE_EQ(a["min"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(a["mean"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(a["max"].get<double>(), 3.0);
  EXPECT_EQ(a["max_rank"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(a["imbalance"].get<double>(), 1.5);
  // A function only one rank called: the other counts as zero (min 0, mean 1, imbalance 2).
  const json& s = f["MPI_Send"]["time_across_ranks_s"];
  EXPECT_DOUBLE_EQ(s["min"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(s["mean"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(s["imbalance"].get<double>(), 2.0);
  // 80-byte messages fall in the bin [64, 127].
  const json& h = f["MPI_Send"]["histogram"];
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0]["bin"].get<std::string>(), "64-127");
  EXPECT_EQ(h[0]["min_bytes"].get<uint64_t>(), 64u);
  EXPECT_EQ(h[0]["max_bytes"].get<uint64_t>(), 127u);
  EXPECT_EQ(h[0]["count"].get<uint64_t>(), 10u);
}

TEST(ProfileReport, RanksAndSummary) {
  const json p = BuildProfile(Table(2), Meta(2), false);
  ASSERT_EQ(p["ranks"].size(), 2u);
  const json& r0 = p["ranks"][0];
  const json& r1 = p["ranks"][1];
  EXPECT_EQ(r0["rank"].get<int>(), 0);
  EXPECT_EQ(r0["host"].get<std::string>(), "node0");
  EXPECT_DOUBLE_EQ(r0["mpi_s"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(r0["mpi_share"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(r1["mpi_s"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(r1["mpi_share"].get<double>(), 0.75);
  EXPECT_EQ(r0["end"].get<std::string>(), "finalize");
  const json& s = p["summary"];
  EXPECT_EQ(s["ranks"].get<int>(), 2);
  EXPECT_EQ(s["ranks_reported"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(s["wall_s"]["max"].get<double>(), 10.0);
  EXPECT_EQ(s["wall_s"]["max_rank"].get<int>(), 0);
  // Mean MPI time over mean wall time: 4.5 / 9.
  EXPECT_DOUBLE_EQ(s["mpi_share"].get<double>(), 0.5);
  EXPECT_EQ(p["metadata"]["ranks"].get<int>(), 2);
  EXPECT_EQ(p["metadata"]["hosts"].size(), 2u);
}

// A world of three with two dumps: rank 2 is missing and the profile incomplete.
TEST(ProfileReport, MissingRankMakesTheProfileIncomplete) {
  const json p = BuildProfile(Table(3), Meta(3), false);
  EXPECT_TRUE(p["incomplete"].get<bool>());
  ASSERT_EQ(p["missing_ranks"].size(), 1u);
  EXPECT_EQ(p["missing_ranks"][0].get<int>(), 2);
  EXPECT_NE(RenderText(p).find("missing:     ranks [2] saved no data"), std::string::npos);
}

TEST(ProfileReport, TextListsFunctionsByTime) {
  const std::string t = RenderText(BuildProfile(Table(2), Meta(2), false));
  const size_t allreduce = t.find("MPI_Allreduce"), recv = t.find("MPI_Recv"),
               send = t.find("MPI_Send");
  ASSERT_NE(allreduce, std::string::npos);
  ASSERT_NE(recv, std::string::npos);
  ASSERT_NE(send, std::string::npos);
  // 4 s, 3 s, 2 s.
  EXPECT_LT(allreduce, recv);
  EXPECT_LT(recv, send);
  EXPECT_NE(t.find("800 B"), std::string::npos);
  EXPECT_NE(t.find("50.0 % of wall time"), std::string::npos) << t;
}

TEST(ProfileReport, DroppedNoteSumsRanks) {
  auto table = Table(2);
  table[0].header.dropped_threads = 3;
  table[1].header.dropped_threads = 4;
  table[1].header.dropped_requests = 2;
  const std::string note = DroppedNote(BuildProfile(table, Meta(2), false));
  EXPECT_NE(note.find("7 calls from threads beyond INVMW_WRAP_MAX_THREADS"), std::string::npos)
      << note;
  EXPECT_NE(note.find("2 requests"), std::string::npos) << note;
  EXPECT_EQ(DroppedNote(BuildProfile(Table(2), Meta(2), false)), "");
}

}  // namespace
}  // namespace invmw::profile
