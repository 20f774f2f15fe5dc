#include "otf2_writer/smpi_import.h"

#include <errno.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/event_format.h"
#include "otf2_writer/raw_run.h"

namespace invmw::otf2 {

namespace {

// Paje's event definitions as the file declares them: the field order of each event id.
struct EventDef {
  std::string name;
  std::vector<std::string> fields;
  int Field(const char* f) const {
    for (size_t i = 0; i < fields.size(); ++i)
      if (fields[i] == f) return static_cast<int>(i);
    return -1;
  }
};

// Splits a Paje line into fields: blanks separate, double quotes group.
bool Tokenize(std::string_view line, std::vector<std::string_view>* out) {
  out->clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    if (i >= line.size()) break;
    if (line[i] == '"') {
      size_t end = line.find('"', i + 1);
      if (end == std::string_view::npos) return false;
      out->push_back(line.substr(i + 1, end - i - 1));
      i = end + 1;
    } else {
      size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      out->push_back(line.substr(start, i - start));
    }
  }
  return true;
}

struct LinkEnd {
  int32_t rank = -1;
  long call = -1;  // index into the rank's calls, -1 outside any call
  double time = 0;
  uint64_t bytes = 0;
  int32_t tag = -1;
};

// The MPI functions SMPI traces, with the kind and class invmw's own recording gives them
// (pmpi_wrap/functions.list, gen_wrappers.py): the converter derives the OTF2 records from these.
struct Kind {
  const char* name;
  const char* kind;
  const char* cls;
};
const Kind kKinds[] = {
    {"MPI_Init", "special", "env"},
    {"MPI_Finalize", "special", "env"},
    {"MPI_Send", "send", "p2p"},
    {"MPI_Bsend", "send", "p2p"},
    {"MPI_Ssend", "send", "p2p"},
    {"MPI_Rsend", "send", "p2p"},
    {"MPI_Recv", "recv", "p2p"},
    {"MPI_Sendrecv", "sendrecv", "p2p"},
    {"MPI_Isend", "isend", "p2p"},
    {"MPI_Issend", "isend", "p2p"},
    {"MPI_Irecv", "irecv", "p2p"},
    {"MPI_Probe", "probe", "probe"},
    {"MPI_Iprobe", "iprobe", "probe"},
    {"MPI_Wait", "wait", "completion"},
    {"MPI_Waitall", "waitall", "completion"},
    {"MPI_Waitany", "waitany", "completion"},
    {"MPI_Waitsome", "waitsome", "completion"},
    {"MPI_Test", "test", "completion"},
    {"MPI_Testall", "testall", "completion"},
    {"MPI_Testany", "testany", "completion"},
    {"MPI_Testsome", "testsome", "completion"},
    {"MPI_Barrier", "barrier", "barrier"},
    {"MPI_Bcast", "bcast", "collective"},
    {"MPI_Reduce", "reduce", "collective"},
    {"MPI_Allreduce", "allreduce", "collective"},
    {"MPI_Scan", "allreduce", "collective"},
    {"MPI_Exscan", "allreduce", "collective"},
    {"MPI_Reduce_scatter", "reduce_scatter", "collective"},
    {"MPI_Gather", "gather", "collective"},
    {"MPI_Gatherv", "gatherv", "collective"},
    {"MPI_Scatter", "scatter", "collective"},
    {"MPI_Scatterv", "scatterv", "collective"},
    {"MPI_Allgather", "allgather", "collective"},
    {"MPI_Allgatherv", "allgatherv", "collective"},
    {"MPI_Alltoall", "alltoall", "collective"},
    {"MPI_Alltoallv", "alltoallv", "collective"},
};

const Kind* KindOf(const std::string& name) {
  for (const Kind& k : kKinds)
    if (name == k.name) return &k;
  return nullptr;
}

// Ranks are dense from 0 in SMPI's traces; a larger number would only size the rank table.
constexpr uint64_t kMaxRanks = uint64_t(1) << 20;

[[noreturn]] void Fail(const std::string& source, uint64_t line, const std::string& what) {
  throw SmpiTraceError(source + ":" + std::to_string(line) + ": " + what);
}

bool ParseDouble(std::string_view s, double* v) {
  if (s.empty() || s.size() > 64) return false;
  char buf[72];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = 0;
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(buf, &end);
  return end == buf + s.size() && errno == 0 && std::isfinite(*v) && *v >= 0 && *v < 1e12;
}

bool ParseUint(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + uint64_t(c - '0');
  }
  *v = x;
  return true;
}

}  // namespace

