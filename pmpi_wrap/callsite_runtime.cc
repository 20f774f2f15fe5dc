#include "pmpi_wrap/callsite_runtime.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/run_dir.h"
#include "function_table.h"
#include "pmpi_wrap/runtime.h"
#include "pmpi_wrap/thread_state.h"
#include "recording/callsite_live.h"
#include "recording/callsite_table.h"
#include "recording/io.h"
#include "recording/live_file.h"

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

// ---- the live call-site file (recording/callsite_live.h) ----------------------------------
// The threads' tables live in a MAP_SHARED mapping of callsites/live-NNNNNN.bin, so a rank that
// never reaches MPI_Finalize (where the table is written) still leaves its call sites; the hot
// path is unchanged (plain stores into the table, now in the page cache).
recording::LiveSitesHeader* g_live = nullptr;  // null: tables in private memory
int g_live_fd = -1;
std::string g_live_path;

void OpenLiveSites(int max_threads, int depth) {
  // As the live counter file (runtime.cc OpenLiveCounters): none when asked for none.
  if (!g.cfg.PROFILE_LIVE_COUNTERS || !g.cfg.PROFILE_RAW_ON_SIGNAL) return;
  const std::string path = recording::LiveSitesPath(g.output_dir, g.rank);
  const uint64_t slot_size = recording::LiveSitesSlotSize(g_slots, kNumFuncs);
  // A slot gets its blocks when a thread takes it (LiveTable).
  int fd = -1;
  uint64_t slots_off = 0, size = 0;
  void* m =
      OpenLiveFile(path, sizeof(recording::LiveSitesHeader), slot_size, max_threads, "call-site",
                   "a rank that does not reach MPI_Finalize will leave no call-site table", true,
                   &fd, &slots_off, &size);
  if (!m) return;
  auto* h = static_cast<recording::LiveSitesHeader*>(m);
  h->version = recording::kLiveSitesVersion;
  h->header_size = sizeof *h;
  h->entry_size = sizeof(recording::CallSiteEntry);
  h->counters_size = sizeof(recording::CallSiteCounters);
  h->num_funcs = uint32_t(kNumFuncs);
  h->capacity = recording::CallSiteTable::RoundCapacity(g_slots);
  h->slot_count = uint32_t(max_threads);
  h->rank = g.rank;
  h->depth = uint32_t(depth);
  h->names_offset = sizeof(recording::LiveSitesHeader);
  h->slots_offset = slots_off;
  h->slot_size = slot_size;
  __atomic_store_n(&h->magic, recording::kLiveSitesMagic, __ATOMIC_RELEASE);
  g_live_path = path;
  g_live_fd = fd;
  g_live = h;
}

// Thread slot idx's table in the live file, or null (then private memory).
recording::CallSiteTable* LiveTable(int idx) {
  if (!g_live || idx < 0 || uint32_t(idx) >= g_live->slot_count) return nullptr;
  const uint64_t off = g_live->slots_offset + uint64_t(idx) * g_live->slot_size;
  const int err = posix_fallocate(g_live_fd, off_t(off), off_t(g_live->slot_size));
  if (err != 0) {
    // Once per thread start at most, never on the call path.
    WarnOnce("cannot reserve blocks in " + g_live_path + " for a thread's call sites (" +
             std::strerror(err) + "); a rank that does not reach MPI_Finalize loses them");
    return nullptr;
  }
  auto* t =
      recording::CallSiteTable::Place(reinterpret_cast<char*>(g_live) + off, g_slots, kNumFuncs);
  if (!t) return nullptr;
  recording::MarkLiveSlotUsed(&g_live->slots_used, idx);
  return t;
}

}  // namespace

void CallSitesInit(int max_threads) {
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
  OpenLiveSites(max_threads, depth);
  g_callsite_depth = depth;
}

void CallSitesAttach(ThreadState* ts) {
  if (g_callsite_depth == 0 || ts->sites) return;
  ts->sites = LiveTable(ts->index);
  if (!ts->sites) ts->sites = recording::CallSiteTable::Create(g_slots, kNumFuncs);
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
  if (g.cfg.WRAP_TEST_CALLSITE_KILL == g.rank) raise(SIGKILL);
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
  // The text file now holds the table: the live file is superseded (readers prefer a complete
  // text file anyway). Kept when the text is incomplete, so the table is not lost.
  if (ok && g_live) unlink(g_live_path.c_str());
  if (unattributed)
    WarnOnce(std::to_string(unattributed) +
             " MPI calls came from more call sites than INVMW_WRAP_CALLSITE_SLOTS holds; they "
             "are counted in unattributed rows per function");
}

}  // namespace invmw::wrap
