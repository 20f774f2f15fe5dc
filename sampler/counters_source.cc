// The counters source: hardware counters through PAPI, counting the application's main thread
// (and threads it creates later), read from the sampler thread.
//
// Why attach instead of reading in-thread: the sampler must not run code on the application's
// threads. A PAPI event set attached to the main thread's tid (PAPI_attach, perf_event
// underneath) can be read from any thread; with inheritance, threads the main thread creates
// afterwards are counted too.
//
// Availability is decided by trying to add each requested event (the reported number of
// counters is unreliable in virtual machines). When none can be added, the kernel's software
// events stand in: first through PAPI's perf_event component (perf::TASK-CLOCK, ...), and when
// that component is disabled too (libpfm4 finds no PMU at all on some VMs), directly through
// perf_event_open. The choice is reported once as a note.
#include <linux/perf_event.h>
#include <papi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iterator>

#include "sampler/sources_builtin.h"

namespace invmw::sampler {
namespace {

struct SoftEvent {
  const char* papi_name;
  uint64_t perf_config;
  const char* metric;
  const char* unit;
  const char* description;
};
const SoftEvent kSoftEvents[] = {
    {"perf::TASK-CLOCK", PERF_COUNT_SW_TASK_CLOCK, "counters.task_clock", "ns",
     "CPU time of the application's threads (kernel software event)"},
    {"perf::PAGE-FAULTS", PERF_COUNT_SW_PAGE_FAULTS, "counters.page_faults", "count",
     "page faults of the application's threads (kernel software event)"},
    {"perf::CONTEXT-SWITCHES", PERF_COUNT_SW_CONTEXT_SWITCHES, "counters.context_switches", "count",
     "context switches of the application's threads (kernel software event)"},
};

// PAPI_library_init's result when PrepareCountersSource ran it (0: it did not run).
//
// Why it runs there, on the application's thread inside Start (MPI_Init), and not with the rest
// of Open on the sampler thread: PAPI's start-up (PAPI 7.0, _linux_update_shlib_info) reads
// /proc/self/maps twice, counting the executable file mappings in the first pass, sizing an array
// by that count and filling it in the second pass without a bound. A library the application
// maps in between (Open MPI loads its topo components at the first MPI_Cart_create) makes PAPI
// write past that array, about 1 KB per extra mapping, into the sampler thread's heap: Debian's
// LAMMPS then aborted with "malloc(): corrupted top size" in a few runs of a hundred. Inside
// Start the application is blocked in MPI_Init and maps nothing. Costs 2-5 ms of MPI_Init on a
// core of its own here (about 13 ms more invmw:init per rank, median, with 2-7 ranks on 2 cores).
std::atomic<int> g_papi_prepared{0};

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

class CountersSource : public Source {
 public:
  ~CountersSource() override {
    for (auto& set : sets_) {
      long long dummy[64];
      PAPI_stop(set.es, dummy);
      PAPI_cleanup_eventset(set.es);
      PAPI_destroy_eventset(&set.es);
    }
    for (int fd : perf_fds_) close(fd);
  }

  bool Open(const SourceContext& ctx, std::vector<MetricDef>* m, std::string* why) override {
    const std::vector<std::string>& wanted = ctx.cfg->SAMPLER_PAPI;
    if (wanted.empty()) return false;
    tid_ = ctx.main_tid;
    std::string papi_problem;
    const bool papi = InitPapi(&papi_problem);
    if (papi) {
      // User and kernel counts as separate sets; a kernel that refuses the split gets one set.
      bool any = AddSet(wanted, PAPI_DOM_USER, ".user", "user mode", m);
      any = AddSet(wanted, PAPI_DOM_KERNEL, ".kernel", "kernel mode", m) || any;
      if (!any) any = AddSet(wanted, PAPI_DOM_ALL, "", "all modes", m);
      if (any) return true;
    }
    std::string note = "hardware counters " + Join(wanted) + " are not available here" +
                       (papi_problem.empty() ? "" : " (" + papi_problem + ")") +
                       "; sampling the kernel's software events instead (task clock, page "
                       "faults, context switches)";
    if (papi && AddSoftPapiSet(m)) {
      if (ctx.notes) ctx.notes->push_back(note + " through PAPI");
      return true;
    }
    if (OpenPerfSoftware(m)) {
      if (ctx.notes) ctx.notes->push_back(note + " through perf_event_open");
      return true;
    }
    *why = "no hardware counters and no kernel software events (perf_event_open: " +
           std::string(std::strerror(perf_errno_)) + ")";
    return false;
  }

  void Read(double* v) override {
    size_t k = 0;
    for (auto& set : sets_) {
      long long vals[64];
      const bool ok = PAPI_read(set.es, vals) == PAPI_OK;
      for (size_t i = 0; i < set.n; ++i, ++k)
        if (ok) v[k] = double(vals[i]);
    }
    if (perf_group_ && !perf_fds_.empty()) {
      uint64_t x[1 + std::size(kSoftEvents)];  // nr, then the values in opening order
      const ssize_t want = ssize_t(sizeof(uint64_t) * (1 + perf_fds_.size()));
      if (read(perf_fds_[0], x, sizeof x) == want)
        for (size_t i = 0; i < perf_fds_.size(); ++i) v[k + i] = double(x[1 + i]);
      return;
    }
    for (int fd : perf_fds_) {
      uint64_t x;
      if (read(fd, &x, sizeof x) == ssize_t(sizeof x)) v[k] = double(x);
      ++k;
    }
  }

 private:
  struct Set {
    int es = PAPI_NULL;
    size_t n = 0;
  };