SmpiTrace ParsePaje(std::string_view text, const std::string& source) {
  SmpiTrace t;
  std::unordered_map<std::string, EventDef> defs;
  EventDef* open_def = nullptr;
  std::string open_id;
  std::unordered_map<std::string, std::string> values;  // entity alias -> name
  std::unordered_map<std::string, int32_t> rank_of;     // container alias -> rank
  std::map<int32_t, std::vector<std::string>> stacks;   // rank -> open states
  std::unordered_map<std::string, LinkEnd> starts, ends;
  std::vector<std::string> link_order;
  std::vector<std::string_view> tok;

  auto rank_ref = [&](int32_t r) -> SmpiRank& {
    if (r >= static_cast<int32_t>(t.ranks.size())) t.ranks.resize(size_t(r) + 1);
    t.ranks[size_t(r)].rank = r;
    return t.ranks[size_t(r)];
  };

  uint64_t lineno = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    if (!Tokenize(line, &tok)) Fail(source, lineno, "unterminated quoted field");
    if (tok.empty()) continue;
    if (line[0] == '%') {
      // "%EventDef NAME ID", "%  Field type", "%EndEventDef"
      std::string_view first = tok[0];
      if (first == "%EventDef") {
        if (tok.size() < 3) Fail(source, lineno, "%EventDef needs a name and an id");
        open_id = std::string(tok[2]);
        open_def = &defs[open_id];
        open_def->name = std::string(tok[1]);
        open_def->fields.clear();
      } else if (first == "%EndEventDef") {
        open_def = nullptr;
      } else if (open_def) {
        std::string_view f = first.size() > 1 ? first.substr(1) : (tok.size() > 1 ? tok[1] : "");
        if (f.empty()) Fail(source, lineno, "field line without a name");
        if (open_def->fields.size() >= 64) Fail(source, lineno, "more than 64 fields");
        open_def->fields.emplace_back(f);
      }
      continue;
    }
    auto it = defs.find(std::string(tok[0]));
    if (it == defs.end())
      Fail(source, lineno, "event id '" + std::string(tok[0]) + "' has no %EventDef");
    const EventDef& d = it->second;
    ++t.events;
    auto field = [&](const char* f, bool required) -> std::string_view {
      int i = d.Field(f);
      if (i < 0 || size_t(i) + 1 >= tok.size()) {
        if (required)
          Fail(source, lineno,
               d.name + " lacks its field " + f + " (" + std::to_string(tok.size() - 1) +
                   " field(s) on the line)");
        return {};
      }
      return tok[size_t(i) + 1];
    };
    double time = 0;
    if (d.Field("Time") >= 0) {
      std::string_view ts = field("Time", true);
      if (!ParseDouble(ts, &time))
        Fail(source, lineno, "Time '" + std::string(ts) + "' is not a time in seconds");
      if (time > t.end_time) t.end_time = time;
    }
    auto rank_of_container = [&](std::string_view alias) -> int32_t {
      auto r = rank_of.find(std::string(alias));
      return r == rank_of.end() ? -1 : r->second;
    };

    if (d.name == "PajeDefineEntityValue") {
      values[std::string(field("Alias", true))] = std::string(field("Name", true));
    } else if (d.name == "PajeCreateContainer") {
      std::string_view name = field("Name", true);
      if (name.substr(0, 5) == "rank-") {
        uint64_t r = 0;
        if (!ParseUint(name.substr(5), &r) || r >= kMaxRanks)
          Fail(source, lineno,
               "container '" + std::string(name) + "' is not rank-N (N below " +
                   std::to_string(kMaxRanks) + ")");
        rank_of[std::string(field("Alias", true))] = static_cast<int32_t>(r);
        rank_ref(static_cast<int32_t>(r));
      }
    } else if (d.name == "PajeDestroyContainer") {
      // SimGrid names the container by its alias here (field Name).
      int32_t r = rank_of_container(field("Name", true));
      if (r >= 0) {
        rank_ref(r).closed = true;
        rank_ref(r).end = time;
      }
    } else if (d.name == "PajePushState") {
      int32_t r = rank_of_container(field("Container", true));
      if (r < 0) continue;
      std::string v(field("Value", true));
      if (auto a = values.find(v); a != values.end()) v = a->second;
      auto& st = stacks[r];
      if (st.empty()) {
        SmpiCall c;
        c.func = v.rfind("PMPI_", 0) == 0 ? v.substr(1) : v;
        c.enter = c.leave = time;
        rank_ref(r).calls.push_back(std::move(c));
      }
      if (st.size() >= 1024) Fail(source, lineno, "states nested deeper than 1024");
      st.push_back(v);
      rank_ref(r).end = time;
    } else if (d.name == "PajePopState") {
      int32_t r = rank_of_container(field("Container", true));
      if (r < 0) continue;
      auto& st = stacks[r];
      if (st.empty())
        Fail(source, lineno, "PopState of rank " + std::to_string(r) + " without a state");
      st.pop_back();
      SmpiRank& rr = rank_ref(r);
      if (st.empty()) {
        if (time < rr.calls.back().enter)
          Fail(source, lineno, "a state of rank " + std::to_string(r) + " ends before it began");
        rr.calls.back().leave = time;
      }
      rr.end = time;
    } else if (d.name == "PajeStartLink" || d.name == "PajeEndLink") {
      const bool start = d.name == "PajeStartLink";
      int32_t r = rank_of_container(field(start ? "StartContainer" : "EndContainer", true));
      std::string key(field("Key", true));
      if (r < 0) continue;
      LinkEnd e;
      e.rank = r;
      e.time = time;
      const auto& st = stacks[r];
      e.call = st.empty() ? -1 : static_cast<long>(rank_ref(r).calls.size()) - 1;
      // Key: SRC_DST_TAG_SEQ.
      size_t u1 = key.find('_'), u2 = u1 == std::string::npos ? u1 : key.find('_', u1 + 1);
      size_t u3 = u2 == std::string::npos ? u2 : key.find('_', u2 + 1);
      if (u3 != std::string::npos) {
        double tag = 0;
        std::string_view tv = std::string_view(key).substr(u2 + 1, u3 - u2 - 1);
        if (ParseDouble(tv, &tag) && tag < 2147483647.0) e.tag = static_cast<int32_t>(tag);
      }
      if (start) {
        std::string_view size = field("Size", false);
        if (!size.empty() && !ParseUint(size, &e.bytes))
          Fail(source, lineno, "Size '" + std::string(size) + "' is not a byte count");
        if (!starts.emplace(key, e).second)
          Fail(source, lineno, "link key '" + key + "' started twice");
        link_order.push_back(key);
      } else {
        if (!ends.emplace(key, e).second)
          Fail(source, lineno, "link key '" + key + "' ended twice");
      }
    }
  }

  for (auto& r : t.ranks)
    if (r.rank < 0)
      t.problems.push_back("rank " + std::to_string(&r - t.ranks.data()) +
                           " has no container in the trace");
  for (const auto& [r, st] : stacks)
    if (!st.empty())
      t.problems.push_back("rank " + std::to_string(r) + " ends inside " + st.front());

  uint64_t unmatched = 0, outside = 0;
  for (const std::string& key : link_order) {
    const LinkEnd& s = starts[key];
    auto e = ends.find(key);
    if (e == ends.end()) {
      ++unmatched;
      continue;
    }
    if (s.call >= 0) {
      SmpiCall& c = t.ranks[size_t(s.rank)].calls[size_t(s.call)];
      if (!c.sent) {
        c.sent = true;
        c.peer = e->second.rank;
        c.tag = s.tag;
        c.bytes_sent = s.bytes;
      }
    } else {
      ++outside;
    }
    if (e->second.call >= 0) {
      SmpiCall& c = t.ranks[size_t(e->second.rank)].calls[size_t(e->second.call)];
      c.arrivals.push_back({s.rank, s.tag, s.bytes, e->second.time});
    } else {
      ++outside;
    }
  }
  if (unmatched)
    t.problems.push_back(std::to_string(unmatched) + " message(s) sent but never received");
  if (ends.size() + unmatched > starts.size())
    t.problems.push_back(std::to_string(ends.size() + unmatched - starts.size()) +
                         " message end(s) without a start");
  if (outside)
    t.problems.push_back(std::to_string(outside) + " message end(s) outside any MPI call");
  return t;
}

