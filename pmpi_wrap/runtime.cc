#include "pmpi_wrap/runtime.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>  // the slot handover below, which helgrind cannot follow
#else
#define ANNOTATE_HAPPENS_BEFORE(obj) ((void)0)
#define ANNOTATE_HAPPENS_AFTER(obj) ((void)0)
#endif
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <set>

#include "common/clock.h"
#include "common/run_dir.h"
#include "common/sample_format.h"
#include "invmw_version.h"
#include "pmpi_wrap/callsite_runtime.h"
#include "pmpi_wrap/comm_table.h"
#include "pmpi_wrap/fortran.h"
#include "recording/profile_aggregate.h"
#include "recording/profile_report.h"
#include "pmpi_wrap/request_table.h"
#include "pmpi_wrap/scratch.h"
#include "pmpi_wrap/thread_state.h"
#include "pmpi_wrap/trace_parallel.h"
#include "pmpi_wrap/trace_runtime.h"
#include "recording/io.h"
#include "recording/live_file.h"
#include "recording/raw_file.h"
#include "recording/signals.h"
#include "sampler/sampler.h"
#include "otf2_writer/converter.h"

extern "C" char invmw_mpi_mismatch;

namespace invmw::wrap {

Runtime g;
bool g_mpi_mismatch = false;
INVMW_TLS ThreadState* tls_state = nullptr;
INVMW_TLS bool tls_in_call = false;

namespace {

// A NUL-terminated copy into a fixed-size record field, cut to fit (record fields are fixed by
// the raw file format; the names put there are shorter than the fields).
template <size_t N>
void CopyCString(char (&dst)[N], const char* src) {
  const size_t n = std::min(std::strlen(src), N - 1);
  std::memcpy(dst, src, n);
  dst[n] = '\0';
}

// ---- thread slots --------------------------------------------------------------------------
std::atomic<ThreadState*>* g_threads = nullptr;  // array of max_threads, set at init
int g_max_threads = 0;
std::atomic<int> g_thread_count{0};
std::atomic<bool>* g_slot_free = nullptr;  // per slot: its thread ended, the next one takes it
pthread_key_t g_thread_key;                // destructor: OnThreadExit
bool g_thread_key_ok = false;              // without the key, slots are not reused

// A recording thread ends: its slot, with everything it recorded, goes to the next new thread.
void OnThreadExit(void* p) {
  auto* ts = static_cast<ThreadState*>(p);
  if (ts->trace) TraceThreadEnded(ts);
  tls_state = nullptr;
  ANNOTATE_HAPPENS_BEFORE(ts);
  g_slot_free[ts->index].store(true, std::memory_order_release);
}

// ---- abnormal-end support: everything a signal handler needs, prepared at init ---------------
// This rank's raw file, created at init (exclusively: see common/run_dir.h) and written once,
// by whichever end comes first.
recording::RawFile g_dump;
clock::Anchor g_init_anchor;
// Taken when the library is loaded: at MPI_Init, the interval since (PMPI_Init's hundreds of ms)
// gives the tick rate without the 1 ms busy calibration inside the application's MPI_Init.
clock::Anchor g_load_anchor;
profile::RunMeta g_meta;
using recording::IsoTime;
using recording::MakeDirs;

// ---- live counter file (raw_format.h LiveHeader) ---------------------------------------------
// The thread slots' counters live in a MAP_SHARED mapping of raw/live-NNNNNN.bin: a store to
// them is a store to the page cache, which outlives the process, so a rank that gets SIGKILL
// (no handler runs: Slurm's PMIx plugin kills the whole step when one task dies) still leaves
// the calls it completed. The hot path is unchanged (plain stores through ts->stats).
raw::LiveHeader* g_live = nullptr;  // the mapping, or null (then slots use private memory)
size_t g_live_size = 0;
int g_live_fd = -1;
char g_live_path[4200];  // for unlink once a dump replaces the file (async-signal-safe)

void OpenLiveCounters(int max_threads) {
  // INVMW_PROFILE_RAW_ON_SIGNAL=0 asks for nothing at an abnormal end: no live file either.
  if (!g.cfg.PROFILE_LIVE_COUNTERS || !g.cfg.PROFILE_RAW_ON_SIGNAL || g.output_dir.empty()) return;
  const std::string path = profile::LiveCountersPath(g.output_dir, g.rank);
  if (path.size() >= sizeof g_live_path) return;
  const uint64_t slot_size = uint64_t(kNumFuncs) * sizeof(raw::FuncCounters);
  // A slot gets its blocks when a thread takes it (SlotCounters).
  int fd = -1;
  uint64_t slots_off = 0, size = 0;
  void* m =
      OpenLiveFile(path, sizeof(raw::LiveHeader), slot_size, max_threads, "counter",
                   "a rank killed by SIGKILL will leave no counts", false, &fd, &slots_off, &size);
  if (!m) return;
  auto* h = static_cast<raw::LiveHeader*>(m);
  h->version = raw::kLiveVersion;
  h->header_size = sizeof(raw::LiveHeader);
  h->counters_size = sizeof(raw::FuncCounters);
  h->num_funcs = uint32_t(kNumFuncs);
  h->slot_count = uint32_t(max_threads);
  h->names_offset = sizeof(raw::LiveHeader);
  h->slots_offset = slots_off;
  h->slot_size = slot_size;
  std::memcpy(g_live_path, path.c_str(), path.size() + 1);
  g_live_fd = fd;
  g_live_size = size;
  g_live = h;
}

// The counters of slot idx: its part of the live file when blocks could be reserved for it,
// else private memory (its counts then die with a SIGKILLed process, as before).
FuncStats* SlotCounters(int idx) {
  if (g_live) {
    const uint64_t off = g_live->slots_offset + uint64_t(idx) * g_live->slot_size;
    const int err = posix_fallocate(g_live_fd, off_t(off), off_t(g_live->slot_size));
    if (err == 0) {
      recording::MarkLiveSlotUsed(&g_live->slots_used, idx);
      return reinterpret_cast<FuncStats*>(reinterpret_cast<char*>(g_live) + off);
    }
    // Once per thread start at most, never on the call path.
    WarnOnce(std::string("cannot reserve blocks in ") + g_live_path + " for a thread's counters (" +
             std::strerror(err) + "); a rank killed by SIGKILL loses that thread's counts");
  }
  return static_cast<FuncStats*>(std::calloc(kNumFuncs, sizeof(FuncStats)));
}

// A dump of this rank now exists: the live file is superseded (readers prefer the dump anyway).
// Async-signal-safe.
void DropLiveCounters() {
  if (g_live && g_live_path[0]) unlink(g_live_path);
}

// ---- output files not written (OutputExists) ---------------------------------------------
std::atomic<uint64_t> g_outputs_refused{0};
std::atomic<bool> g_refused_path_taken{false};
char g_refused_path[512];

// The run's directory when it is not the one asked for, said once at the end (rank 0).
std::string g_dir_note;
bool g_meta_written = false;  // rank 0 created meta.json: later writes may replace it
bool g_meta_refused = false;  // something else was at meta.json: invmw leaves it alone

// Set in a child the application forked (system(), popen(), fork()): it is not a rank, so it
// records nothing and writes nothing (its exit would overwrite the rank's files), and it must
// not wait for threads fork did not copy (the trace writer, the sampler).
volatile sig_atomic_t g_forked_child = 0;

void OnForkChild() {
  g_forked_child = 1;
  g_dump.Claim();
  SetRecording(false);
}

// Saves the raw dump once (whichever end comes first wins). Async-signal-safe.
void SaveRawDump(uint32_t reason, int sig) {
  if (!g.initialized || g.finalized || !g_dump.buffer() || g_forked_child) return;
  if (!g_dump.Claim()) return;
  SetRecording(false);
  if (g.trace_on) TraceSaveFromSignal();
  if (g_dump.Write(FillRawDump(reason, sig, g_dump.buffer(), g_dump.capacity())))
    DropLiveCounters();
}

void SaveOnSignal(int sig) {
  SaveRawDump(raw::kEndSignal, sig);
}

std::string CommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto& c : s)
    if (c == '\0') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

void Warn(const std::string& msg) {
  if (g.rank <= 0) std::fprintf(stderr, "invmw: warning: %s\n", msg.c_str());
}

// Bytes of the raw event files (raw/events-*.bin, regular files only) of the run in dir.
uint64_t RawEventBytes(const std::string& dir) {
  uint64_t total = 0;
  DIR* d = opendir((dir + "/raw").c_str());
  if (!d) return 0;
  while (const dirent* e = readdir(d)) {
    struct stat st;
    if (std::strncmp(e->d_name, "events-", 7) == 0 &&
        fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      total += uint64_t(st.st_size);
  }
  closedir(d);
  return total;
}

std::string Parent(const std::string& d) {
  const size_t slash = d.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : d.substr(0, slash);
}

// Chooses and creates this run's directory (rank 0, or the process of a non-MPI run): d, the
// configured or default name. An earlier run's directory (common/run_dir.h, EarlierRunEntries)
// is replaced with INVMW_OUTPUT_REPLACE=1; otherwise it is left alone and the run goes to a new
// directory of the default name beside it, which g_dir_note says at the end: the application
// runs unchanged either way, and no earlier result is lost. raw/ is always created new, so the
// rank files start in a directory of this run. Empty: no usable directory (warned).
std::string PrepareOutputDir(std::string d) {
  const std::string wanted = d;
  bool fresh = false;
  if (const auto found = EarlierRunEntries(d); !found.empty()) {
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
    std::string err;
    if (g.cfg.OUTPUT_REPLACE && RemoveEarlierRun(d, &err)) {
      if (!g.cfg.RUNTIME_QUIET)
        std::fprintf(stderr,
                     "invmw: note: replaced the earlier run in %s (INVMW_OUTPUT_REPLACE=1)\n",
                     d.c_str());
    } else {
      d = Parent(d) + "/" + DefaultRunDirName();
      fresh = true;
      g_dir_note =
          wanted + " holds an earlier run (" + list + ")" +
          (g.cfg.OUTPUT_REPLACE ? " that could not be replaced: " + err
                                : ", which invmw does not overwrite") +
          "; this run's results are in " + d +
          (g.cfg.OUTPUT_REPLACE ? "" : " (INVMW_OUTPUT_REPLACE=1 replaces an earlier run)");
    }
  }
  // The directory itself may exist (made by `invmw run`, or by the user); raw/ must not.
  const bool made = fresh ? MakeDirs(Parent(d)) && mkdir(d.c_str(), 0755) == 0 : MakeDirs(d);
  if (!made || mkdir((d + "/raw").c_str(), 0755) != 0) {
    Warn("cannot create the output directory " + d + "/raw (" + std::strerror(errno) +
         "); no profile will be written");
    g_dir_note.clear();
    return "";
  }
  return d;
}

// A library built for one MPI preloaded into a program of the other would call the wrong
// library through wrong handle types; detect it before MPI_Init and stay out of the way.
void CheckMpiFlavor() {
  // A function only this MPI has (functions, unlike data, are never copied into the program).
  const char* probe =
      std::strcmp(kMpiFlavor, "mpich") == 0 ? "MPII_Comm_get_attr" : "ompi_mpi_init";
  void* init = dlsym(RTLD_DEFAULT, "PMPI_Init");
  void* mine = dlsym(RTLD_DEFAULT, probe);
  Dl_info a{}, b{};
  if (!init || !mine || !dladdr(init, &a) || !dladdr(mine, &b)) return;
  if (a.dli_fbase != b.dli_fbase) {
    g_mpi_mismatch = true;
    invmw_mpi_mismatch = 1;
    const char* r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (!r || std::strcmp(r, "0") == 0)
      std::fprintf(stderr,
                   "invmw: warning: this libinvmw was built for %s, but the program uses the MPI "
                   "library %s; invmw stays disabled for this run (use the invmw library built "
                   "for that MPI: %s; `invmw run --mpi` picks it)\n",
                   kMpiFlavor, a.dli_fname,
                   std::strcmp(kMpiFlavor, "mpich") == 0 ? "libinvmw.so for Open MPI"
                                                         : "libinvmw-mpich.so for MPICH");
  }
}

// The sampler's summaries are files another process may have cut short; a bad one costs the
// resources section, never the profile.
void AttachResourcesSafely(nlohmann::json* p) {
  try {
    profile::AttachResources(p, g.output_dir);
    profile::AttachSpawned(p, g.output_dir);
  } catch (const std::exception& e) {
    Warn(std::string("resource summaries not attached: ") + e.what());
  }
}

// ---- programs that never call MPI_Init (INVMW_RUNTIME_NONMPI=1) ----------------------------
bool g_nonmpi = false;  // the load-time sampler runs

// Launchers and daemons see the preload too (LD_PRELOAD is inherited); they are not the
// application, and their ranks start their own samplers.
bool IsLauncher() {
  static const char* const kNames[] = {"mpirun",
                                       "mpiexec",
                                       "orterun",
                                       "prterun",
                                       "prte",
                                       "prted",
                                       "orted",
                                       "mpiexec.hydra",
                                       "hydra_pmi_proxy",
                                       "mpirun.openmpi",
                                       "mpiexec.openmpi",
                                       "mpirun.mpich",
                                       "mpiexec.mpich",
                                       "pvmd",
                                       "pvmd3",
                                       "invmw"};
  for (const char* n : kNames)
    if (std::strcmp(program_invocation_short_name, n) == 0) return true;
  return false;
}

void StartNonMpi() {
  const char* v = getenv("INVMW_RUNTIME_NONMPI");
  if (!v || !*v || std::strcmp(v, "0") == 0) return;
  // Ranks of an MPI launch start their sampler at MPI_Init, with their real rank.
  if (getenv("OMPI_COMM_WORLD_RANK") || getenv("PMI_RANK") || IsLauncher()) return;
  // Only the first process: its children (shells, helpers) inherit the marker and stay quiet,
  // so they cannot overwrite its files.
  if (getenv("INVMW_RUNTIME_NONMPI_PID")) return;
  setenv("INVMW_RUNTIME_NONMPI_PID", std::to_string(getpid()).c_str(), 1);
  g.cfg = config::Load();
  if (!g.cfg.SAMPLER_ENABLE) return;
  g.init_enter_ticks = clock::Ticks();
  g_init_anchor = clock::TakeAnchor();
  g.init_ticks = g_init_anchor.ticks;
  g.init_realtime_ns = clock::RealtimeNs();
  g.ticks_per_second = clock::CalibrateTicksPerSecond(1000000);
  g.rank = 0;
  g.world_size = 1;
  gethostname(g.host, sizeof g.host - 1);
  std::string d =
      PrepareOutputDir(g.cfg.OUTPUT_DIR.empty() ? DefaultRunDirName() : g.cfg.OUTPUT_DIR);
  if (d.empty()) return;
  g.output_dir = d;
  sampler::StartOptions o;
  o.run_dir = d;
  o.host = g.host;
  o.ticks_per_second = g.ticks_per_second;
  o.config = &g.cfg;
  o.warn = [](const std::string& m) { WarnOnce("sampler: " + m); };
  o.note = [](const std::string& m) { NoteOnce("sampler: " + m); };
  o.existing = [](const std::string& p) { OutputExists(p.c_str()); };
  std::string err;
  if (!sampler::Start(o, &err)) {
    Warn("sampler not started: " + err);
    return;
  }
  g_nonmpi = true;
}

// The end of the run (rank 0): files not written because something was at their names
// (refused, over all ranks), and the directory used instead of the one asked for.
void WarnAtEnd(uint64_t refused) {
  if (refused) {
    std::string where = g_refused_path_taken.load() ? std::string(g_refused_path) : "";
    Warn(std::to_string(refused) +
         " output file(s) not written: an entry of the same name existed (invmw never writes "
         "through a link or over a file it did not create)" +
         (where.empty() ? std::string(" on other ranks") : ", e.g. " + where));
  }
  if (!g_dir_note.empty()) Warn(g_dir_note);
}

// At exit: the last sample, then a profile holding the wall time and the resource summary.
void FinishNonMpi() {
  g_nonmpi = false;
  sampler::Stop();
  std::vector<char> buf(sizeof(raw::RankHeader));
  size_t n = FillRawDump(raw::kEndFinalize, 0, buf.data(), buf.size());
  profile::RankData rank;
  std::string err;
  if (!profile::ParseDump(buf.data(), n, &rank, &err)) return Warn(err);
  g_meta.invmw_version = INVMW_VERSION;
  g_meta.output_dir = g.output_dir;
  g_meta.command = CommandLine();
  g_meta.start_time = IsoTime(g.init_realtime_ns);
  g_meta.world_size = 1;
  g_meta.config = g.cfg.effective;
  nlohmann::json p = profile::BuildProfile({rank}, g_meta, false);
  p["non_mpi"] = true;
  AttachResourcesSafely(&p);
  std::string existed;
  if (!profile::WriteProfile(g.output_dir, p, &err, false, &existed)) {
    if (existed.empty())
      Warn(err);
    else
      OutputExists(existed.c_str());
  } else if (!g.cfg.RUNTIME_QUIET)
    std::fprintf(stderr, "invmw: profile written to %s/profile.txt\n", g.output_dir.c_str());
  WarnAtEnd(g_outputs_refused.load());
}

__attribute__((constructor)) void OnLoad() {
  g_load_anchor = clock::TakeAnchor();
  CheckMpiFlavor();
  pthread_atfork(nullptr, nullptr, OnForkChild);
}

__attribute__((destructor)) void OnUnload() {
  if (g_forked_child) return;
  if (g_nonmpi) {
    try {
      FinishNonMpi();
    } catch (...) {  // at exit: nothing may change how the program ends
    }
    return;
  }
  // exit() without MPI_Finalize: keep what was recorded.
  if (g.initialized && !g.finalized) {
    if (g.cfg.PROFILE_RAW_ON_SIGNAL) SaveRawDump(raw::kEndExit, 0);
    sampler::Stop();
    if (!g_dir_note.empty()) Warn(g_dir_note);
  }
}

}  // namespace

void SetRecording(bool on) {
  for (int f = 0; f < kNumFuncs; ++f)
    g.record[f].store(on && g.enabled[f], std::memory_order_relaxed);
  g.recording.store(on, std::memory_order_release);
}

// ---- thread attach -------------------------------------------------------------------------
ThreadState* AttachThread() {
  if (!g_threads) return nullptr;
  // A slot whose thread ended first: its counters and trace location go on with this thread.
  for (int i = 0, n = ThreadCount(); i < n; ++i) {
    bool was_free = true;
    if (!g_slot_free[i].load(std::memory_order_relaxed) ||
        !g_slot_free[i].compare_exchange_strong(was_free, false, std::memory_order_acquire))
      continue;
    ThreadState* ts = ThreadAt(i);
    ANNOTATE_HAPPENS_AFTER(ts);
    if (ts->trace) TraceThreadReused(ts);
    tls_state = ts;
    pthread_setspecific(g_thread_key, ts);  // only set slots are ever freed: the key exists
    return ts;
  }
  int idx = g_thread_count.fetch_add(1, std::memory_order_relaxed);
  if (idx >= g_max_threads) {
    g_thread_count.fetch_sub(1, std::memory_order_relaxed);
    g.dropped_threads.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  auto* ts = static_cast<ThreadState*>(std::calloc(1, sizeof(ThreadState)));
  FuncStats* stats = ts ? SlotCounters(idx) : nullptr;
  if (!stats) {
    std::free(ts);
    g.errors.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  ts->stats = stats;
  ts->index = idx;
  ts->counter_fd = -1;
  CallSitesAttach(ts);
  // Epoch 0 never matches (the global epoch starts at 1), so the calloc'ed cache is empty.
  if (g.trace_on) TraceAttachThread(ts);
  g_threads[idx].store(ts, std::memory_order_release);
  tls_state = ts;
  if (g_thread_key_ok) pthread_setspecific(g_thread_key, ts);
  return ts;
}

int ThreadCount() {
  return std::min(g_thread_count.load(), g_max_threads);
}
ThreadState* ThreadAt(int i) {
  return g_threads[i].load(std::memory_order_acquire);
}

// ---- dump ----------------------------------------------------------------------------------
size_t FillRawDump(uint32_t end_reason, int end_signal, char* buf, size_t cap) {
  auto* h = reinterpret_cast<raw::RankHeader*>(buf);
  std::memset(h, 0, sizeof *h);
  h->magic = raw::kMagic;
  h->version = raw::kVersion;
  h->header_size = sizeof(raw::RankHeader);
  h->record_size = sizeof(raw::FuncRecord);
  h->rank = g.rank;
  h->world_size = g.world_size;
  h->pid = getpid();
  h->flags = end_reason == raw::kEndFinalize ? 0u : uint32_t(raw::kFlagIncomplete);
  h->end_reason = end_reason;
  h->end_signal = end_signal;
  h->dropped_threads = g.dropped_threads.load();
  h->dropped_requests = g.dropped_requests.load();
  h->errors = g.errors.load();
  h->end_ticks = clock::Ticks();
  clock::Anchor now = clock::TakeAnchor();
  double tps = clock::TicksPerSecond(g_init_anchor, now);
  h->ticks_per_second = tps > 0 ? tps : g.ticks_per_second;
  h->init_ticks = g.init_ticks;
  h->init_realtime_ns = g.init_realtime_ns;
  // Wall time covers MPI_Init itself, so the MPI share is a share of the same interval.
  h->wall_s = double(h->end_ticks - g.init_enter_ticks) / h->ticks_per_second;
  h->mpi_init_s = double(g.init_ticks - g.init_enter_ticks) / h->ticks_per_second;
  std::memcpy(h->host, g.host, sizeof h->host);
  std::memcpy(h->mpi_library, g.mpi_library, sizeof h->mpi_library);
  CopyCString(h->invmw_version, INVMW_VERSION);
  CopyCString(h->mpi_flavor, kMpiFlavor);

  int nthreads = ThreadCount();
  h->num_threads = uint32_t(nthreads);
  auto* rec = reinterpret_cast<raw::FuncRecord*>(buf + sizeof(raw::RankHeader));
  size_t max_recs = (cap - sizeof(raw::RankHeader)) / sizeof(raw::FuncRecord);
  uint32_t n = 0;
  for (int f = 0; f < kNumFuncs && n < max_recs; ++f) {
    raw::FuncRecord r;
    std::memset(&r, 0, sizeof r);
    for (int t = 0; t < nthreads; ++t) {
      ThreadState* ts = ThreadAt(t);
      if (!ts) continue;
      const FuncStats& s = ts->stats[f];
      r.calls += s.calls;
      r.ticks += s.ticks;
      r.bytes_sent += s.bytes_sent;
      r.bytes_recv += s.bytes_recv;
      if (s.max_ticks > r.max_ticks) r.max_ticks = s.max_ticks;
      for (int b = 0; b < raw::kHistBins; ++b) {
        r.hist[b] += s.hist[b];
        r.hist_sent[b] += s.hist_sent[b];
        r.hist_recv[b] += s.hist_recv[b];
      }
    }
    if (r.calls == 0) continue;
    CopyCString(r.name, kFuncNames[f]);
    rec[n++] = r;
  }
  h->num_funcs = n;
  size_t size = sizeof(raw::RankHeader) + size_t(n) * sizeof(raw::FuncRecord);
  // An abnormal end inside a call: name the call open longest (the one the rank waited in).
  if (end_reason == raw::kEndFinalize || size + sizeof(raw::OpenCallRecord) > cap) return size;
  OpenCallInfo best{};
  int best_thread = -1;
  for (int t = 0; t < nthreads; ++t) {
    OpenCallInfo oc;
    if (ResolveOpenCall(ThreadAt(t), &oc) && (best_thread < 0 || oc.t_enter < best.t_enter)) {
      best = oc;
      best_thread = t;
    }
  }
  if (best_thread < 0) return size;
  raw::OpenCallRecord o;
  std::memset(&o, 0, sizeof o);
  o.magic = raw::kOpenCallMagic;
  o.record_size = sizeof o;
  CopyCString(o.name, kFuncNames[best.func]);
  o.peer = best.peer;
  o.tag = best.tag;
  o.comm = best.comm;
  o.flags = best.flags;
  o.enter_ticks = best.t_enter > h->end_ticks ? h->end_ticks : best.t_enter;
  o.thread = best_thread;
  std::memcpy(buf + size, &o, sizeof o);
  return size + sizeof o;
}

bool ResolveOpenCall(const ThreadState* ts, OpenCallInfo* out) {
  if (!ts) return false;
  uint32_t f1 = ts->open.func1.load(std::memory_order_relaxed);
  if (f1 == 0 || f1 > uint32_t(kNumFuncs)) return false;
  std::atomic_signal_fence(std::memory_order_acquire);
  const ThreadState::OpenCall& o = ts->open;
  out->func = uint16_t(f1 - 1);
  out->t_enter = o.t_enter;
  out->peer = kPeerNone;
  out->tag = -1;
  out->comm = 0xffffffffu;
  out->flags = 0;
  MPI_Comm comm = o.comm;
  const CommInfo* ci = FindKnownComm(comm);
  if (ci && ci->id != 0xffffffffu) {
    out->comm = ci->id;
    out->flags |= raw::kOpenCommKnown;
  }
  if (o.known) {
    out->tag = o.tag;
    if (o.peer_world)
      out->peer = o.peer;
    else if (o.peer == MPI_PROC_NULL)
      out->peer = kPeerProcNull;
    else if (ci)
      out->peer = PeerWorldRank(ci, o.peer);
    out->flags |= raw::kOpenPeerKnown;
    if (o.to_peer) out->flags |= raw::kOpenToPeer;
  }
  return true;
}

namespace {
// True the first time `msg` is given (warnings and notes are said once per process).
bool FirstTime(const std::string& msg) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  return seen.insert(msg).second;
}
}  // namespace

void WarnOnce(const std::string& msg) {
  if (FirstTime(msg)) Warn(msg);
}

void NoteOnce(const std::string& msg) {
  if (!g.cfg.RUNTIME_QUIET && g.rank <= 0 && FirstTime(msg))
    std::fprintf(stderr, "invmw: note: %s\n", msg.c_str());
}

void OutputExists(const char* path) {
  g.errors.fetch_add(1, std::memory_order_relaxed);
  g_outputs_refused.fetch_add(1, std::memory_order_relaxed);
  if (!g_refused_path_taken.exchange(true)) CopyCString(g_refused_path, path);
}

void* OpenLiveFile(const std::string& path, uint64_t header_size, uint64_t slot_size,
                   int max_threads, const char* what, const char* loss, bool warn_on_create,
                   int* fd, uint64_t* slots_off, uint64_t* size) {
  uint64_t names_off = 0;
  recording::LiveFileLayout(header_size, kNumFuncs, &names_off, slots_off);
  *size = *slots_off + uint64_t(max_threads) * slot_size;
  // Blocks for the header and the names now, for a slot when a thread takes it.
  recording::LiveFile lf;
  int err = 0;
  const char* failed = nullptr;
  switch (recording::CreateLiveFile(path.c_str(), *size, *slots_off, &lf, &err)) {
    case recording::LiveFileError::kNone:
      break;
    case recording::LiveFileError::kExists:
      OutputExists(path.c_str());
      return nullptr;
    case recording::LiveFileError::kCreate:
      if (!warn_on_create) {
        g.errors.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      }
      failed = "create";
      break;
    case recording::LiveFileError::kMap:
      failed = "map";
      break;
  }
  if (failed) {
    WarnOnce(std::string("cannot ") + failed + " the live " + what + " file " + path + " (" +
             std::strerror(err) + "); " + loss);
    return nullptr;
  }
  recording::WriteLiveNames(lf.base, names_off, kFuncNames, kNumFuncs);
  *fd = lf.fd;
  return lf.base;
}

// ---- init / finalize -----------------------------------------------------------------------
namespace {

// One sampler per process; node-wide sources only on the first rank of each node, found with a
// shared-memory split (collective, so every rank takes part even when sampling is off).
void StartSampler() {
  if (g_nonmpi) {  // a singleton MPI program: the MPI-aware sampler takes over
    g_nonmpi = false;
    sampler::Stop();
    // Its files in this run's directory are this process's own, created at load time: the new
    // sampler creates them again (it never writes over an existing file).
    for (const auto& n : {samples::MetricsFileName(0), samples::SamplesFileName(0)})
      unlink((g.output_dir + "/raw/" + n).c_str());
    if (sampler::LastStats().wrote_resources)
      unlink((g.output_dir + "/raw/" + samples::ResourcesFileName(0)).c_str());
  }
  int local_rank = 0;
  MPI_Comm node = MPI_COMM_NULL;
  if (PMPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS &&
      node != MPI_COMM_NULL) {
    PMPI_Comm_rank(node, &local_rank);
    PMPI_Comm_free(&node);
  }
  if (!g.cfg.SAMPLER_ENABLE || g.output_dir.empty()) return;
  sampler::StartOptions o;
  o.run_dir = g.output_dir;
  o.rank = g.rank;
  o.world_size = g.world_size;
  o.node_leader = local_rank == 0;
  o.host = g.host;
  o.trace_time = g.trace_on ? &TraceTime : nullptr;
  o.ticks_per_second = g.ticks_per_second;
  o.config = &g.cfg;
  o.warn = [](const std::string& m) { WarnOnce("sampler: " + m); };
  o.note = [](const std::string& m) { NoteOnce("sampler: " + m); };
  o.existing = [](const std::string& p) { OutputExists(p.c_str()); };
  std::string err;
  // A file that existed is reported at the end, with the others.
  if (!sampler::Start(o, &err) && g_outputs_refused.load() == 0)
    Warn("sampler not started: " + err);
}

}  // namespace

void OnInit(uint64_t enter_ticks) {
  if (g_mpi_mismatch || g.initialized) return;
  // First: PMPI_Init has just returned, and invmw's own start-up (invmw:init) begins here.
  g_init_anchor = clock::TakeAnchor();
  InitSharedRequests();
  g.cfg = config::Load();
  g.init_enter_ticks = enter_ticks;
  g.init_ticks = g_init_anchor.ticks;
  g.init_realtime_ns = clock::RealtimeNs();
  const double since_load =
      g_load_anchor.mono_ns > 0 ? clock::TicksPerSecond(g_load_anchor, g_init_anchor) : 0;
  g.ticks_per_second = since_load > 0 ? since_load : clock::CalibrateTicksPerSecond(1000000);
  PMPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &g.world_size);
  gethostname(g.host, sizeof g.host - 1);
  int len = 0;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  PMPI_Get_library_version(lib, &len);
  lib[MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
  if (char* nl = std::strchr(lib, '\n')) *nl = '\0';
  CopyCString(g.mpi_library, lib);

  for (const auto& w : g.cfg.warnings) Warn(w);
  if (!g.cfg.WRAP_ENABLE) return;

  for (int f = 0; f < kNumFuncs; ++f) g.enabled[f] = true;
  for (const auto& name : g.cfg.WRAP_EXCLUDE) {
    bool found = false;
    for (int f = 0; f < kNumFuncs; ++f)
      if (name == kFuncNames[f]) g.enabled[f] = false, found = true;
    if (!found) Warn("INVMW_WRAP_EXCLUDE names " + name + ", which invmw does not wrap; ignored");
  }

  // invmw's own communicator, made before the application can use MPI_COMM_WORLD.
  if (PMPI_Comm_dup(MPI_COMM_WORLD, &g.comm) != MPI_SUCCESS ||
      PMPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN) != MPI_SUCCESS) {
    Warn("cannot duplicate MPI_COMM_WORLD for invmw's own messages; nothing is recorded");
    return;
  }

  // Rank 0 chooses the output directory; every rank learns it, so ranks started with a plain
  // LD_PRELOAD agree without a launcher.
  char dir[4096] = {};
  if (g.rank == 0) {
    std::string d = g.cfg.OUTPUT_DIR.empty() ? DefaultRunDirName() : g.cfg.OUTPUT_DIR;
    // A singleton started under INVMW_RUNTIME_NONMPI=1 made its directory at load time.
    const bool own_dir = g_nonmpi && !g.output_dir.empty();
    if (own_dir) d = g.output_dir;
    // Processes started by MPI_Comm_spawn form a world of their own, with ranks from 0 again,
    // and inherit the output directory: they get a directory of their own inside it, or their
    // files would replace their parents'.
    MPI_Comm parent = MPI_COMM_NULL;
    if (PMPI_Comm_get_parent(&parent) == MPI_SUCCESS && parent != MPI_COMM_NULL) {
      d += "/spawned-" + std::to_string(getpid());
      if (!g.cfg.RUNTIME_QUIET)
        std::fprintf(stderr, "invmw: note: spawned processes (MPI_Comm_spawn) are profiled in %s\n",
                     d.c_str());
    }
    if (!own_dir) d = PrepareOutputDir(d);
    if (d.size() >= sizeof dir) {
      Warn("the output directory name is longer than " + std::to_string(sizeof dir - 1) +
           " bytes; no profile will be written");
      d.clear();
    }
    CopyCString(dir, d.c_str());
  }
  if (PMPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, g.comm) != MPI_SUCCESS) dir[0] = '\0';
  g.output_dir = dir;
  if (!g.output_dir.empty()) {
    MakeDirs(g.output_dir + "/raw");  // no-op on a shared file system
    const std::string path = profile::RawDumpPath(g.output_dir, g.rank);
    const int fd = CreateNewFile(path);
    g_dump.Attach(fd);
    if (fd < 0) {
      if (errno == EEXIST)
        OutputExists(path.c_str());
      else
        g.errors.fetch_add(1, std::memory_order_relaxed);
    }
  }

