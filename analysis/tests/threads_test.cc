// Reading and analysing with several threads gives what one thread gives (issue 23): on
// otf2_writer's synthetic runs (3 ranks, rank 0 with two threads, blocking, nonblocking,
// persistent and cancelled p2p, collectives on two communicators, Pcontrol phases, sampler
// metrics; also with a crashed rank and an unmatched send), every event, message, unmatched
// and uncompleted receive of ReadTrace, and the whole JSON of Analyze, for 1, 2 and 3 threads;
// the same when the events are streamed (ReadOptions::keep_events false) instead of kept.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <tuple>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include <utility>

#include "analysis/analysis.h"
#include "otf2_writer/converter.h"
#include "otf2_writer/otf2_open.h"
#include "otf2_writer/tests/synthetic_run.h"

namespace invmw::analysis {
namespace {

namespace fs = std::filesystem;
using otf2::Trace;

// Everything ReadTrace returns, as text: a difference shows where.
std::string Dump(const Trace& t) {
  std::ostringstream o;
  o.precision(17);
  for (const auto& l : t.locations) {
    o << "loc " << l.id << " rank " << l.rank << " " << l.name << " declared " << l.declared_events
      << " unc " << l.clock_uncertainty_s << "\n";
    for (const auto& e : l.events)
      o << " " << int(e.type) << " " << e.ticks << " " << e.time << " " << e.bytes << " "
        << e.bytes_recv << " " << e.request << " " << e.region << " " << e.comm << " " << e.peer
        << " " << e.tag << " " << e.coll_op << " " << e.calls << " " << e.cut_off << "\n";
    for (const auto& m : l.metrics) o << " m " << m.ticks << " " << m.values.size() << "\n";
  }
  for (const auto& m : t.metric_locations) {
    o << "metric loc " << m.id << " rank " << m.rank << "\n";
    for (const auto& s : m.samples) {
      o << " " << s.ticks << " " << s.metric_class;
      for (double v : s.values) o << " " << v;
      o << "\n";
    }
  }
  for (const auto& m : t.messages)
    o << "msg " << m.src << " " << m.dst << " " << m.comm << " " << m.tag << " " << m.bytes << " "
      << m.recv_bytes << " " << m.send_loc << ":" << m.send_event << " " << m.recv_loc << ":"
      << m.recv_event << " " << m.send_time << " " << m.recv_post_time << " " << m.recv_time
      << "\n";
  for (const auto& u : t.unmatched_sends) o << "unmatched send " << u.loc << ":" << u.event << "\n";
  for (const auto& u : t.unmatched_recvs) o << "unmatched recv " << u.loc << ":" << u.event << "\n";
  for (const auto& u : t.uncompleted_recvs)
    o << "uncompleted " << u.loc << ":" << u.event << " " << u.rank << " " << u.peer << " " << u.tag
      << " " << u.comm << " " << u.matched << " " << u.send_loc << ":" << u.send_event << " "
      << u.wildcard << "\n";
  for (const auto& [rank, locs] : t.locations_of_rank) {
    o << "rank " << rank << ":";
    for (size_t l : locs) o << " " << l;
    o << "\n";
  }
  return o.str();
}

void ExpectSameForAnyThreads(const otf2::testing::SyntheticOptions& so, const std::string& name) {
  const std::string dir =
      fs::temp_directory_path() / ("invmw-threads-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  otf2::testing::WriteSyntheticRun(dir, so);
  otf2::ConvertToOtf2(dir);
  const std::string anchor = dir + "/traces.otf2";
  otf2::ReadOptions one;
  const Trace base = otf2::ReadTrace(anchor, one);
  ASSERT_FALSE(base.messages.empty());
  const std::string base_dump = Dump(base);
  AnalyzeOptions ao;
  const std::string base_json = ToJson(Analyze(base, ao)).dump(1);
  for (int threads : {2, 3, 8}) {
    otf2::ReadOptions ro;
    ro.threads = threads;
    const Trace t = otf2::ReadTrace(anchor, ro);
    EXPECT_EQ(Dump(t), base_dump) << threads << " reader threads";
    AnalyzeOptions a;
    a.threads = threads;
    EXPECT_EQ(ToJson(Analyze(t, a)).dump(1), base_json) << threads << " threads";
  }
  // Streaming (`invmw analyze`): the first pass keeps no events but the same messages, counts
  // and times; the second pass gives each rank's events again, identical; the analysis is the
  // same JSON.
  for (int threads : {1, 2, 3}) {
    otf2::ReadOptions ro;
    ro.threads = threads;
    ro.keep_events = false;
    const Trace t = otf2::ReadTrace(anchor, ro);
    ASSERT_TRUE(t.events_streamed);
    ASSERT_EQ(t.locations.size(), base.locations.size());
    Trace again = t;
    for (size_t l = 0; l < t.locations.size(); ++l) {
      EXPECT_TRUE(t.locations[l].events.empty());
      EXPECT_EQ(t.locations[l].event_count, base.locations[l].events.size());
      EXPECT_EQ(base.locations[l].event_count, base.locations[l].events.size());
      if (!base.locations[l].events.empty()) {
        EXPECT_EQ(t.locations[l].first_time, base.locations[l].events.front().time);
        EXPECT_EQ(t.locations[l].last_time, base.locations[l].events.back().time);
      }
      EXPECT_EQ(t.locations[l].regions_entered, base.locations[l].regions_entered);
    }
    for (const auto& [rank, locs] : t.locations_of_rank)
      otf2::StreamRankEvents(t, rank, [&](size_t l, const otf2::TraceEvent& e) {
        again.locations.at(l).events.push_back(e);
      });
    EXPECT_EQ(Dump(again), base_dump) << threads << " reader threads, streamed";
    AnalyzeOptions a;
    a.threads = threads;
    EXPECT_EQ(ToJson(Analyze(t, a)).dump(1), base_json) << threads << " threads, streamed";
    // As `invmw analyze` does it: only the compact segments, the messages freed before the scan.
    a.keep_details = false;
    Trace consumed = t;
    EXPECT_EQ(ToJson(Analyze(std::move(consumed), a)).dump(1), base_json)
        << threads << " threads, streamed, compact";
    EXPECT_TRUE(consumed.messages.empty());
    // Messages left in matching order (ReadOptions::sort_messages false, as `invmw analyze`
    // reads without --opal): the same messages, the same compact analysis.
    ro.sort_messages = false;
    Trace unsorted = otf2::ReadTrace(anchor, ro);
    auto by_send = [](std::vector<otf2::Message> v) {
      std::sort(v.begin(), v.end(), [](const otf2::Message& a, const otf2::Message& b) {
        return std::tie(a.send_time, a.send_loc, a.send_event) <
               std::tie(b.send_time, b.send_loc, b.send_event);
      });
      return v;
    };
    Trace resorted = unsorted;
    resorted.messages = by_send(unsorted.messages);
    Trace base_resorted = t;
    base_resorted.messages = by_send(t.messages);
    EXPECT_EQ(Dump(resorted), Dump(base_resorted)) << threads << " threads, unsorted messages";
    EXPECT_EQ(ToJson(Analyze(std::move(unsorted), a)).dump(1), base_json)
        << threads << " threads, unsorted messages, compact";
  }
  fs::remove_all(dir);
}

TEST(Threads, SameTraceAndAnalysisForAnyNumber) {
  otf2::testing::SyntheticOptions so;
  so.iterations = 4;
  so.samples = 20;
  ExpectSameForAnyThreads(so, "plain");
}

TEST(Threads, SameWithCrashAndUnmatchedSend) {
  otf2::testing::SyntheticOptions so;
  so.iterations = 3;
  so.crash = true;
  so.unmatched_send = true;
  ExpectSameForAnyThreads(so, "crash");
}

// Two nonblocking receives on one channel completed in the reverse of their posting order: the
// reader meets the second's completion first, and its matching list, put channel by channel,
// holds that channel's records out of MPI's order; they are matched in posting order all the
// same (the first send to the first posted receive), with any number of reader threads.
void Ok(OTF2_ErrorCode rc) {
  if (rc != OTF2_SUCCESS) throw std::runtime_error(OTF2_Error_GetName(rc));
}

TEST(Threads, ReceivesCompletedOutOfPostingOrder) {
  const std::string dir =
      fs::temp_directory_path() / ("invmw-threads-test-order-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  enum : OTF2_RegionRef { kSend, kIrecv, kWait, kRegions };
  const uint32_t tag = 5;
  const uint64_t ns = 1000;  // ticks per microsecond (resolution 1e9)
  OTF2_Archive* archive = otf2::OpenArchiveForWriting(dir, "traces", 1 << 20, 1 << 20);
  ASSERT_NE(archive, nullptr);
  Ok(OTF2_Archive_OpenEvtFiles(archive));
  std::vector<uint64_t> counts(2);
  {
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, 0);  // rank 0: two sends
    for (uint64_t k = 1; k <= 2; ++k) {
      Ok(OTF2_EvtWriter_Enter(w, nullptr, 10 * k * ns, kSend));
      Ok(OTF2_EvtWriter_MpiSend(w, nullptr, 10 * k * ns, 1, 0, tag, 100 * k));
      Ok(OTF2_EvtWriter_Leave(w, nullptr, 10 * k * ns + ns, kSend));
    }
    counts[0] = 6;
    Ok(OTF2_Archive_CloseEvtWriter(archive, w));
  }
  {
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, 1);  // rank 1: requests 1, 2
    for (uint64_t req = 1; req <= 2; ++req) {
      Ok(OTF2_EvtWriter_Enter(w, nullptr, 2 * req * ns, kIrecv));
      Ok(OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, 2 * req * ns, req));
      Ok(OTF2_EvtWriter_Leave(w, nullptr, 2 * req * ns + ns, kIrecv));
    }
    // Request 2 completes first (events 6-8), then request 1 (events 9-11).
    for (uint64_t req : {2, 1}) {
      const uint64_t t = (req == 2 ? 30 : 40) * ns;
      Ok(OTF2_EvtWriter_Enter(w, nullptr, t, kWait));
      Ok(OTF2_EvtWriter_MpiIrecv(w, nullptr, t + ns, 0, 0, tag, 100 * (3 - req), req));
      Ok(OTF2_EvtWriter_Leave(w, nullptr, t + 2 * ns, kWait));
    }
    counts[1] = 12;
    Ok(OTF2_Archive_CloseEvtWriter(archive, w));
  }
  Ok(OTF2_Archive_CloseEvtFiles(archive));
  Ok(OTF2_Archive_OpenDefFiles(archive));
  for (uint64_t r = 0; r < 2; ++r)
    Ok(OTF2_Archive_CloseDefWriter(archive, OTF2_Archive_GetDefWriter(archive, r)));
  Ok(OTF2_Archive_CloseDefFiles(archive));
  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive);
  Ok(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, 100 * ns,
                                               OTF2_UNDEFINED_TIMESTAMP));
  OTF2_StringRef next = 0;
  auto str = [&](const std::string& s) {
    Ok(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()));
    return next++;
  };
  const OTF2_StringRef empty = str("");
  const char* names[kRegions] = {"MPI_Send", "MPI_Irecv", "MPI_Wait"};
  for (OTF2_RegionRef i = 0; i < kRegions; ++i) {
    const OTF2_StringRef s = str(names[i]);
    Ok(OTF2_GlobalDefWriter_WriteRegion(g, i, s, s, empty, OTF2_REGION_ROLE_POINT2POINT,
                                        OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, empty, 0, 0));
  }
  Ok(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str("node"), str("machine"),
                                              OTF2_UNDEFINED_SYSTEM_TREE_NODE));
  std::vector<uint64_t> locs{0, 1};
  for (uint64_t r = 0; r < 2; ++r) {
    Ok(OTF2_GlobalDefWriter_WriteLocationGroup(g, r, str("rank " + std::to_string(r)),
                                               OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                               OTF2_UNDEFINED_LOCATION_GROUP));
    Ok(OTF2_GlobalDefWriter_WriteLocation(g, r, str("rank " + std::to_string(r) + " thread 0"),
                                          OTF2_LOCATION_TYPE_CPU_THREAD, counts[r], r));
  }
  Ok(OTF2_GlobalDefWriter_WriteGroup(g, 0, str("world locations"), OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                     OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, 2, locs.data()));
  const OTF2_StringRef world = str("MPI_COMM_WORLD");
  Ok(OTF2_GlobalDefWriter_WriteGroup(g, 1, world, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                     OTF2_GROUP_FLAG_NONE, 2, locs.data()));
  Ok(OTF2_GlobalDefWriter_WriteComm(g, 0, world, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE));
  Ok(OTF2_Archive_Close(archive));

  for (int threads : {1, 2}) {
    otf2::ReadOptions ro;
    ro.threads = threads;
    const Trace t = otf2::ReadTrace(dir + "/traces.otf2", ro);
    ASSERT_EQ(t.messages.size(), 2u) << threads << " threads";
    EXPECT_TRUE(t.unmatched_sends.empty() && t.unmatched_recvs.empty());
    for (const auto& m : t.messages) {
      // The first send (100 bytes, event 1) to the first posted receive (request 1, posted at
      // 2 us, completed at event 10); the second (event 4) to request 2 (event 7).
      const bool first = m.send_event == 1;
      EXPECT_EQ(m.bytes, first ? 100u : 200u);
      EXPECT_EQ(m.recv_event, first ? 10u : 7u) << threads << " threads";
      EXPECT_DOUBLE_EQ(m.recv_post_time, first ? 2e-6 : 4e-6) << threads << " threads";
    }
  }
  fs::remove_all(dir);
}

TEST(Threads, InvalidThreadCount) {
  AnalyzeOptions a;
  a.threads = 0;
  std::string e;
  EXPECT_FALSE(a.IsValid(&e));
}

}  // namespace
}  // namespace invmw::analysis
