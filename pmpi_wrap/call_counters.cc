#include "pmpi_wrap/call_counters.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstring>

namespace invmw::wrap {
namespace {

struct EventSpec {
  const char* name;  // as named in INVMW_SAMPLER_PAPI
  uint32_t type;
  uint64_t config;
  const char* metric;
  const char* unit;
};
const EventSpec kHardware[] = {
    {"PAPI_TOT_INS", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "counters.PAPI_TOT_INS",
     "instructions"},
    {"PAPI_TOT_CYC", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "counters.PAPI_TOT_CYC",
     "cycles"},
    {"PAPI_REF_CYC", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, "counters.PAPI_REF_CYC",
     "cycles"},
    {"PAPI_BR_INS", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "counters.PAPI_BR_INS",
     "count"},
    {"PAPI_BR_MSP", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "counters.PAPI_BR_MSP",
     "count"},
};
// Same metric names as the sampler's software fallback, so both series line up.
const EventSpec kSoftware[] = {
    {"perf::TASK-CLOCK", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "counters.task_clock", "ns"},
    {"perf::PAGE-FAULTS", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "counters.page_faults",
     "count"},
    {"perf::CONTEXT-SWITCHES", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
     "counters.context_switches", "count"},
};

std::vector<const EventSpec*> g_chosen;
bool g_exclude_kernel = false;

int OpenOne(const EventSpec& e, int group, bool exclude_kernel) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = e.type;
  attr.config = e.config;
  attr.read_format = PERF_FORMAT_GROUP;
  attr.exclude_kernel = exclude_kernel;
  attr.exclude_hv = 1;
  return int(
      syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1, group, PERF_FLAG_FD_CLOEXEC));
}

// Opens the events as one group; closes everything and returns -1 when any fails. The member
// fds go to *fds when given (to close a probe), else stay open for the thread's life: closing
// them would remove them from the group.
int OpenGroup(const std::vector<const EventSpec*>& events, bool exclude_kernel,
              std::vector<int>* out_fds = nullptr) {
  int leader = -1;
  std::vector<int> fds;
  for (const EventSpec* e : events) {
    const int fd = OpenOne(*e, leader, exclude_kernel);
    if (fd < 0) {
      for (int f : fds) close(f);
      return -1;
    }
    if (leader < 0) leader = fd;
    fds.push_back(fd);
  }
  if (out_fds) *out_fds = fds;
  return leader;
}

}  // namespace

bool ChooseCallCounters(const std::vector<std::string>& wanted, CallCounterChoice* choice) {
  std::vector<std::string> unknown, refused;
  std::vector<const EventSpec*> hw;
  for (const std::string& w : wanted) {
    const EventSpec* found = nullptr;
    for (const EventSpec& e : kHardware)
      if (w == e.name) found = &e;
    for (const EventSpec& e : kSoftware)
      if (w == e.name) found = &e;
    if (!found) {
      unknown.push_back(w);
      continue;
    }
    if (hw.size() >= size_t(kMaxCallCounters)) continue;
    // Try alone first (all modes, then user mode only for unprivileged users).
    int fd = OpenOne(*found, -1, false);
    bool ex = false;
    if (fd < 0) fd = OpenOne(*found, -1, ex = true);
    if (fd < 0) {
      refused.push_back(w);
      continue;
    }
    close(fd);
    g_exclude_kernel = g_exclude_kernel || ex;
    hw.push_back(found);
  }
  std::string note;
  if (!unknown.empty()) {
    note = "per-call counters: ";
    for (size_t i = 0; i < unknown.size(); ++i) note += (i ? "," : "") + unknown[i];
    note +=
        " not countable per call (known: PAPI_TOT_INS, PAPI_TOT_CYC, PAPI_REF_CYC, "
        "PAPI_BR_INS, PAPI_BR_MSP and the perf:: software events)";
  }
  std::vector<int> probe;
  auto close_probe = [&] {
    for (int f : probe) close(f);
    probe.clear();
  };
  const bool hw_ok = !hw.empty() && OpenGroup(hw, g_exclude_kernel, &probe) >= 0;
  close_probe();
  if (!hw_ok) {
    hw.clear();
    for (const EventSpec& e : kSoftware) hw.push_back(&e);
    g_exclude_kernel = false;
    int fd = OpenGroup(hw, false, &probe);
    if (fd < 0) fd = OpenGroup(hw, g_exclude_kernel = true, &probe);
    close_probe();
    if (fd < 0) {
      choice->note = "per-call counters: perf_event_open failed (" +
                     std::string(std::strerror(errno)) + "); INVMW_TRACE_COUNTERS ignored";
      return false;
    }
    if (!note.empty()) note += "; ";
    note +=
        "per-call counters: no hardware counters here; counting the kernel's task clock, "
        "page faults and context switches at MPI call entry and exit instead";
  }
  g_chosen = hw;
  choice->names.clear();
  choice->units.clear();
  for (const EventSpec* e : g_chosen) {
    choice->names.push_back(e->metric);
    choice->units.push_back(e->unit);
  }
  choice->note = note;
  return true;
}

int OpenCallCounters() {
  if (g_chosen.empty()) return -1;
  return OpenGroup(g_chosen, g_exclude_kernel);
}

int CallCounterCount() {
  return int(g_chosen.size());
}

}  // namespace invmw::wrap
