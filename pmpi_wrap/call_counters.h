// Counter values at MPI call entry and exit (INVMW_TRACE_COUNTERS=1), written to the trace as
// synchronous metrics next to each call's Enter and Leave.
//
// Why perf_event_open and not PAPI here: a counter set belongs to the thread that opens it, so
// each MPI-calling thread opens its own group on its first call and reads it in-thread with
// one read(2) of the whole group (PERF_FORMAT_GROUP) - no PAPI thread registration, no locks.
// The sampler keeps using PAPI for its periodic reads.
//
// Event choice: the INVMW_SAMPLER_PAPI names that map onto the kernel's generic hardware events
// (PAPI_TOT_INS, PAPI_TOT_CYC, PAPI_REF_CYC, PAPI_BR_INS, PAPI_BR_MSP), decided once at init
// by trying to open each; when none opens (virtual machines), the kernel's software events
// (task clock, page faults, context switches). At most kMaxCallCounters events.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace invmw::wrap {

constexpr int kMaxCallCounters = 3;

struct CallCounterChoice {
  std::vector<std::string> names;  // metric names, e.g. "counters.PAPI_TOT_INS"
  std::vector<std::string> units;
  std::string note;  // one line for the user when the fallback was taken or events dropped
};

// Tries the wanted events on the calling thread; fills *choice. False: nothing can be counted
// (choice->note says why).
bool ChooseCallCounters(const std::vector<std::string>& wanted, CallCounterChoice* choice);

// Opens the chosen group for the calling thread: the leader's fd, or -1.
int OpenCallCounters();

// One read of the group: n values into v (left untouched when the read fails).
inline void ReadCallCounters(int fd, int n, uint64_t* v) {
  uint64_t buf[1 + kMaxCallCounters];
  if (read(fd, buf, sizeof(uint64_t) * size_t(1 + n)) == ssize_t(sizeof(uint64_t) * (1 + n)))
    for (int i = 0; i < n && i < int(buf[0]); ++i) v[i] = buf[1 + i];
}

int CallCounterCount();

}  // namespace invmw::wrap
