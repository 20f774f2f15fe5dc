#include "analysis/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>

namespace invmw::analysis {

bool AnalyzeOptions::IsValid(std::string* error) const {
  if (!(unallocated_threshold > 0 && unallocated_threshold <= 1)) {
    if (error) *error = "unallocated_threshold must be in (0, 1]";
    return false;
  }
  if (threads < 1) {
    if (error) *error = "threads must be >= 1";
    return false;
  }
  if (!(heavy_rank_margin >= 0)) {
    if (error) *error = "heavy_rank_margin must be >= 0";
    return false;
  }
  return true;
}

namespace {

LoadImbalance Imbalance(const std::vector<std::pair<int32_t, double>>& comp, double margin) {
  LoadImbalance li;
  if (comp.empty()) return li;
  li.min = std::numeric_limits<double>::infinity();
  for (const auto& [rank, c] : comp) {
    li.mean += c;
    if (c > li.max || li.max_rank < 0) li.max = c, li.max_rank = rank;
    if (c < li.min) li.min = c, li.min_rank = rank;
  }
  li.mean /= double(comp.size());
  li.max_over_mean = li.mean > 0 ? li.max / li.mean : 1;
  for (const auto& [rank, c] : comp)
    if (li.mean > 0 && c > li.mean * (1 + margin)) li.heavy_ranks.push_back(rank);
  return li;
}

Classification Classify(const Analysis& a, const AnalyzeOptions& o) {
  Classification c;
  const Times& t = a.total;
  const double all = ObservedTotal(t);
  if (all <= 0) {
    c.label = "empty";
    c.reason = "no observed time";
    return c;
  }
  c.computation = t[kComputation] / all;
  c.communication = (t[kTransfer] + t[kIdle]) / all;
  c.synchronization = (t[kSyncWait] + t[kSyncOp]) / all;
  c.memory_io = (t[kIo] + t[kMemoryIo]) / all;
  c.unallocated = t[kUnallocated] / all;
  const std::pair<double, const char*> classes[] = {{c.computation, "computation-bound"},
                                                    {c.communication, "communication-bound"},
                                                    {c.synchronization, "synchronization-bound"},
                                                    {c.memory_io, "memory/I-O-bound"},
                                                    {c.unallocated, "middleware-inefficient"}};
  auto best = std::max_element(std::begin(classes), std::end(classes),
                               [](const auto& x, const auto& y) { return x.first < y.first; });
  char buf[512];
  if (c.unallocated >= o.unallocated_threshold) {
    c.label = "middleware-inefficient";
    std::snprintf(buf, sizeof buf,
                  "%.0f%% of the observed rank-time cannot be allocated to computation, "
                  "communication, synchronization or I/O (threshold %.0f%%)",
                  100 * c.unallocated, 100 * o.unallocated_threshold);
  } else {
    c.label = best->second;
    std::snprintf(buf, sizeof buf,
                  "largest share of observed rank-time: %.0f%% (computation %.0f%%, "
                  "communication %.0f%% of which idle %.0f%%, synchronization %.0f%%, "
                  "memory/I-O %.0f%%, unallocated %.0f%%)",
                  100 * best->first, 100 * c.computation, 100 * c.communication,
                  100 * t[kIdle] / all, 100 * c.synchronization, 100 * c.memory_io,
                  100 * c.unallocated);
  }
  c.reason = buf;
  return c;
}

}  // namespace

namespace {

// release: &trace.messages, to be freed once the timelines took what they need, or nullptr.
Analysis AnalyzeTrace(const invmw::otf2::Trace& trace, const AnalyzeOptions& options,
                      std::vector<invmw::otf2::Message>* release) {
  std::string error;
  if (!options.IsValid(&error)) throw std::invalid_argument("AnalyzeOptions: " + error);
  Analysis a;
  a.trace_path = trace.path;
  a.messages = trace.messages.size();
  a.has_metrics = !trace.metric_locations.empty();
  if (options.keep_details) {
    a.p2p.reserve(trace.messages.size());
    for (const auto& m : trace.messages)
      a.p2p.push_back({m.src, m.dst, m.bytes, m.send_time, m.recv_post_time, m.recv_time});
  }
  TimelineOptions to;
  to.threads = options.threads;
  to.keep_segments = options.keep_details || (options.use_resources && a.has_metrics);
  to.release_messages = release;
  a.timelines = BuildTimelines(trace, options.rank_windows, to);
  const Timelines& tl = a.timelines;
  a.phase_source = tl.phase_source;
  a.phase_names = tl.phase_names;
  a.events = tl.events;
  a.other_thread_events = tl.other_thread_events;
  a.collective_instances = tl.collective_instances;
  a.incomplete_collectives = tl.incomplete_collectives;
  a.unmatched_sends = trace.unmatched_sends.size();
  a.unmatched_recvs = trace.unmatched_recvs.size();
  if (auto it = trace.properties.find("INVMW::PARTIAL"); it != trace.properties.end())
    a.partial = it->second == "true";

  const size_t nphases = a.phase_names.size();
  a.phases.resize(nphases);
  std::vector<double> ph_start(nphases, std::numeric_limits<double>::infinity());
  std::vector<double> ph_end(nphases, -std::numeric_limits<double>::infinity());
  std::vector<std::vector<std::pair<int32_t, double>>> ph_comp(nphases);
  std::vector<std::pair<int32_t, double>> comp;
  a.start = std::numeric_limits<double>::infinity();
  a.end = -a.start;
  for (const RankTimeline& r : tl.ranks) {
    RankAnalysis ra;
    ra.rank = r.rank;
    ra.start = r.start;
    ra.end = r.end;
    ra.calls = r.calls;
    ra.messages_sent = r.messages_sent;
    ra.bytes_sent = r.bytes_sent;
    ra.phases.assign(nphases, Times{});
    for (size_t p = 0; p < nphases && p < r.phase_times.size(); ++p) {
      ra.phases[p] = r.phase_times[p];
      ph_start[p] = std::min(ph_start[p], r.phase_first[p]);
      ph_end[p] = std::max(ph_end[p], r.phase_last[p]);
    }
    if (options.use_resources && a.has_metrics) {
      ra.resources = AttributeResources(trace, r);
      if (ra.resources.moved_share > 0)
        for (Times& p : ra.phases) {
          const double moved = p[kComputation] * ra.resources.moved_share;
          p[kComputation] -= moved;
          p[ra.resources.moved_to] += moved;
        }
    }
    for (size_t p = 0; p < nphases; ++p) {
      ra.total += ra.phases[p];
      a.phases[p].total += ra.phases[p];
      if (ObservedTotal(ra.phases[p]) > 0)
        ph_comp[p].push_back({r.rank, ra.phases[p][kComputation]});
    }
    if (size_t(r.rank) < tl.wait_caused.size()) ra.wait_caused = tl.wait_caused[r.rank];
    a.total += ra.total;
    comp.push_back({r.rank, ra.total[kComputation]});
    a.start = std::min(a.start, r.start);
    a.end = std::max(a.end, r.end);
    a.ranks.push_back(std::move(ra));
  }
  if (a.ranks.empty()) {
    a.start = a.end = 0;
    a.notes.push_back("the trace has no MPI rank with events");
  }
  a.wall = a.end - a.start;
  for (size_t p = 0; p < nphases; ++p) {
    a.phases[p].name = a.phase_names[p];
    a.phases[p].span = ph_end[p] > ph_start[p] ? ph_end[p] - ph_start[p] : 0;
    a.phases[p].imbalance = Imbalance(ph_comp[p], options.heavy_rank_margin);
  }
  a.imbalance = Imbalance(comp, options.heavy_rank_margin);
  a.critical_path = FindCriticalPath(tl);
  a.classification = Classify(a, options);

  double waits = 0;
  for (const auto& r : a.ranks) waits += r.wait_caused;
  std::vector<std::pair<double, int32_t>> w;
  for (const auto& r : a.ranks)
    if (waits > 0 && r.wait_caused >= 0.1 * waits) w.push_back({r.wait_caused, r.rank});
  std::sort(w.rbegin(), w.rend());
  for (const auto& x : w) a.waited_for.push_back(x.second);

  std::map<std::pair<std::string, uint32_t>, size_t> site_index;  // (function, context)
  for (const RankTimeline& r : tl.ranks)
    for (const auto& [key, st] : r.callsites) {
      const std::string fn = key.first < trace.regions.size() ? trace.regions[key.first].name : "?";
      auto [it, added] = site_index.emplace(std::make_pair(fn, key.second), a.callsites.size());
      if (added) {
        CallSiteWait w;
        w.function = fn;
        if (key.second < trace.callsites.size()) {
          const auto& c = trace.callsites[key.second];
          w.caller = c.function;
          w.file = c.file;
          w.line = c.line;
        }
        w.location = !w.file.empty() && w.line ? w.file + ":" + std::to_string(w.line)
                                               : (w.caller.empty() ? "?" : w.caller);
        a.callsites.push_back(w);
      }
      CallSiteWait& w = a.callsites[it->second];
      w.calls += st.calls;
      ++w.ranks;
      w.t += st.t;
      w.time += ObservedTotal(st.t) + st.t[kPaused];
    }
  std::stable_sort(a.callsites.begin(), a.callsites.end(),
                   [](const CallSiteWait& x, const CallSiteWait& y) {
                     return x.t[kIdle] + x.t[kSyncWait] > y.t[kIdle] + y.t[kSyncWait];
                   });

  if (a.partial) a.notes.push_back("the trace is partial (a rank crashed or dropped events)");
  if (a.other_thread_events)
    a.notes.push_back(std::to_string(a.other_thread_events) +
                      " events on threads other than each rank's main thread were not analysed");
  if (a.unmatched_sends || a.unmatched_recvs)
    a.notes.push_back(std::to_string(a.unmatched_sends) + " sends and " +
                      std::to_string(a.unmatched_recvs) +
                      " receives without partner: their waiting counts as transfer");
  if (a.incomplete_collectives)
    a.notes.push_back(
        std::to_string(a.incomplete_collectives) +
        " collective operations were seen on fewer ranks than their communicator has");
  for (const auto& r : a.ranks)
    if (!r.resources.note.empty() && r.resources.moved_share > 0)
      a.notes.push_back("rank " + std::to_string(r.rank) + ": " + r.resources.note);
  return a;
}

}  // namespace

Analysis Analyze(const invmw::otf2::Trace& trace, const AnalyzeOptions& options) {
  return AnalyzeTrace(trace, options, nullptr);
}

Analysis Analyze(invmw::otf2::Trace&& trace, const AnalyzeOptions& options) {
  return AnalyzeTrace(trace, options, &trace.messages);
}

namespace {

nlohmann::json TimesJson(const Times& t) {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kNumCategories; ++c) j[CategoryName(Category(c))] = t[c];
  j["total"] = ObservedTotal(t) + t[kPaused];
  return j;
}

nlohmann::json ImbalanceJson(const LoadImbalance& li) {
  return {{"mean_s", li.mean},
          {"max_s", li.max},
          {"min_s", li.min},
          {"max_over_mean", li.max_over_mean},
          {"max_rank", li.max_rank},
          {"min_rank", li.min_rank},
          {"heavy_ranks", li.heavy_ranks}};
}

}  // namespace