  int max_threads = int(g.cfg.WRAP_MAX_THREADS);
  if (max_threads < 1 || max_threads > 4096) {
    Warn("INVMW_WRAP_MAX_THREADS must be 1..4096; using 64");
    max_threads = 64;
  }
  g_slot_free = new std::atomic<bool>[max_threads]();
  g_thread_key_ok = pthread_key_create(&g_thread_key, OnThreadExit) == 0;
  OpenLiveCounters(max_threads);
  g_threads = new std::atomic<ThreadState*>[max_threads]();
  g_max_threads = max_threads;
  CallSitesInit(max_threads);
  if (const int64_t want = g.cfg.WRAP_MAX_REQUESTS; want < 1024 || want > (1 << 24))
    Warn("INVMW_WRAP_MAX_REQUESTS must be 1024..16777216; using the nearest");
  if (!InitRequestTable(g.cfg.WRAP_MAX_REQUESTS))
    Warn("no memory for the request table; nonblocking requests are not tracked");
  g_dump.Allocate(sizeof(raw::RankHeader) + sizeof(raw::FuncRecord) * size_t(kNumFuncs) +
                  sizeof(raw::OpenCallRecord));

  InitCommTable();
  InitFortranSentinels();
  if (g.cfg.TRACE_ON_FULL == "stop") {
    g.trace_flush_on_full = false;
  } else if (g.cfg.TRACE_ON_FULL != "flush") {
    Warn("INVMW_TRACE_ON_FULL=" + g.cfg.TRACE_ON_FULL + ": expected flush or stop; using flush");
  }
  // Every rank must agree: TraceInit exchanges clock-sync messages with rank 0.
  int trace_ok = g.cfg.TRACE_ENABLE && !g.output_dir.empty() ? 1 : 0, all_trace = 0;
  if (PMPI_Allreduce(&trace_ok, &all_trace, 1, MPI_INT, MPI_MIN, g.comm) != MPI_SUCCESS)
    all_trace = 0;
  g.trace_on = all_trace != 0;
  g.trace_coalesce = g.cfg.TRACE_COALESCE_TESTS;
  if (g.trace_on) TraceInit();

