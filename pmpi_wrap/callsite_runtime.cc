#include "pmpi_wrap/callsite_runtime.h"

#include <cerrno>
#include <mutex>
#include <string>

#include <unistd.h>

#include "common/run_dir.h"
#include "function_table.h"
#include "pmpi_wrap/runtime.h"
#include "pmpi_wrap/thread_state.h"
#include "recording/callsite_table.h"
#include "recording/io.h"

namespace invmw::wrap {

int g_callsite_depth = 0;

}  // namespace invmw::wrap

extern "C" {
__attribute__((visibility("hidden"))) __thread uintptr_t invmw_app_fp
    __attribute__((tls_model("initial-exec")));
}

namespace invmw::wrap {

namespace {

int g_fd = -1;
uint32_t g_slots = 4096;
bool g_frame_pointers = false;
recording::MappingLog g_maps;
// Serialises the mapping snapshots (init, finalize and a new object seen by any thread); the
// hot path never takes it, and a thread that finds it taken leaves the snapshot to its holder.
std::mutex g_maps_lock;

}  // namespace

void CallSitesInit() {
  int depth = int(g.cfg.WRAP_CALLSITE_DEPTH);
  if (depth < 0 || depth > recording::kMaxCallSiteDepth) {
    WarnOnce("INVMW_WRAP_CALLSITE_DEPTH must be 0..8; using 1");
    depth = 1;
  }
  int64_t slots = g.cfg.WRAP_CALLSITE_SLOTS;
  if (slots < 16 || slots > (1 << 20)) {
    WarnOnce("INVMW_WRAP_CALLSITE_SLOTS must be 16..1048576; using 4096");
    slots = 4096;
  }
  g_slots = uint32_t(slots);
  if (g.cfg.WRAP_CALLSITE_UNWIND == "fp")
    g_frame_pointers = true;
  else if (g.cfg.WRAP_CALLSITE_UNWIND != "unwind")
    WarnOnce("INVMW_WRAP_CALLSITE_UNWIND must be unwind or fp; using unwind");
  if (depth == 0 || g.output_dir.empty()) return;
  recording::MakeDirs(g.output_dir + "/callsites");
  const std::string path = recording::CallSiteFilePath(g.output_dir, g.rank);
  g_fd = CreateNewFile(path, O_APPEND);
  if (g_fd < 0) {
    if (errno == EEXIST)
      OutputExists(path.c_str());
    else
      g.errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::lock_guard<std::mutex> lock(g_maps_lock);
  if (!recording::WriteCallSiteHeader(g_fd, g.rank, depth, g.ticks_per_second) ||
      !g_maps.Snapshot(g_fd, "init")) {
    g.errors.fetch_add(1, std::memory_order_relaxed);
    close(g_fd);
    g_fd = -1;
    return;
  }
  g_callsite_depth = depth;
}

void CallSitesAttach(ThreadState* ts) {
  if (g_callsite_depth == 0 || ts->sites) return;
  ts->sites = recording::CallSiteTable::Create(g_slots, kNumFuncs);
  if (!ts->sites) g.errors.fetch_add(1, std::memory_order_relaxed);
  if (g_frame_pointers && !recording::ThreadStackBounds(&ts->stack_lo, &ts->stack_hi))
    ts->stack_lo = ts->stack_hi = 0;
}

void CallSitesCaptureDeep(ThreadState* ts, uint64_t ra, bool fortran) {
  // The frame pointer is left by the x86-64 C entry stubs only; Fortran entries unwind.
  if (g_frame_pointers && !fortran && ts->stack_hi)
    ts->site_n = uint32_t(recording::FramePointerCallSite(
        ra, invmw_app_fp, ts->site_pcs, g_callsite_depth, ts->stack_lo, ts->stack_hi));
  else
    ts->site_n = uint32_t(recording::UnwindCallSite(ra, ts->site_pcs, g_callsite_depth));
}

void CallSitesNewSite(uint64_t pc) {
  if (pc == 0 || g_fd < 0) return;
  std::unique_lock<std::mutex> lock(g_maps_lock, std::try_to_lock);
  if (!lock.owns_lock() || g_maps.Known(pc)) return;
  if (!g_maps.Snapshot(g_fd, "new-object")) g.errors.fetch_add(1, std::memory_order_relaxed);
}

void CallSitesFinalize() {
  if (g_fd < 0) return;
  std::lock_guard<std::mutex> lock(g_maps_lock);
  bool ok = g_maps.Snapshot(g_fd, "finalize");
  uint64_t unattributed = 0;
  for (int i = 0, n = ThreadCount(); i < n; ++i) {
    const ThreadState* ts = ThreadAt(i);
    if (!ts || !ts->sites) continue;
    ok = recording::WriteCallSiteRows(g_fd, *ts->sites, ts->index, kFuncNames) && ok;
    for (uint32_t f = 0; f < ts->sites->num_funcs(); ++f)
      unattributed += ts->sites->unattributed(f).calls;
  }
  ok = recording::WriteCallSiteEnd(g_fd, unattributed) && ok;
  if (close(g_fd) != 0) ok = false;
  g_fd = -1;
  if (!ok) g.errors.fetch_add(1, std::memory_order_relaxed);
  if (unattributed)
    WarnOnce(std::to_string(unattributed) +
             " MPI calls came from more call sites than INVMW_WRAP_CALLSITE_SLOTS holds; they "
             "are counted in unattributed rows per function");
}

}  // namespace invmw::wrap
