// The inverse mapping on hand-made traces whose answers are known exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/analysis.h"
#include "analysis/tests/trace_builder.h"

namespace invmw::analysis {
namespace {

using testing::TraceBuilder;

constexpr double kEps = 1e-9;

// Every rank's categories must add up to its window: nothing lost, nothing counted twice.
void ExpectTiled(const Analysis& a) {
  for (const auto& r : a.ranks) {
    EXPECT_NEAR(ObservedTotal(r.total) + r.total[kPaused], r.end - r.start, 1e-9)
        << "rank " << r.rank;
    const auto& segs = a.timelines.ranks.at(&r - &a.ranks[0]).segments;
    for (size_t i = 1; i < segs.size(); ++i)
      EXPECT_NEAR(segs[i].start, segs[i - 1].end, 1e-12) << "rank " << r.rank << " segment " << i;
  }
}

TEST(Analysis, LateSenderIsIdleOfTheReceiverAndCausedByTheSender) {
  // Rank 1 computes 0.2 s longer before sending; rank 0 waits in MPI_Recv.
  TraceBuilder b(2);
  b.Init(0, 0.0).Init(1, 0.0);
  b.Recv(0, 1, 0.1, 0.3005, 1000).Finalize(0, 0.4);
  b.Send(1, 0, 0.3, 0.3004, 1000).Finalize(1, 0.4);
  const Analysis a = Analyze(b.Build());
  ExpectTiled(a);
  EXPECT_NEAR(a.ranks[0].total[kIdle], 0.2, kEps);
  EXPECT_NEAR(a.ranks[0].total[kTransfer], 0.0005, kEps);
  EXPECT_NEAR(a.ranks[0].total[kComputation], 0.1 + 0.0995, kEps);
  EXPECT_NEAR(a.ranks[1].total[kComputation], 0.3 + 0.0996, kEps);
  EXPECT_NEAR(a.ranks[1].wait_caused, 0.2, kEps);
  ASSERT_FALSE(a.waited_for.empty());
  EXPECT_EQ(a.waited_for[0], 1);
  EXPECT_EQ(a.imbalance.max_rank, 1);
}

TEST(Analysis, LateReceiverBlocksARendezvousSendButNotABufferedOne) {
  TraceBuilder b(2);
  b.Init(0, 0).Init(1, 0);
  // Send 1: entered at 0.1, receiver posts at 0.25, send returns at 0.2501 (rendezvous).
  b.Send(0, 1, 0.1, 0.2501, 1 << 20, 1);
  // Send 2: entered at 0.3, returns at 0.3001, receive posted at 0.35 (eager, buffered).
  b.Send(0, 1, 0.3, 0.3001, 8, 2);
  b.Finalize(0, 0.5);
  b.Recv(1, 0, 0.25, 0.2502, 1 << 20, 1).Recv(1, 0, 0.35, 0.3501, 8, 2).Finalize(1, 0.5);
  const Analysis a = Analyze(b.Build());
  ExpectTiled(a);
  EXPECT_NEAR(a.ranks[0].total[kIdle], 0.15, kEps);
  EXPECT_NEAR(a.ranks[0].total[kTransfer], 0.0001 + 0.0001, kEps);
  EXPECT_NEAR(a.ranks[1].total[kIdle], 0.0, kEps);
  EXPECT_NEAR(a.ranks[1].wait_caused, 0.15, kEps);
}

TEST(Analysis, NonblockingCompletionWaitsForTheLateSender) {
  TraceBuilder b(2);
  b.Init(0, 0).Init(1, 0);
  b.IrecvWait(0, 1, 0.01, 0.05, 0.2001).Finalize(0, 0.3);
  b.IsendWait(1, 0, 0.2, 0.21, 0.2101).Finalize(1, 0.3);
  const Analysis a = Analyze(b.Build());
  ExpectTiled(a);
  EXPECT_NEAR(a.ranks[0].total[kIdle], 0.15, kEps);  // 0.05 .. 0.2 in MPI_Wait
  EXPECT_NEAR(a.ranks[1].total[kIdle], 0.0, kEps);   // receive was posted long before
}

TEST(Analysis, BarrierAfterUnequalWorkSplitsWaitAndOperation) {
  TraceBuilder b(2);
  b.Init(0, 0).Init(1, 0);
  b.Barrier(0, 0.1, 0.3002).Finalize(0, 0.4);
  b.Barrier(1, 0.3, 0.3002).Finalize(1, 0.4);
  const Analysis a = Analyze(b.Build());
  ExpectTiled(a);
  EXPECT_NEAR(a.ranks[0].total[kSyncWait], 0.2, kEps);
  EXPECT_NEAR(a.ranks[0].total[kSyncOp], 0.0002, kEps);
  EXPECT_NEAR(a.ranks[1].total[kSyncWait], 0.0, kEps);
  EXPECT_NEAR(a.ranks[1].total[kSyncOp], 0.0002, kEps);
  EXPECT_NEAR(a.imbalance.max_over_mean, (0.3 + 0.0998) / ((0.3 + 0.0998 + 0.1 + 0.0998) / 2),
              1e-9);
  EXPECT_EQ(a.imbalance.max_rank, 1);
  EXPECT_EQ(a.imbalance.heavy_ranks, std::vector<int32_t>{1});
  EXPECT_EQ(a.collective_instances, 1u);
}

// Collective instances on two communicators, one rank's participations not in communicator
// order: the path that joins and sorts the participations (one communicator in rank and time
// order is walked without them), with an instance's members counted per communicator.
TEST(Analysis, CollectivesOnTwoCommunicatorsMatchPerCommunicator) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.Init(r, 0);
  b.Barrier(0, 0.1, 0.4002).Barrier(0, 0.5, 0.8002);  // first on {0, 1}, then on the world
  b.Barrier(1, 0.3, 0.4002).Barrier(1, 0.6, 0.8002);
  b.Barrier(2, 0.8, 0.8002);
  for (int r = 0; r < 3; ++r) b.Finalize(r, 0.9);
  invmw::otf2::Trace t = b.Build();
  t.comms[1].name = "pair";
  t.comms[1].members = {0, 1};
  for (int r = 0; r < 2; ++r)
    for (auto& e : t.locations[size_t(r)].events)
      if (e.type == invmw::otf2::TraceEvent::kMpiCollectiveEnd) {
        e.comm = 1;  // the rank's first collective
        break;
      }
  const Analysis a = Analyze(std::move(t));
  ExpectTiled(a);
  EXPECT_EQ(a.collective_instances, 2u);
  EXPECT_EQ(a.incomplete_collectives, 0u);
  EXPECT_NEAR(a.ranks[0].total[kSyncWait], 0.2 + 0.3, kEps);
  EXPECT_NEAR(a.ranks[1].total[kSyncWait], 0.2, kEps);
  EXPECT_NEAR(a.ranks[2].total[kSyncWait], 0.0, kEps);
}

TEST(Analysis, RootedCollectivesWaitOnlyWhereTheSemanticsDemand) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.Init(r, 0);
  // Bcast rooted at 2, which arrives last at 0.3: ranks 0 and 1 wait for it.
  b.Bcast(0, 2, 0.1, 0.301, 64).Bcast(1, 2, 0.2, 0.301, 64).Bcast(2, 2, 0.3, 0.3005, 64);
  // Reduce to 0, rank 1 arrives last at 0.5: only the root waits; rank 2 does not.
  b.Reduce(0, 0, 0.4, 0.5005, 64).Reduce(1, 0, 0.5, 0.5001, 64).Reduce(2, 0, 0.35, 0.3501, 64);
  for (int r = 0; r < 3; ++r) b.Finalize(r, 0.6);
  const Analysis a = Analyze(b.Build());
  ExpectTiled(a);
  EXPECT_NEAR(a.ranks[0].total[kSyncWait], 0.2 + 0.1, kEps);
  EXPECT_NEAR(a.ranks[1].total[kSyncWait], 0.1, kEps);
  EXPECT_NEAR(a.ranks[2].total[kSyncWait], 0.0, kEps);
  // Data-moving collectives: the remainder is transfer, not sync_op.
  EXPECT_NEAR(a.ranks[2].total[kTransfer], 0.0005 + 0.0001, kEps);
  EXPECT_NEAR(a.ranks[2].total[kSyncOp], 0.0, kEps);
}

