// Test-only: builds invmw::otf2::Trace values by hand, event by event, in the shape ReadTrace
// produces (Enter/Leave around every MPI call, MpiSend at the call's entry, MpiRecv at its exit,
// MpiCollectiveBegin/End inside collectives, messages matched per (src, dst, tag) in order).
//
// Why: the analysis algorithms must be checked against situations whose answer is known to the
// nanosecond, which a real MPI run never gives; the MPI tests (analysis/tests/*.c) check the
// same algorithms on real runs with tolerances.
#pragma once

#include <otf2/OTF2_Definitions.h>
#include <otf2/OTF2_Events.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "otf2_reader/trace_reader.h"

namespace invmw::analysis::testing {

class TraceBuilder {
 public:
  explicit TraceBuilder(int ranks);

  // Enter/Leave of MPI_Init (ending at t) and of MPI_Finalize (starting at t).
  TraceBuilder& Init(int r, double t);
  TraceBuilder& Finalize(int r, double t);
  TraceBuilder& Send(int r, int dst, double enter, double leave, uint64_t bytes = 8, int tag = 0);
  TraceBuilder& Recv(int r, int src, double enter, double leave, uint64_t bytes = 8, int tag = 0);
  // Isend at `at` (a short call), completed inside an MPI_Wait [wait_enter, wait_leave].
  TraceBuilder& IsendWait(int r, int dst, double at, double wait_enter, double wait_leave,
                          uint64_t bytes = 8, int tag = 0);
  // Irecv posted at `at`, completed inside an MPI_Wait.
  TraceBuilder& IrecvWait(int r, int src, double at, double wait_enter, double wait_leave,
                          uint64_t bytes = 8, int tag = 0);
  TraceBuilder& Barrier(int r, double enter, double leave);
  TraceBuilder& Bcast(int r, int root, double enter, double leave, uint64_t bytes);
  TraceBuilder& Reduce(int r, int root, double enter, double leave, uint64_t bytes);
  TraceBuilder& Pcontrol(int r, double enter, double leave);
  TraceBuilder& Pause(int r, double enter, double leave);     // Pcontrol(0) ... Pcontrol(1)
  TraceBuilder& OtherMpi(int r, double enter, double leave);  // e.g. MPI_Comm_dup, role function
  TraceBuilder& FileWrite(int r, double enter, double leave);
  TraceBuilder& UserEnter(int r, const std::string& name, double t);
  TraceBuilder& UserLeave(int r, const std::string& name, double t);
  // Sampler metrics of rank r: accumulated series (time, value) per metric name.
  TraceBuilder& Metric(int r, const std::string& name,
                       const std::vector<std::pair<double, double>>& series);

  invmw::otf2::Trace Build();

 private:
  uint32_t Region(const std::string& name, OTF2_RegionRole role, OTF2_Paradigm paradigm);
  invmw::otf2::TraceEvent& Add(int r, invmw::otf2::TraceEvent::Type type, double t);
  void Enter(int r, const std::string& name, OTF2_RegionRole role, double t);
  void Leave(int r, const std::string& name, OTF2_RegionRole role, double t);
  void Collective(int r, const char* name, OTF2_RegionRole role, uint32_t op, int root,
                  double enter, double leave, uint64_t bytes);

  struct PendingSend {
    int src, dst, tag;
    double time;
    size_t event;
  };
  struct PendingRecv {
    int src, dst, tag;
    double post, time;
    size_t event;
  };
  invmw::otf2::Trace t_;
  std::map<std::string, uint32_t> regions_;
  std::vector<PendingSend> sends_;
  std::vector<PendingRecv> recvs_;
  std::map<int, std::map<std::string, std::vector<std::pair<double, double>>>> metrics_;
  uint64_t next_request_ = 1;
};

}  // namespace invmw::analysis::testing
