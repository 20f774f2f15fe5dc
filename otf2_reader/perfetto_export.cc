#include "otf2_reader/perfetto_export.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <queue>
#include <tuple>
#include <stdexcept>
#include <vector>

#include "otf2_reader/stream_match.h"
#include "otf2_writer/output_files.h"

namespace invmw::otf2 {
namespace {
namespace fs = std::filesystem;

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

// One complete slice per region visit of one location, with the MPI records directly inside
// it as args, given the location's events one at a time: what it holds is the open visits.
class SliceWriter {
 public:
  SliceWriter(Out& o, const std::vector<std::string>& names, int32_t rank, int tid,
              CommNames& comms, PerfettoStats* st)
      : o_(o), names_(names), rank_(rank), tid_(tid), comms_(comms), st_(st) {}
  void Event(const TraceEvent& e) {
    last_ = e.time;
    if (e.type == TraceEvent::kEnter) {
      open_.push_back({e, {}});
    } else if (e.type == TraceEvent::kLeave) {
      if (!open_.empty()) {
        Slice(open_.back(), e.time);
        open_.pop_back();
      }
    } else if (!open_.empty() && RecordArgs(e, comms_, &members_)) {
      Records& r = open_.back().records;
      r.members.push_back(members_);
      if (e.type != TraceEvent::kMpiIsendComplete && e.type != TraceEvent::kMpiIrecvRequest &&
          e.type != TraceEvent::kMpiRequestTest && e.type != TraceEvent::kMpiRequestCancelled &&
          e.type != TraceEvent::kNonBlockingCollectiveRequest)
        r.bytes += e.bytes;
    }
  }
  // Visits left open by a crash: closed at the location's last event.
  void End() {
    while (!open_.empty()) {
      Slice(open_.back(), last_);
      open_.pop_back();
    }
  }

 private:
  struct Open {
    TraceEvent enter;
    Records records;
  };
  void Slice(const Open& v, double stop) {
    const TraceEvent& e = v.enter;
    o_.Begin();
    static const std::string unknown = "\"?\"";
    const std::string& name = e.region < names_.size() ? names_[e.region] : unknown;
    std::fprintf(o_.f,
                 "{\"ph\":\"X\",\"cat\":\"mpi\",\"name\":%s,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                 "\"dur\":%.3f",
                 name.c_str(), rank_, tid_, e.time * 1e6, (stop - e.time) * 1e6);
    const std::string args = SliceArgs(e, v.records);
    std::fprintf(o_.f, ",\"args\":%s}", args.c_str());
    if (args != "{}") ++st_->slices_with_args;
    ++st_->slices;
  }
  Out& o_;
  const std::vector<std::string>& names_;
  int32_t rank_;
  int tid_;
  CommNames& comms_;
  PerfettoStats* st_;
  std::vector<Open> open_;
  std::string members_;
  double last_ = 0;
};

std::vector<std::string> RegionNames(const Trace& t) {
  std::vector<std::string> names;
  for (const auto& r : t.regions) names.push_back(Quote(r.name));
  return names;
}

// Metrics as counter tracks of the rank's process, one per metric (member): the sampler's
// (metric locations) and the per-call counters of thread locations. A track's name is the
// metric's, with its unit; the location's name goes first when the rank has several
// locations with metrics, so their tracks stay apart. Values are as recorded (accumulated
// metrics are running totals). JSON has no NaN or infinity: such values are left out.
// One location's samples as counter values, given one at a time: what it holds is the track
// names of its metric classes.
class CounterWriter {
 public:
  CounterWriter(const Trace& t, Out& o, int32_t rank, std::string prefix, PerfettoStats* st)
      : t_(t), o_(o), rank_(rank), prefix_(std::move(prefix)), st_(st) {}
  void Sample(const TraceMetricSample& s) {
    auto& tracks = track_names_[s.metric_class];
    if (tracks.empty()) {
      auto c = t_.metric_classes.find(s.metric_class);
      for (size_t k = 0; k < s.values.size(); ++k) {
        std::string name = "metric " + std::to_string(k);
        if (c != t_.metric_classes.end() && k < c->second.size() &&
            c->second[k] < t_.metric_members.size()) {
          const auto& m = t_.metric_members[c->second[k]];
          name = m.name + (m.unit.empty() ? "" : " (" + m.unit + ")");
        }
        tracks.push_back(Quote(prefix_ + name));
      }
    }
    for (size_t k = 0; k < s.values.size() && k < tracks.size(); ++k) {
      if (!std::isfinite(s.values[k])) continue;
      o_.Begin();
      std::fprintf(o_.f,
                   "{\"ph\":\"C\",\"cat\":\"metric\",\"name\":%s,\"pid\":%d,\"ts\":%.3f,"
                   "\"args\":{\"value\":%.17g}}",
                   tracks[k].c_str(), rank_, s.time * 1e6, s.values[k]);
      ++st_->counters;
    }
  }

