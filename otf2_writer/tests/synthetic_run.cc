#include "otf2_writer/tests/synthetic_run.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/event_format.h"
#include "common/sample_format.h"
#include "otf2_writer/raw_run.h"

namespace invmw::otf2::testing {
namespace {
namespace fs = std::filesystem;
using trace::EventRecord;

enum Func : uint16_t {
  kInit,
  kFinalize,
  kSend,
  kRecv,
  kIsend,
  kIrecv,
  kWait,
  kTest,
  kBarrier,
  kIbarrier,
  kAllreduce,
  kBcast,
  kCommSplit,
  kCommFree,
  kPcontrol,
  kSendInit,
  kStart,
  kCancel,
  kSendrecv,
  kNumFuncs
};
const char* const kNames[] = {"MPI_Init",       "MPI_Finalize",  "MPI_Send",      "MPI_Recv",
                              "MPI_Isend",      "MPI_Irecv",     "MPI_Wait",      "MPI_Test",
                              "MPI_Barrier",    "MPI_Ibarrier",  "MPI_Allreduce", "MPI_Bcast",
                              "MPI_Comm_split", "MPI_Comm_free", "MPI_Pcontrol",  "MPI_Send_init",
                              "MPI_Start",      "MPI_Cancel",    "MPI_Sendrecv"};
const char* const kKinds[] = {"special",   "special", "send",     "recv",      "isend",
                              "irecv",     "wait",    "test",     "barrier",   "barrier+req",
                              "allreduce", "bcast",   "comm_new", "comm_free", "special",
                              "send_init", "start",   "cancel",   "sendrecv"};
const char* const kClasses[] = {"env",        "env",        "p2p",        "p2p",     "p2p",
                                "p2p",        "completion", "completion", "barrier", "barrier",
                                "collective", "collective", "comm",       "comm",    "env",
                                "p2p",        "p2p",        "completion", "p2p"};

class Gen {
 public:
  Gen(const SyntheticOptions& o) : o_(o), ev_(3), next_req_(3, 1) {
    ev_[0].resize(2);
    ev_[1].resize(1);
    ev_[2].resize(1);
    e_.ranks = 3;
  }

  uint64_t Local(int r, uint64_t g) const {
    return uint64_t(int64_t(o_.base_ticks + g) + o_.offsets[r] +
                    std::llround(o_.drift[r] * double(g)));
  }
  int64_t Offset(int r, uint64_t g) const { return int64_t(Local(r, g)) - int64_t(Local(0, g)); }

  EventRecord Rec(int r, uint8_t type, uint16_t func, uint64_t g0, uint64_t g1) const {
    EventRecord x{};
    x.type = type;
    x.func = func;
    x.t_enter = Local(r, g0);
    x.t_leave = Local(r, g1);
    x.peer = -1;
    x.peer2 = -1;
    return x;
  }
  void Count(int r, const char* type, uint64_t n = 1) {
    e_.by_type[type] += n;
    e_.by_rank[r][type] += n;
  }
  // One kCall (Enter..Leave) with records nested inside it written first, as the runtime does.
  EventRecord& Call(int r, int th, uint16_t func, uint64_t g0, uint64_t g1,
                    std::vector<EventRecord> nested = {}) {
    for (auto& n : nested) Put(r, th, n);
    Count(r, "Enter");
    Count(r, "Leave");
    ++e_.slices;
    return Put(r, th, Rec(r, trace::kCall, func, g0, g1));
  }
  EventRecord& Put(int r, int th, const EventRecord& x) {
    ++e_.records;
    ev_[r][th].push_back(x);
    return ev_[r][th].back();
  }
  uint64_t Req(int r) { return next_req_[r]++; }
  EventRecord Completion(int r, uint64_t req, uint64_t g, int32_t peer, int32_t tag,
                         uint64_t bytes) {
    EventRecord c = Rec(r, trace::kCompletion, kWait, g, g);
    c.request = req;
    c.peer = peer;
    c.tag = tag;
    c.bytes_sent = bytes;
    return c;
  }

