#include "otf2_reader/perfetto_export.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

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

std::string CommName(const Trace& t, uint32_t comm) {
  auto it = t.comms.find(comm);
  return it != t.comms.end() && !it->second.name.empty() ? it->second.name
                                                         : "comm " + std::to_string(comm);
}

// Communicator names as JSON strings, quoted once each (an export may hold millions of records).
class CommNames {
 public:
  explicit CommNames(const Trace& t) : t_(t) {}
  const std::string& operator()(uint32_t comm) {
    auto it = quoted_.find(comm);
    if (it == quoted_.end()) it = quoted_.emplace(comm, Quote(CommName(t_, comm))).first;
    return it->second;
  }

 private:
  const Trace& t_;
  std::map<uint32_t, std::string> quoted_;
};

// What one MPI record adds to the slice it happened in, as the members of a JSON object
// (without braces); false for records without details. Written by hand, not with nlohmann
// objects: the export of a large trace spent most of its time building them.
bool RecordArgs(const TraceEvent& e, CommNames& comms, std::string* out) {
  char b[160];
  switch (e.type) {
    case TraceEvent::kMpiSend:
    case TraceEvent::kMpiIsend:
    case TraceEvent::kMpiRecv:
    case TraceEvent::kMpiIrecv:
      std::snprintf(b, sizeof b, "\"bytes\":%llu,\"peer\":%d,\"tag\":%u,\"communicator\":",
                    (unsigned long long)e.bytes, int(e.peer), unsigned(e.tag));  // peer: world rank
      *out = b + comms(e.comm);
      break;
    case TraceEvent::kMpiCollectiveEnd:
    case TraceEvent::kNonBlockingCollectiveComplete:
      std::snprintf(b, sizeof b, "\"bytes\":%llu,\"bytes_received\":%llu,",
                    (unsigned long long)e.bytes, (unsigned long long)e.bytes_recv);
      *out = b;
      if (e.peer >= 0) *out += "\"root\":" + std::to_string(e.peer) + ",";
      *out += "\"communicator\":" + comms(e.comm);
      break;
    case TraceEvent::kMpiIsendComplete:
    case TraceEvent::kMpiIrecvRequest:
    case TraceEvent::kMpiRequestTest:
    case TraceEvent::kMpiRequestCancelled:
    case TraceEvent::kNonBlockingCollectiveRequest:
      out->clear();
      break;
    default:
      return false;
  }
  *out += std::string(out->empty() ? "" : ",") + "\"record\":\"" + EventTypeName(e.type) + "\"";
  if (e.type != TraceEvent::kMpiSend && e.type != TraceEvent::kMpiRecv &&
      e.type != TraceEvent::kMpiCollectiveEnd)
    *out += ",\"request\":" + std::to_string(e.request);
  return true;
}

// The MPI records directly inside one open region visit (not those of nested regions).
struct Records {
  std::vector<std::string> members;  // RecordArgs of each
  uint64_t bytes = 0;                // sum of their "bytes"
};

// A slice's args: the merged-call count of a coalesced visit and its records: one record's
// fields at the top level, several as "records" with their "bytes" summed. Always an object,
// "{}" when there is nothing to say: some readers (Chrome DevTools) require args on every event.
std::string SliceArgs(const TraceEvent& enter, const Records& r) {
  std::string a = "{";
  if (r.members.size() == 1) {
    a += r.members.front();
  } else if (r.members.size() > 1) {
    a += "\"bytes\":" + std::to_string(r.bytes) + ",\"records\":[";
    for (size_t i = 0; i < r.members.size(); ++i) a += (i ? ",{" : "{") + r.members[i] + "}";
    a += "]";
  }
  if (enter.calls > 1)
    a += (a.size() > 1 ? ",\"calls\":" : "\"calls\":") + std::to_string(enter.calls);
  return a + "}";
}

using TidOf = std::map<size_t, int>;  // location index -> tid within its rank

