#include "pvm_wrap/merge.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "common/file_io.h"
#include "common/event_format.h"
#include "common/raw_format.h"
#include "common/sample_format.h"
#include "otf2_writer/converter.h"
#include "recording/io.h"
#include "recording/profile_report.h"
#include "invmw_version.h"

namespace invmw::pvm {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Task {
  int tid = 0, parent = 0;
  std::string program, host;
  int64_t pid = 0;
  uint64_t init_ticks = 0;
  int64_t init_realtime_ns = 0;
  bool trace = false;
  std::vector<int> spawned;  // in spawn order
  json functions, end;
  bool has_clock = false;
  uint64_t clock_ticks = 0;
  double offset = 0, uncertainty = 0;  // to the parent
  std::string base;                    // path without extension
  bool has_dump = false;
};

// Written through the atomic writer; a failure is one of the merge's problems (never silent).
bool WriteFile(const std::string& path, const std::string& data,
               std::vector<std::string>* problems);

// The task's sampler files (written as rank 0 under <task>.sampler/raw/) become rank R's, as
// an MPI rank would have written them, so the profile and the converter find them.
void AdoptSamplerFiles(const std::string& base, const std::string& raw_dir, int rank,
                       std::vector<std::string>* problems) {
  const fs::path from = fs::path(base + ".sampler") / "raw";
  if (!fs::is_directory(from)) return;  // sampling was off in this task
  char tag[16];
  std::snprintf(tag, sizeof tag, "%06d", rank);
  const std::string name = fs::path(base).filename().string();
  try {
    std::ifstream metrics(from / "metrics-000000.jsonl");
    std::string line, out;
    while (std::getline(metrics, line)) {
      if (line.empty()) continue;
      json j = json::parse(line);
      if (j.value("type", "") == "sampler") j["rank"] = rank;
      out += j.dump() + "\n";
    }
    if (!out.empty()) WriteFile(raw_dir + "/metrics-" + tag + ".jsonl", out, problems);
    std::ifstream in(from / "samples-000000.bin", std::ios::binary);
    std::string bin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bin.size() >= sizeof(samples::SampleFileHeader)) {
      samples::SampleFileHeader h;
      std::memcpy(&h, bin.data(), sizeof h);
      h.rank = rank;
      std::memcpy(bin.data(), &h, sizeof h);
      WriteFile(raw_dir + "/samples-" + tag + ".bin", bin, problems);
    }
    std::ifstream res(from / "resources-000000.json");
    if (res) {
      json r = json::parse(res);
      r["rank"] = rank;
      WriteFile(raw_dir + "/resources-" + tag + ".json", r.dump(2) + "\n", problems);
    }
  } catch (const std::exception& e) {
    problems->push_back("raw/pvm/" + name + ".sampler: " + e.what() + "; samples left out");
  }
}

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = bool(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteFile(const std::string& path, const std::string& data,
               std::vector<std::string>* problems) {
  try {
    WriteFileAtomic(path, data);
    return true;
  } catch (const FileError& e) {
    problems->push_back(e.what());
    return false;
  }
}

// Reads task-<tid>.jsonl; lines cut by a crash are reported and skipped.
bool LoadTask(const fs::path& defs, Task* t, std::vector<std::string>* problems) {
  std::ifstream in(defs);
  std::string line;
  int lineno = 0;
  bool have_task = false;
  const std::string name = "raw/pvm/" + defs.filename().string();
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    try {
      json j = json::parse(line);
      const std::string type = j.at("type").get<std::string>();
      if (type == "task") {
        t->tid = j.at("tid").get<int>();
        t->parent = j.value("parent", 0);
        t->program = j.value("program", "");
        t->host = j.value("host", "");
        t->pid = j.value("pid", int64_t(0));
        t->init_ticks = j.value("init_ticks", uint64_t(0));
        t->init_realtime_ns = j.value("init_realtime_ns", int64_t(0));
        t->trace = j.value("trace", false);
        have_task = true;
      } else if (type == "spawn") {
        for (int tid : j.at("tids").get<std::vector<int>>())
          if (tid > 0) t->spawned.push_back(tid);
      } else if (type == "functions") {
        t->functions = j;
      } else if (type == "clock") {
        t->has_clock = true;
        t->clock_ticks = j.at("ticks").get<uint64_t>();
        t->offset = j.at("offset_ticks").get<double>();
        t->uncertainty = j.value("uncertainty_ticks", 0.0);
      } else if (type == "end") {
        t->end = j;
      }
    } catch (const std::exception& e) {
      problems->push_back(name + ":" + std::to_string(lineno) + ": unusable line (" + e.what() +
                          ")");
    }
  }
  if (!have_task) problems->push_back(name + ": no \"task\" line; task left out");
  return have_task;
}