  if (g.rank == 0 && !g.output_dir.empty()) {
    g_meta.invmw_version = INVMW_VERSION;
    g_meta.mpi_flavor = kMpiFlavor;
    g_meta.mpi_library = g.mpi_library;
    g_meta.output_dir = g.output_dir;
    g_meta.command = CommandLine();
    g_meta.start_time = IsoTime(g.init_realtime_ns);
    g_meta.world_size = g.world_size;
    g_meta.config = g.cfg.effective;
    if (g.trace_on) g_meta.clock_sync = TraceClockSync();
    std::string err, existed;
    if (profile::WriteMeta(g.output_dir, g_meta, &err, false, &existed))
      g_meta_written = true;
    else if (existed.empty())
      Warn(err);
    else
      OutputExists(existed.c_str()), g_meta_refused = true;  // reported at the end
  }
  if (g.cfg.PROFILE_RAW_ON_SIGNAL && !g.output_dir.empty())
    recording::InstallSignalHandlers(SaveOnSignal);
  StartSampler();
  g.initialized = true;
  if (g_live) {
    // The rest of the header a reader needs (rank, host, clock); g_live->rank's end is filled
    // in by the reader. magic last: a reader takes a file without it as unfinished.
    alignas(raw::RankHeader) char hdr[sizeof(raw::RankHeader)];
    FillRawDump(raw::kEndKilled, 0, hdr, sizeof hdr);
    std::memcpy(&g_live->rank, hdr, sizeof hdr);
    __atomic_store_n(&g_live->magic, raw::kLiveMagic, __ATOMIC_RELEASE);
  }
  SetRecording(true);
}