 private:
  const Trace& t_;
  Out& o_;
  int32_t rank_;
  std::string prefix_;
  PerfettoStats* st_;
  std::map<uint32_t, std::vector<std::string>> track_names_;  // class -> member track names
};

// One flow arrow per matched message, from the slice holding the send to the one holding the
// receive (each at the start of its enclosing slice).
void WriteFlow(Out& o, CommNames& comms, uint64_t id, int32_t src, int32_t dst, uint32_t comm,
               uint32_t tag, uint64_t bytes, uint64_t recv_bytes, int32_t send_rank, int send_tid,
               double send_start, int32_t recv_rank, int recv_tid, double recv_start) {
  const std::string name =
      Quote("message tag " + std::to_string(tag) + ", " + std::to_string(bytes) + " B");
  char b[160];
  std::snprintf(b, sizeof b,
                "{\"bytes\":%llu,\"received_bytes\":%llu,\"source\":%d,\"destination\":%d,"
                "\"tag\":%u,\"communicator\":",
                (unsigned long long)bytes, (unsigned long long)recv_bytes, int(src), int(dst),
                unsigned(tag));
  const std::string args = b + comms(comm) + "}";
  // The arrow's start ("s") at the send's slice, its end ("f") at the receive's.
  auto end = [&](char ph, int32_t rank, int tid, double start) {
    o.Begin();
    std::fprintf(o.f,
                 "{\"ph\":\"%c\",\"cat\":\"p2p\",\"name\":%s,\"id\":%llu,\"pid\":%d,\"tid\":%d,"
                 "\"ts\":%.3f,\"bp\":\"e\",\"args\":%s}",
                 ph, name.c_str(), (unsigned long long)id, rank, tid, start * 1e6, args.c_str());
  };
  end('s', send_rank, send_tid, send_start);
  end('f', recv_rank, recv_tid, recv_start);
}

// An unnamed temporary file beside `near` (O_TMPFILE: nothing to clean up, even after a
// crash), else in the temporary directory.
FILE* ScratchFile(const std::string& near) {
  std::string dir = fs::path(near).parent_path().string();
  if (dir.empty()) dir = ".";
#ifdef O_TMPFILE
  const int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) {
    if (FILE* f = fdopen(fd, "w+")) return f;
    close(fd);
  }
#endif
  FILE* f = std::tmpfile();
  if (!f)
    throw std::runtime_error(near + ": cannot create a temporary file (" + std::strerror(errno) +
                             ")");
  return f;
}

// The arrows in the file's order (by send start; equal starts by the send's location and
// event) without holding them: runs of kRun sorted in memory and written to a scratch file,
// then merged with a small buffer per run (an external merge sort). Memory: kRun records, and
// kBuf per run (one run per kRun messages: 5 MiB, and 20 KiB per 65,536 messages).
class FlowSorter {
 public:
  struct Rec {
    double send_time;
    uint64_t send_loc, send_index;
    int32_t src, dst;
    uint32_t comm, tag;
    uint64_t bytes, recv_bytes;
    uint64_t recv_loc;
    double send_start, recv_start;
    bool operator<(const Rec& o) const {
      return std::tie(send_time, send_loc, send_index) <
             std::tie(o.send_time, o.send_loc, o.send_index);
    }
  };
  explicit FlowSorter(const std::string& out_path) : out_path_(out_path) {}
  ~FlowSorter() {
    if (scratch_) std::fclose(scratch_);
  }
  void Add(const Rec& r) {
    buf_.push_back(r);
    if (buf_.size() >= kRun) Spill();
  }
  // Gives the records to fn in order.
  template <class Fn>
  void Each(Fn fn) {
    if (runs_.empty()) {
      std::sort(buf_.begin(), buf_.end());
      for (const Rec& r : buf_) fn(r);
      return;
    }
    Spill();
    std::vector<Rec>().swap(buf_);
    if (std::fflush(scratch_) != 0 || std::ferror(scratch_)) Fail("writing");
    struct Run {
      uint64_t next, end;  // record positions in the scratch file
      std::vector<Rec> buf;
      size_t pos = 0;
    };
    std::vector<Run> runs;
    for (const auto& [begin, end] : runs_) runs.push_back({begin, end, {}, 0});
    auto fill = [&](Run& r) {
      const uint64_t n = std::min<uint64_t>(kBuf, r.end - r.next);
      r.buf.resize(n);
      r.pos = 0;
      if (n == 0) return false;
      const ssize_t want = ssize_t(n * sizeof(Rec));
      if (pread(fileno(scratch_), r.buf.data(), size_t(want), off_t(r.next * sizeof(Rec))) != want)
        Fail("reading");
      r.next += n;
      return true;
    };
    using Head = std::pair<Rec, size_t>;
    auto later = [](const Head& a, const Head& b) { return b.first < a.first; };
    std::priority_queue<Head, std::vector<Head>, decltype(later)> heap(later);
    for (size_t k = 0; k < runs.size(); ++k)
      if (fill(runs[k])) heap.push({runs[k].buf[0], k});
    while (!heap.empty()) {
      const size_t k = heap.top().second;
      fn(heap.top().first);
      heap.pop();
      Run& r = runs[k];
      if (++r.pos < r.buf.size() || fill(r)) heap.push({r.buf[r.pos], k});
    }
  }

