// A synthetic OTF2 trace of about N events, written with the OTF2 writer API, for the large-trace
// benchmark (bench_large_trace.py) and the memory test (analysis.large_trace): what a run of R
// ranks (one thread each) of a bulk-synchronous code records.
//
// Each iteration, on every rank: computation, MPI_Send to its partner (rank ^ 1), MPI_Recv from
// it (the partner's send starts before the receive ends: every message matched), and every
// iteration an MPI_Allreduce on MPI_COMM_WORLD (all ranks, matched instances). Rank r computes
// (1 + r % 3) x longer in odd iterations, so the analysis sees imbalance and waiting. An
// iteration is 10 events per rank; MPI_Init and MPI_Finalize add 4. With an odd R the last rank
// has no partner and only joins the collectives.
//
//   make_synthetic_otf2 OUT_DIR EVENTS [RANKS=8]
// writes OUT_DIR/traces.otf2 (OUT_DIR must not exist yet) and prints the events written.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "otf2_writer/otf2_open.h"

namespace {

void Check(OTF2_ErrorCode rc, const char* step) {
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error(std::string("OTF2 ") + step + ": " + OTF2_Error_GetName(rc));
}

enum Region : OTF2_RegionRef { kInit, kFinalize, kSend, kRecv, kAllreduce, kNumRegions };

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: make_synthetic_otf2 OUT_DIR EVENTS [RANKS=8]\n");
    return 2;
  }
  const std::string dir = argv[1];
  char* end = nullptr;
  const double want = std::strtod(argv[2], &end);
  const long ranks = argc > 3 ? std::strtol(argv[3], nullptr, 10) : 8;
  if (!end || *end || !(want >= 100) || ranks < 2 || ranks > 4096) {
    std::fprintf(stderr,
                 "make_synthetic_otf2: EVENTS must be a number >= 100 (1e8 is fine), "
                 "RANKS within 2..4096\n");
    return 2;
  }
  if (mkdir(dir.c_str(), 0755) != 0) {
    std::fprintf(stderr, "make_synthetic_otf2: cannot create %s: %s (it must not exist)\n",
                 dir.c_str(), std::strerror(errno));
    return 1;
  }
  const uint64_t iterations = std::max<uint64_t>(1, uint64_t(want / (10.0 * double(ranks))));
  const uint64_t res = 1000000000;  // ns
  const uint64_t step = 10000;      // one iteration: 10 us
  try {
    OTF2_Archive* archive = invmw::otf2::OpenArchiveForWriting(dir, "traces", 4 << 20, 1 << 20);
    Check(OTF2_Archive_OpenEvtFiles(archive), "OpenEvtFiles");
    std::vector<uint64_t> counts(size_t(ranks), 0);
    for (long r = 0; r < ranks; ++r) {
      OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, uint64_t(r));
      if (!w) throw std::runtime_error("GetEvtWriter failed");
      uint64_t n = 0;
      auto enter = [&](uint64_t t, Region g) {
        Check(OTF2_EvtWriter_Enter(w, nullptr, t, g), "Enter"), ++n;
      };
      auto leave = [&](uint64_t t, Region g) {
        Check(OTF2_EvtWriter_Leave(w, nullptr, t, g), "Leave"), ++n;
      };
      const long partner = r ^ 1;
      const bool paired = partner < ranks;
      enter(1000, kInit);
      leave(2000, kInit);
      for (uint64_t i = 0; i < iterations; ++i) {
        const uint64_t base = 10000 + i * step;
        // Computation ends at base + c; both partners send at base + 3000 at the latest.
        const uint64_t c = (i % 2) ? 1000 * uint64_t(1 + r % 3) : 1000;
        const uint32_t tag = uint32_t(i % 1000);
        if (paired) {
          enter(base + c, kSend);
          Check(OTF2_EvtWriter_MpiSend(w, nullptr, base + c + 10, uint32_t(partner), 0, tag, 4096),
                "MpiSend"),
              ++n;
          leave(base + c + 100, kSend);
          enter(base + c + 200, kRecv);
          Check(OTF2_EvtWriter_MpiRecv(w, nullptr, base + 4000, uint32_t(partner), 0, tag, 4096),
                "MpiRecv"),
              ++n;
          leave(base + 4010, kRecv);
        }
        enter(base + 5000 + uint64_t(r % 1000), kAllreduce);
        Check(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, base + 5001 + uint64_t(r % 1000)),
              "CollectiveBegin"),
            ++n;
        Check(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, base + 9000, OTF2_COLLECTIVE_OP_ALLREDUCE,
                                              0, OTF2_UNDEFINED_UINT32, 8, 8),
              "CollectiveEnd"),
            ++n;
        leave(base + 9010, kAllreduce);
      }
      const uint64_t fin = 10000 + iterations * step;
      enter(fin, kFinalize);
      leave(fin + 1000, kFinalize);
      counts[size_t(r)] = n;
      Check(OTF2_Archive_CloseEvtWriter(archive, w), "CloseEvtWriter");
    }
    Check(OTF2_Archive_CloseEvtFiles(archive), "CloseEvtFiles");
    // Empty local definitions: readers look for a file per location.
    Check(OTF2_Archive_OpenDefFiles(archive), "OpenDefFiles");
    for (long r = 0; r < ranks; ++r) {
      OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive, uint64_t(r));
      if (!dw) throw std::runtime_error("GetDefWriter failed");
      Check(OTF2_Archive_CloseDefWriter(archive, dw), "CloseDefWriter");
    }
    Check(OTF2_Archive_CloseDefFiles(archive), "CloseDefFiles");

    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive);
    if (!g) throw std::runtime_error("GetGlobalDefWriter failed");
    const uint64_t length = 10000 + iterations * step + 1000;
    Check(OTF2_GlobalDefWriter_WriteClockProperties(g, res, 0, length, OTF2_UNDEFINED_TIMESTAMP),
          "ClockProperties");
    OTF2_StringRef next = 0;
    auto str = [&](const std::string& s) {
      Check(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()), "String");
      return next++;
    };
    const OTF2_StringRef empty = str("");
    const char* names[kNumRegions] = {"MPI_Init", "MPI_Finalize", "MPI_Send", "MPI_Recv",
                                      "MPI_Allreduce"};
    const OTF2_RegionRole roles[kNumRegions] = {
        OTF2_REGION_ROLE_FUNCTION, OTF2_REGION_ROLE_FUNCTION, OTF2_REGION_ROLE_POINT2POINT,
        OTF2_REGION_ROLE_POINT2POINT, OTF2_REGION_ROLE_COLL_ALL2ALL};
    for (int i = 0; i < kNumRegions; ++i) {
      const OTF2_StringRef s = str(names[i]);
      Check(OTF2_GlobalDefWriter_WriteRegion(g, OTF2_RegionRef(i), s, s, empty, roles[i],
                                             OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, empty, 0, 0),
            "Region");
    }
    Check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str("synthetic"), str("machine"),
                                                   OTF2_UNDEFINED_SYSTEM_TREE_NODE),
          "SystemTreeNode");
    std::vector<uint64_t> locs, world;
    for (long r = 0; r < ranks; ++r) {
      const OTF2_StringRef name = str("rank " + std::to_string(r));
      Check(OTF2_GlobalDefWriter_WriteLocationGroup(g, OTF2_LocationGroupRef(r), name,
                                                    OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                    OTF2_UNDEFINED_LOCATION_GROUP),
            "LocationGroup");
      Check(OTF2_GlobalDefWriter_WriteLocation(
                g, uint64_t(r), str("rank " + std::to_string(r) + " thread 0"),
                OTF2_LOCATION_TYPE_CPU_THREAD, counts[size_t(r)], OTF2_LocationGroupRef(r)),
            "Location");
      locs.push_back(uint64_t(r));
      world.push_back(uint64_t(r));
    }
    Check(OTF2_GlobalDefWriter_WriteGroup(g, 0, str("MPI_COMM_WORLD locations"),
                                          OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                          OTF2_GROUP_FLAG_NONE, uint32_t(ranks), locs.data()),
          "Group");
    const OTF2_StringRef wname = str("MPI_COMM_WORLD");
    Check(
        OTF2_GlobalDefWriter_WriteGroup(g, 1, wname, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, uint32_t(ranks), world.data()),
        "Group");
    Check(OTF2_GlobalDefWriter_WriteComm(g, 0, wname, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
          "Comm");
    Check(OTF2_Archive_Close(archive), "Close");
    uint64_t total = 0;
    for (uint64_t c : counts) total += c;
    std::printf("%llu events, %ld ranks, %llu iterations: %s/traces.otf2\n",
                (unsigned long long)total, ranks, (unsigned long long)iterations, dir.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_synthetic_otf2: %s\n", e.what());
    return 1;
  }
  return 0;
}