nlohmann::json ToJson(const Analysis& a) {
  nlohmann::json j;
  j["schema"] = 1;
  j["trace"] = a.trace_path;
  j["start_s"] = a.start;
  j["end_s"] = a.end;
  j["wall_s"] = a.wall;
  j["phase_source"] = PhaseSourceName(a.phase_source);
  j["phases"] = a.phase_names;
  std::vector<std::string> cats;
  for (int c = 0; c < kNumCategories; ++c) cats.push_back(CategoryName(Category(c)));
  j["categories"] = cats;
  j["events"] = a.events;
  j["messages"] = a.messages;
  j["collective_instances"] = a.collective_instances;
  j["partial"] = a.partial;
  j["ranks"] = nlohmann::json::array();
  for (const auto& r : a.ranks) {
    nlohmann::json jr;
    jr["rank"] = r.rank;
    jr["start_s"] = r.start;
    jr["end_s"] = r.end;
    jr["wall_s"] = r.end - r.start;
    jr["total"] = TimesJson(r.total);
    jr["phases"] = nlohmann::json::object();
    for (size_t p = 0; p < r.phases.size(); ++p)
      if (ObservedTotal(r.phases[p]) + r.phases[p][kPaused] > 0)
        jr["phases"][a.phase_names[p]] = TimesJson(r.phases[p]);
    jr["wait_caused_s"] = r.wait_caused;
    jr["calls"] = r.calls;
    jr["messages_sent"] = r.messages_sent;
    jr["bytes_sent"] = r.bytes_sent;
    if (r.resources.sampled || r.resources.covered_s > 0) {
      const ResourceUse& u = r.resources;
      jr["resources"] = {{"cpu_s", u.cpu_s},
                         {"computation_sampled_s", u.covered_s},
                         {"computation_on_cpu_s", u.comp_on_cpu_s},
                         {"computation_off_cpu_s", u.comp_off_cpu_s},
                         {"voluntary_off_cpu_s", u.voluntary_off_s},
                         {"io_bytes", u.io_bytes},
                         {"major_faults", u.major_faults},
                         {"moved_share", u.moved_share},
                         {"moved_to", CategoryName(u.moved_to)},
                         {"note", u.note}};
      if (u.throttled_s >= 0) jr["resources"]["throttled_s"] = u.throttled_s;
      if (u.cpi > 0) jr["resources"]["cpi"] = u.cpi;
    }
    j["ranks"].push_back(jr);
  }
  j["phase_summary"] = nlohmann::json::array();
  for (const auto& p : a.phases)
    j["phase_summary"].push_back({{"phase", p.name},
                                  {"span_s", p.span},
                                  {"total", TimesJson(p.total)},
                                  {"load_imbalance", ImbalanceJson(p.imbalance)}});
  j["total"] = TimesJson(a.total);
  j["load_imbalance"] = ImbalanceJson(a.imbalance);
  j["waited_for"] = a.waited_for;
  const CriticalPath& cp = a.critical_path;
  nlohmann::json by_rank = nlohmann::json::object();
  for (const auto& [rank, t] : cp.by_rank) by_rank[std::to_string(rank)] = TimesJson(t);
  j["critical_path"] = {{"length_s", cp.length},
                        {"start_s", cp.start},
                        {"end_s", cp.end},
                        {"start_rank", cp.start_rank},
                        {"end_rank", cp.end_rank},
                        {"jumps", cp.jumps},
                        {"composition", TimesJson(cp.composition)},
                        {"by_rank", by_rank}};
  const Classification& c = a.classification;
  j["classification"] = {{"class", c.label},
                         {"shares",
                          {{"computation", c.computation},
                           {"communication", c.communication},
                           {"synchronization", c.synchronization},
                           {"memory_io", c.memory_io},
                           {"unallocated", c.unallocated}}},
                         {"reason", c.reason}};
  if (!a.callsites.empty()) {
    nlohmann::json cs = nlohmann::json::array();
    for (const CallSiteWait& w : a.callsites)
      cs.push_back({{"function", w.function},
                    {"location", w.location},
                    {"caller", w.caller},
                    {"file", w.file},
                    {"line", w.line},
                    {"calls", w.calls},
                    {"ranks", w.ranks},
                    {"time_s", w.time},
                    {"idle_s", w.t[kIdle]},
                    {"sync_wait_s", w.t[kSyncWait]},
                    {"idle_share", w.time > 0 ? w.t[kIdle] / w.time : 0.0},
                    {"sync_wait_share", w.time > 0 ? w.t[kSyncWait] / w.time : 0.0},
                    {"times", TimesJson(w.t)}});
    j["callsites"] = cs;
  }
  j["notes"] = a.notes;
  return j;
}