  bool InitPapi(std::string* problem) {
    if (PAPI_is_initialized() == PAPI_NOT_INITED) {
      // Not again after a failed PrepareCountersSource: here it would race with the application.
      // Without one (a Source opened directly, as in unit tests) nothing else runs yet.
      const int prepared = g_papi_prepared.load();
      const int v = prepared != 0 ? prepared : PAPI_library_init(PAPI_VER_CURRENT);
      if (v != PAPI_VER_CURRENT) {
        *problem = v > 0 ? "PAPI version mismatch" : std::string("PAPI: ") + PAPI_strerror(v);
        return false;
      }
    }
    const PAPI_component_info_t* ci = PAPI_get_component_info(0);
    if (ci && ci->disabled) *problem = std::string(ci->name) + ": " + ci->disabled_reason;
    return true;
  }

  // A PAPI event set attached to the main thread in one domain. True if any event was added.
  bool NewSet(int domain, int* es) {
    *es = PAPI_NULL;
    if (PAPI_create_eventset(es) != PAPI_OK) return false;
    PAPI_option_t opt;
    std::memset(&opt, 0, sizeof opt);
    if (PAPI_assign_eventset_component(*es, 0) != PAPI_OK ||
        PAPI_attach(*es, unsigned(tid_)) != PAPI_OK) {
      PAPI_destroy_eventset(es);
      return false;
    }
    opt.domain.eventset = *es;
    opt.domain.domain = domain;
    if (PAPI_set_opt(PAPI_DOMAIN, &opt) != PAPI_OK) {
      PAPI_cleanup_eventset(*es);
      PAPI_destroy_eventset(es);
      return false;
    }
    std::memset(&opt, 0, sizeof opt);
    opt.inherit.eventset = *es;
    opt.inherit.inherit = PAPI_INHERIT_ALL;
    PAPI_set_opt(PAPI_INHERIT, &opt);  // best effort: without it only the main thread counts
    return true;
  }

  bool Finish(int es, size_t n) {
    if (n == 0 || n > 64 || PAPI_start(es) != PAPI_OK) {
      PAPI_cleanup_eventset(es);
      PAPI_destroy_eventset(&es);
      return false;
    }
    sets_.push_back({es, n});
    return true;
  }

  bool AddSet(const std::vector<std::string>& names, int domain, const char* suffix,
              const char* mode, std::vector<MetricDef>* m) {
    int es;
    if (!NewSet(domain, &es)) return false;
    std::vector<MetricDef> added;
    for (const auto& name : names) {
      int code;
      if (PAPI_event_name_to_code(name.c_str(), &code) != PAPI_OK) continue;
      if (PAPI_add_event(es, code) != PAPI_OK) continue;
      added.push_back({"counters." + name + suffix, "count", true, name + " in " + mode});
    }
    if (!Finish(es, added.size())) return false;
    m->insert(m->end(), added.begin(), added.end());
    return true;
  }

  bool AddSoftPapiSet(std::vector<MetricDef>* m) {
    int es;
    if (!NewSet(PAPI_DOM_ALL, &es)) return false;
    std::vector<MetricDef> added;
    for (const SoftEvent& e : kSoftEvents) {
      int code;
      if (PAPI_event_name_to_code(e.papi_name, &code) != PAPI_OK) continue;
      if (PAPI_add_event(es, code) != PAPI_OK) continue;
      added.push_back({e.metric, e.unit, true, e.description});
    }
    if (!Finish(es, added.size())) return false;
    m->insert(m->end(), added.begin(), added.end());
    return true;
  }

  // As one group when the kernel allows it (one read per sample instead of one per event:
  // system calls cost over 1 us each on these VMs); kernels that refuse inherited group
  // reads get separate events, each kept if it opens.
  bool OpenPerfSoftware(std::vector<MetricDef>* m) {
    std::vector<const SoftEvent*> opened;
    for (bool group : {true, false}) {
      perf_group_ = group;
      for (const SoftEvent& e : kSoftEvents) {
        perf_event_attr attr;
        std::memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = e.perf_config;
        attr.inherit = 1;  // threads the main thread creates from now on are counted too
        if (group) attr.read_format = PERF_FORMAT_GROUP;
        const int leader = group && !perf_fds_.empty() ? perf_fds_[0] : -1;
        const int fd =
            int(syscall(SYS_perf_event_open, &attr, tid_, -1, leader, PERF_FLAG_FD_CLOEXEC));
        if (fd < 0) {
          perf_errno_ = errno;
          if (group) break;
          continue;
        }
        perf_fds_.push_back(fd);
        opened.push_back(&e);
      }
      if (!group || perf_fds_.size() == std::size(kSoftEvents)) break;
      for (int fd : perf_fds_) close(fd);
      perf_fds_.clear();
      opened.clear();
    }
    for (const SoftEvent* e : opened) m->push_back({e->metric, e->unit, true, e->description});
    return !perf_fds_.empty();
  }

  pid_t tid_ = 0;
  std::vector<Set> sets_;
  std::vector<int> perf_fds_;
  bool perf_group_ = false;  // perf_fds_[0] leads a group read with PERF_FORMAT_GROUP
  int perf_errno_ = 0;
};

}  // namespace

std::unique_ptr<Source> NewCountersSource() {
  return std::make_unique<CountersSource>();
}

void PrepareCountersSource(const SourceContext& ctx) {
  if (ctx.cfg && ctx.cfg->SAMPLER_PAPI.empty()) return;  // Open will not use PAPI
  if (PAPI_is_initialized() != PAPI_NOT_INITED || g_papi_prepared.load() != 0) return;
  g_papi_prepared.store(PAPI_library_init(PAPI_VER_CURRENT));
}

}  // namespace invmw::sampler