  void Iteration(int it, bool last) {
    const uint64_t s = o_.step_ticks;
    // A: blocking 0 -> 1, received with MPI_ANY_SOURCE.
    {
      auto& snd = Call(0, 0, kSend, g_, g_ + 3000);
      snd.peer = 1, snd.tag = 7, snd.bytes_sent = 1024;
      Count(0, "MpiSend");
      auto& rcv = Call(1, 0, kRecv, g_ + 500, g_ + 4000);
      rcv.peer = 0, rcv.tag = 7, rcv.bytes_recv = 1024, rcv.flags = trace::kFlagAnySource;
      Count(1, "MpiRecv");
      e_.messages.push_back({0, 1, 7, 1024, g_, g_ + 4000});
      g_ += s;
    }
    // B: Isend 1 -> 2, Irecv(ANY_SOURCE) on 2, both completed by MPI_Wait.
    {
      const uint64_t q2 = Req(2), q1 = Req(1);
      auto& ir = Call(2, 0, kIrecv, g_, g_ + 1000);
      ir.request = q2, ir.tag = 9, ir.flags = trace::kFlagAnySource;
      Count(2, "MpiIrecvRequest");
      auto& is = Call(1, 0, kIsend, g_ + 2000, g_ + 2500);
      is.request = q1, is.peer = 2, is.tag = 9, is.bytes_sent = 512;
      Count(1, "MpiIsend");
      Call(1, 0, kWait, g_ + 3000, g_ + 5000, {Completion(1, q1, g_ + 4000, 2, 9, 512)});
      Count(1, "MpiIsendComplete");
      Call(2, 0, kWait, g_ + 2200, g_ + 6000, {Completion(2, q2, g_ + 5500, 1, 9, 512)});
      Count(2, "MpiIrecv");
      e_.messages.push_back({1, 2, 9, 512, g_ + 2000, g_ + 5500});
      g_ += s;
    }
    // C: rank 0's second thread sends 0 -> 2; a buffer flush happens inside the call.
    {
      EventRecord flush = Rec(0, trace::kFlush, kSend, g_ + 1000, g_ + 2000);
      auto& snd = Call(0, 1, kSend, g_, g_ + 4000, {flush});
      snd.peer = 2, snd.tag = 11, snd.bytes_sent = 256;
      Count(0, "MpiSend");
      Count(0, "Enter"), Count(0, "Leave"), ++e_.slices;  // invmw:flush
      // The runtime's own flush: the ring filled while the Recv's record was being stored, so
      // the flush mark precedes that record in the file but happened after the call.
      EventRecord late_flush = Rec(2, trace::kFlush, kRecv, g_ + 5200, g_ + 5600);
      auto& rcv = Call(2, 0, kRecv, g_ + 1500, g_ + 5000, {late_flush});
      rcv.peer = 0, rcv.tag = 11, rcv.bytes_recv = 256;
      Count(2, "Enter"), Count(2, "Leave"), ++e_.slices;  // invmw:flush after the call
      Count(2, "MpiRecv");
      e_.messages.push_back({0, 2, 11, 256, g_, g_ + 5000});
      g_ += s;
    }
    // D: split {0,2} / {1} (first iteration), Allreduce on {0,2}, Bcast from 1 on world.
    {
      if (it == 0) {
        for (int r = 0; r < 3; ++r) {
          Call(r, 0, kCommSplit, g_, g_ + 2000 + 300 * r).comm = 1;
          Count(r, "MpiCollectiveBegin"), Count(r, "CommCreate"), Count(r, "MpiCollectiveEnd");
        }
      }
      for (int r : {0, 2}) {
        auto& c = Call(r, 0, kAllreduce, g_ + 3000, g_ + 5000 + 100 * r);
        c.comm = 1, c.bytes_sent = 8, c.bytes_recv = 8;
        Count(r, "MpiCollectiveBegin"), Count(r, "MpiCollectiveEnd");
      }
      for (int r = 0; r < 3; ++r) {
        auto& c = Call(r, 0, kBcast, g_ + 6000, g_ + 8000);
        c.peer = 1;
        (r == 1 ? c.bytes_sent : c.bytes_recv) = r == 1 ? 200 : 100;
        Count(r, "MpiCollectiveBegin"), Count(r, "MpiCollectiveEnd");
      }
      g_ += s;
    }
    // E: Ibarrier on world, completed by MPI_Wait.
    {
      for (int r = 0; r < 3; ++r) {
        const uint64_t q = Req(r);
        Call(r, 0, kIbarrier, g_, g_ + 500).request = q;
        Count(r, "NonBlockingCollectiveRequest");
        Call(r, 0, kWait, g_ + 1000, g_ + 3000 + 100 * r, {Completion(r, q, g_ + 2500, -1, -1, 0)});
        Count(r, "NonBlockingCollectiveComplete");
      }
      g_ += s;
    }
    // F: Isend 0 -> 2 whose Irecv rank 2 polls with failing Tests before one succeeds.
    {
      const uint64_t q0 = Req(0), q2 = Req(2);
      auto& is = Call(0, 0, kIsend, g_, g_ + 300);
      is.request = q0, is.peer = 2, is.tag = 13, is.bytes_sent = 64;
      Count(0, "MpiIsend");
      auto& ir = Call(2, 0, kIrecv, g_ + 100, g_ + 400);
      ir.request = q2, ir.peer = 0, ir.tag = 13;
      Count(2, "MpiIrecvRequest");
      EventRecord fail = Rec(2, trace::kTestFail, kTest, g_ + 500, g_ + 900);
      fail.request = q2, fail.bytes_sent = 5;
      Put(2, 0, fail);
      Count(2, "Enter"), Count(2, "Leave"), Count(2, "MpiRequestTest"), ++e_.slices;
      Call(2, 0, kTest, g_ + 1000, g_ + 1200, {Completion(2, q2, g_ + 1100, 0, 13, 64)});
      Count(2, "MpiIrecv");
      Call(0, 0, kWait, g_ + 400, g_ + 1500, {Completion(0, q0, g_ + 1300, 2, 13, 64)});
      Count(0, "MpiIsendComplete");
      e_.messages.push_back({0, 2, 13, 64, g_, g_ + 1100});
      g_ += s;
    }
    // G: rank 1 cancels a receive, then pauses recording (MPI_Pcontrol(0) .. (1)).
    {
      const uint64_t q = Req(1);
      auto& ir = Call(1, 0, kIrecv, g_, g_ + 200);
      ir.request = q, ir.peer = 2, ir.tag = 99;
      Count(1, "MpiIrecvRequest");
      Call(1, 0, kCancel, g_ + 300, g_ + 500);
      // As the runtime does: the Wait that completes it records a cancellation instead.
      EventRecord cancel = Completion(1, q, g_ + 650, -1, -1, 0);
      cancel.type = trace::kCancelled;
      Call(1, 0, kWait, g_ + 600, g_ + 700, {cancel});
      Count(1, "MpiRequestCancelled");
      Call(1, 0, kPcontrol, g_ + 800, g_ + 900);
      Put(1, 0, Rec(1, trace::kPause, kPcontrol, g_ + 900, g_ + 5000));
      Count(1, "Enter"), Count(1, "Leave"), ++e_.slices;
      Call(1, 0, kPcontrol, g_ + 5000, g_ + 5100);
      g_ += s;
    }
    // H: persistent send 0 -> 1: Send_init, Start, Wait; rank 1 receives with MPI_Recv. As the
    // runtime does, the Start record names no request and Send_init carries no bytes; in odd
    // iterations the Start names it (a format that can say which request was started).
    {
      const uint64_t q = Req(0);
      auto& init = Call(0, 0, kSendInit, g_, g_ + 100);
      init.request = q, init.peer = 1, init.tag = 21, init.flags = trace::kFlagPersistent;
      auto& start = Call(0, 0, kStart, g_ + 200, g_ + 300);
      start.request = it % 2 ? q : 0, start.bytes_sent = 64;
      Count(0, "MpiIsend");
      Call(0, 0, kWait, g_ + 400, g_ + 1000, {Completion(0, q, g_ + 800, 1, 21, 64)});
      Count(0, "MpiIsendComplete");
      auto& rcv = Call(1, 0, kRecv, g_ + 100, g_ + 900);
      rcv.peer = 0, rcv.tag = 21, rcv.bytes_recv = 64;
      Count(1, "MpiRecv");
      e_.messages.push_back({0, 1, 21, 64, g_ + 200, g_ + 900});
      g_ += s;
    }
    // I: Sendrecv exchange between 1 and 2, then a world barrier.
    {
      for (int r : {1, 2}) {
        auto& c = Call(r, 0, kSendrecv, g_ + 100 * r, g_ + 3000);
        c.peer = 3 - r, c.tag = 30 + r, c.bytes_sent = 128 * r;  // 1 sends tag 31, 2 sends tag 32
        c.peer2 = 3 - r, c.tag2 = 33 - r, c.bytes_recv = 128 * (3 - r);
        Count(r, "MpiSend"), Count(r, "MpiRecv");
      }
      e_.messages.push_back({1, 2, 31, 128, g_ + 100, g_ + 3000});
      e_.messages.push_back({2, 1, 32, 256, g_ + 200, g_ + 3000});
      for (int r = 0; r < 3; ++r) {
        Call(r, 0, kBarrier, g_ + 4000, g_ + 6000);
        Count(r, "MpiCollectiveBegin"), Count(r, "MpiCollectiveEnd");
      }
      g_ += s;
    }
    if (last && o_.unmatched_send) {
      auto& snd = Call(0, 0, kSend, g_, g_ + 100);
      snd.peer = 1, snd.tag = 77, snd.bytes_sent = 8;
      Count(0, "MpiSend");
      ++e_.unmatched_sends;
      g_ += s;
    }
  }

