#include "pmpi_wrap/trace_runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/run_dir.h"
#include "pmpi_wrap/call_counters.h"
#include "recording/profile_report.h"
#include "pmpi_wrap/runtime.h"
#include "recording/defs_writer.h"
#include "recording/trace_buffer.h"

namespace invmw::wrap {

bool g_trace_skewed = false;
bool g_call_counters = false;  // INVMW_TRACE_COUNTERS took effect

namespace {

recording::DefsWriter g_defs;
recording::RingOptions g_ring_options;
double g_skew_offset_ticks = 0;  // this rank's injected offset, in ticks
double g_skew_drift = 0;         // this rank's injected drift (ticks per tick)
MPI_Comm g_sync_comm = MPI_COMM_NULL;
// Rank 0 only: every rank's measured offset per phase, for the run metadata (TraceClockSync).
// Rank r's defs file holds the same numbers; keeping them here spares rank 0 reading the other
// ranks' files, which may not be on its file system.
nlohmann::json g_clock_points = nlohmann::json::array();

void DefsLine(const nlohmann::json& j) {
  g_defs.Line(j.dump());
}

uint64_t RingNow() {
  return TraceTime(clock::Ticks());
}

std::string RawPath(const char* fmt, int a, int b = 0) {
  char name[96];
  std::snprintf(name, sizeof name, fmt, a, b);
  return g.output_dir + "/raw/" + name;
}

// point: offset_ticks, uncertainty_ticks, local ticks (as in the defs "clock" line).
void RememberClockPoint(int rank, const char* phase, const double point[3]) {
  while (int(g_clock_points.size()) <= rank)
    g_clock_points.push_back({{"rank", g_clock_points.size()}});
  const double tps = g.ticks_per_second > 0 ? g.ticks_per_second : 1e9;
  g_clock_points[rank][phase] = {{"ticks", uint64_t(point[2])},
                                 {"offset_s", point[0] / tps},
                                 {"uncertainty_s", point[1] / tps}};
}

// Offset of every rank's trace clock to rank 0's: rank 0 ping-pongs each rank `rounds` times;
// the exchange with the smallest round trip bounds the offset best (its uncertainty is half
// that round trip). Rank r receives its own result.
void MeasureClockOffset(const char* phase) {
  int rounds = int(g.cfg.TRACE_CLOCK_SYNC_ROUNDS);
  if (rounds < 1) rounds = 1;
  double result[3] = {0, 0, 0};  // offset_ticks, uncertainty_ticks, local ticks
  if (g.rank == 0) {
    for (int r = 1; r < g.world_size; ++r) {
      double best_rtt = INFINITY, best_off = 0, best_remote = 0;
      for (int k = 0; k < rounds; ++k) {
        uint64_t t0 = TraceTime(clock::Ticks());
        uint64_t remote = 0;
        PMPI_Send(&t0, 1, MPI_UINT64_T, r, 1, g_sync_comm);
        PMPI_Recv(&remote, 1, MPI_UINT64_T, r, 2, g_sync_comm, MPI_STATUS_IGNORE);
        uint64_t t1 = TraceTime(clock::Ticks());
        double rtt = double(t1 - t0);
        if (rtt < best_rtt) {
          best_rtt = rtt;
          best_off = double(remote) - (double(t0) + double(t1)) / 2;
          best_remote = double(remote);
        }
      }
      double res[3] = {best_off, best_rtt / 2, best_remote};
      PMPI_Send(res, 3, MPI_DOUBLE, r, 3, g_sync_comm);
      RememberClockPoint(r, phase, res);
    }
    result[2] = double(TraceTime(clock::Ticks()));
    RememberClockPoint(0, phase, result);
  } else {
    for (int k = 0; k < rounds; ++k) {
      uint64_t t = 0;
      PMPI_Recv(&t, 1, MPI_UINT64_T, 0, 1, g_sync_comm, MPI_STATUS_IGNORE);
      uint64_t now = TraceTime(clock::Ticks());
      PMPI_Send(&now, 1, MPI_UINT64_T, 0, 2, g_sync_comm);
    }
    PMPI_Recv(result, 3, MPI_DOUBLE, 0, 3, g_sync_comm, MPI_STATUS_IGNORE);
  }
  DefsLine({{"type", "clock"},
            {"phase", phase},
            {"ticks", uint64_t(result[2])},
            {"offset_ticks", result[0]},
            {"uncertainty_ticks", result[1]}});
}

}  // namespace

nlohmann::json TraceClockSync() {
  if (g.rank != 0 || g_clock_points.empty()) return nullptr;
  double worst = 0;
  for (const auto& r : g_clock_points)
    for (const char* phase : {"init", "finalize"})
      if (r.contains(phase)) worst = std::max(worst, r[phase]["uncertainty_s"].get<double>());
  return {{"method", "pingpong_min_rtt"},
          {"reference_rank", 0},
          {"rounds", std::max<int64_t>(g.cfg.TRACE_CLOCK_SYNC_ROUNDS, 1)},
          {"ticks_per_second", g.ticks_per_second},
          {"max_uncertainty_s", worst},
          {"ranks", g_clock_points}};
}

uint64_t TraceTicks(uint64_t t) {
  double dt = double(int64_t(t - g.init_ticks));
  return uint64_t(int64_t(t) + int64_t(g_skew_offset_ticks + dt * g_skew_drift));
}

void TraceInit() {
  if (g.output_dir.empty()) return;
  // Files of the run are created new, never through or over what is there (run_dir.h).
  const std::string defs = RawPath("defs-%06d.jsonl", g.rank);
  g_ring_options.flush_on_full = g.trace_flush_on_full;
  g_ring_options.now = RingNow;
  g_ring_options.errors = &g.errors;
  const int defs_fd = CreateNewFile(defs, O_APPEND);
  const int defs_errno = errno;
  g_defs.Attach(defs_fd, &g.errors);
  if (!g_defs.open()) {
    if (defs_errno == EEXIST)
      OutputExists(defs.c_str());
    else
      WarnOnce("cannot write the trace definitions under " + g.output_dir + "/raw; no trace");
  }
  // With or without a definitions file, every rank takes part in the clock synchronisation
  // (rank 0 talks to all of them); a rank without one records no events.
  PMPI_Comm_dup(g.comm, &g_sync_comm);
  if (!g_defs.open()) {
    MeasureClockOffset("init");
    return;
  }
  if (!g.cfg.TRACE_TEST_SKEW.empty()) {
    double off = 0, drift = 0;
    if (std::sscanf(g.cfg.TRACE_TEST_SKEW.c_str(), "%lf,%lf", &off, &drift) == 2) {
      g_skew_offset_ticks = off * g.rank * g.ticks_per_second;
      g_skew_drift = drift * g.rank;
      g_trace_skewed = true;
    } else {
      WarnOnce("INVMW_TRACE_TEST_SKEW=" + g.cfg.TRACE_TEST_SKEW +
               ": expected OFFSET_S,DRIFT; ignored");
    }
  }
  DefsLine({{"type", "rank"},
            {"rank", g.rank},
            {"world_size", g.world_size},
            {"host", g.host},
            {"pid", getpid()},
            {"flavor", kMpiFlavor},
            {"ticks_per_second", g.ticks_per_second},
            {"init_ticks", TraceTime(g.init_ticks)},
            {"init_realtime_ns", g.init_realtime_ns}});
  nlohmann::json names = nlohmann::json::array(), kinds = nlohmann::json::array(),
                 classes = nlohmann::json::array();
  for (int f = 0; f < kNumFuncs; ++f) {
    names.push_back(kFuncNames[f]);
    kinds.push_back(kFuncKinds[f]);
    classes.push_back(kFuncClasses[f]);
  }
  DefsLine({{"type", "functions"}, {"names", names}, {"kinds", kinds}, {"classes", classes}});
  if (g.cfg.TRACE_COUNTERS) {
    CallCounterChoice choice;
    g_call_counters = ChooseCallCounters(g.cfg.SAMPLER_PAPI, &choice);
    if (!choice.note.empty()) WarnOnce(choice.note);
    if (g_call_counters)
      DefsLine({{"type", "counters"}, {"names", choice.names}, {"units", choice.units}});
  }
  // Communicators registered before tracing started (world, self).
  TraceCommDefined(LookupComm(MPI_COMM_WORLD));
  TraceCommDefined(LookupComm(MPI_COMM_SELF));
  MeasureClockOffset("init");
  if (!g.cfg.TRACE_TEST_NO_WRITER)
    recording::StartTraceWriter(g.cfg.TRACE_DRAIN_INTERVAL > 0 ? g.cfg.TRACE_DRAIN_INTERVAL : 0.02);
}

void TraceFinalize() {
  if (g_sync_comm == MPI_COMM_NULL) return;
  // Other threads have stopped calling MPI by now (MPI_Finalize is the last call).
  for (int i = 0; i < ThreadCount(); ++i)
    if (ThreadState* ts = ThreadAt(i); ts && ts->trace) FlushPendingFail(ts);
  MeasureClockOffset("finalize");
  PMPI_Comm_free(&g_sync_comm);
  if (!g_defs.open()) return;
  recording::StopTraceWriter();
  DefsLine({{"type", "end"},
            {"reason", "finalize"},
            {"end_ticks", TraceTime(clock::Ticks())},
            {"ticks_per_second", g.ticks_per_second},
            {"dropped_events", recording::TotalDroppedEvents()},
            // Calls and requests the profile counts as not recorded are missing here too.
            {"dropped_calls", g.dropped_threads.load()},
            {"dropped_requests", g.dropped_requests.load()},
            {"flushes", recording::TotalFlushes()}});
}

void TraceSaveFromSignal() {
  if (!g_defs.open()) return;
  recording::DrainAllTraceBuffers(true);
  // Each thread stopped inside a call gets that call as a kCutOff record, ending now: its
  // Enter and a Leave marked as cut off in the trace (docs/otf2.md).
  const uint64_t now = TraceTime(clock::Ticks());
  for (int t = 0, n = ThreadCount(); t < n; ++t) {
    ThreadState* ts = ThreadAt(t);
    OpenCallInfo oc;
    if (!ts || !ts->trace || !ResolveOpenCall(ts, &oc)) continue;
    trace::EventRecord r{};
    r.type = trace::kCutOff;
    r.func = oc.func;
    r.t_enter = TraceTime(oc.t_enter);
    r.t_leave = now > r.t_enter ? now : r.t_enter;
    r.peer = (oc.flags & raw::kOpenPeerKnown) ? oc.peer : kPeerNone;
    r.tag = (oc.flags & raw::kOpenPeerKnown) ? oc.tag : -1;
    r.comm = oc.comm;
    r.peer2 = kPeerNone;
    r.tag2 = -1;
    ts->trace->AppendFromSignal(r);
  }
}

void TraceAttachThread(ThreadState* ts) {
  if (!g_defs.open()) return;  // this rank could not create its trace files
  const std::string path = RawPath("events-%06d-%03d.bin", g.rank, ts->index);
  int fd = CreateNewFile(path);
  if (fd < 0) {
    if (errno == EEXIST)
      OutputExists(path.c_str());
    else
      g.errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  trace::EventFileHeader h{};
  h.magic = trace::kEventMagic;
  h.version = trace::kEventVersion;
  h.header_size = sizeof h;
  h.record_size = sizeof(trace::EventRecord);
  h.rank = g.rank;
  h.thread = ts->index;
  if (write(fd, &h, sizeof h) != ssize_t(sizeof h)) g.errors.fetch_add(1);
  uint64_t cap = g.cfg.TRACE_BUFFER / sizeof(trace::EventRecord);
  auto* b = new TraceBuffer(uint32_t(std::min<uint64_t>(cap, 1u << 30)), fd, &g_ring_options);
  recording::RegisterTraceBuffer(b);
  ts->trace = b;
  if (g_call_counters) {
    ts->counter_fd = OpenCallCounters();
    ts->counter_n = CallCounterCount();
    if (ts->counter_fd < 0) g.errors.fetch_add(1, std::memory_order_relaxed);
  }
  DefsLine({{"type", "thread"},
            {"index", ts->index},
            {"location", ts->index == 0 ? "main" : "thread " + std::to_string(ts->index)}});
}

void TraceThreadEnded(ThreadState* ts) {
  FlushPendingFail(ts);
  if (ts->counter_fd >= 0) {
    close(ts->counter_fd);
    ts->counter_fd = -1;
  }
}

void TraceThreadReused(ThreadState* ts) {
  // The kernel counts a perf group for the thread that opened it: open the new thread's.
  if (g_call_counters) {
    ts->counter_fd = OpenCallCounters();
    if (ts->counter_fd < 0) g.errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void TraceCommDefined(const CommInfo* ci) {
  if (!g_defs.open() || !ci || !ci->world) return;
  nlohmann::json members = nlohmann::json::array(), remote = nlohmann::json::array();
  // Members of another world (the other side of MPI_Comm_spawn) have no rank of this run's
  // trace: they are left out, and the archive names the spawned worlds' directories instead.
  for (int i = 0; i < ci->size; ++i)
    if (ci->world[i] != kPeerNone) members.push_back(ci->world[i]);
  nlohmann::json line = {{"type", "comm"},
                         {"id", ci->id},
                         {"seq", ci->id},
                         {"inter", ci->inter},
                         {"members", members}};
  if (ci->inter) {
    for (int i = 0; i < ci->remote_size; ++i)
      if (ci->remote_world[i] != kPeerNone) remote.push_back(ci->remote_world[i]);
    line["remote_members"] = remote;
  }
  DefsLine(line);
}

}  // namespace invmw::wrap
