// The sampler's tier schedule: which sources are read on which tick.
//
// Why tiers: a sample's cost is its system calls (docs/sampler.md, "Cost"). What changes fast
// and costs one cheap call (process CPU time and faults through getrusage) is read every tick;
// the counters too while their measured reading is cheap, else every N-th tick within a budget
// of their own (INVMW_SAMPLER_COUNTERS_BUDGET, MeasuredEvery); what costs opening-free but
// still parsed /proc or cgroup text (the process's memory and I/O, node CPU, network, disks,
// cgroup) is read every N-th tick, N chosen from the source's measured cost so that those
// sources together stay within a CPU budget (INVMW_SAMPLER_SLOW_BUDGET), at least once per
// INVMW_SAMPLER_SLOW_MAX, or as fixed by INVMW_SAMPLER_EVERY. Between its readings a source's
// values repeat their last reading; the first and the last sample read every source, so totals
// cover the whole run.
//
// Pure functions, so the schedule is tested without clocks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace invmw::sampler::tiers {

// N for a source whose reading costs cost_s seconds of CPU, when the slow sources (num_slow
// of them, sharing budget_s of CPU per second equally) are sampled at interval_s; at most
// max_every (a reading at least that often), at least 1. budget_s <= 0: every tick.
inline uint32_t ChooseEvery(double cost_s, double interval_s, double budget_s, size_t num_slow,
                            uint32_t max_every) {
  if (max_every < 1) max_every = 1;
  if (!(budget_s > 0) || !(interval_s > 0) || !(cost_s > 0) || num_slow == 0) return 1;
  // Each reading every N ticks costs cost_s / (N * interval_s) of a core.
  const double share = budget_s / double(num_slow);
  const double n = std::ceil(cost_s / (share * interval_s) - 1e-9);
  if (n <= 1) return 1;
  if (n >= double(max_every)) return max_every;
  return uint32_t(n);
}

// N for a source with a budget of its own (Tier::kMeasured, the counters; budget_s: CPU time per
// second, INVMW_SAMPLER_COUNTERS_BUDGET): every tick while a reading costs at most budget_s x
// interval_s (2.5 us at 10 ms with the default: a PERF_FORMAT_GROUP read on bare metal, 1-2 us),
// else the N that keeps it within the budget (a read of a thread running on another CPU is a
// cross-CPU call the reader waits for, 15-20 us in this VM), at most max_every.
inline uint32_t MeasuredEvery(double cost_s, double interval_s, double budget_s,
                              uint32_t max_every) {
  return ChooseEvery(cost_s, interval_s, budget_s, 1, max_every);
}

// Ticks between readings that INVMW_SAMPLER_SLOW_MAX allows at interval_s (at least 1).
inline uint32_t MaxEvery(double slow_max_s, double interval_s) {
  if (!(interval_s > 0) || !(slow_max_s > 0)) return 1;
  const double n = std::floor(slow_max_s / interval_s + 1e-9);
  return n < 1 ? 1 : n > 1e9 ? 1000000000u : uint32_t(n);
}

// Whether a source read every `every` ticks, with offset `phase`, is read on tick `tick`.
// Offsets spread the slow sources over the ticks, so that no tick pays for all of them.
inline bool Due(uint32_t every, uint32_t phase, uint64_t tick) {
  return every <= 1 || (tick + phase) % every == 0;
}

// The offset of the k-th slow source: consecutive sources land on consecutive ticks.
inline uint32_t Phase(size_t k, uint32_t every) {
  return every <= 1 ? 0 : uint32_t(k % every);
}

// The cost of one reading of a slow source, from its most recent readings (rdtsc around Read).
// Why the median of the last few and not the least: after a tick's sleep the caches are cold,
// and a typical reading cost twice the least of the first four here (node_cpu 16-20 us against
// 13), so N planned from the least let the slow sources take twice their budget. The median
// still ignores a reading that was preempted, and recent readings follow a cost that changes
// with the machine's load.
class CostEstimate {
 public:
  static constexpr size_t kRecent = 8;
  void Add(double seconds) { recent_[n_++ % kRecent] = seconds; }
  uint64_t count() const { return n_; }
  // 0 before the first reading; of an even number of readings, the lower middle one.
  double Median() const {
    const size_t k = n_ < kRecent ? size_t(n_) : kRecent;
    if (k == 0) return 0;
    double v[kRecent];
    std::copy(recent_, recent_ + k, v);
    std::nth_element(v, v + (k - 1) / 2, v + k);
    return v[(k - 1) / 2];
  }

 private:
  double recent_[kRecent] = {};
  uint64_t n_ = 0;
};

// Whether a re-planned N replaces the current one during the run: only when it moved by more
// than an eighth, so that the noise of measured costs does not shift a source's ticks at every
// re-planning (once a second).
inline bool Settle(uint32_t current, uint32_t planned) {
  const uint64_t diff = planned > current ? planned - current : current - planned;
  return diff * 8 > current;
}

// INVMW_SAMPLER_EVERY: "name=N" items (N >= 1). Returns false with *error naming the bad item.
inline bool ParseEvery(const std::vector<std::string>& items, std::map<std::string, uint32_t>* out,
                       std::string* error) {
  for (const std::string& it : items) {
    const size_t eq = it.find('=');
    char* end = nullptr;
    const std::string num = eq == std::string::npos ? "" : it.substr(eq + 1);
    const unsigned long n = num.empty() ? 0 : std::strtoul(num.c_str(), &end, 10);
    if (eq == 0 || eq == std::string::npos || num.empty() || *end != '\0' || n < 1 ||
        n > 1000000000ul || num[0] == '-' || num[0] == '+') {
      *error = "INVMW_SAMPLER_EVERY item '" + it +
               "': expected SOURCE=N with N a whole number of samples >= 1 (e.g. net=10)";
      return false;
    }
    (*out)[it.substr(0, eq)] = uint32_t(n);
  }
  return true;
}

}  // namespace invmw::sampler::tiers