// Rank 0: writes the finished profile (refusing an entry it did not create, counted in
// *all_refused with the others reported at the end).
void WriteRunProfile(nlohmann::json p, uint64_t* all_refused) {
  std::string err, existed;
  AttachResourcesSafely(&p);
  if (!profile::WriteProfile(g.output_dir, p, &err, false, &existed)) {
    if (existed.empty()) {
      Warn(err);
    } else {  // reported with the others at the end
      OutputExists(existed.c_str());
      ++*all_refused;
    }
  } else if (!g.cfg.RUNTIME_QUIET) {
    std::fprintf(stderr, "invmw: profile written to %s/profile.txt\n", g.output_dir.c_str());
  }
  if (const std::string d = profile::DroppedNote(p); !d.empty()) Warn("not recorded: " + d);
}

// INVMW_PROFILE_MERGE=gather, and the fallback of the tree: rank 0 receives every rank's dump
// (n bytes here) and builds the profile from all of them.
void GatherProfile(size_t n, uint64_t* all_refused) {
  int my_size = int(n);
  std::vector<int> sizes(g.rank == 0 ? g.world_size : 0), displs;
  bool gathered =
      PMPI_Gather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, g.comm) == MPI_SUCCESS;
  std::vector<char> all;
  if (g.rank == 0) {
    displs.resize(g.world_size);
    size_t total = 0;
    if (!gathered) std::fill(sizes.begin(), sizes.end(), 0);  // receive nothing
    for (int i = 0; i < g.world_size; ++i) displs[i] = int(total), total += size_t(sizes[i]);
    all.resize(total);
  }
  // Every rank calls it even after a failed size gather, so that nobody waits for a partner.
  gathered = PMPI_Gatherv(g_dump.buffer(), my_size, MPI_BYTE, all.data(), sizes.data(),
                          displs.data(), MPI_BYTE, 0, g.comm) == MPI_SUCCESS &&
             gathered;
  if (g.rank == 0 && !gathered) {
    Warn("the ranks' data could not be gathered; `invmw profile " + g.output_dir +
         "` builds the profile from the files each rank saved");
  } else if (g.rank == 0) {
    // A rank whose data does not parse is missing from the profile, not a phantom rank.
    std::vector<profile::RankData> ranks;
    for (int i = 0; i < g.world_size; ++i) {
      std::string err;
      profile::RankData r;
      if (profile::ParseDump(all.data() + displs[i], size_t(sizes[i]), &r, &err))
        ranks.push_back(std::move(r));
      else
        Warn("rank " + std::to_string(i) + ": " + err);
    }
    try {
      nlohmann::json p = profile::BuildProfile(ranks, g_meta, false);
      p["merge"] = {{"method", "gather"}, {"rank0_bytes_received", uint64_t(all.size())}};
      WriteRunProfile(std::move(p), all_refused);
    } catch (const std::exception& e) {  // never let the application's MPI_Finalize fail
      Warn(std::string("profile not written: ") + e.what());
    }
  }
}

