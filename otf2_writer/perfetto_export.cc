#include "otf2_writer/perfetto_export.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "otf2_writer/output_files.h"

namespace invmw::otf2 {
namespace {

std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump();
}

struct Out {
  FILE* f;
  bool first = true;
  void Begin() {
    std::fputs(first ? "\n" : ",\n", f);
    first = false;
  }
};

// The slice enclosing event `idx` of a location: the latest Enter not yet left. Returns its
// time, or the event's own time when the event is outside every region.
double EnclosingStart(const TraceLocation& l, size_t idx) {
  int depth = 0;
  for (size_t i = idx + 1; i-- > 0;) {
    const auto& e = l.events[i];
    if (e.type == TraceEvent::kLeave && i != idx)
      ++depth;
    else if (e.type == TraceEvent::kEnter) {
      if (depth == 0) return e.time;
      --depth;
    }
  }
  return l.events[idx].time;
}

}  // namespace

PerfettoStats ExportPerfetto(const Trace& t, const std::string& out_path) {
  // A temporary file renamed onto out_path once complete: a failed export leaves the
  // previous one (and with SIGXFSZ ignored, RLIMIT_FSIZE is an error, not the end).
  IgnoreSigxfsz sigxfsz;
  AtomicFile file(out_path);
  Out o{file.get()};
  PerfettoStats st;
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", o.f);
  std::map<size_t, int> tid_of;  // location index -> tid within its rank
  for (const auto& [rank, locs] : t.locations_of_rank) {
    o.Begin();
    std::fprintf(
        o.f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":%s}}",
        rank, Quote("rank " + std::to_string(rank)).c_str());
    o.Begin();
    std::fprintf(o.f,
                 "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,\"args\":{"
                 "\"sort_index\":%d}}",
                 rank, rank);
    for (size_t k = 0; k < locs.size(); ++k) {
      tid_of[locs[k]] = int(k);
      o.Begin();
      std::fprintf(
          o.f,
          "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%zu,\"args\":{\"name\":%s}}",
          rank, k, Quote(t.locations[locs[k]].name).c_str());
    }
  }
  std::vector<std::string> names;
  for (const auto& r : t.regions) names.push_back(Quote(r.name));
  for (size_t li = 0; li < t.locations.size(); ++li) {
    const auto& l = t.locations[li];
    std::vector<const TraceEvent*> open;
    const double end = l.events.empty() ? 0 : l.events.back().time;
    auto slice = [&](const TraceEvent& e, double stop) {
      o.Begin();
      static const std::string unknown = "\"?\"";
      const std::string& name = e.region < names.size() ? names[e.region] : unknown;
      std::fprintf(o.f,
                   "{\"ph\":\"X\",\"cat\":\"mpi\",\"name\":%s,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                   "\"dur\":%.3f}",
                   name.c_str(), l.rank, tid_of[li], e.time * 1e6, (stop - e.time) * 1e6);
      ++st.slices;
    };
    for (const auto& e : l.events) {
      if (e.type == TraceEvent::kEnter)
        open.push_back(&e);
      else if (e.type == TraceEvent::kLeave && !open.empty()) {
        slice(*open.back(), e.time);
        open.pop_back();
      }
    }
    while (!open.empty()) {  // left open by a crash: closed at the location's last event
      slice(*open.back(), end);
      open.pop_back();
    }
  }
  uint64_t id = 0;
  for (const auto& m : t.messages) {
    ++id;
    const auto& sl = t.locations[m.send_loc];
    const auto& rl = t.locations[m.recv_loc];
    const std::string name =
        Quote("message tag " + std::to_string(m.tag) + ", " + std::to_string(m.bytes) + " B");
    o.Begin();
    std::fprintf(o.f,
                 "{\"ph\":\"s\",\"cat\":\"p2p\",\"name\":%s,\"id\":%llu,\"pid\":%d,\"tid\":%d,"
                 "\"ts\":%.3f,\"bp\":\"e\"}",
                 name.c_str(), (unsigned long long)id, sl.rank, tid_of[m.send_loc],
                 EnclosingStart(sl, m.send_event) * 1e6);
    o.Begin();
    std::fprintf(o.f,
                 "{\"ph\":\"f\",\"cat\":\"p2p\",\"name\":%s,\"id\":%llu,\"pid\":%d,\"tid\":%d,"
                 "\"ts\":%.3f,\"bp\":\"e\"}",
                 name.c_str(), (unsigned long long)id, rl.rank, tid_of[m.recv_loc],
                 EnclosingStart(rl, m.recv_event) * 1e6);
    ++st.flows;
  }
  std::fputs("\n]}\n", o.f);
  file.Commit();
  return st;
}

}  // namespace invmw::otf2
