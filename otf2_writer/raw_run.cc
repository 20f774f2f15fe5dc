#include "otf2_writer/raw_run.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <stdexcept>

#include "common/raw_input.h"
#include "otf2_writer/json_int.h"

namespace invmw::otf2 {
namespace fs = std::filesystem;
using nlohmann::json;

std::string DefsFileName(int32_t rank) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "defs-%06d.jsonl", rank);
  return buf;
}

std::string EventsFileName(int32_t rank, int32_t thread) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "events-%06d-%03d.bin", rank, thread);
  return buf;
}

uint64_t RawRun::NumRecords() const {
  uint64_t n = 0;
  for (const auto& r : ranks)
    for (const auto& t : r.threads) n += t.records.size();
  return n;
}

namespace {

template <typename T>
T Get(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, std::vector<int32_t>>)
    return AsVector<int32_t>(*it);
  else
    return As<T>(*it);
}

// Below one tick per second a rate is a corrupt value, and dividing by it overflows.
bool ValidTickRate(double tps) {
  return std::isfinite(tps) && tps >= 1;
}

// Applies one defs line to the rank; throws json errors for lines of the wrong shape.
void ApplyDefsLine(const json& j, RawRank* r) {
  const std::string type = j.at("type").get<std::string>();
  if (type == "rank") {
    // Range-checked before narrowing: readers allocate per world rank.
    const int64_t world = As<int64_t>(j.at("world_size"));
    const int64_t rank = As<int64_t>(j.at("rank"));
    if (world < 1 || world > rawio::kMaxWorldSize)
      throw std::runtime_error("\"world_size\" " + std::to_string(world) + " is outside 1.." +
                               std::to_string(rawio::kMaxWorldSize));
    if (rank < 0 || rank >= world)
      throw std::runtime_error("\"rank\" " + std::to_string(rank) + " is outside 0.." +
                               std::to_string(world - 1));
    const double tps = j.at("ticks_per_second").get<double>();
    if (!ValidTickRate(tps))
      throw std::runtime_error("\"ticks_per_second\" " + std::to_string(tps) +
                               ": expected a finite tick rate of at least 1 per second");
    r->rank = int32_t(rank);
    r->world_size = int32_t(world);
    r->host = Get<std::string>(j, "host", "");
    r->pid = Get<int64_t>(j, "pid", 0);
    r->flavor = Get<std::string>(j, "flavor", "");
    r->ticks_per_second = tps;
    r->init_ticks = Get<uint64_t>(j, "init_ticks", 0);
    r->init_realtime_ns = Get<int64_t>(j, "init_realtime_ns", 0);
  } else if (type == "functions") {
    // Checked before anything is stored: a rejected line must not leave arrays of different
    // lengths behind (readers index kinds and classes by the index of a name).
    auto names = j.at("names").get<std::vector<std::string>>();
    auto kinds = j.at("kinds").get<std::vector<std::string>>();
    auto classes = j.at("classes").get<std::vector<std::string>>();
    if (kinds.size() != names.size() || classes.size() != names.size())
      throw std::runtime_error("\"names\", \"kinds\" and \"classes\" differ in length");
    r->func_names = std::move(names);
    r->func_kinds = std::move(kinds);
    r->func_classes = std::move(classes);
  } else if (type == "comm") {
    RawComm c;
    c.id = As<uint32_t>(j.at("id"));
    c.members = AsVector<int32_t>(j.at("members"));
    c.remote_members = Get<std::vector<int32_t>>(j, "remote_members", {});
    c.inter = Get<bool>(j, "inter", false);
    c.seq = Get<int64_t>(j, "seq", int64_t(r->comms.size()));
    r->comms[c.id] = std::move(c);
  } else if (type == "clock") {
    ClockSample s;
    s.ticks = As<uint64_t>(j.at("ticks"));
    // The runtime computes offsets as midpoints of round trips: they may be fractional.
    s.offset_ticks = std::llround(j.at("offset_ticks").get<double>());
    s.uncertainty_ticks = std::llround(Get<double>(j, "uncertainty_ticks", 0));
    const std::string phase = j.at("phase").get<std::string>();
    if (phase == "init") {
      r->init_clock = s;
      r->has_init_clock = true;
    } else if (phase == "finalize") {
      r->finalize_clock = s;
      r->has_finalize_clock = true;
    } else {
      throw std::runtime_error("\"phase\" is \"" + phase + "\", expected init or finalize");
    }
  } else if (type == "counters") {
    r->counter_names = j.at("names").get<std::vector<std::string>>();
    r->counter_units = Get<std::vector<std::string>>(j, "units", {});
    if (r->counter_names.size() > 3)
      throw std::runtime_error("\"names\" lists more than the 3 counters a record holds");
  } else if (type == "thread") {
    int32_t index = As<int32_t>(j.at("index"));
    auto it = std::find_if(r->threads.begin(), r->threads.end(),
                           [&](const RawThread& t) { return t.index == index; });
    if (it == r->threads.end()) {
      r->threads.push_back({});
      it = r->threads.end() - 1;
      it->index = index;
    }
    it->name =
        Get<std::string>(j, "location", index == 0 ? "main" : "thread " + std::to_string(index));
  } else if (type == "end") {
    r->has_end = true;
    r->end_reason = Get<std::string>(j, "reason", "unknown");
    r->end_ticks = Get<uint64_t>(j, "end_ticks", 0);
    r->dropped_events = Get<uint64_t>(j, "dropped_events", 0);
    r->dropped_calls = Get<uint64_t>(j, "dropped_calls", 0);
    r->dropped_requests = Get<uint64_t>(j, "dropped_requests", 0);
    r->flushes = Get<uint64_t>(j, "flushes", 0);
    // The rate measured over the whole run is better than the one at MPI_Init, if usable.
    const double tps = Get<double>(j, "ticks_per_second", 0);
    if (tps != 0 && !ValidTickRate(tps))
      throw std::runtime_error("\"ticks_per_second\" " + std::to_string(tps) +
                               ": expected a finite tick rate of at least 1 per second");
    if (tps > 0) r->ticks_per_second = tps;
  }
  // Unknown types are newer facts this reader does not use: ignored on purpose.
}