// INVMW_PROFILE_MERGE=tree (docs/profile.md): every rank writes its own "ranks" entry to
// raw/profile-NNNNNN.json, then the per-function aggregates (profile_aggregate.h) are reduced
// over a binomial tree on invmw's communicator, so rank 0 receives log2(ranks) aggregates of
// the functions' size, never a rank's table. Up to INVMW_PROFILE_INLINE_RANKS ranks rank 0
// copies the files into profile.json. Returns whether the profile was handled; false on every
// rank alike (then each has removed its own file, and all of them gather instead).
bool MergeProfileInTree(size_t n, uint64_t* all_refused) {
  constexpr int kTagLength = 0x1c7e, kTagData = 0x1c7f;
  int ok = 1;           // this rank's subtree is complete so far
  bool failed = false;  // the failure began here (not in a child's subtree)
  std::string why;
  bool wrote = false;
  profile::RunAggregate agg;
  try {
    profile::RankData mine;
    if (!profile::ParseDump(g_dump.buffer(), n, &mine, &why)) {
      ok = 0, failed = true;
    } else if (g.rank == int(g.cfg.PROFILE_TEST_TREE_FAIL)) {
      ok = 0, failed = true;
      why = "failure injected (INVMW_PROFILE_TEST_TREE_FAIL)";
    } else if (!profile::WriteRankFile(g.output_dir, g.rank, profile::RankJson(mine), &why)) {
      ok = 0, failed = true;
    } else {
      wrote = true;
      agg.AddRank(mine);
    }
  } catch (const std::exception& e) {
    ok = 0, failed = true;
    why = e.what();
  }
  // A rank's subtree is the range [rank, rank + lowest set bit): children are taken in rank
  // order, so Merge always gets higher ranks on its right. A failed subtree sends length 0;
  // every rank still sends and receives exactly once per edge, so nobody waits for a partner.
  uint64_t received = 0;
  for (int mask = 1; mask < g.world_size; mask <<= 1) {
    if (g.rank & mask) {
      std::string bytes;
      if (ok) try {
          bytes = agg.Encode();
        } catch (const std::exception& e) {
          ok = 0, failed = true, why = e.what();
        }
      if (bytes.size() > size_t(INT32_MAX))
        bytes.clear(), ok = 0, failed = true, why = "aggregate too large";
      uint64_t len = ok ? bytes.size() : 0;
      if (PMPI_Send(&len, 1, MPI_UINT64_T, g.rank - mask, kTagLength, g.comm) != MPI_SUCCESS ||
          (len && PMPI_Send(bytes.data(), int(len), MPI_BYTE, g.rank - mask, kTagData, g.comm) !=
                      MPI_SUCCESS))
        ok = 0, failed = true,
        why = "sending the aggregate to rank " + std::to_string(g.rank - mask) + " failed";
      break;
    }
    if (g.rank + mask >= g.world_size) continue;
    const int child = g.rank + mask;
    uint64_t len = 0;
    if (PMPI_Recv(&len, 1, MPI_UINT64_T, child, kTagLength, g.comm, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS) {
      ok = 0, failed = true, why = "receiving from rank " + std::to_string(child) + " failed";
      continue;
    }
    received += sizeof len;
    if (len == 0) {  // the child's subtree failed; its failing rank is named below
      ok = 0;
      continue;
    }
    std::string buf;
    try {
      buf.resize(len > uint64_t(INT32_MAX) ? 0 : size_t(len));
    } catch (const std::exception&) {
    }
    // Received even when it cannot be used: the sender is committed to sending it.
    if (buf.size() != len) {
      ok = 0, failed = true, why = "no memory for the aggregate of rank " + std::to_string(child);
      std::vector<char> sink(size_t(std::min<uint64_t>(len, INT32_MAX)));
      PMPI_Recv(sink.data(), int(sink.size()), MPI_BYTE, child, kTagData, g.comm,
                MPI_STATUS_IGNORE);
      continue;
    }
    if (PMPI_Recv(&buf[0], int(len), MPI_BYTE, child, kTagData, g.comm, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS) {
      ok = 0, failed = true, why = "receiving from rank " + std::to_string(child) + " failed";
      continue;
    }
    received += len;
    if (!ok) continue;
    try {
      profile::RunAggregate theirs;
      std::string err;
      if (!profile::RunAggregate::Decode(buf.data(), buf.size(), &theirs, &err)) {
        ok = 0, failed = true, why = "from rank " + std::to_string(child) + ": " + err;
        continue;
      }
      agg.Merge(theirs);
    } catch (const std::exception& e) {
      ok = 0, failed = true, why = e.what();
    }
  }
  // Rank 0 now holds every rank's aggregate, so every rank file is in place.
  nlohmann::json ranks = nlohmann::json::array();
  const bool inline_ranks = g.world_size <= g.cfg.PROFILE_INLINE_RANKS;
  if (g.rank == 0 && ok) {
    if (agg.ranks != g.world_size) {
      ok = 0, failed = true,
      why = "the aggregate holds " + std::to_string(agg.ranks) + " of " +
            std::to_string(g.world_size) + " ranks";
    } else if (inline_ranks) {
      try {
        if (!profile::ReadRankFiles(g.output_dir, g.world_size, &ranks, &why))
          ok = 0, failed = true;
      } catch (const std::exception& e) {
        ok = 0, failed = true, why = e.what();
      }
    }
  }
  // Every rank agrees, and learns the lowest failing rank for the one warning.
  int failed_at = failed ? g.rank : INT32_MAX, first_failed = failed_at;
  if (PMPI_Allreduce(&failed_at, &first_failed, 1, MPI_INT, MPI_MIN, g.comm) != MPI_SUCCESS)
    first_failed = g.rank;
  if (first_failed != INT32_MAX) {
    // Rank 0 gathers instead; only this rank's own file is removed, and only if it wrote it.
    if (wrote) unlink(profile::RankFilePath(g.output_dir, g.rank).c_str());
    if (g.rank == 0)
      Warn("profile: merging over a tree failed on rank " + std::to_string(first_failed) +
           (first_failed == 0 ? ": " + why : "") + "; rank 0 gathers every rank's data instead");
    return false;
  }
  if (g.rank != 0) return true;
  try {
    nlohmann::json p =
        profile::ProfileFromAggregate(agg, g_meta, false, g.world_size, std::move(ranks),
                                      nlohmann::json::array(), nlohmann::json::array());
    if (!inline_ranks)
      p["rank_files"] = {{"files", "raw/profile-NNNNNN.json"}, {"ranks", g.world_size}};
    p["merge"] = {
        {"method", "tree"}, {"rank0_bytes_received", received}, {"ranks_inline", inline_ranks}};
    WriteRunProfile(std::move(p), all_refused);
  } catch (const std::exception& e) {  // never let the application's MPI_Finalize fail
    Warn(std::string("profile not written: ") + e.what());
  }
  return true;
}

void OnFinalize() {
  if (!g.initialized || g.finalized) return;
  SetRecording(false);
  // Before any collective of ours: the last sample belongs to the application's run.
  sampler::Stop();
  CallSitesFinalize();
  if (g.trace_on) {
    TraceFinalize();
    // The finalize offsets complete the run metadata, in meta.json as in the profile below.
    if (g.rank == 0 && !g.output_dir.empty() && !g_meta_refused) {
      g_meta.clock_sync = TraceClockSync();
      std::string err, existed;
      if (profile::WriteMeta(g.output_dir, g_meta, &err, g_meta_written, &existed))
        g_meta_written = true;
      else if (existed.empty())
        Warn(err);
      else
        OutputExists(existed.c_str());
    }
  }
  if (g_dump.claimed()) {  // already saved by another path; nothing consistent to gather
    g.finalized = true;
    return;
  }
  size_t n = FillRawDump(raw::kEndFinalize, 0, g_dump.buffer(), g_dump.capacity());
  // Every rank agrees on whether a profile can be written before anybody gathers. All of it on
  // invmw's own communicator: whatever the application left unfinished on its communicators
  // (a failed collective's messages) cannot be taken for a rank's data.
  int ok = g.output_dir.empty() ? 0 : 1, all_ok = 0;
  if (PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g.comm) != MPI_SUCCESS) all_ok = 0;
  uint64_t refused = g_outputs_refused.load(), all_refused = refused;
  if (PMPI_Reduce(&refused, &all_refused, 1, MPI_UINT64_T, MPI_SUM, 0, g.comm) != MPI_SUCCESS)
    all_refused = refused;
  if (all_ok && g.cfg.PROFILE_ENABLE) {
    bool merged = false;
    if (g.cfg.PROFILE_MERGE == "tree") {
      merged = MergeProfileInTree(n, &all_refused);
    } else if (g.cfg.PROFILE_MERGE != "gather" && g.rank == 0) {
      Warn("INVMW_PROFILE_MERGE=" + g.cfg.PROFILE_MERGE +
           ": expected tree or gather; using gather");
    }
    if (!merged) GatherProfile(n, &all_refused);
  }
  // The trace: every rank has drained its rings (TraceFinalize). By default every rank writes
  // its own locations (trace_parallel.h); rank 0 converts everything itself when asked to
  // (INVMW_TRACE_WRITER=serial) or when the parallel writing fails on any rank.
  if (g.trace_on) {
    PMPI_Barrier(g.comm);
    enum : int { kRefused = 0, kSerial = 1, kParallel = 2 };
    int how = kSerial;
    if (g.rank == 0) {
      // The archive's names must be free: the OTF2 library would write through a link there.
      std::string taken;
      struct stat st;
      for (const char* name : {"traces.otf2", "traces.def", "traces"})
        if (lstat((g.output_dir + "/" + name).c_str(), &st) == 0) taken = g.output_dir + "/" + name;
      if (!taken.empty()) {
        OutputExists(taken.c_str());
        ++all_refused;
        how = kRefused;
      } else if (g.cfg.TRACE_WRITER == "serial") {
        how = kSerial;
      } else {
        if (g.cfg.TRACE_WRITER != "parallel")
          Warn("INVMW_TRACE_WRITER=" + g.cfg.TRACE_WRITER +
               ": expected parallel or serial; using parallel");
        how = kParallel;
      }
    }
    // Every rank must choose the same way: a rank that missed rank 0's choice makes all of
    // them leave the writing to rank 0.
    const bool told = PMPI_Bcast(&how, 1, MPI_INT, 0, g.comm) == MPI_SUCCESS;
    int mine = told ? how : kSerial, agreed = kSerial;
    if (PMPI_Allreduce(&mine, &agreed, 1, MPI_INT, MPI_MIN, g.comm) != MPI_SUCCESS)
      agreed = kSerial;
    if (g.rank == 0 && how == kRefused) agreed = kRefused;
    auto report = [](const otf2::ConvertResult& r, const std::string& by) {
      for (const auto& p : r.problems) Warn("trace: " + p);
      if (!r.archive.empty() && !g.cfg.RUNTIME_QUIET) {
        std::fprintf(stderr, "invmw: trace written to %s (%llu events%s)\n", r.archive.c_str(),
                     (unsigned long long)r.events_out, by.c_str());
        if (const uint64_t raw = RawEventBytes(g.output_dir); raw > 0)
          std::fprintf(stderr,
                       "invmw: note: the raw trace it was built from stays in %s/raw "
                       "(%.1f %s of events-*.bin, for `invmw trace recover`); the archive "
                       "does not need it: rm %s/raw/events-*.bin\n",
                       g.output_dir.c_str(), raw >= 1000000 ? double(raw) / 1e6 : double(raw) / 1e3,
                       raw >= 1000000 ? "MB" : "kB", g.output_dir.c_str());
      }
    };
    bool written = false;
    if (agreed == kParallel) {
      otf2::ParallelResult pr;
      try {  // nothing may escape into the application's MPI_Finalize
        pr = WriteTraceInParallel(g.comm, g.output_dir, int(g.cfg.TRACE_TEST_PARALLEL_FAIL));
      } catch (const std::exception& e) {
        pr.ok = false;
        pr.error = std::string("rank ") + std::to_string(g.rank) + ": " + e.what();
      } catch (...) {
        pr.ok = false;
        pr.error = "rank " + std::to_string(g.rank) + ": unexpected failure";
      }
      if (g.rank == 0 && pr.ok) {
        report(pr.result, ", written by " + std::to_string(g.world_size) + " ranks in parallel");
        written = true;
      } else if (g.rank == 0) {
        Warn("trace: writing in parallel failed (" + pr.error +
             "); rank 0 converts the raw files instead");
      }
    }
    // The converter reports unreadable input by throwing; the application's MPI_Finalize
    // must return normally whatever happens here (`invmw trace recover` can retry).
    if (g.rank == 0 && agreed != kRefused && !written) {
      try {
        report(otf2::ConvertToOtf2(g.output_dir), "");
      } catch (const std::exception& e) {
        Warn(std::string("trace not converted: ") + e.what());
      } catch (...) {
        Warn("trace not converted: unexpected failure");
      }
    }
  }
  // The raw dump also stays on disk: later tools (trace recovery) read it.
  if (g_dump.has_file()) {
    if (!g_dump.Write(n))
      g.errors.fetch_add(1);
    else
      DropLiveCounters();
    g_dump.Close();
  }
  if (g.rank == 0) WarnAtEnd(all_refused);
  PMPI_Comm_free(&g.comm);
  g.finalized = true;
}

void OnAbort() {
  if (g.cfg.PROFILE_RAW_ON_SIGNAL) SaveRawDump(raw::kEndAbort, 0);
}

namespace {
// Not an __attribute__((constructor)): those may run before this library's C++ objects (g, its
// strings) are constructed. A static object defined after them in this file runs after them.
struct NonMpiStarter {
  NonMpiStarter() { StartNonMpi(); }
} g_nonmpi_starter;
}  // namespace

}  // namespace invmw::wrap
