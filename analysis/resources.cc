#include "analysis/resources.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace invmw::analysis {

using invmw::otf2::Trace;
using invmw::otf2::TraceMetricLocation;

namespace {

// A metric's (time, value) series on one metric location.
using Series = std::vector<std::pair<double, double>>;

// All series of one metric location, by member name.
std::map<std::string, Series> SeriesOf(const Trace& t, const TraceMetricLocation& loc) {
  std::map<std::string, Series> out;
  for (const auto& s : loc.samples) {
    auto it = t.metric_classes.find(s.metric_class);
    if (it == t.metric_classes.end()) continue;
    const auto& members = it->second;
    for (size_t k = 0; k < members.size() && k < s.values.size(); ++k)
      if (members[k] < t.metric_members.size())
        out[t.metric_members[members[k]].name].push_back({s.time, s.values[k]});
  }
  return out;
}

// Linear interpolation inside the series, clamped at its ends.
double At(const Series& s, double t) {
  if (s.empty()) return 0;
  if (t <= s.front().first) return s.front().second;
  if (t >= s.back().first) return s.back().second;
  auto it = std::lower_bound(s.begin(), s.end(), std::make_pair(t, -1e300));
  const auto& b = *it;
  const auto& a = *(it - 1);
  const double f = b.first > a.first ? (t - a.first) / (b.first - a.first) : 1;
  return a.second + f * (b.second - a.second);
}

double Delta(const std::map<std::string, Series>& m, const std::string& name, double a, double b) {
  auto it = m.find(name);
  return it == m.end() ? 0 : At(it->second, b) - At(it->second, a);
}

// Computation time of the rank between a and b. `seg` is a cursor advanced monotonically.
double ComputationIn(const std::vector<Segment>& segs, size_t& seg, double a, double b) {
  while (seg < segs.size() && segs[seg].end <= a) ++seg;
  double sum = 0;
  for (size_t k = seg; k < segs.size() && segs[k].start < b; ++k)
    if (segs[k].cat == kComputation)
      sum += std::max(0.0, std::min(b, segs[k].end) - std::max(a, segs[k].start));
  return sum;
}

}  // namespace

ResourceUse AttributeResources(const Trace& t, const RankTimeline& rank) {
  ResourceUse r;
  const TraceMetricLocation* own = nullptr;
  const TraceMetricLocation* node = nullptr;  // one with node_cpu metrics: own node first
  std::map<std::string, Series> mine, node_series;
  for (const auto& loc : t.metric_locations)
    if (loc.rank == rank.rank) own = &loc;
  if (!own) return r;
  mine = SeriesOf(t, *own);
  if (mine.count("node_cpu.idle")) {
    node = own;
    node_series = mine;
  } else {
    // Ranks are usually placed in blocks: the nearest lower rank with node data shares the node.
    int32_t best = -1;
    for (const auto& loc : t.metric_locations)
      if (loc.rank <= rank.rank && loc.rank > best) {
        auto s = SeriesOf(t, loc);
        if (s.count("node_cpu.idle")) best = loc.rank, node = &loc, node_series = std::move(s);
      }
  }
  auto user = mine.find("proc.cpu.user");
  if (user == mine.end() || user->second.size() < 2) return r;
  const Series& u = user->second;
  const Series* sys = mine.count("proc.cpu.system") ? &mine["proc.cpu.system"] : nullptr;
  static const char* const kStates[] = {"node_cpu.user",    "node_cpu.nice",   "node_cpu.system",
                                        "node_cpu.idle",    "node_cpu.iowait", "node_cpu.irq",
                                        "node_cpu.softirq", "node_cpu.steal"};
  size_t cursor = 0;
  for (size_t i = 0; i + 1 < u.size(); ++i) {
    const double a = std::max(u[i].first, rank.start), b = std::min(u[i + 1].first, rank.end);
    if (b <= a) continue;
    const double comp = ComputationIn(rank.segments, cursor, a, b);
    // Scale the interval's CPU time to the part of it inside the window.
    const double frac = (b - a) / (u[i + 1].first - u[i].first);
    double cpu = (u[i + 1].second - u[i].second) * frac;
    if (sys) cpu += (At(*sys, u[i + 1].first) - At(*sys, u[i].first)) * frac;
    r.cpu_s += cpu;
    if (comp <= 0) continue;
    r.covered_s += comp;
    const double on = std::min(std::max(cpu, 0.0), comp);
    r.comp_on_cpu_s += on;
    r.comp_off_cpu_s += comp - on;
    if (node && comp > on) {
      double all = 0;
      for (const char* s : kStates) all += Delta(node_series, s, a, b);
      const double idle =
          Delta(node_series, "node_cpu.idle", a, b) + Delta(node_series, "node_cpu.iowait", a, b);
      if (all > 0 && idle / all > kIdleShare) r.voluntary_off_s += comp - on;
    }
  }
  double comp_total = 0;
  for (const auto& s : rank.segments)
    if (s.cat == kComputation) comp_total += s.end - s.start;
  r.sampled = comp_total <= 0 || r.covered_s >= 0.5 * comp_total;
  r.io_bytes = Delta(mine, "proc.io.read_bytes", rank.start, rank.end) +
               Delta(mine, "proc.io.write_bytes", rank.start, rank.end);
  r.major_faults = Delta(mine, "proc.page_faults.major", rank.start, rank.end);
  if (mine.count("cgroup.cpu.throttled"))
    r.throttled_s = Delta(mine, "cgroup.cpu.throttled", rank.start, rank.end);
  const double cyc = Delta(mine, "counters.PAPI_TOT_CYC.user", rank.start, rank.end);
  const double ins = Delta(mine, "counters.PAPI_TOT_INS.user", rank.start, rank.end);
  if (cyc > 0 && ins > 0) r.cpi = cyc / ins;

  char buf[256];
  if (!r.sampled) {
    r.note = "sampler data cover too little of the computation to allocate it";
    return r;
  }
  const double off_share = r.covered_s > 0 ? r.voluntary_off_s / r.covered_s : 0;
  if (off_share > kMinOffShare) {
    r.moved_share = off_share;
    const bool io = r.io_bytes > 1e6 || r.major_faults > 0;
    r.moved_to = io ? kMemoryIo : kUnallocated;
    std::snprintf(buf, sizeof buf,
                  "%.0f%% of the time outside MPI was off the CPU while the node had idle CPU; %s",
                  100 * off_share,
                  io ? "storage I/O or paging explains it (memory_io)"
                     : "no resource explains it (unallocated)");
  } else {
    std::snprintf(buf, sizeof buf, "%.0f%% of the sampled time outside MPI was on the CPU",
                  r.covered_s > 0 ? 100 * r.comp_on_cpu_s / r.covered_s : 100.0);
  }
  r.note = buf;
  return r;
}

}  // namespace invmw::analysis
