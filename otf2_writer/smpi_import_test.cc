// SMPI's Paje trace -> raw trace -> OTF2 archive -> the reader's messages (issue 19).
#include "otf2_writer/smpi_import.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "otf2_reader/trace_reader.h"
#include "otf2_writer/converter.h"

namespace invmw::otf2 {
namespace {

namespace fs = std::filesystem;

std::string Data(const std::string& name) {
  std::ifstream in(std::string(INVMW_OTF2_WRITER_TESTDATA) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path FreshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("invmw-smpi-import-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(SmpiImport, ParsesCallsAndLinks) {
  SmpiTrace t = ParsePaje(Data("smpi_two_ranks.trace"), "two.trace");
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_TRUE(t.problems.empty()) << t.problems[0];
  EXPECT_DOUBLE_EQ(t.end_time, 1.006);
  const auto& r0 = t.ranks[0].calls;
  ASSERT_EQ(r0.size(), 6u);
  EXPECT_EQ(r0[0].func, "MPI_Init");
  EXPECT_EQ(r0[1].func, "MPI_Send");
  EXPECT_EQ(r0[1].peer, 1);
  EXPECT_EQ(r0[1].tag, 7);
  EXPECT_EQ(r0[1].bytes_sent, 1000u);
  EXPECT_DOUBLE_EQ(r0[1].enter, 0.001);
  EXPECT_DOUBLE_EQ(r0[1].leave, 0.002);
  EXPECT_EQ(r0[3].func, "MPI_Wait");
  ASSERT_EQ(r0[3].arrivals.size(), 1u);
  EXPECT_EQ(r0[3].arrivals[0].src, 1);
  EXPECT_EQ(r0[3].arrivals[0].bytes, 50000u);
  EXPECT_EQ(t.ranks[1].calls[1].func, "MPI_Recv");
  ASSERT_EQ(t.ranks[1].calls[1].arrivals.size(), 1u);
  EXPECT_EQ(t.ranks[1].calls[1].arrivals[0].tag, 7);
  EXPECT_TRUE(t.ranks[1].closed);
}

TEST(SmpiImport, ArchiveHasTheMessages) {
  fs::path dir = FreshDir("archive");
  SmpiTrace t = ParsePaje(Data("smpi_two_ranks.trace"), "two.trace");
  WriteSmpiRawRun(t, dir.string(), "node-");
  ConvertResult c = ConvertToOtf2(dir.string());
  EXPECT_FALSE(c.partial);
  EXPECT_EQ(c.world_size, 2);
  Trace tr = ReadTrace(c.archive);
  ASSERT_EQ(tr.messages.size(), 2u);
  EXPECT_TRUE(tr.unmatched_sends.empty());
  EXPECT_TRUE(tr.unmatched_recvs.empty());
  bool small = false, large = false;
  for (const Message& m : tr.messages) {
    if (m.src == 0 && m.dst == 1 && m.tag == 7 && m.bytes == 1000) small = true;
    if (m.src == 1 && m.dst == 0 && m.tag == 5 && m.bytes == 50000) {
      large = true;
      EXPECT_NEAR(m.recv_time - m.send_time, 1.0, 1e-9);  // simulated seconds, 1 ns ticks
    }
  }
  EXPECT_TRUE(small);
  EXPECT_TRUE(large);
  // A run directory gets its raw trace once: a second import is refused, not merged.
  EXPECT_THROW(WriteSmpiRawRun(t, dir.string(), "node-"), SmpiTraceError);
  fs::remove_all(dir.parent_path());
}

void ExpectError(const std::string& text, const std::string& what) {
  try {
    ParsePaje(text, "bad.trace");
    ADD_FAILURE() << "no error for: " << text;
  } catch (const SmpiTraceError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(SmpiImport, BadInputNamesTheLine) {
  const std::string defs =
      Data("smpi_two_ranks.trace").substr(0, Data("smpi_two_ranks.trace").find("#This"));
  ExpectError(defs + "99 0.1 2 1\n", "bad.trace:");
  ExpectError(defs + "99 0.1 2 1\n", "event id '99' has no %EventDef");
  ExpectError(defs + "6 0 1 1 0 \"rank-0\"\n13 0.5 2 1\n", "without a state");
  ExpectError(defs + "6 0 1 1 0 \"rank-0\"\n12 nan 2 1 6\n", "is not a time");
  ExpectError(defs + "6 0 1 1 0 \"rank-x\"\n", "is not rank-N");
  ExpectError(defs + "6 0 1 1 0 \"rank-0\n", "unterminated");
  ExpectError(defs + "12 0.1 2\n", "lacks its field Container");
  ExpectError(defs + "6 0 1 1 0 \"rank-0\"\n12 0.5 2 1 6\n13 0.2 2 1\n", "ends before it began");
}

TEST(SmpiImport, TruncatedTraceIsListed) {
  std::string text = Data("smpi_two_ranks.trace");
  text = text.substr(0, text.find("16 1.003000"));  // cut inside rank 0's MPI_Wait
  SmpiTrace t = ParsePaje(text, "cut.trace");
  ASSERT_FALSE(t.problems.empty());
  std::string all;
  for (const auto& p : t.problems) all += p + "\n";
  EXPECT_NE(all.find("rank 0 ends inside PMPI_Wait"), std::string::npos) << all;
  EXPECT_NE(all.find("sent but never received"), std::string::npos) << all;
}

}  // namespace
}  // namespace invmw::otf2
