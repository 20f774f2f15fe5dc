#include "otf2_writer/raw_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

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

// Applies one defs line to the rank; throws json errors for lines of the wrong shape.
void ApplyDefsLine(const json& j, RawRank* r) {
  const std::string type = j.at("type").get<std::string>();
  if (type == "rank") {
    r->rank = As<int32_t>(j.at("rank"));
    r->world_size = As<int32_t>(j.at("world_size"));
    r->host = Get<std::string>(j, "host", "");
    r->pid = Get<int64_t>(j, "pid", 0);
    r->flavor = Get<std::string>(j, "flavor", "");
    r->ticks_per_second = j.at("ticks_per_second").get<double>();
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
    r->flushes = Get<uint64_t>(j, "flushes", 0);
    if (double tps = Get<double>(j, "ticks_per_second", 0); tps > 0) r->ticks_per_second = tps;
  }
  // Unknown types are newer facts this reader does not use: ignored on purpose.
}

bool LoadDefs(const fs::path& path, RawRank* r, std::vector<std::string>* problems) {
  std::ifstream in(path);
  const std::string name = "raw/" + path.filename().string();
  if (!in) {
    problems->push_back(name + ": cannot be opened");
    return false;
  }
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
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
  return true;
}

}  // namespace

void LoadRankEvents(const std::string& run_dir, RawRank* r, std::vector<std::string>* problems) {
  const fs::path raw = fs::path(run_dir) / "raw";
  const std::regex pat("events-(\\d+)-(\\d+)\\.bin");
  std::vector<std::pair<int32_t, fs::path>> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(raw, ec)) {
    std::smatch m;
    const std::string fname = e.path().filename().string();
    if (std::regex_match(fname, m, pat) && std::stoi(m[1]) == r->rank)
      files.emplace_back(std::stoi(m[2]), e.path());
  }
  for (auto& t : r->threads) t.records.clear();
  for (const auto& [index, path] : files) {
    const std::string name = "raw/" + path.filename().string();
    std::ifstream in(path, std::ios::binary);
    trace::EventFileHeader h{};
    if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) {
      problems->push_back(name + ": shorter than its header (" + std::to_string(sizeof h) +
                          " bytes); file skipped");
      continue;
    }
    if (h.magic != trace::kEventMagic || h.version != trace::kEventVersion ||
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
    in.seekg(0, std::ios::end);
    const uint64_t body = uint64_t(in.tellg()) - sizeof h;
    const uint64_t n = body / sizeof(trace::EventRecord);
    it->records.resize(n);
    in.seekg(sizeof h);
    in.read(reinterpret_cast<char*>(it->records.data()),
            std::streamsize(n * sizeof(trace::EventRecord)));
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

RawRun LoadRawRun(const std::string& run_dir, const LoadOptions& options) {
  RawRun run;
  run.dir = run_dir;
  const fs::path raw = fs::path(run_dir) / "raw";
  if (!fs::is_directory(raw))
    throw std::runtime_error(raw.string() + ": no such directory (no raw trace)");
  const std::regex pat("defs-(\\d+)\\.jsonl");
  std::vector<fs::path> defs;
  for (const auto& e : fs::directory_iterator(raw)) {
    const std::string fname = e.path().filename().string();
    if (std::regex_match(fname, pat)) defs.push_back(e.path());
  }
  std::sort(defs.begin(), defs.end());
  for (const auto& path : defs) {
    RawRank r;
    if (!LoadDefs(path, &r, &run.problems)) continue;
    if (path.filename().string() != DefsFileName(r.rank)) {
      run.problems.push_back("raw/" + path.filename().string() + ": holds rank " +
                             std::to_string(r.rank) + "; file skipped");
      continue;
    }
    run.world_size = std::max(run.world_size, r.world_size);
    run.ranks.push_back(std::move(r));
  }
  if (run.ranks.empty())
    throw std::runtime_error(raw.string() + ": no readable defs-R.jsonl file (no rank to convert)");
  for (int32_t want = 0, i = 0; want < run.world_size; ++want) {
    if (i < int32_t(run.ranks.size()) && run.ranks[i].rank == want) {
      ++i;
      continue;
    }
    run.problems.push_back("raw/" + DefsFileName(want) + ": missing or unusable: rank " +
                           std::to_string(want) + " is absent from the trace");
  }
  if (options.events)
    for (auto& r : run.ranks) LoadRankEvents(run_dir, &r, &run.problems);
  return run;
}

}  // namespace invmw::otf2
