// An OTF2 trace of an opal-mini-like run whose time components are known by construction, for
// the synthetic-trace test of the inverse mapping (analysis.opal_synthetic, issue 20 item 4).
//
//   make_opal_otf2 OUT_DIR eager|rendezvous [SERVERS=2] [STEPS=3]
// writes OUT_DIR/traces.otf2 (OUT_DIR must not exist yet) and OUT_DIR/expected.json, the
// components {t_wall, t_par_comp, t_seq_comp, t_comm, t_sync, t_idle} in seconds, which
// `invmw analyze --opal` must reproduce.
//
// The run: client 0 and servers 1..p; per step an update round (empty replies) and an energy
// round (data replies), each as opal-mini does it: barrier, the client's requests to every
// server, barrier after the servers' computation, replies; after the energy round the client's
// sequential work. Every duration is an integer number of nanoseconds chosen here:
//   w    wire time of a request (serialised on the client's link), r the reply's
//   e    an eager send call (it returns before the data arrives), k an eager receive's copy of
//        data that arrived before the receive was posted
//   c_s  server s's computation (grows with s by more than w, so the last server served is the
//        slowest and the client's closing-barrier wait is exactly its computation)
//   o    a barrier's operation once everybody is in
// and the situations whose waits must land in the right component:
//   late arrival   server p reaches the first barrier L after the client (set-up): t_sync
//   stall          server p sits X in a non-computing MPI call after computing (step 1, energy
//                  round) before the closing barrier: t_sync
//   late receiver  server p posts its receive P after the opening barrier (step 1, update
//                  round). Rendezvous: the client's send waits for the post (t_idle), then
//                  transfers. Eager: the send returns, the data reaches server p's buffer before
//                  the post (hidden behind the lateness), the receive copies it (k, t_comm); the
//                  client waits in the closing barrier, and the wait for the post beyond the
//                  other requests' wire time is t_idle
//   late sender    server p sits D in a non-computing MPI call before its reply (step 2, energy
//                  round): the client's receive waits D - (p-1) r beyond receiving the others'
//                  replies: t_idle
// The truth is added up from these durations as the run is generated; the mapping sees only
// the timestamps.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "otf2_writer/otf2_open.h"

