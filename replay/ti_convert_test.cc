// The conversion's action lines on a hand-built trace: bursts, p2p, nonblocking, the sendrecv
// rewrite, collectives on world and not, and the unexpressed list.
#include "replay/ti_convert.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "replay/simgrid_run.h"

namespace invmw::replay {
namespace {

using otf2::Trace;
using otf2::TraceEvent;

struct Builder {
  Trace t;
  std::map<std::string, uint32_t> regions;
  explicit Builder(int ranks) {
    t.path = "synthetic.otf2";
    t.locations.resize(ranks);
    for (int r = 0; r < ranks; ++r) {
      t.locations[r].rank = r;
      t.locations_of_rank[r] = {size_t(r)};
    }
    otf2::TraceComm world;
    for (int r = 0; r < ranks; ++r) world.members.push_back(r);
    t.comms[0] = world;
    t.comms[1] = otf2::TraceComm{"half", {0}};
  }
  uint32_t Region(const std::string& name) {
    auto it = regions.find(name);
    if (it != regions.end()) return it->second;
    t.regions.push_back({name, 0, 0});
    return regions[name] = uint32_t(t.regions.size() - 1);
  }
  TraceEvent& Add(int r, TraceEvent::Type type, double time) {
    TraceEvent e;
    e.type = type;
    e.time = time;
    t.locations[r].events.push_back(e);
    return t.locations[r].events.back();
  }
  void Enter(int r, const std::string& f, double time) {
    Add(r, TraceEvent::kEnter, time).region = Region(f);
  }
  void Leave(int r, const std::string& f, double time) {
    Add(r, TraceEvent::kLeave, time).region = Region(f);
  }
  void P2p(int r, TraceEvent::Type type, double time, int peer, uint32_t tag, uint64_t bytes,
           uint64_t req = 0) {
    TraceEvent& e = Add(r, type, time);
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    e.request = req;
    e.comm = 0;
  }
  void Coll(int r, uint32_t op, uint32_t comm, double time, uint64_t sent, uint64_t recvd,
            int root) {
    Add(r, TraceEvent::kMpiCollectiveBegin, time);
    TraceEvent& e = Add(r, TraceEvent::kMpiCollectiveEnd, time);
    e.coll_op = op;
    e.comm = comm;
    e.bytes = sent;
    e.bytes_recv = recvd;
    e.peer = root;
  }
};

TEST(TiConvert, ActionsOfTwoRanks) {
  Builder b(2);
  // rank 0: init, 1 s work, send, isend + irecv + waitall, sendrecv, allreduce, reduce_scatter
  b.Enter(0, "MPI_Init", 0);
  b.Leave(0, "MPI_Init", 0.5);
  b.Enter(0, "MPI_Send", 1.5);
  b.P2p(0, TraceEvent::kMpiSend, 1.5, 1, 7, 1000);
  b.Leave(0, "MPI_Send", 1.6);
  b.Enter(0, "MPI_Isend", 1.6);
  b.P2p(0, TraceEvent::kMpiIsend, 1.6, 1, 3, 64, 11);
  b.Leave(0, "MPI_Isend", 1.6);
  b.Enter(0, "MPI_Irecv", 1.6);
  b.P2p(0, TraceEvent::kMpiIrecvRequest, 1.6, -1, 0, 0, 12);
  b.Leave(0, "MPI_Irecv", 1.625);
  b.Enter(0, "MPI_Waitall", 1.75);
  b.P2p(0, TraceEvent::kMpiIsendComplete, 1.7, -1, 0, 0, 11);
  b.P2p(0, TraceEvent::kMpiIrecv, 1.8, 1, 4, 32, 12);
  b.Leave(0, "MPI_Waitall", 1.8);
  b.Enter(0, "MPI_Sendrecv", 1.8);
  b.P2p(0, TraceEvent::kMpiSend, 1.8, 1, 9, 500);
  b.P2p(0, TraceEvent::kMpiRecv, 1.9, 1, 9, 400);
  b.Leave(0, "MPI_Sendrecv", 1.9);
  b.Enter(0, "MPI_Allreduce", 1.9);
  b.Coll(0, 11, 0, 1.9, 8, 8, -1);
  b.Leave(0, "MPI_Allreduce", 2.0);
  b.Enter(0, "MPI_Reduce_scatter", 2.0);
  b.Coll(0, 13, 0, 2.0, 16, 8, -1);
  b.Leave(0, "MPI_Reduce_scatter", 2.5);
  b.Enter(0, "MPI_Bcast", 2.5);
  b.Coll(0, 1, 1, 2.5, 4, 0, 0);
  b.Leave(0, "MPI_Bcast", 2.75);
  b.Enter(0, "MPI_Finalize", 3.0);
  b.Leave(0, "MPI_Finalize", 3.0);
  // rank 1: the partner side, with a probe before its receive
  b.Enter(1, "MPI_Init", 0);
  b.Leave(1, "MPI_Init", 0.5);
  b.Enter(1, "MPI_Probe", 0.5);
  b.Leave(1, "MPI_Probe", 1.5);
  b.Enter(1, "MPI_Recv", 1.5);
  b.P2p(1, TraceEvent::kMpiRecv, 1.6, 0, 7, 1000);
  b.Leave(1, "MPI_Recv", 1.6);
  b.Enter(1, "MPI_Finalize", 3.0);
  b.Leave(1, "MPI_Finalize", 3.0);

  ConvertOptions o;
  o.measured_speed_flops = 1e9;
  Conversion c = ConvertTrace(b.t, o);
  ASSERT_EQ(c.ranks, 2);
  // Bursts: Init's leave to Send (1 s), Irecv's leave to Waitall (0.125 s), Bcast to Finalize.
  EXPECT_EQ(c.actions[0],
            (std::vector<std::string>{"init", "compute 1000000000", "send 1 7 1000", "isend 1 3 64",
                                      "irecv 1 4 32", "compute 125000000", "wait 0 1 3",
                                      "wait 1 0 4", "isend 1 9 500", "recv 1 9 400", "wait 0 1 9",
                                      "allreduce 8 0", "compute 250000000", "finalize"}));
  EXPECT_EQ(c.actions[1],
            (std::vector<std::string>{"init", "recv 0 7 1000", "compute 1400000000", "finalize"}));
  // Reduce_scatter only on rank 0 (its counts need every rank's), the Bcast on a
  // sub-communicator and the probe.
  ASSERT_EQ(c.unexpressed.size(), 3u);
  EXPECT_EQ(c.unexpressed[0].function, "MPI_Probe");
  EXPECT_DOUBLE_EQ(c.unexpressed[0].time_s, 1.0);
  EXPECT_EQ(c.unexpressed[1].function, "MPI_Reduce_scatter (instances differ across ranks)");
  EXPECT_DOUBLE_EQ(c.unexpressed[1].time_s, 0.5);
  EXPECT_EQ(c.unexpressed[1].calls, 1u);
  EXPECT_DOUBLE_EQ(c.unexpressed[1].share, 0.5 / (2 * 2.5));
  EXPECT_EQ(c.unexpressed[2].function, "MPI_Bcast (not on MPI_COMM_WORLD)");
  // From the first MPI_Init leave (0.5) to the last MPI_Finalize enter (3.0).
  EXPECT_DOUBLE_EQ(c.measured_wall_s, 2.5);
}

TEST(TiConvert, NonblockingCollectiveAtItsCompletion) {
  Builder b(2);
  for (int r = 0; r < 2; ++r) {
    b.Enter(r, "MPI_Init", 0);
    b.Leave(r, "MPI_Init", 1);
    b.Enter(r, "MPI_Ibcast", 1);
    b.Add(r, TraceEvent::kNonBlockingCollectiveRequest, 1).request = 5;
    b.Leave(r, "MPI_Ibcast", 1);
    b.Enter(r, "MPI_Wait", 2);
    TraceEvent& e = b.Add(r, TraceEvent::kNonBlockingCollectiveComplete, 2);
    e.coll_op = 1, e.comm = 0, e.peer = 0, e.bytes = r == 0 ? 64 : 0, e.bytes_recv = 64;
    b.Leave(r, "MPI_Wait", 2);
    b.Enter(r, "MPI_Finalize", 2);
    b.Leave(r, "MPI_Finalize", 2);
  }
  Conversion c = ConvertTrace(b.t, {});
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(c.actions[r],
              (std::vector<std::string>{"init", "compute 1", "bcast 64 0", "finalize"}));
  EXPECT_TRUE(c.unexpressed.empty());
}

TEST(TiConvert, GathervCountsFromEveryRank) {
  Builder b(3);
  for (int r = 0; r < 3; ++r) {
    b.Enter(r, "MPI_Init", 0);
    b.Leave(r, "MPI_Init", 1);
    // Gatherv to root 1, which gives MPI_IN_PLACE: ranks send 4, (in place 8), 12 bytes.
    b.Enter(r, "MPI_Gatherv", 1);
    b.Coll(r, 3, 0, 1, r == 1 ? 0 : 4 * (r + 1), r == 1 ? 24 : 0, 1);
    b.Leave(r, "MPI_Gatherv", 1);
    // Allgatherv: rank r contributes r + 1 bytes.
    b.Enter(r, "MPI_Allgatherv", 1);
    b.Coll(r, 7, 0, 1, r + 1, 6, -1);
    b.Leave(r, "MPI_Allgatherv", 1);
    // A Gatherv only rank 0 has (a broken trace): listed, not guessed.
    if (r == 0) {
      b.Enter(r, "MPI_Gatherv", 1);
      b.Coll(r, 3, 0, 1, 4, 0, 2);
      b.Leave(r, "MPI_Gatherv", 2);
    }
    b.Enter(r, "MPI_Finalize", 2);
    b.Leave(r, "MPI_Finalize", 2);
  }
  Conversion c = ConvertTrace(b.t, {});
  EXPECT_EQ(c.actions[0], (std::vector<std::string>{"init", "gatherv 4 4 8 12 1",
                                                    "allgatherv 1 1 2 3", "finalize"}));
  EXPECT_EQ(c.actions[1],
            (std::vector<std::string>{"init", "gatherv 8 4 8 12 1", "allgatherv 2 1 2 3",
                                      "compute 1", "finalize"}));
  EXPECT_EQ(c.actions[2][2], "allgatherv 3 1 2 3");
  ASSERT_EQ(c.unexpressed.size(), 1u);
  EXPECT_EQ(c.unexpressed[0].function, "MPI_Gatherv (instances differ across ranks)");
}

// Scan/Exscan, Scatterv, Reduce_scatter(_block) and Alltoallv/w have no (working) replay
// action in SimGrid 3.32: rewritten as point-to-point messages with a tag above the
// application's (its largest is 41 here, so 42 + the OTF2 operation code).
TEST(TiConvert, CollectivesRewrittenAsPointToPoint) {
  Builder b(3);
  for (int r = 0; r < 3; ++r) {
    b.Enter(r, "MPI_Init", 0);
    b.Leave(r, "MPI_Init", 1);
    if (r < 2) {  // the application's largest tag: 41
      b.Enter(r, r == 0 ? "MPI_Send" : "MPI_Recv", 1);
      b.P2p(r, r == 0 ? TraceEvent::kMpiSend : TraceEvent::kMpiRecv, 1, 1 - r, 41, 8);
      b.Leave(r, r == 0 ? "MPI_Send" : "MPI_Recv", 1);
    }
    b.Enter(r, "MPI_Scan", 1);
    b.Coll(r, 14, 0, 1, 40, 40, -1);
    b.Leave(r, "MPI_Scan", 1);
    // Scatterv from root 2 (MPI_IN_PLACE at the root): rank i receives 10 (i + 1) bytes.
    b.Enter(r, "MPI_Scatterv", 1);
    b.Coll(r, 5, 0, 1, r == 2 ? 60 : 0, r == 2 ? 0 : 10 * (r + 1), 2);
    b.Leave(r, "MPI_Scatterv", 1);
    // Reduce_scatter: counts 4, 8, 12 bytes of a 24-byte vector.
    b.Enter(r, "MPI_Reduce_scatter", 1);
    b.Coll(r, 13, 0, 1, 24, 4 * (r + 1), -1);
    b.Leave(r, "MPI_Reduce_scatter", 1);
    // Alltoallv: rank r sends 100 (r + 1) bytes in all and receives 200 each (T = 600):
    // pair (i, j) = floor(100 (i + 1) 200 / 600).
    b.Enter(r, "MPI_Alltoallv", 1);
    b.Coll(r, 9, 0, 1, 100 * (r + 1), 200, -1);
    b.Leave(r, "MPI_Alltoallv", 1);
    // A neighbourhood collective shares Alltoallv's code: not rewritten, listed.
    b.Enter(r, "MPI_Neighbor_alltoallv", 1);
    b.Coll(r, 9, 0, 1, 8, 8, -1);
    b.Leave(r, "MPI_Neighbor_alltoallv", 2);
    b.Enter(r, "MPI_Finalize", 2);
    b.Leave(r, "MPI_Finalize", 2);
  }
  Conversion c = ConvertTrace(b.t, {});
  EXPECT_EQ(c.actions[0],
            (std::vector<std::string>{"init", "send 1 41 8", "send 1 56 40", "recv 2 47 10",
                                      "reduce 24 0 0", "send 1 55 8", "send 2 55 12",
                                      "isend 1 51 33", "recv 2 51 100", "wait 0 1 51",
                                      "isend 2 51 33", "recv 1 51 66", "wait 0 2 51", "finalize"}));
  EXPECT_EQ(c.actions[1],
            (std::vector<std::string>{
                "init", "recv 0 41 8", "recv 0 56 40", "send 2 56 40", "recv 2 47 20",
                "reduce 24 0 0", "recv 0 55 8", "isend 2 51 66", "recv 0 51 33", "wait 1 2 51",
                "isend 0 51 66", "recv 2 51 100", "wait 1 0 51", "finalize"}));
  EXPECT_EQ(c.actions[2],
            (std::vector<std::string>{"init", "recv 1 56 40", "send 0 47 10", "send 1 47 20",
                                      "reduce 24 0 0", "recv 0 55 12", "isend 0 51 100",
                                      "recv 1 51 66", "wait 2 0 51", "isend 1 51 100",
                                      "recv 0 51 33", "wait 2 1 51", "finalize"}));
  ASSERT_EQ(c.unexpressed.size(), 1u);
  EXPECT_EQ(c.unexpressed[0].function, "MPI_Neighbor_alltoallv");
  EXPECT_EQ(c.unexpressed[0].calls, 3u);
}

// A nonblocking neighbourhood collective shares Alltoallv's operation code and completes in
// MPI_Wait: its start's name keeps it from the Alltoallv rewrite; an Ialltoallv is rewritten.
TEST(TiConvert, NonblockingNeighbourCollectiveIsListed) {
  Builder b(2);
  for (int r = 0; r < 2; ++r) {
    b.Enter(r, "MPI_Init", 0);
    b.Leave(r, "MPI_Init", 1);
    const char* starts[] = {"MPI_Ineighbor_alltoallv", "MPI_Ialltoallv"};
    for (int k = 0; k < 2; ++k) {
      b.Enter(r, starts[k], 1);
      b.Add(r, TraceEvent::kNonBlockingCollectiveRequest, 1).request = 7 + k;
      b.Leave(r, starts[k], 1);
      b.Enter(r, "MPI_Wait", 1);
      TraceEvent& e = b.Add(r, TraceEvent::kNonBlockingCollectiveComplete, 1);
      e.coll_op = 9, e.comm = 0, e.peer = -1, e.bytes = 16, e.bytes_recv = 16, e.request = 7 + k;
      b.Leave(r, "MPI_Wait", 1);
    }
    b.Enter(r, "MPI_Finalize", 1);
    b.Leave(r, "MPI_Finalize", 1);
  }
  Conversion c = ConvertTrace(b.t, {});
  // Pair (0, 1): floor(16 x 16 / 32) = 8 bytes, tag 0 + 1 + 9.
  EXPECT_EQ(c.actions[0], (std::vector<std::string>{"init", "isend 1 10 8", "recv 1 10 8",
                                                    "wait 0 1 10", "finalize"}));
  ASSERT_EQ(c.unexpressed.size(), 1u);
  EXPECT_EQ(c.unexpressed[0].function, "MPI_Wait (completing MPI_Ineighbor_alltoallv)");
}

// The measured wall starts at the first MPI_Init leave; a rank that left later starts later.
TEST(TiConvert, LaunchSkewIsASleep) {
  Builder b(2);
  for (int r = 0; r < 2; ++r) {
    b.Enter(r, "MPI_Init", 0);
    b.Leave(r, "MPI_Init", r == 0 ? 0.5 : 0.75);
    b.Enter(r, "MPI_Finalize", 2);
    b.Leave(r, "MPI_Finalize", 2);
  }
  Conversion c = ConvertTrace(b.t, {});
  EXPECT_EQ(c.actions[0], (std::vector<std::string>{"init", "compute 1.5", "finalize"}));
  EXPECT_EQ(c.actions[1],
            (std::vector<std::string>{"init", "sleep 0.25", "compute 1.25", "finalize"}));
  EXPECT_DOUBLE_EQ(c.measured_wall_s, 1.5);
}

TEST(TiConvert, OtherThreadsAreListed) {
  Builder b(1);
  b.t.locations.resize(2);
  b.t.locations[1].rank = 0;
  b.t.locations_of_rank[0] = {0, 1};
  b.Enter(0, "MPI_Init", 0);
  b.Leave(0, "MPI_Init", 1);
  b.Enter(0, "MPI_Finalize", 3);
  b.Leave(0, "MPI_Finalize", 3);
  b.Enter(1, "MPI_Send", 1.5);
  b.P2p(1, TraceEvent::kMpiSend, 1.5, 0, 1, 8);
  b.Leave(1, "MPI_Send", 2.0);
  Conversion c = ConvertTrace(b.t, {});
  EXPECT_EQ(c.actions[0], (std::vector<std::string>{"init", "compute 2", "finalize"}));
  ASSERT_EQ(c.unexpressed.size(), 1u);
  EXPECT_EQ(c.unexpressed[0].function, "MPI_Send (not the rank's first thread)");
  EXPECT_DOUBLE_EQ(c.unexpressed[0].time_s, 0.5);
  EXPECT_DOUBLE_EQ(c.unexpressed[0].share, 0.25);
}

TEST(TiConvert, MissingRankIsAnError) {
  Builder b(2);
  b.Enter(0, "MPI_Init", 0);
  b.Leave(0, "MPI_Init", 1);
  try {
    ConvertTrace(b.t, {});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 has no events"), std::string::npos) << e.what();
  }
}

TEST(TiConvert, PajeSplit) {
  const std::string paje =
      "%EventDef PajeCreateContainer 6\n%EndEventDef\n%EventDef PajeDefineEntityValue 5\n"
      "%EndEventDef\n%EventDef PajePushState 12\n%EndEventDef\n%EventDef PajePopState 13\n"
      "%EndEventDef\n%EventDef PajeDestroyContainer 7\n%EndEventDef\n"
      "6 0.000000 1 1 0 \"rank-0\"\n6 0.000000 2 1 0 \"rank-1\"\n"
      "5 7 2 computing \"0 1 1\"\n5 8 2 kernel \"0.5 0.5 0.5\"\n"
      "12 0.0 2 1 7\n13 1.0 2 1\n12 1.0 2 1 8\n13 1.5 2 1\n7 1.5 1 1\n"
      "12 0.0 2 2 8\n13 2.0 2 2\n7 2.0 1 2\n";
  auto r = ParsePaje(paje, 2, 2.0);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].computation_s, 1.0);
  EXPECT_DOUBLE_EQ(r[0].communication_s, 0.5);
  EXPECT_DOUBLE_EQ(r[0].wait_s, 0.5);
  EXPECT_DOUBLE_EQ(r[1].computation_s, 0);
  EXPECT_DOUBLE_EQ(r[1].communication_s, 2.0);
  EXPECT_DOUBLE_EQ(r[1].wait_s, 0);
}

}  // namespace
}  // namespace invmw::replay