TEST(Analysis, ChainCriticalPathIsTheSumOfItsParts) {
  // 0 computes 0.1 and sends to 1, which computes 0.15 and sends to 2, which computes 0.2.
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.Init(r, 0);
  b.Send(0, 1, 0.1, 0.1001).Finalize(0, 0.1002);
  b.Recv(1, 0, 0.0001, 0.1002).Send(1, 2, 0.2502, 0.2503).Finalize(1, 0.2504);
  b.Recv(2, 1, 0.0001, 0.2504).Finalize(2, 0.4504);
  const Analysis a = Analyze(b.Build());
  ExpectTiled(a);
  const CriticalPath& cp = a.critical_path;
  EXPECT_NEAR(cp.length, 0.4504, kEps);
  EXPECT_EQ(cp.end_rank, 2);
  EXPECT_EQ(cp.start_rank, 0);
  EXPECT_EQ(cp.jumps, 2u);
  EXPECT_NEAR(cp.composition[kComputation], 0.1 + 0.15 + 0.2, kEps);
  EXPECT_NEAR(cp.composition[kTransfer], 0.0002 + 0.0002, kEps);
  EXPECT_NEAR(cp.composition[kIdle], 0.0, kEps);
  EXPECT_NEAR(cp.by_rank.at(0)[kComputation], 0.1, kEps);
  EXPECT_NEAR(cp.by_rank.at(1)[kComputation], 0.15, kEps);
  EXPECT_NEAR(cp.by_rank.at(2)[kComputation], 0.2, kEps);
  double sum = 0;
  for (double x : cp.composition) sum += x;
  EXPECT_NEAR(sum, cp.length, kEps);
}

