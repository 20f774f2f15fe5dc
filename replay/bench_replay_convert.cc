// Conversion speed of ConvertTrace in events per second (issue 19 target: >= 1 million/s), on
// an in-memory trace of R ranks exchanging ring messages between computation bursts.
// Usage: bench_replay_convert [EVENTS_PER_RANK] [RANKS] [TI_DIR]
// With TI_DIR (an existing directory), also writes the TI traces there (index.txt, rank-R.txt)
// for timing SimGrid's replay of a trace of known size (docs/fitter.md, replay benchmark).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "replay/ti_convert.h"

int main(int argc, char** argv) {
  using invmw::otf2::TraceEvent;
  const long per_rank = argc > 1 ? std::atol(argv[1]) : 1000000;
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 4;
  invmw::otf2::Trace t;
  t.path = "bench";
  t.regions = {
      {"MPI_Isend", 0, 0}, {"MPI_Recv", 0, 0}, {"MPI_Wait", 0, 0}, {"MPI_Allreduce", 0, 0}};
  t.comms[0].members.clear();
  for (int r = 0; r < ranks; ++r) t.comms[0].members.push_back(r);
  t.locations.resize(ranks);
  for (int r = 0; r < ranks; ++r) {
    t.locations_of_rank[r] = {size_t(r)};
    auto& ev = t.locations[r].events;
    ev.reserve(per_rank + 16);
    double time = 0;
    uint64_t req = 1;
    auto add = [&](TraceEvent::Type type, uint32_t region) -> TraceEvent& {
      TraceEvent e;
      e.type = type;
      e.region = region;
      e.time = time += 1e-6;
      e.comm = 0;
      ev.push_back(e);
      return ev.back();
    };
    // 12 events per iteration: isend, recv, wait, allreduce.
    while (static_cast<long>(ev.size()) + 12 <= per_rank) {
      add(TraceEvent::kEnter, 0);
      TraceEvent& s = add(TraceEvent::kMpiIsend, UINT32_MAX);
      s.peer = (r + 1) % ranks, s.tag = 1, s.bytes = 4096, s.request = req;
      add(TraceEvent::kLeave, 0);
      add(TraceEvent::kEnter, 1);
      TraceEvent& v = add(TraceEvent::kMpiRecv, UINT32_MAX);
      v.peer = (r + ranks - 1) % ranks, v.tag = 1, v.bytes = 4096;
      add(TraceEvent::kLeave, 1);
      add(TraceEvent::kEnter, 2);
      add(TraceEvent::kMpiIsendComplete, UINT32_MAX).request = req++;
      add(TraceEvent::kLeave, 2);
      add(TraceEvent::kEnter, 3);
      TraceEvent& c = add(TraceEvent::kMpiCollectiveEnd, UINT32_MAX);
      c.coll_op = 11, c.bytes = 8, c.bytes_recv = 8;
      add(TraceEvent::kLeave, 3);
    }
  }
  invmw::replay::ConvertOptions o;
  o.measured_speed_flops = 1e9;
  auto t0 = std::chrono::steady_clock::now();
  invmw::replay::Conversion c = invmw::replay::ConvertTrace(t, o);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t actions = 0;
  for (const auto& a : c.actions) actions += a.size();
  std::printf("events %llu actions %zu seconds %.4f events_per_s %.3g\n",
              static_cast<unsigned long long>(c.events), actions, s, c.events / s);
  if (argc > 3) {
    auto w0 = std::chrono::steady_clock::now();
    std::string index = invmw::replay::WriteTiTraces(c, argv[3]);
    double ws = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    std::printf("wrote %s in %.3f s\n", index.c_str(), ws);
  }
  return 0;
}
