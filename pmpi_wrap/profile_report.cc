#include "pmpi_wrap/profile_report.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace invmw::profile {

using nlohmann::json;

json MetaToJson(const RunMeta& m) {
  json cfg = json::object();
  for (const auto& [k, v] : m.config) cfg[k] = v;
  json j{{"invmw_version", m.invmw_version},
         {"mpi_flavor", m.mpi_flavor},
         {"mpi_library", m.mpi_library},
         {"output_dir", m.output_dir},
         {"command", m.command},
         {"start_time", m.start_time},
         {"world_size", m.world_size},
         {"config", cfg}};
  if (!m.clock_sync.is_null()) j["clock_sync"] = m.clock_sync;
  return j;
}

bool MetaFromJson(const json& j, RunMeta* m, std::string* error) {
  try {
    m->invmw_version = j.value("invmw_version", "");
    m->mpi_flavor = j.value("mpi_flavor", "");
    m->mpi_library = j.value("mpi_library", "");
    m->output_dir = j.value("output_dir", "");
    m->command = j.value("command", "");
    m->start_time = j.value("start_time", "");
    m->world_size = j.value("world_size", 0);
    m->config.clear();
    if (j.contains("config"))
      for (auto it = j["config"].begin(); it != j["config"].end(); ++it)
        m->config.emplace_back(it.key(), it.value().get<std::string>());
    m->clock_sync = j.value("clock_sync", json());
  } catch (const std::exception& e) {
    *error = std::string("meta.json: ") + e.what();
    return false;
  }
  return true;
}

std::string RawDumpPath(const std::string& dir, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "/raw/rank-%06d.bin", rank);
  return dir + name;
}

bool ParseDump(const void* data, size_t size, RankData* out, std::string* error) {
  if (size < sizeof(raw::RankHeader)) {
    *error = "dump of " + std::to_string(size) + " bytes is shorter than its header (" +
             std::to_string(sizeof(raw::RankHeader)) + ")";
    return false;
  }
  std::memcpy(&out->header, data, sizeof(raw::RankHeader));
  const auto& h = out->header;
  if (h.magic != raw::kMagic) {
    *error = "not an invmw raw dump (bad magic)";
    return false;
  }
  if (h.version != raw::kVersion || h.header_size != sizeof(raw::RankHeader) ||
      h.record_size != sizeof(raw::FuncRecord)) {
    *error = "raw dump version " + std::to_string(h.version) + " does not match this invmw (" +
             std::to_string(raw::kVersion) + ")";
    return false;
  }
  if (h.world_size < 1 || h.rank < 0 || h.rank >= h.world_size) {
    *error = "damaged header: rank " + std::to_string(h.rank) + " of world size " +
             std::to_string(h.world_size);
    return false;
  }
  size_t need = sizeof(raw::RankHeader) + size_t(h.num_funcs) * sizeof(raw::FuncRecord);
  if (size < need) {
    *error = "dump truncated: " + std::to_string(size) + " of " + std::to_string(need) + " bytes";
    return false;
  }
  out->funcs.resize(h.num_funcs);
  if (h.num_funcs)  // data() of an empty vector may be null, which memcpy must not get
    std::memcpy(out->funcs.data(), static_cast<const char*>(data) + sizeof(raw::RankHeader),
                size_t(h.num_funcs) * sizeof(raw::FuncRecord));
  for (auto& f : out->funcs) f.name[sizeof f.name - 1] = '\0';
  // A damaged dump's text fields may lack their terminator; the profile reads them as C strings.
  auto& hw = out->header;
  hw.host[sizeof hw.host - 1] = hw.mpi_library[sizeof hw.mpi_library - 1] = '\0';
  hw.invmw_version[sizeof hw.invmw_version - 1] = hw.mpi_flavor[sizeof hw.mpi_flavor - 1] = '\0';
  return true;
}