TEST(Analysis, PcontrolCallsDelimitPhasesAndPausedTimeIsNotObserved) {
  TraceBuilder b(1);
  b.Init(0, 0);
  b.Pcontrol(0, 0.1, 0.1);  // phase "pcontrol 1" from 0.1
  b.Pause(0, 0.2, 0.5);     // Pcontrol(0) pauses; the resuming call starts "pcontrol 2"
  b.Finalize(0, 0.7);
  const Analysis a = Analyze(b.Build());
  ExpectTiled(a);
  EXPECT_EQ(a.phase_source, PhaseSource::kPcontrol);
  ASSERT_EQ(a.phase_names.size(), 3u);
  EXPECT_EQ(a.phase_names[1], "pcontrol 1");
  EXPECT_NEAR(a.ranks[0].phases[0][kComputation], 0.1, kEps);
  EXPECT_NEAR(a.ranks[0].phases[1][kPaused], 0.3, kEps);
  EXPECT_NEAR(a.ranks[0].phases[1][kComputation], 0.1 - 1e-6, 1e-9);
  EXPECT_NEAR(a.ranks[0].phases[2][kComputation], 0.2 - 1e-6, 1e-9);
}

TEST(Analysis, UserRegionsNamePhasesWithoutPcontrol) {
  TraceBuilder b(1);
  b.Init(0, 0);
  b.UserEnter(0, "setup", 0.0).UserLeave(0, "setup", 0.1);
  b.UserEnter(0, "solve", 0.1).Barrier(0, 0.2, 0.25).UserLeave(0, "solve", 0.4);
  b.Finalize(0, 0.5);
  const Analysis a = Analyze(b.Build());
  ExpectTiled(a);
  EXPECT_EQ(a.phase_source, PhaseSource::kUserRegions);
  std::map<std::string, Times> by_name;
  for (size_t p = 0; p < a.phase_names.size(); ++p)
    by_name[a.phase_names[p]] = a.ranks[0].phases[p];
  EXPECT_NEAR(by_name["setup"][kComputation], 0.1, kEps);
  EXPECT_NEAR(by_name["solve"][kComputation], 0.25, kEps);
  EXPECT_NEAR(by_name["solve"][kSyncOp], 0.05, kEps);
  EXPECT_NEAR(by_name["(outside regions)"][kComputation], 0.1, kEps);
}