namespace {

uint64_t Ticks(double s) {
  return static_cast<uint64_t>(std::llround(s * kSmpiTicksPerSecond));
}

void WriteAll(FILE* f, const void* p, size_t n, const std::string& path) {
  if (n && std::fwrite(p, 1, n, f) != n)
    throw SmpiTraceError(path + ": write failed: " + std::strerror(errno));
}

void CloseChecked(FILE* f, const std::string& path) {
  if (std::fclose(f) != 0) throw SmpiTraceError(path + ": close failed: " + std::strerror(errno));
}

FILE* CreateNew(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "wbx");
  if (!f) throw SmpiTraceError(path + ": cannot create: " + std::strerror(errno));
  return f;
}

}  // namespace

void WriteSmpiRawRun(const SmpiTrace& trace, const std::string& run_dir,
                     const std::string& host_prefix) {
  using trace::EventRecord;
  const std::string raw = run_dir + "/raw";
  if (mkdir(raw.c_str(), 0755) != 0)
    throw SmpiTraceError(raw + ": cannot create (" + std::strerror(errno) +
                         "): a run directory gets its raw trace once");
  if (trace.ranks.empty()) throw SmpiTraceError("the SMPI trace has no rank (no rank-N container)");

  // One function table for every rank: the names the trace uses, in first-seen order.
  std::vector<std::string> names = {"MPI_Init", "MPI_Finalize"};
  std::map<std::string, uint16_t> index = {{"MPI_Init", 0}, {"MPI_Finalize", 1}};
  for (const SmpiRank& r : trace.ranks)
    for (const SmpiCall& c : r.calls)
      if (!index.count(c.func) && names.size() < 65535) {
        index[c.func] = static_cast<uint16_t>(names.size());
        names.push_back(c.func);
      }
  nlohmann::json jn = nlohmann::json::array(), jk = nlohmann::json::array(),
                 jc = nlohmann::json::array();
  for (const std::string& n : names) {
    const Kind* k = KindOf(n);
    jn.push_back(n);
    jk.push_back(k ? k->kind : "plain");
    jc.push_back(k ? k->cls : "other");
  }
  const int32_t world = static_cast<int32_t>(trace.ranks.size());

  for (const SmpiRank& r : trace.ranks) {
    const int32_t rank = static_cast<int32_t>(&r - trace.ranks.data());
    std::vector<EventRecord> recs;
    std::deque<uint64_t> pending_recv, pending_send;
    uint64_t next_request = 1;
    uint64_t init_ticks = 0, end_ticks = Ticks(r.end > 0 ? r.end : trace.end_time);
    bool finalized = false;
    auto base = [&](const SmpiCall& c) {
      EventRecord e{};
      e.t_enter = Ticks(c.enter);
      e.t_leave = Ticks(c.leave);
      e.peer = e.peer2 = -1;
      e.tag = e.tag2 = -1;
      e.func = index.count(c.func) ? index[c.func] : 0;
      e.type = trace::kCall;
      return e;
    };
    for (const SmpiCall& c : r.calls) {
      const Kind* k = KindOf(c.func);
      const std::string kind = k ? k->kind : "plain";
      EventRecord e = base(c);
      if (c.func == "MPI_Init") init_ticks = e.t_leave;
      if (c.func == "MPI_Finalize") {
        finalized = true;
        end_ticks = e.t_leave;
      }
      if (kind == "send") {
        e.peer = c.peer;
        e.tag = c.tag;
        e.bytes_sent = c.bytes_sent;
      } else if (kind == "recv") {
        if (!c.arrivals.empty()) {
          e.peer = c.arrivals[0].src;
          e.tag = c.arrivals[0].tag;
          e.bytes_recv = c.arrivals[0].bytes;
        }
      } else if (kind == "sendrecv") {
        e.peer = c.peer;
        e.tag = c.tag;
        e.bytes_sent = c.bytes_sent;
        if (!c.arrivals.empty()) {
          e.peer2 = c.arrivals[0].src;
          e.tag2 = c.arrivals[0].tag;
          e.bytes_recv = c.arrivals[0].bytes;
        }
      } else if (kind == "isend") {
        e.request = next_request++;
        e.peer = c.peer;
        e.tag = c.tag;
        e.bytes_sent = c.bytes_sent;
        pending_send.push_back(e.request);
      } else if (kind == "irecv") {
        // The source is known only from the message that completes it (header comment).
        e.request = next_request++;
        e.flags = trace::kFlagAnySource;
        pending_recv.push_back(e.request);
      } else if (k && std::strcmp(k->cls, "completion") == 0) {
        auto complete = [&](uint64_t req, int32_t src, int32_t tag, uint64_t bytes, double at) {
          EventRecord x{};
          x.type = trace::kCompletion;
          x.t_enter = x.t_leave = Ticks(at);
          x.request = req;
          x.peer = src;
          x.tag = tag;
          x.bytes_sent = bytes;
          x.func = e.func;
          x.peer2 = -1;
          x.tag2 = -1;
          recs.push_back(x);
        };
        for (const auto& a : c.arrivals) {
          if (pending_recv.empty()) break;
          complete(pending_recv.front(), a.src, a.tag, a.bytes, a.time);
          pending_recv.pop_front();
        }
        if (kind == "waitall" || kind == "testall") {
          while (!pending_send.empty()) {
            complete(pending_send.front(), -1, -1, 0, c.leave);
            pending_send.pop_front();
          }
        } else if (kind == "wait" && c.arrivals.empty() && !pending_send.empty()) {
          complete(pending_send.front(), -1, -1, 0, c.leave);
          pending_send.pop_front();
        }
      }
      recs.push_back(e);
    }

    const std::string defs_path = raw + "/" + DefsFileName(rank);
    auto line = [](const nlohmann::json& j) { return j.dump() + "\n"; };
    std::string defs;
    defs += line({{"type", "rank"},
                  {"rank", rank},
                  {"world_size", world},
                  {"host", host_prefix + std::to_string(rank)},
                  {"pid", 0},
                  {"flavor", "smpi"},
                  {"ticks_per_second", kSmpiTicksPerSecond},
                  {"init_ticks", init_ticks},
                  {"init_realtime_ns", 0}});
    defs += line({{"type", "functions"}, {"names", jn}, {"kinds", jk}, {"classes", jc}});
    // One simulated clock: every rank reads the same time.
    defs += line({{"type", "clock"},
                  {"phase", "init"},
                  {"ticks", init_ticks},
                  {"offset_ticks", 0},
                  {"uncertainty_ticks", 0}});
    defs += line({{"type", "thread"}, {"index", 0}, {"location", "main"}});
    if (finalized || r.closed) {
      defs += line({{"type", "clock"},
                    {"phase", "finalize"},
                    {"ticks", end_ticks},
                    {"offset_ticks", 0},
                    {"uncertainty_ticks", 0}});
      defs += line({{"type", "end"},
                    {"reason", finalized ? "finalize" : "exit"},
                    {"end_ticks", end_ticks},
                    {"ticks_per_second", kSmpiTicksPerSecond},
                    {"dropped_events", 0},
                    {"flushes", 0}});
    }
    FILE* f = CreateNew(defs_path);
    try {
      WriteAll(f, defs.data(), defs.size(), defs_path);
    } catch (...) {
      std::fclose(f);
      throw;
    }
    CloseChecked(f, defs_path);

    const std::string ev_path = raw + "/" + EventsFileName(rank, 0);
    trace::EventFileHeader h{};
    h.magic = trace::kEventMagic;
    h.version = trace::kEventVersion;
    h.header_size = sizeof h;
    h.record_size = sizeof(EventRecord);
    h.rank = rank;
    h.thread = 0;
    f = CreateNew(ev_path);
    try {
      WriteAll(f, &h, sizeof h, ev_path);
      WriteAll(f, recs.data(), recs.size() * sizeof(EventRecord), ev_path);
    } catch (...) {
      std::fclose(f);
      throw;
    }
    CloseChecked(f, ev_path);
  }
}

}  // namespace invmw::otf2