namespace {

void Check(OTF2_ErrorCode rc, const char* step) {
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error(std::string("OTF2 ") + step + ": " + OTF2_Error_GetName(rc));
}

enum Region : OTF2_RegionRef { kInit, kFinalize, kSend, kRecv, kBarrier, kCommDup, kNumRegions };

struct Ev {
  enum Kind { kEnter, kLeave, kMpiSend, kMpiRecv, kCollBegin, kCollEnd } kind;
  uint64_t t;
  Region region;
  uint32_t peer = 0, tag = 0;
  uint64_t bytes = 0;
};

constexpr uint64_t us = 1000;  // ns

struct Run {
  std::vector<std::vector<Ev>> ev;
  explicit Run(int ranks) : ev(size_t(ranks)) {}
  void Call(int r, Region g, uint64_t a, uint64_t b) {
    ev[size_t(r)].push_back({Ev::kEnter, a, g});
    ev[size_t(r)].push_back({Ev::kLeave, b, g});
  }
  void Send(int r, int dst, uint32_t tag, uint64_t bytes, uint64_t a, uint64_t b) {
    ev[size_t(r)].push_back({Ev::kEnter, a, kSend});
    ev[size_t(r)].push_back({Ev::kMpiSend, a, kSend, uint32_t(dst), tag, bytes});
    ev[size_t(r)].push_back({Ev::kLeave, b, kSend});
  }
  void Recv(int r, int src, uint32_t tag, uint64_t bytes, uint64_t a, uint64_t b) {
    ev[size_t(r)].push_back({Ev::kEnter, a, kRecv});
    ev[size_t(r)].push_back({Ev::kMpiRecv, b, kRecv, uint32_t(src), tag, bytes});
    ev[size_t(r)].push_back({Ev::kLeave, b, kRecv});
  }
  void Barrier(int r, uint64_t a, uint64_t b) {
    ev[size_t(r)].push_back({Ev::kEnter, a, kBarrier});
    ev[size_t(r)].push_back({Ev::kCollBegin, a, kBarrier});
    ev[size_t(r)].push_back({Ev::kCollEnd, b, kBarrier});
    ev[size_t(r)].push_back({Ev::kLeave, b, kBarrier});
  }
};

struct Truth {
  uint64_t par = 0, seq = 0, comm = 0, sync = 0, idle = 0, wall = 0;
};

void Write(const std::string& dir, const Run& run, uint64_t length);

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5 ||
      (std::strcmp(argv[2], "eager") != 0 && std::strcmp(argv[2], "rendezvous") != 0)) {
    std::fprintf(stderr, "usage: make_opal_otf2 OUT_DIR eager|rendezvous [SERVERS=2] [STEPS=3]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool eager = std::strcmp(argv[2], "eager") == 0;
  const long p = argc > 3 ? std::strtol(argv[3], nullptr, 10) : 2;
  const long steps = argc > 4 ? std::strtol(argv[4], nullptr, 10) : 3;
  // p >= 2: with one server the client's own eager send call is not covered by another
  // request's wire time, and the late receiver's truth below would need that case as well.
  if (p < 2 || p > 64 || steps < 3 || steps > 1000) {
    std::fprintf(stderr, "make_opal_otf2: SERVERS must be within 2..64, STEPS within 3..1000\n");
    return 2;
  }
  if (mkdir(dir.c_str(), 0755) != 0) {
    std::fprintf(stderr, "make_opal_otf2: cannot create %s: %s (it must not exist)\n", dir.c_str(),
                 std::strerror(errno));
    return 1;
  }
  const uint64_t w = 300 * us, r_data = 200 * us, r_empty = 30 * us, e = 5 * us, k = 8 * us,
                 o = 20 * us, q = 700 * us, L = 700 * us, X = 250 * us, P = 1500 * us + p * w,
                 D = 400 * us + p * r_data;
  auto comp = [&](long s, bool energy) { return (energy ? 1000 : 600) * us + 400 * us * s; };
  const uint32_t kTagUpdate = 1, kTagEnergy = 2, kTagDone = 3, kTagResult = 4;
  const uint64_t x_bytes = 36000, reply_bytes = 36040;

  Run run(int(p) + 1);
  Truth truth;
  const uint64_t init_end = 1000 * us;
  for (long s = 0; s <= p; ++s) run.Call(int(s), kInit, 0, init_end);
  uint64_t client = init_end + 200 * us;  // the client's set-up: outside the window
  std::vector<uint64_t> server(size_t(p) + 1, init_end + 100 * us);
  server[size_t(p)] = init_end + 100 * us + 200 * us + L;  // late at the first barrier
  const uint64_t window_start = client;
  truth.sync += server[size_t(p)] - client;

  for (long step = 0; step < steps; ++step) {
    for (int energy = 0; energy <= 1; ++energy) {
      const bool late_receiver = step == 1 && !energy;
      const bool stall = step == 1 && energy;
      const bool late_sender = step == 2 && energy;
      // Opening barrier.
      uint64_t last = client;
      for (long s = 1; s <= p; ++s) last = std::max(last, server[size_t(s)]);
      const uint64_t b1 = last + o;
      run.Barrier(0, client, b1);
      for (long s = 1; s <= p; ++s) run.Barrier(int(s), server[size_t(s)], b1);
      truth.sync += o;
      // Requests. Servers post their receive at b1, server p at b1 + P in the late-receiver
      // round (computing until then).
      std::vector<uint64_t> recv_end(size_t(p) + 1);
      uint64_t cur = b1, link = b1;
      for (long s = 1; s <= p; ++s) {
        const uint64_t post = (late_receiver && s == p) ? b1 + P : b1;
        const uint32_t tag = energy ? kTagEnergy : kTagUpdate;
        if (!eager) {
          const uint64_t start = std::max(cur, post);
          truth.idle += start - cur;  // waiting for a late receiver
          truth.comm += w;
          run.Send(0, int(s), tag, x_bytes, cur, start + w);
          recv_end[size_t(s)] = start + w;
          cur = start + w;
        } else {
          run.Send(0, int(s), tag, x_bytes, cur, cur + e);
          link = std::max(link, cur) + w;  // delivered into the server's buffer
          if (post <= link) {
            recv_end[size_t(s)] = link;
          } else {
            // Arrived before the post (P is longer than every request's wire time): hidden
            // behind the lateness; the receive copies it. The client's wait for the post,
            // beyond the wire time of the others' requests, is idle.
            recv_end[size_t(s)] = post + k;
          }
          cur += e;
        }
        run.Recv(int(s), 0, tag, x_bytes, post, recv_end[size_t(s)]);
      }
      if (eager) {
        // The client's link is busy with the requests of receivers that wait; a late
        // receiver's own request is hidden, its copy is not.
        for (long s = 1; s <= p; ++s) truth.comm += (late_receiver && s == p) ? k : w;
        if (late_receiver) truth.idle += (b1 + P) - (b1 + (p - 1) * w);
      }
      const uint64_t client_b2 = cur;
      // Servers compute, server p stalls in the stall round, then the closing barrier.
      uint64_t b2_last = client_b2;
      std::vector<uint64_t> b2_enter(size_t(p) + 1);
      for (long s = 1; s <= p; ++s) {
        uint64_t t = recv_end[size_t(s)] + comp(s, energy);
        if (stall && s == p) {
          run.Call(int(s), kCommDup, t, t + X);
          t += X;
        }
        b2_enter[size_t(s)] = t;
        b2_last = std::max(b2_last, t);
      }
      if (b2_last != b2_enter[size_t(p)] || b2_last <= client_b2)
        throw std::logic_error("server p must be the last in the closing barrier");
      truth.par += comp(p, energy);
      truth.sync += (stall ? X : 0) + o;
      const uint64_t b2 = b2_last + o;
      run.Barrier(0, client_b2, b2);
      for (long s = 1; s <= p; ++s) run.Barrier(int(s), b2_enter[size_t(s)], b2);
      // Replies, received in server order; the link serialises them on the client.
      const uint64_t r = energy ? r_data : r_empty;
      const uint32_t rtag = energy ? kTagResult : kTagDone;
      const uint64_t rbytes = energy ? reply_bytes : 0;
      cur = b2;
      for (long s = 1; s <= p; ++s) {
        uint64_t start = b2;
        if (late_sender && s == p) {
          run.Call(int(s), kCommDup, b2, b2 + D);
          start = b2 + D;
        }
        const uint64_t begin = std::max(cur, start);
        truth.idle += begin - cur;
        truth.comm += r;
        run.Recv(0, int(s), rtag, rbytes, cur, begin + r);
        const uint64_t send_leave = eager ? start + e : begin + r;
        run.Send(int(s), 0, rtag, rbytes, start, send_leave);
        server[size_t(s)] = send_leave;
        cur = begin + r;
      }
      client = cur;
      if (energy) {
        client += q;  // sequential work: computation outside MPI
        truth.seq += q;
      }
    }
  }
  truth.wall = client - window_start;
  const uint64_t end = client + 10 * us;
  run.Call(0, kFinalize, client, end);
  for (long s = 1; s <= p; ++s) run.Call(int(s), kFinalize, server[size_t(s)], end);
  if (truth.par + truth.seq + truth.comm + truth.sync + truth.idle != truth.wall) {
    std::fprintf(stderr, "make_opal_otf2: components do not add up to the window\n");
    return 1;
  }
  try {
    Write(dir, run, end);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "make_opal_otf2: %s\n", ex.what());
    return 1;
  }
  const std::string path = dir + "/expected.json";
  std::ofstream f(path + ".tmp");
  auto sec = [](uint64_t ns) {
    char b[48];
    std::snprintf(b, sizeof b, "%llu.%09llu", (unsigned long long)(ns / 1000000000),
                  (unsigned long long)(ns % 1000000000));
    return std::string(b);
  };
  f << "{\"protocol\": \"" << argv[2] << "\", \"p\": " << p << ", \"steps\": " << steps
    << ", \"t_wall\": " << sec(truth.wall) << ", \"t_par_comp\": " << sec(truth.par)
    << ", \"t_seq_comp\": " << sec(truth.seq) << ", \"t_comm\": " << sec(truth.comm)
    << ", \"t_sync\": " << sec(truth.sync) << ", \"t_idle\": " << sec(truth.idle) << "}\n";
  f.close();
  if (!f || std::rename((path + ".tmp").c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "make_opal_otf2: cannot write %s\n", path.c_str());
    return 1;
  }
  std::printf("%s: %s\n", path.c_str(), eager ? "eager" : "rendezvous");
  return 0;
}