TEST(Analysis, ClassifiesComputeCommunicationSynchronizationAndMiddleware) {
  {  // compute-only
    TraceBuilder b(2);
    b.Init(0, 0).Init(1, 0).Finalize(0, 1).Finalize(1, 1);
    EXPECT_EQ(Analyze(b.Build()).classification.label, "computation-bound");
  }
  {  // ping-pong: each rank either transfers or waits for the other's message
    TraceBuilder b(2);
    b.Init(0, 0).Init(1, 0);
    double t = 0.001;
    for (int i = 0; i < 100; ++i) {
      b.Send(0, 1, t, t + 0.004, 1 << 20).Recv(1, 0, t - 0.0005, t + 0.004, 1 << 20);
      t += 0.004;
      b.Send(1, 0, t, t + 0.004, 1 << 20).Recv(0, 1, t, t + 0.004, 1 << 20);
      t += 0.004;
    }
    b.Finalize(0, t).Finalize(1, t);
    const Analysis a = Analyze(b.Build());
    EXPECT_EQ(a.classification.label, "communication-bound") << a.classification.reason;
    EXPECT_GT(a.classification.communication, 0.9);
  }
  {  // barrier-heavy, rank 0 works, three ranks wait
    TraceBuilder b(4);
    for (int r = 0; r < 4; ++r) b.Init(r, 0);
    double t = 0;
    for (int i = 0; i < 10; ++i) {
      for (int r = 0; r < 4; ++r) b.Barrier(r, r == 0 ? t + 0.01 : t, t + 0.0101);
      t += 0.0101;
    }
    for (int r = 0; r < 4; ++r) b.Finalize(r, t);
    const Analysis a = Analyze(b.Build());
    EXPECT_EQ(a.classification.label, "synchronization-bound") << a.classification.reason;
  }
  {  // most time in MPI calls no resource explains
    TraceBuilder b(1);
    b.Init(0, 0).OtherMpi(0, 0.1, 0.9).Finalize(0, 1);
    const Analysis a = Analyze(b.Build());
    EXPECT_EQ(a.classification.label, "middleware-inefficient");
    EXPECT_NEAR(a.classification.unallocated, 0.8, 1e-9);
  }
  {  // MPI-IO
    TraceBuilder b(1);
    b.Init(0, 0).FileWrite(0, 0.1, 0.9).Finalize(0, 1);
    EXPECT_EQ(Analyze(b.Build()).classification.label, "memory/I-O-bound");
  }
}

// Sampler metrics: 1 s outside MPI of which 0.2 s on the CPU, the node mostly idle.
TraceBuilder OffCpuRun(double io_bytes) {
  TraceBuilder b(1);
  b.Init(0, 0).Finalize(0, 1.0);
  std::vector<std::pair<double, double>> cpu, idle, busy, io;
  for (int i = 0; i <= 10; ++i) {
    const double t = 0.1 * i;
    cpu.push_back({t, 0.02 * i});
    idle.push_back({t, 0.15 * i});  // 2 CPUs: 0.2 s per 0.1 s, 75% idle
    busy.push_back({t, 0.05 * i});
    io.push_back({t, io_bytes * i / 10});
  }
  b.Metric(0, "proc.cpu.user", cpu)
      .Metric(0, "node_cpu.idle", idle)
      .Metric(0, "node_cpu.user", busy)
      .Metric(0, "proc.io.read_bytes", io);
  return b;
}

TEST(Analysis, OffCpuTimeOutsideMpiIsUnallocatedOrMemoryIo) {
  {
    const Analysis a = Analyze(OffCpuRun(0).Build());
    ExpectTiled(a);
    EXPECT_NEAR(a.ranks[0].resources.comp_on_cpu_s, 0.2, 1e-9);
    EXPECT_NEAR(a.ranks[0].total[kComputation], 0.2, 1e-9);
    EXPECT_NEAR(a.ranks[0].total[kUnallocated], 0.8, 1e-9);
    EXPECT_EQ(a.classification.label, "middleware-inefficient");
  }
  {
    const Analysis a = Analyze(OffCpuRun(50e6).Build());
    EXPECT_NEAR(a.ranks[0].total[kMemoryIo], 0.8, 1e-9);
    EXPECT_EQ(a.classification.label, "memory/I-O-bound");
  }
  {  // the same without using the metrics: all computation
    AnalyzeOptions o;
    o.use_resources = false;
    EXPECT_EQ(Analyze(OffCpuRun(0).Build(), o).classification.label, "computation-bound");
  }
}