std::string Hex(int tid) {
  char b[16];
  std::snprintf(b, sizeof b, "t%x", unsigned(tid));
  return b;
}

// The task files in raw/pvm, waiting up to wait_s for tasks that started but have not written
// their dump yet (they may still be ending). Notes of statically linked programs are collected
// on the way.
void ListTasks(const fs::path& pvm_dir, double wait_s, std::vector<fs::path>* defs,
               std::set<std::string>* dumps, MergeResult* res) {
  std::error_code ec;
  auto list = [&] {
    defs->clear();
    dumps->clear();
    for (const auto& e : fs::directory_iterator(pvm_dir, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("task-", 0) != 0) {
        if (n.rfind("static-", 0) == 0) {
          bool ok;
          std::string prog = ReadFile(e.path().string(), &ok);
          while (!prog.empty() && prog.back() == '\n') prog.pop_back();
          if (ok && std::find(res->static_programs.begin(), res->static_programs.end(), prog) ==
                        res->static_programs.end())
            res->static_programs.push_back(prog);
        }
        continue;
      }
      if (e.path().extension() == ".jsonl") defs->push_back(e.path());
      if (e.path().extension() == ".bin" && n.find("-events") == std::string::npos)
        dumps->insert(e.path().stem().string());
    }
  };
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(wait_s * 1e3));
  for (;;) {
    list();
    bool all = true;
    for (const auto& d : *defs) all &= dumps->count(d.stem().string()) > 0;
    if (all || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::map<int, Task> LoadTasks(const fs::path& pvm_dir, const std::vector<fs::path>& defs,
                              const std::set<std::string>& dumps, double wait_s, MergeResult* res) {
  std::map<int, Task> tasks;
  for (const auto& d : defs) {
    Task t;
    if (!LoadTask(d, &t, &res->problems)) continue;
    t.base = (pvm_dir / d.stem()).string();
    t.has_dump = dumps.count(d.stem().string()) > 0;
    if (!t.has_dump)
      res->problems.push_back("raw/pvm/" + d.stem().string() +
                              ".bin: missing (the task was killed, or still running after " +
                              std::to_string(wait_s) + " s); it is a missing rank");
    tasks[t.tid] = std::move(t);
  }
  return tasks;
}

// Rank order: roots by start time, then breadth-first through the spawn lists.
std::vector<int> RankOrder(std::map<int, Task>& tasks) {
  std::vector<const Task*> by_start;
  for (const auto& [tid, t] : tasks) by_start.push_back(&t);
  std::stable_sort(by_start.begin(), by_start.end(), [](const Task* a, const Task* b) {
    return a->init_realtime_ns < b->init_realtime_ns;
  });
  std::vector<int> order;
  std::set<int> placed;
  auto walk = [&](int root) {
    std::deque<int> q{root};
    placed.insert(root);
    while (!q.empty()) {
      int tid = q.front();
      q.pop_front();
      order.push_back(tid);
      for (int c : tasks[tid].spawned)
        if (tasks.count(c) && placed.insert(c).second) q.push_back(c);
    }
  };
  for (const Task* t : by_start)
    if (!tasks.count(t->parent) && !placed.count(t->tid)) walk(t->tid);
  for (const Task* t : by_start)
    if (!placed.count(t->tid)) walk(t->tid);  // spawn cycles cannot happen; kept total anyway
  return order;
}

// Offsets to rank 0 along the spawn chain (rank 0's tree only): tid -> (offset, uncertainty).
std::map<int, std::pair<double, double>> OffsetsToRoot(std::map<int, Task>& tasks,
                                                       const std::vector<int>& order) {
  std::map<int, std::pair<double, double>> to_root;
  to_root[order[0]] = {0, 0};
  for (int tid : order) {
    const Task& t = tasks[tid];
    if (to_root.count(tid) || !t.has_clock) continue;
    auto p = to_root.find(t.parent);
    if (p != to_root.end())
      to_root[tid] = {t.offset + p->second.first, t.uncertainty + p->second.second};
  }
  return to_root;
}

// The task's raw dump as rank `rank` of `world`; returns its tick rate (0 without a dump).
double WriteRankDump(const Task& t, int rank, int world, const std::string& dir, MergeResult* res) {
  if (!t.has_dump) return 0;
  bool ok;
  std::string dump = ReadFile(t.base + ".bin", &ok);
  if (!ok || dump.size() < sizeof(raw::RankHeader)) {
    res->problems.push_back("raw/pvm/" + fs::path(t.base).filename().string() +
                            ".bin: too short for a header; task left out");
    return 0;
  }
  raw::RankHeader h;
  std::memcpy(&h, dump.data(), sizeof h);
  h.rank = rank;
  h.world_size = world;
  std::memcpy(dump.data(), &h, sizeof h);
  WriteFile(profile::RawDumpPath(dir, rank), dump, &res->problems);
  return h.ticks_per_second;
}

// The trace definitions of the task as a rank: the rank line first, as an MPI rank writes it.
void WriteRankDefs(const Task& t, int tid, int rank, int world, double tps,
                   const std::map<int, std::pair<double, double>>& to_root,
                   const std::string& raw_dir, MergeResult* res) {
  if (tps <= 0 && t.end.is_object()) tps = t.end.value("ticks_per_second", 0.0);
  if (tps <= 0) tps = 1e9;  // no end line and no dump: the rank is flagged partial anyway
  std::string d;
  json rank_line = {{"type", "rank"},
                    {"rank", rank},
                    {"world_size", world},
                    {"host", t.host},
                    {"pid", t.pid},
                    {"flavor", "pvm"},
                    {"ticks_per_second", tps},
                    {"init_ticks", t.init_ticks},
                    {"init_realtime_ns", t.init_realtime_ns},
                    {"tid", tid}};
  d += rank_line.dump() + "\n";
  if (t.functions.is_object()) d += t.functions.dump() + "\n";
  d += json{{"type", "thread"}, {"index", 0}, {"location", "main"}}.dump() + "\n";
  if (rank != 0) {
    auto it = to_root.find(tid);
    if (it != to_root.end())
      d += json{{"type", "clock"},
                {"phase", "init"},
                {"ticks", t.clock_ticks},
                {"offset_ticks", it->second.first},
                {"uncertainty_ticks", it->second.second}}
               .dump() +
           "\n";
  }
  if (t.end.is_object()) d += t.end.dump() + "\n";
  char name[64];
  std::snprintf(name, sizeof name, "/defs-%06d.jsonl", rank);
  WriteFile(raw_dir + name, d, &res->problems);
}

// The task's event file as the rank's only thread: header rank set, peers' tids mapped to ranks
// (-1 for tasks outside the run), a cut last record dropped.
void WriteRankEvents(const Task& t, int rank, const std::map<int, int>& rank_of,
                     const std::string& raw_dir, MergeResult* res) {
  bool ok;
  std::string ev = ReadFile(t.base + "-events.bin", &ok);
  if (!ok || ev.size() < sizeof(trace::EventFileHeader)) {
    res->problems.push_back("raw/pvm/" + fs::path(t.base).filename().string() +
                            "-events.bin: missing or empty");
    return;
  }
  trace::EventFileHeader h;
  std::memcpy(&h, ev.data(), sizeof h);
  h.rank = rank;
  std::memcpy(ev.data(), &h, sizeof h);
  const size_t n = (ev.size() - sizeof h) / sizeof(trace::EventRecord);
  ev.resize(sizeof h + n * sizeof(trace::EventRecord));
  for (size_t i = 0; i < n; ++i) {
    trace::EventRecord r;
    char* p = ev.data() + sizeof h + i * sizeof r;
    std::memcpy(&r, p, sizeof r);
    for (int32_t* peer : {&r.peer, &r.peer2})
      if (*peer > 0) {
        auto it = rank_of.find(*peer);
        *peer = it == rank_of.end() ? -1 : it->second;
      }
    std::memcpy(p, &r, sizeof r);
  }
  char name[64];
  std::snprintf(name, sizeof name, "/events-%06d-000.bin", rank);
  WriteFile(raw_dir + name, ev, &res->problems);
}

// meta.json as rank 0 of an MPI run would write it.
void WriteRunMeta(const Task& root, const std::string& dir, int world, MergeResult* res) {
  profile::RunMeta meta;
  meta.invmw_version = INVMW_VERSION;
  meta.mpi_flavor = "pvm";
  meta.mpi_library = "PVM 3 (libpvm3, symbol interposition)";
  meta.output_dir = dir;
  meta.command = root.program;
  meta.start_time = recording::IsoTime(root.init_realtime_ns);
  meta.world_size = world;
  WriteFile(dir + "/meta.json", profile::MetaToJson(meta).dump(2) + "\n", &res->problems);
}

// The tid -> rank table and what could not be observed, beside the MPI keys of profile.json.
void AddPvmSection(const std::string& dir, MergeResult* res) {
  std::string err;
  try {
    std::ifstream in(dir + "/profile.json");
    json p = json::parse(in);
    json jt = json::array();
    for (const auto& t : res->tasks)
      jt.push_back({{"rank", t.rank},
                    {"tid", Hex(t.tid)},
                    {"parent", t.parent > 0 ? Hex(t.parent) : ""},
                    {"program", t.program},
                    {"host", t.host}});
    p["pvm"] = {{"tasks", jt},
                {"statically_linked_programs", res->static_programs},
                {"problems", res->problems}};
    if (!profile::WriteProfile(dir, p, &err)) res->problems.push_back(err);
  } catch (const std::exception& e) {
    res->problems.push_back(dir + "/profile.json: " + e.what());
  }
}

}  // namespace

bool HasPvmData(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(dir + "/raw/pvm", ec);
}

MergeResult Merge(const std::string& dir, const MergeOptions& options) {
  MergeResult res;
  const fs::path pvm_dir = fs::path(dir) / "raw" / "pvm";
  std::error_code ec;
  if (!fs::is_directory(pvm_dir, ec)) {
    res.problems.push_back(pvm_dir.string() + ": no PVM task data (was the program run with " +
                           "libinvmw-pvm.so preloaded, and did it call PVM?)");
    return res;
  }
  std::vector<fs::path> defs;
  std::set<std::string> dumps;
  ListTasks(pvm_dir, options.wait_s, &defs, &dumps, &res);
  std::map<int, Task> tasks = LoadTasks(pvm_dir, defs, dumps, options.wait_s, &res);
  if (tasks.empty()) {
    res.problems.push_back(pvm_dir.string() + ": no readable task");
    return res;
  }
  const std::vector<int> order = RankOrder(tasks);
  std::map<int, int> rank_of;
  for (size_t i = 0; i < order.size(); ++i) rank_of[order[i]] = int(i);
  const int world = int(order.size());
  const auto to_root = OffsetsToRoot(tasks, order);

  const std::string raw_dir = dir + "/raw";
  bool any_trace = false;
  for (int tid : order) {
    const Task& t = tasks[tid];
    const int rank = rank_of[tid];
    res.tasks.push_back({rank, tid, t.parent, t.program, t.host, t.has_dump});
    AdoptSamplerFiles(t.base, raw_dir, rank, &res.problems);
    const double tps = WriteRankDump(t, rank, world, dir, &res);
    if (!t.trace || !options.build_trace) continue;
    any_trace = true;
    WriteRankDefs(t, tid, rank, world, tps, to_root, raw_dir, &res);
    WriteRankEvents(t, rank, rank_of, raw_dir, &res);
  }
  res.traced = any_trace;
  WriteRunMeta(tasks[order[0]], dir, world, &res);

  std::string err;
  if (!profile::MergeDirectory(dir, &err)) {
    res.problems.push_back(err);
    return res;
  }
  AddPvmSection(dir, &res);
  res.ok = true;

  if (any_trace) {
    try {
      otf2::ConvertResult r = otf2::ConvertToOtf2(dir);
      res.archive = r.archive;
      for (const auto& p : r.problems) res.problems.push_back("trace: " + p);
    } catch (const std::exception& e) {
      res.problems.push_back(std::string("trace: ") + e.what());
    }
  }
  return res;
}

}  // namespace invmw::pvm
