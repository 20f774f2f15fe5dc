#include "otf2_reader/trace_check.h"

#include <algorithm>
#include <tuple>

#include "otf2_reader/stream_match.h"

namespace invmw::otf2 {
namespace {

// A partial archive is a warning, with the size of its gaps when the converter knew them.
void WarnPartial(const Trace& t, CheckReport* r) {
  auto it = t.properties.find("INVMW::PARTIAL");
  if (it == t.properties.end() || it->second != "true") return;
  std::string what;
  for (const auto& [key, label] :
       {std::pair<const char*, const char*>{"INVMW::DROPPED_EVENTS",
                                            "events dropped by full rings"},
        {"INVMW::DROPPED_CALLS", "calls not recorded (INVMW_WRAP_MAX_THREADS)"},
        {"INVMW::DROPPED_REQUESTS", "requests not tracked (INVMW_WRAP_MAX_REQUESTS)"}})
    if (auto p = t.properties.find(key); p != t.properties.end() && p->second != "0")
      what += (what.empty() ? "" : ", ") + p->second + " " + label;
  r->warnings.push_back(
      "the archive is marked partial (" +
      (what.empty() ? std::string("a rank crashed or its data is damaged") : what) + ")");
}

// Failures listed in the order of the archive (metric locations, then thread locations in index
// order and their events in order, then unmatched sends and receives, then messages by send
// start), whatever order the stream finds them in: per kind the first max_listed by that order
// are kept, the rest counted.
class OrderedFailures {
 public:
  struct Key {
    int phase = 0;
    double time = 0;
    uint64_t a = 0, b = 0;
    int sub = 0;
    bool operator<(const Key& o) const {
      return std::tie(phase, time, a, b, sub) < std::tie(o.phase, o.time, o.a, o.b, o.sub);
    }
  };
  OrderedFailures(CheckReport* r, size_t max) : r_(r), max_(max) {}
  template <class Text>
  void Add(const std::string& kind, const Key& key, Text text) {
    r_->ok = false;
    Kind& k = kinds_[kind];
    ++k.count;
    if (max_ == 0 || (k.kept.size() >= max_ && !(key < k.kept.back().first)))
      return;  // later than every one kept
    k.kept.emplace_back(key, text());
    std::sort(k.kept.begin(), k.kept.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    if (k.kept.size() > max_) k.kept.pop_back();
  }
  void Finish() {
    std::vector<std::pair<Key, std::string>> all;
    for (auto& [kind, k] : kinds_)
      for (auto& x : k.kept) all.push_back(std::move(x));
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& x : all) r_->failures.push_back(std::move(x.second));
    for (const auto& [kind, k] : kinds_)
      if (k.count > max_)
        r_->failures.push_back("... and " + std::to_string(k.count - max_) + " more: " + kind);
  }