TEST(Analysis, BusyRankWithSamplerDataStaysComputation) {
  TraceBuilder b(1);
  b.Init(0, 0).Finalize(0, 1.0);
  std::vector<std::pair<double, double>> cpu;
  for (int i = 0; i <= 10; ++i) cpu.push_back({0.1 * i, 0.099 * i});
  b.Metric(0, "proc.cpu.user", cpu);
  const Analysis a = Analyze(b.Build());
  EXPECT_TRUE(a.ranks[0].resources.sampled);
  EXPECT_NEAR(a.ranks[0].total[kComputation], 1.0, 1e-9);
  EXPECT_EQ(a.classification.label, "computation-bound");
}

// Opal's structure: client 0, servers 1 and 2; per step an update call (empty replies) and an
// energy call (data replies), each framed by barriers; then the client's bonded work.
TEST(Opal, ResponsesFromRoundsAndSteps) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.Init(r, 0);
  const double comp[2][2][2] = {// [step][call][server]
                                {{0.010, 0.020}, {0.050, 0.030}},
                                {{0.012, 0.008}, {0.040, 0.045}}};
  const double seq = 0.005, msg = 0.0001, bar = 0.00005;
  double t = 0.001;  // client's clock
  double sync = 0, transfer = 0;
  for (int step = 0; step < 2; ++step) {
    for (int call = 0; call < 2; ++call) {
      for (int r = 0; r < 3; ++r) b.Barrier(r, t, t + bar);
      t += bar, sync += bar;
      // Requests to both servers; each server computes from its request's arrival, then
      // replies; the client receives the replies in server order.
      double ready[3];
      for (int s = 1; s <= 2; ++s) {
        b.Send(0, s, t, t + msg, 24000);
        b.Recv(s, 0, t - 0.00001, t + msg, 24000);
        ready[s] = t + msg + comp[step][call][s - 1];
        b.Send(s, 0, ready[s], ready[s] + msg, call == 0 ? 0 : 24000);
        t += msg, transfer += msg;
      }
      for (int s = 1; s <= 2; ++s) {
        const double done = std::max(t, ready[s]) + msg;
        b.Recv(0, s, t, done, call == 0 ? 0 : 24000);
        t = done;
      }
    }
    t += seq;  // bonded terms
  }
  // After the loop the client collects something (a data-carrying collective ends the window).
  for (int r = 0; r < 3; ++r) b.Reduce(r, 0, t, t + 0.001, 8).Finalize(r, t + 0.01);
  const Analysis a = Analyze(b.Build());
  const OpalBreakdown o = AnalyzeOpal(a);
  EXPECT_EQ(o.p, 2);
  EXPECT_EQ(o.rounds, 4);
  EXPECT_EQ(o.steps, 2);
  // Per step the longest server computation: step 0: max(0.06, 0.05), step 1: max(0.052, 0.053).
  EXPECT_NEAR(o.responses.at("t_par_comp"), 0.060 + 0.053, 1e-6);
  EXPECT_NEAR(o.responses.at("t_seq_comp"), 2 * seq, 1e-6);
  EXPECT_NEAR(o.responses.at("t_sync"), sync, 1e-9);
  EXPECT_GT(o.responses.at("t_comm"), transfer);  // sends plus the receives' transfer parts
  // The components and the residual idle time tile the client's window; its raw waiting is at
  // least the parallel computation on the critical path.
  const double sum = o.responses.at("t_par_comp") + o.responses.at("t_seq_comp") +
                     o.responses.at("t_comm") + o.responses.at("t_sync") + o.responses.at("t_idle");
  EXPECT_NEAR(sum, o.responses.at("t_wall"), 1e-9);
  EXPECT_GE(o.t_wait, o.responses.at("t_par_comp"));
  EXPECT_NEAR(o.t_wait + o.responses.at("t_seq_comp") + o.responses.at("t_comm") +
                  o.responses.at("t_sync") + o.t_unallocated,
              o.responses.at("t_wall"), 1e-9);
  EXPECT_EQ(OpalResponses(a).size(), 6u);
}