 private:
  static constexpr size_t kRun = size_t(1) << 16, kBuf = 256;
  void Spill() {
    if (buf_.empty()) return;
    if (!scratch_) scratch_ = ScratchFile(out_path_);
    std::sort(buf_.begin(), buf_.end());
    if (std::fwrite(buf_.data(), sizeof(Rec), buf_.size(), scratch_) != buf_.size())
      Fail("writing");
    runs_.push_back({written_, written_ + buf_.size()});
    written_ += buf_.size();
    buf_.clear();
  }
  [[noreturn]] void Fail(const char* what) {
    throw std::runtime_error(out_path_ + ": not written (" + what +
                             " a temporary file: " + std::strerror(errno) + ")");
  }
  std::string out_path_;
  FILE* scratch_ = nullptr;
  std::vector<Rec> buf_;
  std::vector<std::pair<uint64_t, uint64_t>> runs_;
  uint64_t written_ = 0;
};

void CheckWritten(FILE* f, const std::string& out_path) {
  if (std::ferror(f))
    throw std::runtime_error(out_path + ": not written (" + std::strerror(errno) + ")");
}

}  // namespace

PerfettoStats ExportPerfettoStreaming(Trace* trace, const std::string& out_path) {
  Trace& t = *trace;
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

  // Pass 1, all locations in time order: the messages, matched as the stream goes, their
  // arrows sorted aside (they follow the slices and counters); the samples counted.
  FlowSorter flows(out_path);
  std::vector<uint64_t> metric_samples(t.metric_locations.size(), 0);
  std::vector<uint64_t> call_samples(t.locations.size(), 0);
  {
    StreamMatcher matcher(t, [&](const StreamMessage& m) {
      flows.Add({m.send_time, m.send.loc, m.send.index, m.src, m.dst, m.comm, m.tag, m.bytes,
                 m.recv_bytes, m.recv.loc, m.send.enclosing, m.recv.enclosing});
    });
    StreamOptions so;
    so.event = [&](size_t li, uint64_t index, const TraceEvent& e, const UncompletedRecv* posted) {
      matcher.Event(li, index, e, posted);
    };
    so.metric = [&](bool on_metric_location, size_t li, const TraceMetricSample&) {
      ++(on_metric_location ? metric_samples : call_samples)[li];
    };
    StreamTrace(&t, so);
    matcher.Finish();
  }
  // Pass 2, one location at a time (the slices of a location together, in location order).
  const std::vector<std::string> names = RegionNames(t);
  const std::vector<char> no_metric_locations(t.metric_locations.size(), 0);
  for (size_t li = 0; li < t.locations.size(); ++li) {
    SliceWriter w(o, names, t.locations[li].rank, tid_of[li], comms, &st);
    StreamOptions so;
    so.locations.assign(t.locations.size(), 0);
    so.locations[li] = 1;
    so.metric_locations = no_metric_locations;
    if (t.metric_locations.empty()) so.metric_locations.assign(1, 0);  // empty means all
    so.event = [&](size_t, uint64_t, const TraceEvent& e, const UncompletedRecv*) { w.Event(e); };
    StreamTrace(&t, so);
    w.End();
    CheckWritten(o.f, out_path);
  }
  // Pass 3: counters, location by location (the sampler's metric locations, then the per-call
  // counters of thread locations).
  std::map<int32_t, int> metric_locs_of_rank;
  for (size_t mi = 0; mi < t.metric_locations.size(); ++mi)
    if (metric_samples[mi]) ++metric_locs_of_rank[t.metric_locations[mi].rank];
  for (size_t li = 0; li < t.locations.size(); ++li)
    if (call_samples[li]) ++metric_locs_of_rank[t.locations[li].rank];
  auto counters = [&](bool metric_location, size_t i) {
    const int32_t rank = metric_location ? t.metric_locations[i].rank : t.locations[i].rank;
    const std::string& name = metric_location ? t.metric_locations[i].name : t.locations[i].name;
    CounterWriter w(t, o, rank, metric_locs_of_rank[rank] > 1 ? name + ": " : "", &st);
    StreamOptions so;
    so.locations.assign(std::max<size_t>(1, t.locations.size()), 0);
    so.metric_locations.assign(std::max<size_t>(1, t.metric_locations.size()), 0);
    (metric_location ? so.metric_locations : so.locations)[i] = 1;
    so.metric = [&](bool, size_t, const TraceMetricSample& s) { w.Sample(s); };
    StreamTrace(&t, so);
    CheckWritten(o.f, out_path);
  };
  for (size_t mi = 0; mi < t.metric_locations.size(); ++mi)
    if (metric_samples[mi]) counters(true, mi);
  for (size_t li = 0; li < t.locations.size(); ++li)
    if (call_samples[li]) counters(false, li);
  flows.Each([&](const FlowSorter::Rec& m) {
    WriteFlow(o, comms, ++st.flows, m.src, m.dst, m.comm, m.tag, m.bytes, m.recv_bytes,
              t.locations[m.send_loc].rank, tid_of[m.send_loc], m.send_start,
              t.locations[m.recv_loc].rank, tid_of[m.recv_loc], m.recv_start);
  });
  std::fputs("\n]}\n", o.f);
  CheckWritten(o.f, out_path);
  file.Commit();
  return st;
}

}  // namespace invmw::otf2