// Process (rank) and thread (location) names and order.
void WriteMetadata(const Trace& t, Out& o, TidOf* tid_of) {
  for (const auto& [rank, locs] : t.locations_of_rank) {
    o.Begin();
    std::fprintf(o.f,
                 "{\"ph\":\"M\",\"cat\":\"__metadata\",\"name\":\"process_name\",\"pid\":%d,"
                 "\"tid\":0,\"args\":{\"name\":%s}}",
                 rank, Quote("rank " + std::to_string(rank)).c_str());
    o.Begin();
    std::fprintf(o.f,
                 "{\"ph\":\"M\",\"cat\":\"__metadata\",\"name\":\"process_sort_index\",\"pid\":%d,"
                 "\"tid\":0,\"args\":{"
                 "\"sort_index\":%d}}",
                 rank, rank);
    for (size_t k = 0; k < locs.size(); ++k) {
      (*tid_of)[locs[k]] = int(k);
      o.Begin();
      std::fprintf(o.f,
                   "{\"ph\":\"M\",\"cat\":\"__metadata\",\"name\":\"thread_name\",\"pid\":%d,"
                   "\"tid\":%zu,\"args\":{\"name\":%s}}",
                   rank, k, Quote(t.locations[locs[k]].name).c_str());
    }
  }
}

// One complete slice per region visit, with the MPI records directly inside it as args.
void WriteSlices(const Trace& t, Out& o, TidOf& tid_of, CommNames& comms, PerfettoStats* st) {
  std::vector<std::string> names;
  for (const auto& r : t.regions) names.push_back(Quote(r.name));
  struct Open {
    const TraceEvent* enter;
    Records records;
  };
  std::string members;
  for (size_t li = 0; li < t.locations.size(); ++li) {
    const auto& l = t.locations[li];
    std::vector<Open> open;
    const double end = l.events.empty() ? 0 : l.events.back().time;
    auto slice = [&](const Open& v, double stop) {
      const TraceEvent& e = *v.enter;
      o.Begin();
      static const std::string unknown = "\"?\"";
      const std::string& name = e.region < names.size() ? names[e.region] : unknown;
      std::fprintf(o.f,
                   "{\"ph\":\"X\",\"cat\":\"mpi\",\"name\":%s,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                   "\"dur\":%.3f",
                   name.c_str(), l.rank, tid_of[li], e.time * 1e6, (stop - e.time) * 1e6);
      const std::string args = SliceArgs(e, v.records);
      std::fprintf(o.f, ",\"args\":%s}", args.c_str());
      if (args != "{}") ++st->slices_with_args;
      ++st->slices;
    };
    for (const auto& e : l.events) {
      if (e.type == TraceEvent::kEnter) {
        open.push_back({&e, {}});
      } else if (e.type == TraceEvent::kLeave) {
        if (!open.empty()) {
          slice(open.back(), e.time);
          open.pop_back();
        }
      } else if (!open.empty() && RecordArgs(e, comms, &members)) {
        Records& r = open.back().records;
        r.members.push_back(members);
        if (e.type != TraceEvent::kMpiIsendComplete && e.type != TraceEvent::kMpiIrecvRequest &&
            e.type != TraceEvent::kMpiRequestTest && e.type != TraceEvent::kMpiRequestCancelled &&
            e.type != TraceEvent::kNonBlockingCollectiveRequest)
          r.bytes += e.bytes;
      }
    }
    while (!open.empty()) {  // left open by a crash: closed at the location's last event
      slice(open.back(), end);
      open.pop_back();
    }
  }
}