// opal-mini's framing with one server: an opening barrier the server reaches late (its
// set-up), the request, the server's computation while the client waits in the closing
// barrier, the reply. The late arrival is synchronization, the wait for the computation is
// not: both are sync_wait on the client, told apart by t_par_comp.
TEST(Opal, BarrierWaitBeyondComputationIsSync) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.Init(r, 0);
  const double late = 0.004, comp = 0.020, msg = 0.0001, bar = 0.00005, kBookkeeping = 2e-6;
  double t = 0.001;
  b.Barrier(0, t, t + late + bar).Barrier(1, t + late, t + late + bar);
  t += late + bar + kBookkeeping;  // the client reads its clock between barrier and request
  b.Send(0, 1, t, t + msg, 24000).Recv(1, 0, t, t + msg, 24000);
  t += msg;
  // The client enters the closing barrier at once; the server after computing.
  b.Barrier(0, t, t + comp + bar).Barrier(1, t + comp, t + comp + bar);
  t += comp + bar;
  b.Send(1, 0, t, t + msg, 24000).Recv(0, 1, t, t + msg, 24000);
  t += msg;
  for (int r = 0; r < 2; ++r) b.Finalize(r, t + 0.001);
  const OpalBreakdown o = AnalyzeOpal(Analyze(b.Build()));
  EXPECT_NEAR(o.responses.at("t_par_comp"), comp, 1e-6);
  EXPECT_NEAR(o.responses.at("t_sync"), late + 2 * bar, 1e-6);
  EXPECT_NEAR(o.responses.at("t_idle"), 0.0, 1e-6);
  // The window runs on over the client's last sequential work, up to MPI_Finalize.
  EXPECT_NEAR(o.responses.at("t_seq_comp"), 0.001 + kBookkeeping, 1e-9);
  EXPECT_NEAR(o.responses.at("t_wall"), late + bar + kBookkeeping + msg + comp + bar + msg + 0.001,
              1e-9);
}

TEST(Opal, ThrowsWithoutClientServerRounds) {
  TraceBuilder b(2);
  b.Init(0, 0).Init(1, 0).Finalize(0, 1).Finalize(1, 1);
  EXPECT_THROW(AnalyzeOpal(Analyze(b.Build())), std::runtime_error);
}

// Applications without Opal's structure (a halo exchange, overlapping requests) are refused
// with what was missing, instead of components longer than the run.
TEST(Opal, RefusesMessagesBetweenServers) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.Init(r, 0);
  double t = 0.001;
  for (int it = 0; it < 20; ++it) {
    for (int r = 0; r < 3; ++r) {
      const int right = (r + 1) % 3, left = (r + 2) % 3;
      b.Send(r, right, t, t + 0.0001, 800).Recv(right, r, t, t + 0.0001, 800);
      (void)left;
    }
    t += 0.01;
  }
  for (int r = 0; r < 3; ++r) b.Finalize(r, t);
  try {
    AnalyzeOpal(Analyze(b.Build()));
    FAIL() << "a ring exchange was accepted as Opal's structure";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("between servers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("from rank 1 to rank 2"), std::string::npos) << e.what();
  }
}

TEST(Opal, RefusesOverlappingRequests) {
  TraceBuilder b(2);
  b.Init(0, 0).Init(1, 0);
  // The client sends every request first and collects the replies afterwards: the server has
  // several requests at once, and each reply's window would cover the same computation.
  double t = 0.001;
  for (int k = 0; k < 5; ++k, t += 0.001)
    b.Send(0, 1, t, t + 0.0001, 100).Recv(1, 0, t, t + 0.0001, 100);
  for (int k = 0; k < 5; ++k, t += 0.1)
    b.Send(1, 0, t + 0.1, t + 0.1001, 100).Recv(0, 1, t, t + 0.1001, 100);
  b.Finalize(0, t + 1).Finalize(1, t + 1);
  try {
    AnalyzeOpal(Analyze(b.Build()));
    FAIL() << "overlapping requests were accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("request/reply"), std::string::npos) << e.what();
  }
}