  Expected Write(const std::string& dir) {
    const fs::path raw = fs::path(dir) / "raw";
    fs::remove_all(dir);
    fs::create_directories(raw);
    for (int r = 0; r < 3; ++r) Call(r, 0, kInit, 0, 1000);
    const uint64_t g_init = 1000;
    g_ = 2000;
    for (int it = 0; it < o_.iterations; ++it) Iteration(it, it + 1 == o_.iterations);
    for (int r = 0; r < 3; ++r) {
      Call(r, 0, kCommFree, g_, g_ + 1000).comm = 1;
      Count(r, "MpiCollectiveBegin"), Count(r, "CommDestroy"), Count(r, "MpiCollectiveEnd");
    }
    g_ += o_.step_ticks;
    const uint64_t g_fin = g_ + 500;
    for (int r = 0; r < 3; ++r)
      if (!(o_.crash && r == 2)) Call(r, 0, kFinalize, g_, g_ + 1000);

    for (int r = 0; r < 3; ++r) {
      std::ofstream defs(raw / DefsFileName(r));
      using nlohmann::json;
      defs << json{{"type", "rank"},
                   {"rank", r},
                   {"world_size", 3},
                   {"host", r == 2 ? "node-b" : "node-a"},
                   {"pid", 1000 + r},
                   {"flavor", "openmpi"},
                   {"ticks_per_second", o_.ticks_per_second},
                   {"init_ticks", Local(r, g_init)},
                   {"init_realtime_ns", 1763780000000000000ll}}
                  .dump()
           << "\n";
      json names = json::array(), kinds = json::array(), classes = json::array();
      for (int f = 0; f < kNumFuncs; ++f)
        names.push_back(kNames[f]), kinds.push_back(kKinds[f]), classes.push_back(kClasses[f]);
      defs << json{{"type", "functions"}, {"names", names}, {"kinds", kinds}, {"classes", classes}}
                  .dump()
           << "\n";
      defs << json{{"type", "clock"},
                   {"phase", "init"},
                   {"ticks", Local(r, g_init)},
                   {"offset_ticks", Offset(r, g_init)},
                   {"uncertainty_ticks", 40}}
                  .dump()
           << "\n";
      for (size_t th = 0; th < ev_[r].size(); ++th)
        defs << json{{"type", "thread"},
                     {"index", th},
                     {"location", th == 0 ? "main" : "thread " + std::to_string(th)}}
                    .dump()
             << "\n";
      const std::vector<int> members = r == 1 ? std::vector<int>{1} : std::vector<int>{0, 2};
      defs << json{{"type", "comm"}, {"id", 1}, {"members", members}, {"inter", false}, {"seq", 1}}
                  .dump()
           << "\n";
      if (o_.crash && r == 2) continue;  // died before finalize: no finalize clock, no end line
      if (o_.finalize_clock)
        defs << json{{"type", "clock"},
                     {"phase", "finalize"},
                     {"ticks", Local(r, g_fin)},
                     {"offset_ticks", Offset(r, g_fin)},
                     {"uncertainty_ticks", 40}}
                    .dump()
             << "\n";
      defs << json{{"type", "end"},
                   {"reason", "finalize"},
                   {"end_ticks", Local(r, g_ + 1000)},
                   {"ticks_per_second", o_.ticks_per_second},
                   {"dropped_events", 0},
                   {"flushes", 1}}
                  .dump()
           << "\n";
    }
    for (int r = 0; r < 3; ++r)
      for (size_t th = 0; th < ev_[r].size(); ++th) {
        std::ofstream f(raw / EventsFileName(r, int(th)), std::ios::binary);
        trace::EventFileHeader h{};
        h.magic = trace::kEventMagic;
        h.version = trace::kEventVersion;
        h.header_size = sizeof h;
        h.record_size = sizeof(EventRecord);
        h.rank = r;
        h.thread = int32_t(th);
        f.write(reinterpret_cast<const char*>(&h), sizeof h);
        f.write(reinterpret_cast<const char*>(ev_[r][th].data()),
                std::streamsize(ev_[r][th].size() * sizeof(EventRecord)));
        if (o_.crash && r == 2 && th == 0) {
          EventRecord cut = Rec(2, trace::kCall, kSend, g_, g_ + 10);
          f.write(reinterpret_cast<const char*>(&cut), 20);  // the crash hit mid-write
        }
        if (!f)
          throw std::runtime_error((raw / EventsFileName(r, int(th))).string() + ": write failed");
      }
    for (int r = 0; r < 3 && o_.samples > 0; ++r) WriteSamples(raw, r, g_ + 1000);
    return e_;
  }