// The events file name's rank and thread, only in the exact form EventsFileName writes.
bool ParseEventsFileName(const std::string& n, int32_t* rank, int32_t* thread) {
  const std::string_view s(n);
  if (s.size() < 7 + 6 + 1 + 3 + 4 || s.substr(0, 7) != "events-" ||
      s.substr(s.size() - 4) != ".bin")
    return false;
  const std::string_view mid = s.substr(7, s.size() - 11);
  const size_t dash = mid.find('-');
  return dash != std::string_view::npos && rawio::ParseNameNumber(mid.substr(0, dash), 6, rank) &&
         rawio::ParseNameNumber(mid.substr(dash + 1), 3, thread);
}

bool ParseDefsFileName(const std::string& n, int32_t* rank) {
  const std::string_view s(n);
  return s.size() >= 5 + 6 + 6 && s.substr(0, 5) == "defs-" && s.substr(s.size() - 6) == ".jsonl" &&
         rawio::ParseNameNumber(s.substr(5, s.size() - 11), 6, rank);
}

// Largest raw file loaded into memory: the machine's memory (a sparse file of a terabyte, or a
// corrupt one, must be refused by size, not by the OOM killer).
uint64_t MemoryBound() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(1) << 34;
}

constexpr uint64_t kMaxDefsBytes = uint64_t(1) << 30;

}  // namespace

bool ParseDefs(std::string_view text, const std::string& name, RawRank* r,
               std::vector<std::string>* problems) {
  int lineno = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      ApplyDefsLine(json::parse(line), r);
    } catch (const std::exception& e) {
      // A crash can cut the last line; anything else is a writer bug worth naming.
      problems->push_back(name + ":" + std::to_string(lineno) + ": unusable line (" + e.what() +
                          ")");
      r->damaged = true;
    }
  }
  if (r->rank < 0 || r->ticks_per_second <= 0) {
    problems->push_back(name + ": no valid \"rank\" line (rank and ticks_per_second expected)");
    return false;
  }
  if (r->func_names.empty()) {
    problems->push_back(name + ": no \"functions\" line; the rank's events cannot be named");
    return false;
  }
  if (!r->has_end)
    problems->push_back(name + ": no \"end\" line: rank " + std::to_string(r->rank) +
                        " did not stop cleanly (crash?)");
  if (r->dropped_events)
    problems->push_back(name + ": rank " + std::to_string(r->rank) + " dropped " +
                        std::to_string(r->dropped_events) + " events (trace is partial)");
  if (r->dropped_calls)
    problems->push_back(name + ": rank " + std::to_string(r->rank) + " did not record " +
                        std::to_string(r->dropped_calls) +
                        " calls of threads beyond INVMW_WRAP_MAX_THREADS (trace is partial)");
  if (r->dropped_requests)
    problems->push_back(name + ": rank " + std::to_string(r->rank) + " did not track " +
                        std::to_string(r->dropped_requests) +
                        " requests beyond INVMW_WRAP_MAX_REQUESTS (trace is partial)");
  return true;
}

namespace {

bool LoadDefs(const fs::path& path, RawRank* r, std::vector<std::string>* problems) {
  const std::string name = "raw/" + path.filename().string();
  std::string text, err;
  if (!rawio::ReadRegularFile(path.string(), kMaxDefsBytes, &text, &err)) {
    problems->push_back(name + ": cannot be read: " + err + "; rank skipped");
    return false;
  }
  return ParseDefs(text, name, r, problems);
}

}  // namespace