TEST(Opal, RefusesUnsolicitedReplies) {
  TraceBuilder b(2);
  b.Init(0, 0).Init(1, 0);
  double t = 0.001;
  for (int k = 0; k < 3; ++k, t += 0.01) {
    b.Send(0, 1, t, t + 0.0001, 100).Recv(1, 0, t, t + 0.0001, 100);
    b.Send(1, 0, t + 0.002, t + 0.0021, 100).Recv(0, 1, t + 0.001, t + 0.0021, 100);
    // A second message from the server that no request asked for.
    b.Send(1, 0, t + 0.003, t + 0.0031, 100).Recv(0, 1, t + 0.003, t + 0.0031, 100);
  }
  b.Finalize(0, t + 1).Finalize(1, t + 1);
  try {
    AnalyzeOpal(Analyze(b.Build()));
    FAIL() << "unsolicited replies were accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("answers no request"), std::string::npos) << e.what();
  }
}

// `invmw analyze` on large traces keeps only the compact segments and frees the messages
// (issue 23): the figures must be those of the full analysis, to the bit.
TEST(Analysis, CompactAnalysisGivesTheSameFigures) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.Init(r, 0);
  b.Recv(0, 1, 0.1, 0.3005, 1000);
  b.Send(1, 0, 0.3, 0.3004, 1000);
  b.Send(2, 0, 0.05, 0.35, 64000);  // late receiver: rank 0 posts at 0.31
  b.Recv(0, 2, 0.31, 0.3502, 64000);
  for (int r = 0; r < 3; ++r) b.Barrier(r, 0.4 + 0.01 * r, 0.43 + 0.0001 * r);
  for (int r = 0; r < 3; ++r) b.Pcontrol(r, 0.45, 0.4501);  // a second phase
  for (int r = 0; r < 3; ++r) b.Reduce(r, 0, 0.5 + 0.02 * r, 0.56, 8);
  b.IsendWait(1, 2, 0.57, 0.58, 0.65, 4096);  // late receiver through a request
  b.IrecvWait(2, 1, 0.62, 0.63, 0.651, 4096);
  for (int r = 0; r < 3; ++r) b.Finalize(r, 0.7);
  invmw::otf2::Trace trace = b.Build();
  const Analysis full = Analyze(trace);
  ASSERT_FALSE(trace.messages.empty());
  AnalyzeOptions o;
  o.keep_details = false;
  const Analysis compact = Analyze(std::move(trace), o);
  EXPECT_TRUE(trace.messages.empty());  // released
  EXPECT_EQ(ToJson(compact).dump(1), ToJson(full).dump(1));
  EXPECT_TRUE(compact.p2p.empty());
  EXPECT_GT(full.critical_path.jumps, 0u);
  for (size_t i = 0; i < full.timelines.ranks.size(); ++i) {
    const RankTimeline& f = full.timelines.ranks[i];
    const RankTimeline& c = compact.timelines.ranks[i];
    EXPECT_TRUE(c.segments.empty());
    ASSERT_EQ(c.compact.size(), f.segments.size());
    for (size_t k = 0; k < f.segments.size(); ++k) {
      EXPECT_EQ(c.compact.start(k, c.start), f.segments[k].start) << i << " " << k;
      EXPECT_EQ(c.compact.ends[k], f.segments[k].end);
      EXPECT_EQ(c.compact.cat(k), f.segments[k].cat);
      EXPECT_EQ(c.compact.jump_rank(k), f.segments[k].jump_rank);
    }
  }
  EXPECT_THROW(AnalyzeOpal(compact), std::invalid_argument);
  EXPECT_EQ(compact.phase_names.size(), 2u);
}