bool ReadDumpFile(const std::string& path, RankData* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot open";
    return false;
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!ParseDump(data.data(), data.size(), out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

namespace {

const char* EndReasonName(uint32_t r) {
  switch (r) {
    case raw::kEndFinalize:
      return "finalize";
    case raw::kEndExit:
      return "exit_without_finalize";
    case raw::kEndAbort:
      return "mpi_abort";
    case raw::kEndSignal:
      return "signal";
    default:
      return "running";
  }
}

std::string BinLabel(int b) {
  if (b == 0) return "0";
  uint64_t lo = 1ull << (b - 1);
  if (b == raw::kHistBins - 1) return std::to_string(lo) + "+";
  uint64_t hi = (1ull << b) - 1;
  return std::to_string(lo) + "-" + std::to_string(hi);
}

json Histogram(const uint64_t* hist) {
  json h = json::array();
  for (int b = 0; b < raw::kHistBins; ++b) {
    if (!hist[b]) continue;
    uint64_t lo = b == 0 ? 0 : 1ull << (b - 1);
    json bin = {{"bin", BinLabel(b)}, {"min_bytes", lo}, {"count", hist[b]}};
    if (b < raw::kHistBins - 1) bin["max_bytes"] = b == 0 ? 0 : (1ull << b) - 1;
    h.push_back(bin);
  }
  return h;
}

struct Across {
  double min = INFINITY, max = -INFINITY, sum = 0;
  int n = 0, argmin = -1, argmax = -1;
  void Add(double v, int rank) {
    if (v < min) min = v, argmin = rank;
    if (v > max) max = v, argmax = rank;
    sum += v;
    ++n;
  }
  json ToJson(int ranks) const {
    // Ranks that never called the function count as zero.
    double mn = n < ranks ? std::min(0.0, min) : min;
    double mean = ranks ? sum / ranks : 0;
    return json{{"min", n ? mn : 0.0},
                {"mean", mean},
                {"max", n ? max : 0.0},
                {"max_rank", argmax},
                {"imbalance", mean > 0 ? max / mean : 0.0}};
  }
};

}  // namespace

json BuildProfile(const std::vector<RankData>& ranks_in, const RunMeta& meta, bool incomplete) {
  std::vector<const RankData*> ranks;
  for (const auto& r : ranks_in) ranks.push_back(&r);
  std::sort(ranks.begin(), ranks.end(),
            [](const RankData* a, const RankData* b) { return a->header.rank < b->header.rank; });

  int world = meta.world_size;
  for (const auto* r : ranks) world = std::max(world, r->header.world_size);
  std::set<int> present;
  std::set<std::string> hosts;
  json jranks = json::array();
  std::map<std::string, json> fn_totals;
  std::map<std::string, Across> fn_time;
  std::map<std::string, std::vector<uint64_t>> fn_hist;
  Across wall, mpi_time;
  bool any_incomplete = incomplete;

  for (const auto* r : ranks) {
    const auto& h = r->header;
    present.insert(h.rank);
    hosts.insert(h.host);
    double tps = h.ticks_per_second > 0 ? h.ticks_per_second : 1e9;
    json fns = json::object();
    double mpi_s = 0;
    for (const auto& f : r->funcs) {
      double t = double(f.ticks) / tps;
      mpi_s += t;
      fns[f.name] = {{"calls", f.calls},
                     {"time_s", t},
                     {"max_call_s", double(f.max_ticks) / tps},
                     {"bytes_sent", f.bytes_sent},
                     {"bytes_recv", f.bytes_recv},
                     {"histogram", Histogram(f.hist)}};
      json& tot = fn_totals[f.name];
      if (tot.is_null())
        tot = {{"calls", 0}, {"time_s", 0.0}, {"bytes_sent", 0}, {"bytes_recv", 0}};
      tot["calls"] = tot["calls"].get<uint64_t>() + f.calls;
      tot["time_s"] = tot["time_s"].get<double>() + t;
      tot["bytes_sent"] = tot["bytes_sent"].get<uint64_t>() + f.bytes_sent;
      tot["bytes_recv"] = tot["bytes_recv"].get<uint64_t>() + f.bytes_recv;
      fn_time[f.name].Add(t, h.rank);
      auto& hv = fn_hist[f.name];
      hv.resize(raw::kHistBins);
      for (int b = 0; b < raw::kHistBins; ++b) hv[b] += f.hist[b];
    }
    bool rank_incomplete = (h.flags & raw::kFlagIncomplete) != 0;
    any_incomplete |= rank_incomplete;
    wall.Add(h.wall_s, h.rank);
    mpi_time.Add(mpi_s, h.rank);
    jranks.push_back({{"rank", h.rank},
                      {"host", h.host},
                      {"pid", h.pid},
                      {"wall_s", h.wall_s},
                      {"mpi_s", mpi_s},
                      {"mpi_share", h.wall_s > 0 ? mpi_s / h.wall_s : 0.0},
                      {"mpi_init_s", h.mpi_init_s},
                      {"incomplete", rank_incomplete},
                      {"end", EndReasonName(h.end_reason)},
                      {"end_signal", h.end_signal},
                      {"threads", h.num_threads},
                      {"dropped_thread_calls", h.dropped_threads},
                      {"dropped_requests", h.dropped_requests},
                      {"errors", h.errors},
                      {"functions", fns}});
  }
  json missing = json::array();
  for (int i = 0; i < world; ++i)
    if (!present.count(i)) missing.push_back(i);
  if (!missing.empty()) any_incomplete = true;

  int n = int(ranks.size());
  json functions = json::object();
  for (auto& [name, tot] : fn_totals) {
    tot["time_across_ranks_s"] = fn_time[name].ToJson(n);
    tot["histogram"] = Histogram(fn_hist[name].data());
    functions[name] = tot;
  }
  json meta_j = MetaToJson(meta);
  meta_j["hosts"] = json(std::vector<std::string>(hosts.begin(), hosts.end()));
  meta_j["ranks"] = world;
  if (meta.mpi_library.empty() && !ranks.empty())
    meta_j["mpi_library"] = ranks.front()->header.mpi_library;
  if (meta.invmw_version.empty() && !ranks.empty())
    meta_j["invmw_version"] = ranks.front()->header.invmw_version;

  double wall_max = n ? wall.max : 0;
  return json{{"schema", 1},
              {"tool", "invmw"},
              {"incomplete", any_incomplete},
              {"missing_ranks", missing},
              {"metadata", meta_j},
              {"summary",
               {{"ranks", world},
                {"ranks_reported", n},
                {"wall_s", wall.ToJson(n)},
                {"mpi_s", mpi_time.ToJson(n)},
                {"mpi_share", wall_max > 0 && n ? (mpi_time.sum / n) / (wall.sum / n) : 0.0}}},
              {"functions", functions},
              {"ranks", jranks}};
}

namespace {

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string Bytes(uint64_t b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = double(b);
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, ++u;
  char s[32];
  std::snprintf(s, sizeof s, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return s;
}

void RenderResources(const json& p, std::ostringstream& os);

}  // namespace

std::string DroppedNote(const json& p) {
  uint64_t calls = 0, requests = 0;
  for (const auto& r : p.value("ranks", json::array())) {
    calls += r.value("dropped_thread_calls", uint64_t(0));
    requests += r.value("dropped_requests", uint64_t(0));
  }
  std::string note;
  if (calls)
    note = std::to_string(calls) +
           " calls from threads beyond INVMW_WRAP_MAX_THREADS (every thread that calls MPI "
           "takes a slot for the rest of the run: raise the limit)";
  if (requests)
    note += (note.empty() ? "" : "; ") + std::to_string(requests) +
            " requests beyond the request table (INVMW_WRAP_MAX_REQUESTS)";
  return note;
}

std::string RenderText(const json& p) {
  std::ostringstream os;
  const auto& m = p["metadata"];
  os << "invmw profile"
     << (p.value("incomplete", false) ? "  [INCOMPLETE: the run did not finish "
                                        "normally; counts cover the calls "
                                        "recorded before the end]"
                                      : "")
     << "\n";
  os << "  command:     " << m.value("command", "") << "\n";
  os << "  started:     " << m.value("start_time", "") << "\n";
  os << "  MPI:         " << m.value("mpi_library", "") << "\n";
  os << "  ranks:       " << m.value("ranks", 0);
  std::string hosts;
  for (const auto& h : m["hosts"]) hosts += (hosts.empty() ? "" : ", ") + h.get<std::string>();
  os << " on " << hosts << "\n";
  if (!p["missing_ranks"].empty())
    os << "  missing:     ranks " << p["missing_ranks"].dump() << " saved no data\n";
  if (const std::string d = DroppedNote(p); !d.empty()) os << "  NOT RECORDED: " << d << "\n";
  if (m.contains("clock_sync")) {
    const auto& c = m["clock_sync"];
    bool finalize = false;
    for (const auto& r : c["ranks"]) finalize |= r.contains("finalize");
    os << "  clock sync:  offsets to rank 0 within "
       << Fmt("%.3f", 1e6 * c.value("max_uncertainty_s", 0.0)) << " us (measured at MPI_Init"
       << (finalize ? " and MPI_Finalize" : "") << ")\n";
  }
  const auto& s = p["summary"];
  os << "  wall time:   " << Fmt("%.6f", s["wall_s"]["max"].get<double>())
     << " s (max over ranks)\n";
  os << "  MPI share:   " << Fmt("%.1f", 100 * s["mpi_share"].get<double>())
     << " % of wall time\n\n";

  // Functions sorted by total time.
  std::vector<std::pair<double, std::string>> order;
  for (auto it = p["functions"].begin(); it != p["functions"].end(); ++it)
    order.emplace_back(it.value()["time_s"].get<double>(), it.key());
  std::sort(order.rbegin(), order.rend());
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %10s %12s %12s %12s %12s %9s %13s %13s\n", "function",
                "calls", "time_s", "min_rank_s", "mean_rank_s", "max_rank_s", "imbalance",
                "bytes_sent", "bytes_recv");
  os << "Per function, all ranks (min/mean/max of the per-rank time; imbalance = max/mean)\n"
     << line;
  for (const auto& [t, name] : order) {
    const auto& f = p["functions"][name];
    const auto& a = f["time_across_ranks_s"];
    std::snprintf(line, sizeof line, "%-24s %10llu %12.6f %12.6f %12.6f %12.6f %9.2f %13s %13s\n",
                  name.c_str(), (unsigned long long)f["calls"].get<uint64_t>(), t,
                  a["min"].get<double>(), a["mean"].get<double>(), a["max"].get<double>(),
                  a["imbalance"].get<double>(), Bytes(f["bytes_sent"].get<uint64_t>()).c_str(),
                  Bytes(f["bytes_recv"].get<uint64_t>()).c_str());
    os << line;
  }

  os << "\nPer rank\n";
  std::snprintf(line, sizeof line, "%6s %-20s %12s %12s %8s  %s\n", "rank", "host", "wall_s",
                "mpi_s", "mpi_%", "end");
  os << line;
  for (const auto& r : p["ranks"]) {
    std::snprintf(line, sizeof line, "%6d %-20s %12.6f %12.6f %8.1f  %s\n", r["rank"].get<int>(),
                  r["host"].get<std::string>().c_str(), r["wall_s"].get<double>(),
                  r["mpi_s"].get<double>(), 100 * r["mpi_share"].get<double>(),
                  r["end"].get<std::string>().c_str());
    os << line;
  }

  os << "\nPer rank and function\n";
  std::snprintf(line, sizeof line, "%6s %-24s %10s %12s %13s %13s\n", "rank", "function", "calls",
                "time_s", "bytes_sent", "bytes_recv");
  os << line;
  for (const auto& r : p["ranks"]) {
    for (auto it = r["functions"].begin(); it != r["functions"].end(); ++it) {
      const auto& f = it.value();
      std::snprintf(line, sizeof line, "%6d %-24s %10llu %12.6f %13s %13s\n", r["rank"].get<int>(),
                    it.key().c_str(), (unsigned long long)f["calls"].get<uint64_t>(),
                    f["time_s"].get<double>(), Bytes(f["bytes_sent"].get<uint64_t>()).c_str(),
                    Bytes(f["bytes_recv"].get<uint64_t>()).c_str());
      os << line;
    }
  }

  os << "\nMessage sizes (calls per size bin, all ranks)\n";
  for (const auto& [t, name] : order) {
    const auto& h = p["functions"][name]["histogram"];
    bool moves = false;
    for (const auto& b : h) moves |= b["min_bytes"].get<uint64_t>() > 0;
    if (!moves) continue;
    os << "  " << name << ":";
    for (const auto& b : h)
      os << "  [" << b["bin"].get<std::string>() << " B] " << b["count"].get<uint64_t>();
    os << "\n";
  }
  RenderResources(p, os);
  return os.str();
}

int AttachResources(json* profile, const std::string& dir) {
  const std::string raw_dir = dir + "/raw";
  std::vector<std::string> files;
  if (DIR* d = opendir(raw_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind("resources-", 0) == 0 && n.size() > 15 &&
          n.compare(n.size() - 5, 5, ".json") == 0)
        files.push_back(n);
    }
    closedir(d);
  }
  if (files.empty()) return 0;
  std::sort(files.begin(), files.end());
  json ranks = json::array(), problems = json::array();
  double user = 0, sys = 0, io_r = 0, io_w = 0;
  json counters = json::object();
  for (const auto& f : files) {
    try {
      std::ifstream in(raw_dir + "/" + f);
      json r = json::parse(in);
      r.erase("metrics");  // the full list stays in the raw file; the profile keeps the summary
      auto num = [&](const char* k) {
        return r.contains(k) && r[k].is_number() ? r[k].get<double>() : 0.0;
      };
      user += num("cpu_user_s");
      sys += num("cpu_system_s");
      io_r += num("io_read_bytes");
      io_w += num("io_write_bytes");
      if (r.contains("counters") && r["counters"].is_object())
        for (auto it = r["counters"].begin(); it != r["counters"].end(); ++it)
          counters[it.key()] = counters.value(it.key(), 0.0) + it.value().get<double>();
      ranks.push_back(std::move(r));
    } catch (const std::exception& e) {
      problems.push_back("raw/" + f + ": " + e.what());
    }
  }
  (*profile)["resources"] = {{"ranks", ranks},
                             {"totals",
                              {{"cpu_user_s", user},
                               {"cpu_system_s", sys},
                               {"io_read_bytes", io_r},
                               {"io_write_bytes", io_w},
                               {"counters", counters}}}};
  if (!problems.empty()) (*profile)["resources"]["problems"] = problems;
  return int(ranks.size());
}

namespace {

// The "Resources per rank" section of profile.txt (only when AttachResources found summaries).
void RenderResources(const json& p, std::ostringstream& os) {
  if (!p.contains("resources")) return;
  const auto& res = p["resources"];
  auto num = [](const json& r, const char* k) {
    return r.contains(k) && r[k].is_number() ? r[k].get<double>() : 0.0;
  };
  char line[512];
  os << "\nResources per rank (sampler; net = the node's devices, on the node's first rank)\n";
  std::snprintf(line, sizeof line, "%6s %-16s %10s %10s %6s %11s %11s %11s %11s %11s %8s\n", "rank",
                "host", "cpu_user_s", "cpu_sys_s", "cpu_%", "rss_peak", "io_read", "io_write",
                "net_rx", "net_tx", "samples");
  os << line;
  for (const auto& r : res["ranks"]) {
    const double wall = num(r, "wall_s");
    const double cpu = num(r, "cpu_user_s") + num(r, "cpu_system_s");
    const bool net = r.contains("node_net_rx_bytes") && r["node_net_rx_bytes"].is_number();
    std::snprintf(line, sizeof line,
                  "%6d %-16s %10.3f %10.3f %6.1f %11s %11s %11s %11s %11s %8llu\n",
                  r.value("rank", -1), r.value("host", std::string()).c_str(), num(r, "cpu_user_s"),
                  num(r, "cpu_system_s"), wall > 0 ? 100 * cpu / wall : 0.0,
                  Bytes(uint64_t(num(r, "rss_peak_bytes"))).c_str(),
                  Bytes(uint64_t(num(r, "io_read_bytes"))).c_str(),
                  Bytes(uint64_t(num(r, "io_write_bytes"))).c_str(),
                  net ? Bytes(uint64_t(num(r, "node_net_rx_bytes"))).c_str() : "-",
                  net ? Bytes(uint64_t(num(r, "node_net_tx_bytes"))).c_str() : "-",
                  (unsigned long long)num(r, "samples"));
    os << line;
  }
  const auto& c = res["totals"]["counters"];
  if (!c.empty()) {
    os << "  counters (all ranks):";
    for (auto it = c.begin(); it != c.end(); ++it)
      os << "  " << it.key() << " " << Fmt("%.6g", it.value().get<double>());
    os << "\n";
  }
}

}  // namespace

static bool WriteAtomically(const std::string& path, const std::string& data, std::string* error) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      *error = tmp + ": cannot create";
      return false;
    }
    out << data;
    if (!out.flush()) {
      *error = tmp + ": write failed";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": rename failed";
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool WriteMeta(const std::string& dir, const RunMeta& m, std::string* error) {
  return WriteAtomically(dir + "/meta.json", MetaToJson(m).dump(2) + "\n", error);
}

bool WriteProfile(const std::string& dir, const json& profile, std::string* error) {
  // Strings from a damaged dump (host, function names) need not be UTF-8: replaced, not thrown.
  return WriteAtomically(dir + "/profile.json",
                         profile.dump(2, ' ', false, json::error_handler_t::replace) + "\n",
                         error) &&
         WriteAtomically(dir + "/profile.txt", RenderText(profile), error);
}

bool MergeDirectory(const std::string& dir, std::string* error, int* ranks_found) {
  RunMeta meta;
  {
    std::ifstream in(dir + "/meta.json");
    if (in) {
      try {
        json j = json::parse(in);
        if (!MetaFromJson(j, &meta, error)) return false;
      } catch (const std::exception& e) {
        *error = dir + "/meta.json: " + e.what();
        return false;
      }
    }
  }
  std::vector<RankData> ranks;
  std::string raw_dir = dir + "/raw";
  DIR* d = opendir(raw_dir.c_str());
  if (!d) {
    *error = raw_dir +
             ": no per-rank data (was the program run under invmw, and did it call "
             "MPI_Init?)";
    return false;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("rank-", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".bin")
      names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  std::string problems;
  for (const auto& n : names) {
    RankData r;
    std::string err;
    if (ReadDumpFile(raw_dir + "/" + n, &r, &err))
      ranks.push_back(std::move(r));
    else
      problems += err + "\n";
  }
  if (ranks_found) *ranks_found = int(ranks.size());
  if (ranks.empty()) {
    // No trailing newline: callers print the message as a line of its own.
    if (!problems.empty()) problems.pop_back();
    *error = raw_dir + ": no readable rank data" + (problems.empty() ? "" : "\n" + problems);
    return false;
  }
  bool incomplete = false;
  for (const auto& r : ranks) incomplete |= (r.header.flags & raw::kFlagIncomplete) != 0;
  json p = BuildProfile(ranks, meta, incomplete);
  if (!problems.empty()) p["unreadable_dumps"] = problems;
  AttachResources(&p, dir);
  return WriteProfile(dir, p, error);
}

}  // namespace invmw::profile
