// Start-up, output and shut-down of a PVM task under the preload (see task_state.h).
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <pvm3.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/clock.h"
#include "common/run_dir.h"
#include "invmw_version.h"
#include "pvm_wrap/clock_sync.h"
#include "pvm_wrap/static_pvm.h"
#include "pvm_wrap/task_state.h"
#include "recording/defs_writer.h"
#include "recording/io.h"
#include "recording/raw_file.h"
#include "recording/signals.h"
#include "recording/trace_buffer.h"
#include "sampler/sampler.h"

namespace invmw::pvm {

TaskState g;
INVMW_PVM_TLS int tls_depth = 0;
INVMW_PVM_TLS bool tls_owner = false;

namespace {

void* g_real[kNumFuncs];
bool g_resolved[kNumFuncs];
clock::Anchor g_start_anchor;

// Holds the depth high while invmw itself makes PVM calls.
struct Internal {
  int saved = tls_depth;
  Internal() { tls_depth = 1000; }
  ~Internal() { tls_depth = saved; }
};

using recording::MakeDirs;

// The task's description file (task-<tid>.jsonl), its raw dump (task-<tid>.bin, written as
// .bin.tmp and renamed at the end) and its trace ring (task-<tid>-events.bin), through the
// recording core as in an MPI rank.
recording::DefsWriter g_defs;
recording::RawFile g_dump;
recording::RingOptions g_ring_options;
recording::TraceBuffer* g_ring = nullptr;

void DefsLine(const char* line) {
  g_defs.Line(line);
}

std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      o += ' ';
    else
      o += c;
  }
  return o + "\"";
}

std::string ProgramPath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = 0;
  return buf;
}

std::string Basename(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

void OnSignal(int sig) {
  FinishTask(raw::kEndSignal, sig);
}

void OnExit() {
  FinishTask(raw::kEndExit, 0);
}

// A child the application forks is not the task: it records nothing and writes nothing (its
// exit would overwrite the task's files), and has no trace writer thread to stop.
void OnForkChild() {
  if (g.state == State::kActive) g.state = State::kEnded;
}

void WriteFunctionsLine() {
  std::string names, kinds, classes;
  for (int i = 0; i < kNumFuncs; ++i) {
    const char* sep = i ? "," : "";
    names += sep + JsonString(kFuncNames[i]);
    kinds += sep + JsonString(kFuncKinds[i]);
    classes += sep + JsonString(kFuncClasses[i]);
  }
  std::string line = "{\"type\":\"functions\",\"names\":[" + names + "],\"kinds\":[" + kinds +
                     "],\"classes\":[" + classes + "]}";
  DefsLine(line.c_str());
}

bool IsSkipped(const std::string& prog) {
  for (const auto& s : g.cfg.PVM_SKIP_PROGRAMS)
    if (s == prog) return true;
  return false;
}

bool LibpvmLoaded() {
  return dl_iterate_phdr(
             [](dl_phdr_info* info, size_t, void*) {
               return info->dlpi_name && std::strstr(info->dlpi_name, "libpvm3") ? 1 : 0;
             },
             nullptr) != 0;
}

// A program with libpvm3 linked in statically carries its strings but loads no libpvm3.so:
// its PVM calls never reach our symbols.
bool StaticallyLinkedPvm() {
  return HasStaticPvm("/proc/self/exe");
}

// The task's event file and ring, and the writer thread that drains it (as in an MPI rank:
// the recorded call only stores a record; no I/O inside PVM calls unless the ring fills).
void StartTrace() {
  const std::string path = g.prefix + "-events.bin";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  trace::EventFileHeader h{};
  h.magic = trace::kEventMagic;
  h.version = trace::kEventVersion;
  h.header_size = sizeof h;
  h.record_size = sizeof(trace::EventRecord);
  h.rank = -1;  // set at the merge, when ranks are known
  if (!recording::WriteAll(fd, &h, sizeof h)) ++g.errors;
  g_ring_options.flush_on_full = g.cfg.TRACE_ON_FULL != "stop";
  g_ring_options.now = [] { return clock::Ticks(); };
  g_ring_options.errors = &g.errors;
  if (!g.cfg.TRACE_TEST_NO_WRITER)
    recording::StartTraceWriter(g.cfg.TRACE_DRAIN_INTERVAL > 0 ? g.cfg.TRACE_DRAIN_INTERVAL : 0.02);
  const uint64_t cap = g.cfg.TRACE_BUFFER / sizeof(trace::EventRecord);
  g_ring =
      new recording::TraceBuffer(uint32_t(std::min<uint64_t>(cap, 1u << 30)), fd, &g_ring_options);
  recording::RegisterTraceBuffer(g_ring);
  g.trace_on = true;
}

}  // namespace