 private:
  struct Kind {
    uint64_t count = 0;
    std::vector<std::pair<Key, std::string>> kept;  // sorted, at most max_
  };
  CheckReport* r_;
  size_t max_;
  std::map<std::string, Kind> kinds_;
};

std::string WhereRef(const Trace& t, const EventRef& e) {
  const auto& l = t.locations[e.loc];
  return "location \"" + l.name + "\" (rank " + std::to_string(l.rank) + ") event " +
         std::to_string(e.index) + " (" + EventTypeName(e.type) + " at " + std::to_string(e.time) +
         " s)";
}

bool IsStart(TraceEvent::Type t) {
  return t == TraceEvent::kMpiIsend || t == TraceEvent::kMpiIrecvRequest ||
         t == TraceEvent::kNonBlockingCollectiveRequest;
}
TraceEvent::Type StartOf(TraceEvent::Type completion) {
  switch (completion) {
    case TraceEvent::kMpiIsendComplete:
      return TraceEvent::kMpiIsend;
    case TraceEvent::kMpiIrecv:
      return TraceEvent::kMpiIrecvRequest;
    case TraceEvent::kNonBlockingCollectiveComplete:
      return TraceEvent::kNonBlockingCollectiveRequest;
    default:
      return TraceEvent::kNumTypes;
  }
}

}  // namespace

CheckReport CheckTraceStreaming(Trace* trace, size_t max_listed) {
  Trace& t = *trace;
  CheckReport r;
  OrderedFailures fail(&r, max_listed);
  using FKey = OrderedFailures::Key;
  WarnPartial(t, &r);

  struct Loc {
    uint64_t counts[TraceEvent::kNumTypes] = {};
    uint64_t last_ticks = 0;
    double last_time = 0;
    std::vector<uint32_t> stack;  // regions open (nesting)
  };
  std::vector<Loc> locs(t.locations.size());
  struct MetricLoc {
    uint64_t samples = 0, last_ticks = 0;
    bool reported = false;
  };
  std::vector<MetricLoc> mlocs(t.metric_locations.size());
  // Nonblocking starts not yet completed, by (rank, request): which kind a cancellation ends.
  std::map<std::pair<int32_t, uint64_t>, TraceEvent::Type> started;
  std::map<int32_t, std::map<std::string, uint64_t>> cancelled;  // rank -> start type -> n

  StreamMatcher matcher(t, [&](const StreamMessage& m) {
    ++r.messages;
    // Within the measured uncertainty of the two clocks' offsets, an early receive is the
    // clocks', not the trace's.
    const double slack =
        t.locations[m.send.loc].clock_uncertainty_s + t.locations[m.recv.loc].clock_uncertainty_s;
    const FKey key{4, m.send_time, m.send.loc, m.send.index, 0};
    if (m.recv_time + slack < m.send_time)
      fail.Add("causality", key, [&] {
        return WhereRef(t, m.recv) + ": receive completes " +
               std::to_string((m.send_time - m.recv_time) * 1e6) + " us before its send (" +
               WhereRef(t, m.send) + ") began, beyond the clocks' measured uncertainty (" +
               std::to_string(slack * 1e6) + " us); clocks not synchronised?";
      });
    if (m.recv_bytes != m.bytes)
      fail.Add("message sizes", FKey{4, m.send_time, m.send.loc, m.send.index, 1}, [&] {
        return WhereRef(t, m.recv) + ": received " + std::to_string(m.recv_bytes) +
               " bytes, the matching send sent " + std::to_string(m.bytes);
      });
  });

  StreamOptions so;
  so.event = [&](size_t li, uint64_t index, const TraceEvent& e, const UncompletedRecv* posted) {
    Loc& l = locs[li];
    const TraceLocation& tl = t.locations[li];
    ++l.counts[e.type < TraceEvent::kNumTypes ? e.type : TraceEvent::kOther];
    if (index && e.ticks < l.last_ticks)
      fail.Add("timestamps", FKey{1, 0, li, index + 1, 0}, [&] {
        return WhereRef(t, {li, index, e.type, e.time, 0}) +
               ": timestamp decreases (previous event at " + std::to_string(l.last_time) + " s)";
      });
    l.last_ticks = e.ticks;
    l.last_time = e.time;
    if (e.type == TraceEvent::kEnter) {
      l.stack.push_back(e.region);
    } else if (e.type == TraceEvent::kLeave) {
      if (l.stack.empty() || l.stack.back() != e.region)
        fail.Add("nesting", FKey{1, 0, li, index + 1, 1}, [&] {
          return WhereRef(t, {li, index, e.type, e.time, 0}) +
                 ": Leave does not match the innermost open region";
        });
      else
        l.stack.pop_back();
    } else if (IsStart(e.type)) {
      started[{tl.rank, e.request}] = e.type;
    } else if (e.type == TraceEvent::kMpiRequestCancelled) {
      if (auto it = started.find({tl.rank, e.request}); it != started.end()) {
        ++cancelled[tl.rank][EventTypeName(it->second)];
        started.erase(it);
      }
    } else if (const TraceEvent::Type s = StartOf(e.type); s != TraceEvent::kNumTypes) {
      if (auto it = started.find({tl.rank, e.request}); it != started.end() && it->second == s)
        started.erase(it);
    }
    matcher.Event(li, index, e, posted);
  };
  so.metric = [&](bool on_metric_location, size_t li, const TraceMetricSample& s) {
    if (!on_metric_location) return;  // per-call counters: not counted
    MetricLoc& m = mlocs[li];
    if (m.samples && s.ticks < m.last_ticks && !m.reported) {
      m.reported = true;
      const uint64_t i = m.samples;
      fail.Add("metric timestamps", FKey{0, 0, li, 1, 0}, [&] {
        return "metric location \"" + t.metric_locations[li].name + "\": sample " +
               std::to_string(i) + " is earlier than the one before";
      });
    }
    m.last_ticks = s.ticks;
    ++m.samples;
  };
  StreamTrace(&t, so);
  matcher.Finish();

  for (size_t mi = 0; mi < t.metric_locations.size(); ++mi) {
    const auto& m = t.metric_locations[mi];
    r.by_type["Metric"] += mlocs[mi].samples;
    r.by_rank[m.rank]["Metric"] += mlocs[mi].samples;
    r.events += mlocs[mi].samples;
    if (m.declared_events != mlocs[mi].samples)
      fail.Add("event counts", FKey{0, 0, mi, 0, 0}, [&] {
        return "metric location \"" + m.name + "\": definitions declare " +
               std::to_string(m.declared_events) + " events, the file holds " +
               std::to_string(mlocs[mi].samples);
      });
  }
  for (size_t li = 0; li < t.locations.size(); ++li) {
    const auto& l = t.locations[li];
    if (l.declared_events != l.event_count)
      fail.Add("event counts", FKey{1, 0, li, 0, 0}, [&] {
        return "location \"" + l.name + "\": definitions declare " +
               std::to_string(l.declared_events) + " events, the file holds " +
               std::to_string(l.event_count);
      });
    for (int k = 0; k < TraceEvent::kNumTypes; ++k)
      if (const uint64_t n = locs[li].counts[k]) {
        const char* name = EventTypeName(TraceEvent::Type(k));
        r.by_type[name] += n;
        r.by_rank[l.rank][name] += n;
        r.events += n;
      }
    if (!locs[li].stack.empty())
      r.warnings.push_back("location \"" + l.name + "\": " + std::to_string(locs[li].stack.size()) +
                           " region(s) still open at its end (the run stopped inside MPI?)");
  }
  // Requests started more often than completed or cancelled: legitimate for a request freed
  // with MPI_Request_free or left open by a crash, so a warning, with the counts per rank.
  for (const auto& [rank, c] : r.by_rank) {
    auto n = [&c = c](const char* type) {
      auto it = c.find(type);
      return it == c.end() ? uint64_t(0) : it->second;
    };
    for (const auto& [start, done] :
         {std::pair{"MpiIsend", "MpiIsendComplete"}, std::pair{"MpiIrecvRequest", "MpiIrecv"},
          std::pair{"NonBlockingCollectiveRequest", "NonBlockingCollectiveComplete"}}) {
      const uint64_t n_started = n(start), ended = n(done);
      const uint64_t cancels = cancelled[rank][start];
      if (n_started > ended + cancels)
        r.warnings.push_back("rank " + std::to_string(rank) + ": " + std::to_string(n_started) +
                             " " + start + " but " + std::to_string(ended) + " " + done + " and " +
                             std::to_string(cancels) + " cancelled" +
                             " (requests freed without completion, or left open)");
    }
  }
  // Receives posted and never completed (a leaked or freed request): legal MPI, but a message
  // that matched one is lost to the application, which is worth saying.
  {
    size_t listed = 0, more = 0;
    std::map<int32_t, uint64_t> open_at_end, wildcards;
    for (size_t i = 0; i < matcher.uncompleted_recvs.size(); ++i) {
      const auto& u = matcher.uncompleted_recvs[i];
      if (u.wildcard) {
        ++wildcards[u.rank];
      } else if (!u.matched) {
        ++open_at_end[u.rank];
      } else if (listed++ < max_listed) {
        auto comm = t.comms.find(u.comm);
        r.warnings.push_back(
            "rank " + std::to_string(u.rank) + ": a receive posted at " +
            std::to_string(u.post_time) + " s from rank " + std::to_string(u.peer) + ", tag " +
            std::to_string(u.tag) + " on " +
            (comm == t.comms.end() ? "communicator " + std::to_string(u.comm) : comm->second.name) +
            " was matched by a message of " + std::to_string(u.bytes) +
            " bytes but never completed (" + WhereRef(t, matcher.uncompleted_send[i]) + ")");
      } else {
        ++more;
      }
    }
    if (more)
      r.warnings.push_back("... and " + std::to_string(more) +
                           " more receives matched by a message but never completed");
    for (const auto& [rank, n] : open_at_end)
      r.warnings.push_back("rank " + std::to_string(rank) + ": " + std::to_string(n) +
                           " receive(s) still posted at the end, no message reached them");
    for (const auto& [rank, n] : wildcards)
      r.warnings.push_back("rank " + std::to_string(rank) + ": " + std::to_string(n) +
                           " receive(s) posted with MPI_ANY_SOURCE or MPI_ANY_TAG never "
                           "completed; which message each took is unknown, so matching on their "
                           "channels may be off");
  }
  for (size_t i = 0; i < matcher.unmatched_sends.size(); ++i)
    fail.Add("unmatched sends", FKey{2, 0, i, 0, 0}, [&] {
      return WhereRef(t, matcher.unmatched_sends[i]) + ": send without a matching receive";
    });
  for (size_t i = 0; i < matcher.unmatched_recvs.size(); ++i)
    fail.Add("unmatched receives", FKey{3, 0, i, 0, 0}, [&] {
      return WhereRef(t, matcher.unmatched_recvs[i]) + ": receive without a matching send";
    });
  fail.Finish();
  r.peak_pending = matcher.peak_pending;
  return r;
}

void PrintCheckReport(const Trace& t, const CheckReport& r, FILE* out) {
  std::fprintf(out, "%s: %zu locations, %llu events, %llu messages, %.6f s\n", t.path.c_str(),
               t.locations.size() + t.metric_locations.size(), (unsigned long long)r.events,
               (unsigned long long)r.messages,
               t.timer_resolution ? double(t.trace_length) / double(t.timer_resolution) : 0.0);
  // Up to kColumns ranks fit beside the totals; beyond that each rank gets a line of its own.
  constexpr size_t kColumns = 8;
  const bool columns = r.by_rank.size() <= kColumns;
  std::fprintf(out, "\n%-32s %12s", "EVENT TYPE", "TOTAL");
  if (columns)
    for (const auto& [rank, _] : r.by_rank)
      std::fprintf(out, " %10s", ("rank " + std::to_string(rank)).c_str());
  std::fputc('\n', out);
  for (const auto& [type, n] : r.by_type) {
    std::fprintf(out, "%-32s %12llu", type.c_str(), (unsigned long long)n);
    if (columns)
      for (const auto& [rank, counts] : r.by_rank) {
        auto it = counts.find(type);
        std::fprintf(out, " %10llu", (unsigned long long)(it == counts.end() ? 0 : it->second));
      }
    std::fputc('\n', out);
  }
  if (!columns) {
    std::fprintf(out, "\nper rank:\n");
    for (const auto& [rank, counts] : r.by_rank) {
      uint64_t total = 0;
      for (const auto& [type, n] : counts) total += n;
      std::fprintf(out, "  rank %-6d %12llu events:", rank, (unsigned long long)total);
      for (const auto& [type, n] : counts)
        std::fprintf(out, " %s %llu", type.c_str(), (unsigned long long)n);
      std::fputc('\n', out);
    }
  }
  for (const auto& w : r.warnings) std::fprintf(out, "warning: %s\n", w.c_str());
  for (const auto& f : r.failures) std::fprintf(out, "FAILED: %s\n", f.c_str());
  std::fprintf(out, "%s\n", r.ok ? "check passed" : "check FAILED");
}

}  // namespace invmw::otf2