namespace {

void Appendf(std::string& s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Appendf(std::string& s, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  s += buf;
}

// The columns of the text tables: the categories a reader most needs, in seconds.
void Row(std::string& s, const char* label, const Times& t) {
  Appendf(s, "  %-22s", label);
  for (int c = 0; c < kNumCategories; ++c) Appendf(s, " %11.6f", t[c]);
  Appendf(s, " %11.6f\n", ObservedTotal(t) + t[kPaused]);
}
void Header(std::string& s, const char* first) {
  Appendf(s, "  %-22s", first);
  for (int c = 0; c < kNumCategories; ++c) Appendf(s, " %11s", CategoryName(Category(c)));
  Appendf(s, " %11s\n", "total");
}

}  // namespace

std::string FormatText(const Analysis& a) {
  std::string s;
  Appendf(s, "invmw analysis of %s\n", a.trace_path.c_str());
  Appendf(s, "%zu ranks, wall %.6f s, %llu events, %llu messages, %llu collective operations\n",
          a.ranks.size(), a.wall, (unsigned long long)a.events, (unsigned long long)a.messages,
          (unsigned long long)a.collective_instances);
  Appendf(s, "phases from %s: %zu\n\n", PhaseSourceName(a.phase_source), a.phase_names.size());
  Appendf(s, "Time per rank (s)\n");
  Header(s, "rank");
  for (const auto& r : a.ranks) Row(s, std::to_string(r.rank).c_str(), r.total);
  Row(s, "all", a.total);
  if (a.phase_names.size() > 1) {
    Appendf(s, "\nTime per rank and phase (s)\n");
    Header(s, "rank / phase");
    for (const auto& r : a.ranks)
      for (size_t p = 0; p < r.phases.size(); ++p)
        if (ObservedTotal(r.phases[p]) + r.phases[p][kPaused] > 0)
          Row(s, (std::to_string(r.rank) + " / " + a.phase_names[p]).c_str(), r.phases[p]);
    Appendf(s, "\nPhases over all ranks\n");
    for (const auto& p : a.phases)
      Appendf(s, "  %-22s span %.6f s, computation %.6f s, imbalance %.3f (max rank %d)\n",
              p.name.c_str(), p.span, p.total[kComputation], p.imbalance.max_over_mean,
              p.imbalance.max_rank);
  }
  const LoadImbalance& li = a.imbalance;
  Appendf(s,
          "\nLoad imbalance: computation max/mean %.3f (max %.6f s on rank %d, min %.6f s on "
          "rank %d, mean %.6f s)",
          li.max_over_mean, li.max, li.max_rank, li.min, li.min_rank, li.mean);
  if (!li.heavy_ranks.empty()) {
    Appendf(s, "; heavy ranks:");
    for (int32_t r : li.heavy_ranks) Appendf(s, " %d", r);
  }
  Appendf(s, "\n");
  if (!a.waited_for.empty()) {
    Appendf(s, "Ranks others waited for:");
    for (int32_t r : a.waited_for)
      for (const auto& ra : a.ranks)
        if (ra.rank == r) Appendf(s, " %d (%.6f s)", r, ra.wait_caused);
    Appendf(s, "\n");
  }
  const CriticalPath& cp = a.critical_path;
  Appendf(s, "\nCritical path: %.6f s from rank %d to rank %d, %llu partner changes\n", cp.length,
          cp.start_rank, cp.end_rank, (unsigned long long)cp.jumps);
  for (int c = 0; c < kNumCategories; ++c)
    if (cp.composition[c] > 0)
      Appendf(s, "  %-12s %11.6f s (%5.1f%%)\n", CategoryName(Category(c)), cp.composition[c],
              cp.length > 0 ? 100 * cp.composition[c] / cp.length : 0.0);
  for (const auto& [rank, t] : cp.by_rank)
    Appendf(s, "  rank %-7d %11.6f s on the path, computation %.6f s\n", rank,
            ObservedTotal(t) + t[kPaused], t[kComputation]);
  if (!a.callsites.empty()) {
    Appendf(s, "\nWaiting per call site (idle: late partner; sync wait: last arrival)\n");
    size_t shown = 0;
    for (const CallSiteWait& w : a.callsites) {
      if (shown++ == 20) break;
      Appendf(s, "  %-14s at %-28s %6llu calls %11.6f s: idle %5.1f%%, sync wait %5.1f%%\n",
              w.function.c_str(), w.location.c_str(), (unsigned long long)w.calls, w.time,
              w.time > 0 ? 100 * w.t[kIdle] / w.time : 0.0,
              w.time > 0 ? 100 * w.t[kSyncWait] / w.time : 0.0);
    }
  }
  const Classification& c = a.classification;
  Appendf(s, "\nClassification: %s\n  %s\n", c.label.c_str(), c.reason.c_str());
  for (const auto& r : a.ranks)
    if (!r.resources.note.empty())
      Appendf(s, "  rank %d resources: %s\n", r.rank, r.resources.note.c_str());
  for (const auto& n : a.notes) Appendf(s, "note: %s\n", n.c_str());
  return s;
}

}  // namespace invmw::analysis