 private:
  // Sampler files as sampler/sampler.cc writes them (common/sample_format.h), samples at true
  // times 1 .. n of n+1 even steps of [0, end], on the rank's own clock.
  void WriteSamples(const fs::path& raw, int r, uint64_t end) {
    using nlohmann::json;
    std::ofstream defs(raw / samples::MetricsFileName(r));
    defs << json{{"type", "sampler"},
                 {"rank", r},
                 {"world_size", 3},
                 {"host", r == 2 ? "node-b" : "node-a"},
                 {"pid", 1000 + r},
                 {"node_leader", r != 1},
                 {"ticks_per_second", o_.ticks_per_second},
                 {"interval_s", double(end) / (o_.samples + 1) / o_.ticks_per_second},
                 {"start_ticks", Local(r, 0)},
                 {"start_realtime_ns", 1763780000000000000ll}}
                .dump()
         << "\n"
         << json{{"type", "metric"},        {"index", 0},
                 {"name", "proc.cpu.user"}, {"unit", "s"},
                 {"mode", "accumulated"},   {"source", "proc"}}
                .dump()
         << "\n"
         << json{{"type", "metric"}, {"index", 1},         {"name", "proc.rss"},
                 {"unit", "bytes"},  {"mode", "absolute"}, {"source", "proc"}}
                .dump()
         << "\n";
    std::ofstream f(raw / samples::SamplesFileName(r), std::ios::binary);
    samples::SampleFileHeader h{};
    h.magic = samples::kSampleMagic;
    h.version = samples::kSampleVersion;
    h.header_size = sizeof h;
    h.num_metrics = 2;
    h.record_size = sizeof(samples::SampleRecordHead) + 8 * h.num_metrics;
    h.rank = r;
    f.write(reinterpret_cast<const char*>(&h), sizeof h);
    for (int i = 1; i <= o_.samples; ++i) {
      ExpectedSample x{r, end * uint64_t(i) / uint64_t(o_.samples + 1), 0.001 * i * (r + 1),
                       1e6 * (r + 1) + 4096.0 * i};
      const samples::SampleRecordHead head{Local(r, x.true_ticks), uint64_t(i - 1)};
      const double values[2] = {x.cpu_user, x.rss};
      f.write(reinterpret_cast<const char*>(&head), sizeof head);
      f.write(reinterpret_cast<const char*>(values), sizeof values);
      e_.samples.push_back(x);
    }
    defs << json{{"type", "end"}, {"samples", o_.samples}, {"end_ticks", Local(r, end)}}.dump()
         << "\n";
    if (!f || !defs)
      throw std::runtime_error((raw / samples::SamplesFileName(r)).string() + ": write failed");
  }

  SyntheticOptions o_;
  Expected e_;
  std::vector<std::vector<std::vector<EventRecord>>> ev_;
  std::vector<uint64_t> next_req_;
  uint64_t g_ = 0;
};

}  // namespace

Expected WriteSyntheticRun(const std::string& dir, const SyntheticOptions& options) {
  if (options.offsets.size() < 3 || options.drift.size() < 3)
    throw std::invalid_argument("SyntheticOptions::offsets/drift need one entry per rank (3)");
  Gen g(options);
  return g.Write(dir);
}

}  // namespace invmw::otf2::testing