void WarnOnce(const std::string& msg) {
  std::fprintf(stderr, "invmw: warning: %s\n", msg.c_str());
}

void* RealByName(const char* name) {
  return dlsym(RTLD_NEXT, name);
}

void* Real(FuncId f) {
  if (__builtin_expect(g_resolved[f], 1)) return g_real[f];
  g_real[f] = dlsym(RTLD_NEXT, kFuncNames[f]);
  g_resolved[f] = true;
  return g_real[f];
}

int PvmgsTid() {
  if (g.pvmgs_tid || g.pvmgs_looked_up) return g.pvmgs_tid;
  g.pvmgs_looked_up = true;
  auto tasks = reinterpret_cast<int (*)(int, int*, struct pvmtaskinfo**)>(RealByName("pvm_tasks"));
  if (!tasks) return 0;
  Internal guard;
  int n = 0;
  struct pvmtaskinfo* ti = nullptr;
  if (tasks(0, &n, &ti) < 0) return 0;
  for (int i = 0; i < n; ++i)
    if (ti[i].ti_a_out && Basename(ti[i].ti_a_out) == "pvmgs") g.pvmgs_tid = ti[i].ti_tid;
  return g.pvmgs_tid;
}

bool Activate() {
  if (g.state != State::kUnset) return g.state == State::kActive;
  g.state = State::kPassive;  // until proven otherwise; also stops recursion
  Internal guard;
  g.cfg = config::Load();
  if (!g.cfg.WRAP_ENABLE || IsSkipped(Basename(ProgramPath()))) return false;
  auto mytid = reinterpret_cast<int (*)()>(RealByName("pvm_mytid"));
  auto parent = reinterpret_cast<int (*)()>(RealByName("pvm_parent"));
  if (!mytid || !parent) return false;
  g_start_anchor = clock::TakeAnchor();
  g.init_ticks = clock::Ticks();
  g.init_realtime_ns = clock::RealtimeNs();
  g.tid = mytid();
  if (g.tid <= 0) return false;  // no daemon: the application sees the same error itself
  g.parent = parent();
  if (g.parent < 0) g.parent = 0;

  g.dir = g.cfg.OUTPUT_DIR;
  if (g.dir.empty()) {
    // The first task of a plain LD_PRELOAD run chooses the directory; its children get it
    // through PVM_EXPORT at spawn (spawn_export.cc).
    char cwd[4096];
    g.dir = (getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" : "") + DefaultRunDirName();
    setenv("INVMW_OUTPUT_DIR", g.dir.c_str(), 1);
  }
  if (!MakeDirs(g.dir + "/raw/pvm")) {
    WarnOnce("cannot create " + g.dir + "/raw/pvm: " + std::strerror(errno) +
             "; this PVM task is not recorded");
    return false;
  }
  char name[64];
  std::snprintf(name, sizeof name, "/raw/pvm/task-%08x", unsigned(g.tid));
  g.prefix = g.dir + name;
  g_defs.Attach(
      open((g.prefix + ".jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644),
      &g.errors);
  if (!g_defs.open()) ++g.errors;
  gethostname(g.host, sizeof g.host - 1);
  for (int i = 0; i < kNumFuncs; ++i)
    g.collects[i] =
        std::strcmp(kFuncClasses[i], "group") == 0 || std::strcmp(kFuncClasses[i], "barrier") == 0;

  g_dump.Allocate(sizeof(raw::RankHeader) + (kNumFuncs + 1) * sizeof(raw::FuncRecord));
  const std::string tmp = g.prefix + ".bin.tmp";
  g_dump.Attach(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), tmp,
                g.prefix + ".bin");
  if (g.cfg.TRACE_ENABLE) StartTrace();

  char line[1024];
  std::snprintf(line, sizeof line,
                "{\"type\":\"task\",\"tid\":%d,\"parent\":%d,\"host\":%s,\"pid\":%d,"
                "\"program\":%s,\"init_ticks\":%llu,\"init_realtime_ns\":%lld,"
                "\"trace\":%s,\"invmw_version\":%s}",
                g.tid, g.parent, JsonString(g.host).c_str(), int(getpid()),
                JsonString(ProgramPath()).c_str(), (unsigned long long)g.init_ticks,
                (long long)g.init_realtime_ns, g.trace_on ? "true" : "false",
                JsonString(INVMW_VERSION).c_str());
  DefsLine(line);
  WriteFunctionsLine();
  DefsLine("{\"type\":\"thread\",\"index\":0,\"location\":\"main\"}");

  // A spawned task measures its clock against its parent, which waits in pvm_spawn.
  if (const char* ctx = std::getenv("INVMW_PVM_SYNC_CONTEXT"); ctx && *ctx && g.parent > 0) {
    unsetenv("INVMW_PVM_SYNC_CONTEXT");  // it belongs to this task's own spawn, not its children's
    ClockOffset off = SyncWithParent(g.parent, std::atoi(ctx), int(g.cfg.PVM_SYNC_ROUNDS),
                                     g.cfg.PVM_SYNC_TIMEOUT);
    if (off.ok) {
      std::snprintf(line, sizeof line,
                    "{\"type\":\"clock\",\"phase\":\"init\",\"ticks\":%llu,\"offset_ticks\":%.1f,"
                    "\"uncertainty_ticks\":%.1f,\"relative_to_tid\":%d}",
                    (unsigned long long)off.ticks, off.offset_ticks, off.uncertainty_ticks,
                    g.parent);
      DefsLine(line);
    } else {
      DefsLine(
          "{\"type\":\"note\",\"text\":\"clock offset to the parent not measured (timeout)\"}");
    }
  }

  // The sampler runs in every observed task, as in MPI ranks. Ranks are known only at the merge,
  // so each task samples as "rank 0" into its own directory and the merge renumbers the files.
  // One host per run is assumed for node-wide sources: the first task samples them.
  if (g.cfg.SAMPLER_ENABLE) {
    sampler::StartOptions o;
    o.run_dir = g.prefix + ".sampler";
    o.node_leader = g.parent == 0;
    o.host = g.host;
    o.config = &g.cfg;
    o.warn = [](const std::string& m) {
      if (g.parent == 0) WarnOnce("sampler: " + m);
    };
    o.note = [](const std::string& m) {
      if (g.parent == 0 && !g.cfg.RUNTIME_QUIET)
        std::fprintf(stderr, "invmw: note: sampler: %s\n", m.c_str());
    };
    std::string err;
    if (!MakeDirs(o.run_dir + "/raw") || !sampler::Start(o, &err))
      WarnOnce("sampler not started in task t" + std::to_string(g.tid) + ": " + err);
  }

  if (g.cfg.PROFILE_RAW_ON_SIGNAL) recording::InstallSignalHandlers(OnSignal);
  std::atexit(OnExit);
  pthread_atfork(nullptr, nullptr, OnForkChild);
  tls_owner = true;
  g.state = State::kActive;
  return true;
}

void PushEvent(const trace::EventRecord& r) {
  g_ring->Push(r);
}

void AppendDefs(const std::string& line) {
  DefsLine(line.c_str());
}

void FinishTask(uint32_t reason, int signal) {
  if (g.state != State::kActive) return;
  g.state = State::kEnded;
  // Not from a signal handler: Stop joins a thread and writes files.
  if (reason != raw::kEndSignal) sampler::Stop();
  const uint64_t end_ticks = clock::Ticks();
  double tps = clock::TicksPerSecond(g_start_anchor, clock::TakeAnchor());
  if (tps <= 0) tps = clock::CalibrateTicksPerSecond();
  g.ticks_per_second = tps;

  if (g.trace_on) {
    if (reason == raw::kEndSignal)
      recording::DrainAllTraceBuffers(true);
    else
      recording::StopTraceWriter();  // with a last drain
  }

  // The raw dump: rank and world size are filled in by the merge.
  raw::RankHeader h{};
  h.magic = raw::kMagic;
  h.version = raw::kVersion;
  h.header_size = sizeof h;
  h.record_size = sizeof(raw::FuncRecord);
  h.rank = -1;
  h.pid = int32_t(getpid());
  h.flags = (reason == raw::kEndFinalize ? 0u : uint32_t(raw::kFlagIncomplete)) |
            (g.trace_on ? uint32_t(raw::kFlagTraceOn) : 0u);
  h.end_reason = reason;
  h.end_signal = signal;
  h.num_threads = 1;
  h.dropped_threads = g.dropped_threads;
  h.errors = g.errors.load();
  h.ticks_per_second = tps;
  h.init_ticks = g.init_ticks;
  h.end_ticks = end_ticks;
  h.init_realtime_ns = g.init_realtime_ns;
  h.wall_s = double(end_ticks - g.init_ticks) / tps;
  std::snprintf(h.host, sizeof h.host, "%s", g.host);
  std::snprintf(h.mpi_library, sizeof h.mpi_library, "PVM 3 (libpvm3, symbol interposition)");
  std::snprintf(h.invmw_version, sizeof h.invmw_version, "%s", INVMW_VERSION);
  std::snprintf(h.mpi_flavor, sizeof h.mpi_flavor, "pvm");
  size_t off = sizeof h;
  auto add = [&](const char* name, const FuncStats& s) {
    if (!s.calls || !g_dump.buffer() || off + sizeof(raw::FuncRecord) > g_dump.capacity()) return;
    raw::FuncRecord r{};
    std::snprintf(r.name, sizeof r.name, "%s", name);
    r.calls = s.calls;
    r.ticks = s.ticks;
    r.bytes_sent = s.bytes_sent;
    r.bytes_recv = s.bytes_recv;
    r.max_ticks = s.max_ticks;
    std::memcpy(r.hist, s.hist, sizeof r.hist);
    std::memcpy(g_dump.buffer() + off, &r, sizeof r);
    off += sizeof r;
    ++h.num_funcs;
  };
  for (int i = 0; i < kNumFuncs; ++i) add(kFuncNames[i], g.stats[i]);
  add("pvmgs", g.pvmgs);
  // Written under a temporary name and renamed after the end line: the merge takes a present
  // dump as complete.
  if (g_dump.buffer()) {
    std::memcpy(g_dump.buffer(), &h, sizeof h);
    g_dump.Write(off);
  }

  static const char* const kReasons[] = {"finalize", "exit_without_finalize", "abort", "signal",
                                         "running"};
  char line[512];
  int n = std::snprintf(line, sizeof line,
                        "{\"type\":\"end\",\"reason\":\"%s\",\"signal\":%d,\"end_ticks\":%llu,"
                        "\"ticks_per_second\":%.3f,\"dropped_events\":%llu,\"flushes\":%llu,"
                        "\"dropped_parts\":%llu,\"pvmgs_tid\":%d}\n",
                        kReasons[reason < 5 ? reason : 4], signal, (unsigned long long)end_ticks,
                        tps, (unsigned long long)recording::TotalDroppedEvents(),
                        (unsigned long long)recording::TotalFlushes(),
                        (unsigned long long)g.dropped_parts, g.pvmgs_tid);
  if (n > 0 && size_t(n) < sizeof line) g_defs.LineFromSignal(line, size_t(n));
  g_dump.Commit();
  g_dump.Close();
}

// At load: nothing is resolved for programs without PVM. A spawned task (its parent exported
// INVMW_PVM_SYNC_CONTEXT) enrols at once, so its parent, waiting in pvm_spawn, is answered
// without delay; the first task enrols at its first PVM call.
void OnLoad() {
  if (LibpvmLoaded()) {
    if (const char* ctx = std::getenv("INVMW_PVM_SYNC_CONTEXT"); ctx && *ctx) Activate();
    return;
  }
  if (StaticallyLinkedPvm()) {
    std::string prog = ProgramPath();
    WarnOnce(prog +
             " has the PVM library linked in statically: its PVM calls cannot be interposed "
             "and are not recorded (link it with -lpvm3, the shared library)");
    if (const char* dir = std::getenv("INVMW_OUTPUT_DIR");
        dir && *dir && MakeDirs(std::string(dir) + "/raw/pvm")) {
      std::string path = std::string(dir) + "/raw/pvm/static-" + std::to_string(getpid()) + ".txt";
      if (FILE* f = std::fopen(path.c_str(), "w")) {
        std::fprintf(f, "%s\n", prog.c_str());
        std::fclose(f);
      }
    }
  }
}

// Runs at load, after the state above is constructed (dynamic initialisation follows the order
// of definition within a file; a constructor attribute would not wait for it).
const bool g_loaded = (OnLoad(), true);

}  // namespace invmw::pvm