void LoadRankEvents(const std::string& run_dir, RawRank* r, std::vector<std::string>* problems) {
  const fs::path raw = fs::path(run_dir) / "raw";
  std::vector<std::pair<int32_t, fs::path>> files;
  std::error_code ec;
  for (fs::directory_iterator it(raw, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string fname = it->path().filename().string();
    int32_t rank = 0, thread = 0;
    // Other names (copies, "events-1-0.bin") are reported once by LoadRawRun.
    if (ParseEventsFileName(fname, &rank, &thread) && rank == r->rank)
      files.emplace_back(thread, it->path());
  }
  if (ec) {
    problems->push_back("raw/: cannot be listed (" + ec.message() + "); rank " +
                        std::to_string(r->rank) + " has no events");
    r->damaged = true;
  }
  std::sort(files.begin(), files.end());
  for (auto& t : r->threads) t.records.clear();
  const uint64_t max_bytes = MemoryBound();
  for (const auto& [index, path] : files) {
    const std::string name = "raw/" + path.filename().string();
    std::string err;
    uint64_t size = 0;
    const int fd = rawio::OpenRegularFile(path.string(), max_bytes, &size, &err);
    if (fd < 0) {
      problems->push_back(name + ": cannot be read: " + err + "; file skipped");
      r->damaged = true;
      continue;
    }
    struct Closer {
      int fd;
      ~Closer() { close(fd); }
    } closer{fd};
    trace::EventFileHeader h{};
    if (size < sizeof h) {
      problems->push_back(name + ": shorter than its header (" + std::to_string(sizeof h) +
                          " bytes); file skipped");
      continue;
    }
    if (!rawio::ReadAt(fd, &h, sizeof h, 0, &err)) {
      problems->push_back(name + ": " + err + "; file skipped");
      r->damaged = true;
      continue;
    }
    // Version 1 differs only in having no call-site slots (kFlagCallSite never set).
    if (h.magic != trace::kEventMagic || (h.version != trace::kEventVersion && h.version != 1) ||
        h.header_size != sizeof h || h.record_size != sizeof(trace::EventRecord)) {
      problems->push_back(name + ": header is not an invmw event file of version " +
                          std::to_string(trace::kEventVersion) + " with " +
                          std::to_string(sizeof(trace::EventRecord)) +
                          "-byte records; file skipped");
      continue;
    }
    if (h.rank != r->rank || h.thread != index) {
      problems->push_back(name + ": header says rank " + std::to_string(h.rank) + " thread " +
                          std::to_string(h.thread) + ", the name says otherwise; file skipped");
      continue;
    }
    // An init-capture: clang before 16 cannot capture a structured binding.
    auto it = std::find_if(r->threads.begin(), r->threads.end(),
                           [index = index](const RawThread& t) { return t.index == index; });
    if (it == r->threads.end()) {
      r->threads.push_back({});
      it = r->threads.end() - 1;
      it->index = index;
      it->name = index == 0 ? "main" : "thread " + std::to_string(index);
    }
    // Only what fstat reported is read: a file still growing does not make this unbounded.
    const uint64_t body = size - sizeof h;
    const uint64_t n = body / sizeof(trace::EventRecord);
    try {
      it->records.resize(n);
    } catch (const std::exception&) {
      problems->push_back(name + ": " + std::to_string(n) +
                          " records do not fit in memory; file skipped");
      r->damaged = true;
      continue;
    }
    if (!rawio::ReadAt(fd, it->records.data(), n * sizeof(trace::EventRecord), sizeof h, &err)) {
      problems->push_back(name + ": " + err + "; file skipped");
      std::vector<trace::EventRecord>().swap(it->records);
      r->damaged = true;
      continue;
    }
    // Call-site slots leave the request field here, so no reader of records sees them.
    for (size_t k = 0; k < it->records.size(); ++k) {
      trace::EventRecord& rec = it->records[k];
      if (const uint32_t slot1 = trace::CallSiteSlot1(rec)) {
        if (it->site_slots.empty()) it->site_slots.assign(it->records.size(), 0);
        it->site_slots[k] = slot1;
        rec.request = trace::CallRequest(rec);
        rec.flags &= uint8_t(~trace::kFlagCallSite);
      }
    }
    if (uint64_t rest = body % sizeof(trace::EventRecord)) {
      problems->push_back(name + ": last record cut short (" + std::to_string(rest) +
                          " trailing bytes dropped; crash during write?)");
      r->damaged = true;
    }
  }
  for (auto& t : r->threads)
    if (std::find_if(files.begin(), files.end(),
                     [&](const auto& f) { return f.first == t.index; }) == files.end()) {
      problems->push_back("raw/" + EventsFileName(r->rank, t.index) + ": missing (thread " +
                          std::to_string(t.index) + " of rank " + std::to_string(r->rank) +
                          " has no events)");
      r->damaged = true;
    }
  std::sort(r->threads.begin(), r->threads.end(),
            [](const RawThread& a, const RawThread& b) { return a.index < b.index; });
}

bool LoadRankDefs(const std::string& run_dir, int32_t rank, RawRank* out,
                  std::vector<std::string>* problems) {
  if (!LoadDefs(fs::path(run_dir) / "raw" / DefsFileName(rank), out, problems)) return false;
  if (out->rank != rank) {
    problems->push_back("raw/" + DefsFileName(rank) + ": holds rank " + std::to_string(out->rank));
    return false;
  }
  return true;
}

RawRun LoadRawRun(const std::string& run_dir, const LoadOptions& options) {
  RawRun run;
  run.dir = run_dir;
  const fs::path raw = fs::path(run_dir) / "raw";
  std::error_code ec;
  if (!fs::is_directory(raw, ec))
    throw std::runtime_error(raw.string() + ": no such directory (no raw trace)");
  std::vector<fs::path> defs;
  for (fs::directory_iterator it(raw, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string fname = it->path().filename().string();
    int32_t rank = 0, thread = 0;
    if (fname.rfind("defs-", 0) == 0) {
      if (ParseDefsFileName(fname, &rank))
        defs.push_back(it->path());
      else
        run.problems.push_back("raw/" + fname +
                               ": not a defs file name (defs-NNNNNN.jsonl); ignored");
    } else if (fname.rfind("events-", 0) == 0 && !ParseEventsFileName(fname, &rank, &thread)) {
      run.problems.push_back("raw/" + fname +
                             ": not an events file name (events-NNNNNN-TTT.bin); ignored");
    }
  }
  if (ec) throw std::runtime_error(raw.string() + ": cannot be listed: " + ec.message());
  std::sort(defs.begin(), defs.end());
  std::vector<RawRank> loaded;
  std::map<int32_t, int> world_votes;
  for (const auto& path : defs) {
    RawRank r;
    if (!LoadDefs(path, &r, &run.problems)) continue;
    if (path.filename().string() != DefsFileName(r.rank)) {
      run.problems.push_back("raw/" + path.filename().string() + ": holds rank " +
                             std::to_string(r.rank) + "; file skipped");
      continue;
    }
    ++world_votes[r.world_size];
    loaded.push_back(std::move(r));
  }
  // The world size most ranks agree on (the smaller one on a tie): a defs file of another
  // world size is corrupt or from another run, and must not make the archive that large.
  int best = 0;
  for (const auto& [w, votes] : world_votes)
    if (votes > best) best = votes, run.world_size = w;
  const RawRank* witness = nullptr;
  for (const auto& r : loaded)
    if (r.world_size == run.world_size && !witness) witness = &r;
  for (auto& r : loaded) {
    if (r.world_size != run.world_size || r.rank >= run.world_size) {
      run.problems.push_back("raw/" + DefsFileName(r.rank) + ": world size " +
                             std::to_string(r.world_size) + ", but raw/" +
                             DefsFileName(witness->rank) + " says " +
                             std::to_string(run.world_size) + "; file skipped");
      continue;
    }
    run.ranks.push_back(std::move(r));
  }
  // By number: names sort differently once ranks have more than six digits.
  std::sort(run.ranks.begin(), run.ranks.end(),
            [](const RawRank& a, const RawRank& b) { return a.rank < b.rank; });
  if (run.ranks.empty())
    throw std::runtime_error(raw.string() + ": no readable defs-R.jsonl file (no rank to convert)");
  // Missing ranks, runs of them in one line (a world of millions must not mean millions of lines).
  auto absent = [&](int32_t from, int32_t to) {
    if (from == to)
      run.problems.push_back("raw/" + DefsFileName(from) + ": missing or unusable: rank " +
                             std::to_string(from) + " is absent from the trace");
    else if (from < to)
      run.problems.push_back("raw/" + DefsFileName(from) + " .. raw/" + DefsFileName(to) +
                             ": missing or unusable: ranks " + std::to_string(from) + ".." +
                             std::to_string(to) + " are absent from the trace");
  };
  int32_t next = 0;
  for (const auto& r : run.ranks) {
    absent(next, r.rank - 1);
    next = r.rank + 1;
  }
  absent(next, run.world_size - 1);
  if (options.events)
    for (auto& r : run.ranks) LoadRankEvents(run_dir, &r, &run.problems);
  return run;
}

}  // namespace invmw::otf2