// Call sites (issue 22): the calls of a call site get exactly their own segments' times, and
// each call (or coalesced visit) is counted once, in the full and in the compact analysis.
TEST(Analysis, CallSiteTimesAreTheirCallsSegmentsCountedOnce) {
  TraceBuilder b(2);
  b.Init(0, 0.0).Init(1, 0.0);
  b.Recv(0, 1, 0.1, 0.3005, 1000);  // idle 0.2 waiting for the late sender
  b.Send(1, 0, 0.3, 0.3004, 1000);
  b.Barrier(0, 0.35, 0.40).Barrier(1, 0.38, 0.40);
  b.Finalize(0, 0.5).Finalize(1, 0.5);
  invmw::otf2::Trace trace = b.Build();
  trace.callsites.resize(2);
  trace.callsites[0] = {"solve", "solver.c", 212};
  trace.callsites[1] = {"step", "", 0};
  for (auto& l : trace.locations)
    for (auto& e : l.events) {
      if (e.type != invmw::otf2::TraceEvent::kEnter) continue;
      const std::string& n = trace.regions[e.region].name;
      if (n == "MPI_Recv") e.callsite = 0;
      if (n == "MPI_Barrier") {
        e.callsite = 1;
        e.calls = 3;  // a coalesced visit
      }
    }
  const Analysis full = Analyze(trace);
  AnalyzeOptions o;
  o.keep_details = false;
  const Analysis compact = Analyze(std::move(trace), o);
  EXPECT_EQ(ToJson(compact).dump(1), ToJson(full).dump(1));
  ASSERT_EQ(full.callsites.size(), 2u);
  const CallSiteWait& recv = full.callsites[0];  // the most idle first
  EXPECT_EQ(recv.function, "MPI_Recv");
  EXPECT_EQ(recv.location, "solver.c:212");
  EXPECT_EQ(recv.calls, 1u);
  EXPECT_EQ(recv.ranks, 1);
  EXPECT_NEAR(recv.t[kIdle], 0.2, kEps);
  EXPECT_NEAR(recv.time, 0.2005, kEps);
  const CallSiteWait& bar = full.callsites[1];
  EXPECT_EQ(bar.function, "MPI_Barrier");
  EXPECT_EQ(bar.location, "step");
  EXPECT_EQ(bar.calls, 6u);
  EXPECT_EQ(bar.ranks, 2);
  EXPECT_NEAR(bar.time, 0.05 + 0.02, kEps);
  EXPECT_NEAR(bar.t[kSyncWait], 0.03, kEps);
  EXPECT_NEAR(bar.t[kComputation], 0.0, kEps);
  for (const auto& r : full.timelines.ranks) {
    uint64_t site_calls = 0;
    for (const auto& [key, st] : r.callsites) site_calls += st.calls;
    EXPECT_LE(site_calls, r.calls) << "rank " << r.rank;
  }
}

// A segment that does not start where the one before it ended keeps its start apart.
TEST(Analysis, CompactSegmentsKeepStartsThatBreakTheTiling) {
  CompactSegments c;
  c.ends = {1.0, 2.0, 3.0, 4.0};
  c.info = {uint32_t(kComputation), uint32_t(kIdle) | 16u | (3u << 5), uint32_t(kTransfer),
            uint32_t(kSyncOp) | 16u};
  c.starts = {{1, 0.9}, {3, 2.5}};
  EXPECT_EQ(c.start(0, 0.25), 0.25);
  EXPECT_EQ(c.start(1, 0.25), 0.9);
  EXPECT_EQ(c.start(2, 0.25), 2.0);
  EXPECT_EQ(c.start(3, 0.25), 2.5);
  EXPECT_EQ(c.jump_rank(1), 2);
  EXPECT_EQ(c.jump_rank(0), -1);
  EXPECT_EQ(c.cat(3), kSyncOp);
}

TEST(Analysis, JsonHasTheContractKeys) {
  TraceBuilder b(2);
  b.Init(0, 0).Init(1, 0);
  b.Barrier(0, 0.1, 0.3002).Finalize(0, 0.4);
  b.Barrier(1, 0.3, 0.3002).Finalize(1, 0.4);
  const nlohmann::json j = ToJson(Analyze(b.Build()));
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_NEAR(j["ranks"][0]["total"]["sync_wait"].get<double>(), 0.2, 1e-9);
  EXPECT_TRUE(j["critical_path"].contains("length_s"));
  EXPECT_TRUE(j["classification"].contains("class"));
  EXPECT_EQ(j["load_imbalance"]["max_rank"], 1);
  EXPECT_EQ(j["phase_source"], "whole run");
}

TEST(Analysis, OptionsAreValidated) {
  AnalyzeOptions o;
  std::string err;
  EXPECT_TRUE(o.IsValid(&err));
  o.unallocated_threshold = 0;
  EXPECT_FALSE(o.IsValid(&err));
  EXPECT_NE(err.find("unallocated_threshold"), std::string::npos);
  TraceBuilder b(1);
  EXPECT_THROW(Analyze(b.Build(), o), std::invalid_argument);
}

}  // namespace
}  // namespace invmw::analysis