// Metrics as counter tracks of the rank's process, one per metric (member): the sampler's
// (metric locations) and the per-call counters of thread locations. A track's name is the
// metric's, with its unit; the location's name goes first when the rank has several
// locations with metrics, so their tracks stay apart. Values are as recorded (accumulated
// metrics are running totals). JSON has no NaN or infinity: such values are left out.
void WriteCounters(const Trace& t, Out& o, PerfettoStats* st) {
  std::map<int32_t, int> metric_locs_of_rank;
  for (const auto& m : t.metric_locations)
    if (!m.samples.empty()) ++metric_locs_of_rank[m.rank];
  for (const auto& l : t.locations)
    if (!l.metrics.empty()) ++metric_locs_of_rank[l.rank];
  auto counters = [&](int32_t rank, const std::string& loc_name,
                      const std::vector<TraceMetricSample>& samples) {
    const std::string prefix = metric_locs_of_rank[rank] > 1 ? loc_name + ": " : "";
    std::map<uint32_t, std::vector<std::string>> track_names;  // class -> member track names
    for (const auto& s : samples) {
      auto& tracks = track_names[s.metric_class];
      if (tracks.empty()) {
        auto c = t.metric_classes.find(s.metric_class);
        for (size_t k = 0; k < s.values.size(); ++k) {
          std::string name = "metric " + std::to_string(k);
          if (c != t.metric_classes.end() && k < c->second.size() &&
              c->second[k] < t.metric_members.size()) {
            const auto& m = t.metric_members[c->second[k]];
            name = m.name + (m.unit.empty() ? "" : " (" + m.unit + ")");
          }
          tracks.push_back(Quote(prefix + name));
        }
      }
      for (size_t k = 0; k < s.values.size() && k < tracks.size(); ++k) {
        if (!std::isfinite(s.values[k])) continue;
        o.Begin();
        std::fprintf(o.f,
                     "{\"ph\":\"C\",\"cat\":\"metric\",\"name\":%s,\"pid\":%d,\"ts\":%.3f,"
                     "\"args\":{\"value\":%.17g}}",
                     tracks[k].c_str(), rank, s.time * 1e6, s.values[k]);
        ++st->counters;
      }
    }
  };
  for (const auto& m : t.metric_locations) counters(m.rank, m.name, m.samples);
  for (const auto& l : t.locations) counters(l.rank, l.name, l.metrics);
}

// One flow arrow per matched message, from the slice holding the send to the one holding the
// receive.
void WriteFlows(const Trace& t, Out& o, TidOf& tid_of, CommNames& comms, PerfettoStats* st) {
  uint64_t id = 0;
  for (const auto& m : t.messages) {
    ++id;
    const auto& sl = t.locations[m.send_loc];
    const auto& rl = t.locations[m.recv_loc];
    const std::string name =
        Quote("message tag " + std::to_string(m.tag) + ", " + std::to_string(m.bytes) + " B");
    char b[160];
    std::snprintf(b, sizeof b,
                  "{\"bytes\":%llu,\"received_bytes\":%llu,\"source\":%d,\"destination\":%d,"
                  "\"tag\":%u,\"communicator\":",
                  (unsigned long long)m.bytes, (unsigned long long)m.recv_bytes, int(m.src),
                  int(m.dst), unsigned(m.tag));
    const std::string args = b + comms(m.comm) + "}";
    o.Begin();
    std::fprintf(o.f,
                 "{\"ph\":\"s\",\"cat\":\"p2p\",\"name\":%s,\"id\":%llu,\"pid\":%d,\"tid\":%d,"
                 "\"ts\":%.3f,\"bp\":\"e\",\"args\":%s}",
                 name.c_str(), (unsigned long long)id, sl.rank, tid_of[m.send_loc],
                 EnclosingStart(sl, m.send_event) * 1e6, args.c_str());
    o.Begin();
    std::fprintf(o.f,
                 "{\"ph\":\"f\",\"cat\":\"p2p\",\"name\":%s,\"id\":%llu,\"pid\":%d,\"tid\":%d,"
                 "\"ts\":%.3f,\"bp\":\"e\",\"args\":%s}",
                 name.c_str(), (unsigned long long)id, rl.rank, tid_of[m.recv_loc],
                 EnclosingStart(rl, m.recv_event) * 1e6, args.c_str());
    ++st->flows;
  }
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
  TidOf tid_of;
  WriteMetadata(t, o, &tid_of);
  CommNames comms(t);
  WriteSlices(t, o, tid_of, comms, &st);
  WriteCounters(t, o, &st);
  WriteFlows(t, o, tid_of, comms, &st);
  std::fputs("\n]}\n", o.f);
  file.Commit();
  return st;
}

}  // namespace invmw::otf2