namespace {

void Write(const std::string& dir, const Run& run, uint64_t length) {
  const size_t ranks = run.ev.size();
  OTF2_Archive* archive = invmw::otf2::OpenArchiveForWriting(dir, "traces", 1 << 20, 1 << 20);
  Check(OTF2_Archive_OpenEvtFiles(archive), "OpenEvtFiles");
  std::vector<uint64_t> counts(ranks, 0);
  for (size_t r = 0; r < ranks; ++r) {
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, uint64_t(r));
    if (!w) throw std::runtime_error("GetEvtWriter failed");
    uint64_t last = 0;
    for (const Ev& x : run.ev[r]) {
      if (x.t < last) throw std::logic_error("rank " + std::to_string(r) + ": time goes back");
      last = x.t;
      switch (x.kind) {
        case Ev::kEnter:
          Check(OTF2_EvtWriter_Enter(w, nullptr, x.t, x.region), "Enter");
          break;
        case Ev::kLeave:
          Check(OTF2_EvtWriter_Leave(w, nullptr, x.t, x.region), "Leave");
          break;
        case Ev::kMpiSend:
          Check(OTF2_EvtWriter_MpiSend(w, nullptr, x.t, x.peer, 0, x.tag, x.bytes), "MpiSend");
          break;
        case Ev::kMpiRecv:
          Check(OTF2_EvtWriter_MpiRecv(w, nullptr, x.t, x.peer, 0, x.tag, x.bytes), "MpiRecv");
          break;
        case Ev::kCollBegin:
          Check(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, x.t), "CollectiveBegin");
          break;
        case Ev::kCollEnd:
          Check(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, x.t, OTF2_COLLECTIVE_OP_BARRIER, 0,
                                                OTF2_UNDEFINED_UINT32, 0, 0),
                "CollectiveEnd");
          break;
      }
    }
    counts[r] = run.ev[r].size();
    Check(OTF2_Archive_CloseEvtWriter(archive, w), "CloseEvtWriter");
  }
  Check(OTF2_Archive_CloseEvtFiles(archive), "CloseEvtFiles");
  Check(OTF2_Archive_OpenDefFiles(archive), "OpenDefFiles");
  for (size_t r = 0; r < ranks; ++r) {
    OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive, uint64_t(r));
    if (!dw) throw std::runtime_error("GetDefWriter failed");
    Check(OTF2_Archive_CloseDefWriter(archive, dw), "CloseDefWriter");
  }
  Check(OTF2_Archive_CloseDefFiles(archive), "CloseDefFiles");

  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive);
  if (!g) throw std::runtime_error("GetGlobalDefWriter failed");
  Check(
      OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, length, OTF2_UNDEFINED_TIMESTAMP),
      "ClockProperties");
  OTF2_StringRef next = 0;
  auto str = [&](const std::string& s) {
    Check(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()), "String");
    return next++;
  };
  const OTF2_StringRef empty = str("");
  const char* names[kNumRegions] = {"MPI_Init", "MPI_Finalize", "MPI_Send",
                                    "MPI_Recv", "MPI_Barrier",  "MPI_Comm_dup"};
  const OTF2_RegionRole roles[kNumRegions] = {
      OTF2_REGION_ROLE_FUNCTION,    OTF2_REGION_ROLE_FUNCTION, OTF2_REGION_ROLE_POINT2POINT,
      OTF2_REGION_ROLE_POINT2POINT, OTF2_REGION_ROLE_BARRIER,  OTF2_REGION_ROLE_FUNCTION};
  for (int i = 0; i < int(kNumRegions); ++i) {
    const OTF2_StringRef s = str(names[i]);
    Check(OTF2_GlobalDefWriter_WriteRegion(g, OTF2_RegionRef(i), s, s, empty, roles[i],
                                           OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, empty, 0, 0),
          "Region");
  }
  Check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str("synthetic"), str("machine"),
                                                 OTF2_UNDEFINED_SYSTEM_TREE_NODE),
        "SystemTreeNode");
  std::vector<uint64_t> locs;
  for (size_t r = 0; r < ranks; ++r) {
    const OTF2_StringRef name = str("rank " + std::to_string(r));
    Check(OTF2_GlobalDefWriter_WriteLocationGroup(g, OTF2_LocationGroupRef(r), name,
                                                  OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                  OTF2_UNDEFINED_LOCATION_GROUP),
          "LocationGroup");
    Check(OTF2_GlobalDefWriter_WriteLocation(
              g, uint64_t(r), str("rank " + std::to_string(r) + " thread 0"),
              OTF2_LOCATION_TYPE_CPU_THREAD, counts[r], OTF2_LocationGroupRef(r)),
          "Location");
    locs.push_back(uint64_t(r));
  }
  Check(OTF2_GlobalDefWriter_WriteGroup(g, 0, str("MPI_COMM_WORLD locations"),
                                        OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, uint32_t(ranks), locs.data()),
        "Group");
  const OTF2_StringRef wname = str("MPI_COMM_WORLD");
  Check(OTF2_GlobalDefWriter_WriteGroup(g, 1, wname, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, uint32_t(ranks), locs.data()),
        "Group");
  Check(OTF2_GlobalDefWriter_WriteComm(g, 0, wname, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
        "Comm");
  Check(OTF2_Archive_Close(archive), "Close");
}

}  // namespace
