#include "callsites/callsites.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "callsites/callsite_file.h"
#include "callsites/resolve.h"
#include "recording/profile_report.h"

namespace invmw::callsites {

using nlohmann::json;

namespace {

struct PerRank {
  uint64_t calls = 0, sent = 0, recv = 0;
  double time_s = 0, max_s = 0;
};

struct Merged {
  std::string function;
  std::vector<Frame> frames;
  std::map<int, PerRank> ranks;
};

std::string Rank6(int rank) {
  char b[16];
  std::snprintf(b, sizeof b, "%06d", rank);
  return b;
}

json FrameJson(const Frame& f) {
  json j = {{"location", f.Label()},
            {"resolved", f.how},
            {"object", f.object},
            {"object_offset", f.offset}};
  if (!f.function.empty()) {
    j["symbol"] = f.function;
    j["symbol_offset"] = f.function_offset;
  }
  if (!f.file.empty()) {
    j["file"] = f.file;
    j["line"] = f.line;
  }
  return j;
}

}  // namespace

bool Build(const std::string& dir, json* out, std::vector<std::string>* problems) {
  const std::string sub = dir + "/callsites";
  DIR* d = opendir(sub.c_str());
  if (!d) return false;
  std::vector<std::pair<int, std::string>> files;
  std::map<int, std::string> live;  // rank -> its live call-site file
  while (dirent* e = readdir(d)) {
    int rank;
    if (ParseRankFileName(e->d_name, &rank)) files.emplace_back(rank, sub + "/" + e->d_name);
    if (ParseLiveFileName(e->d_name, &rank)) live[rank] = sub + "/" + e->d_name;
  }
  closedir(d);
  if (files.empty() && live.empty()) return false;
  std::sort(files.begin(), files.end());
  Resolver resolver;
  std::map<std::string, Merged> merged;  // function + frame labels -> site
  std::map<std::string, PerRank> unattributed;
  json probs = json::array(), incomplete = json::array(), from_live = json::array();
  // A live file is read only beside a text file without its table: the text file has the
  // mappings its addresses need, and a complete table supersedes the live file.
  for (const auto& [rank, path] : live)
    if (!std::any_of(files.begin(), files.end(),
                     [r = rank](const auto& f) { return f.first == r; }))
      probs.push_back(path + ": no rank-" + Rank6(rank) +
                      ".txt with the rank's mappings beside it; left out");
  int depth = 0, nranks = 0;
  uint64_t unattributed_calls = 0;
  for (const auto& [rank, path] : files) {
    RankFile f;
    std::string err;
    if (!ReadRankFile(path, &f, &err)) {
      probs.push_back(err);
      continue;
    }
    if (f.rank != rank) {
      probs.push_back(path + ": names rank " + std::to_string(f.rank) + ", left out");
      continue;
    }
    ++nranks;
    depth = std::max(depth, f.depth);
    if (!f.complete) {
      incomplete.push_back(rank);
      // The rank did not write its table (killed, aborted, or cut off while writing it in
      // MPI_Finalize): its live call-site file holds every call it completed. Rows the text
      // file has from an interrupted write are replaced, not added.
      LiveTables lt;
      const auto it = live.find(rank);
      if (it != live.end() && !ReadLiveTables(it->second, &lt, &err)) {
        probs.push_back(err + "; the rank's call sites come from " + path + " alone");
      } else if (it != live.end() && lt.rank != rank) {
        probs.push_back(it->second + ": names rank " + std::to_string(lt.rank) + ", left out");
      } else if (it != live.end()) {
        f.sites = std::move(lt.sites);
        f.unattributed = std::move(lt.unattributed);
        f.unattributed_calls = lt.unattributed_calls;
        depth = std::max(depth, lt.depth);
        from_live.push_back(rank);
        if (lt.damaged)
          probs.push_back(it->second + ": " + std::to_string(lt.damaged) +
                          " damaged entries (function or depth out of range) left out");
      }
      if (it == live.end() && !f.sites.empty())
        probs.push_back(path +
                        ": cut off inside its table and no live call-site file; the "
                        "rank's call sites are partial");
    }
    const double tps = f.ticks_per_second;
    for (const SiteRow& s : f.sites) {
      std::vector<Frame> frames;
      std::string key = s.function;
      for (uint64_t pc : s.pcs) {
        frames.push_back(resolver.Resolve(f, pc));
        key += "\n" + frames.back().Label();
      }
      Merged& m = merged[key];
      if (m.function.empty()) {
        m.function = s.function;
        m.frames = frames;
      }
      PerRank& r = m.ranks[rank];
      r.calls += s.c.calls;
      r.sent += s.c.bytes_sent;
      r.recv += s.c.bytes_recv;
      r.time_s += double(s.c.ticks) / tps;
      r.max_s = std::max(r.max_s, double(s.c.max_ticks) / tps);
    }
    for (const UnattributedRow& u : f.unattributed) {
      PerRank& r = unattributed[u.function];
      r.calls += u.c.calls;
      r.sent += u.c.bytes_sent;
      r.recv += u.c.bytes_recv;
      r.time_s += double(u.c.ticks) / tps;
      r.max_s = std::max(r.max_s, double(u.c.max_ticks) / tps);
    }
    unattributed_calls += f.unattributed_calls;
  }
  struct Row {
    double time;
    json j;
  };
  std::vector<Row> rows;
  for (const auto& [key, m] : merged) {
    json j;
    j["function"] = m.function;
    const Frame& f0 = m.frames.front();
    j["location"] = f0.Label();
    j["resolved"] = f0.how;
    j["object"] = f0.object;
    if (!f0.function.empty()) j["symbol"] = f0.function;
    if (!f0.file.empty()) {
      j["file"] = f0.file;
      j["line"] = f0.line;
    }
    if (m.frames.size() > 1) {
      json fr = json::array();
      for (const Frame& f : m.frames) fr.push_back(FrameJson(f));
      j["frames"] = fr;
    }
    uint64_t calls = 0, sent = 0, recv = 0;
    double t = 0, mx = 0, tmin = 1e300, tmax = 0;
    json per = json::array();
    for (const auto& [rank, r] : m.ranks) {
      calls += r.calls;
      sent += r.sent;
      recv += r.recv;
      t += r.time_s;
      mx = std::max(mx, r.max_s);
      tmin = std::min(tmin, r.time_s);
      tmax = std::max(tmax, r.time_s);
      per.push_back({{"rank", rank},
                     {"calls", r.calls},
                     {"time_s", r.time_s},
                     {"bytes_sent", r.sent},
                     {"bytes_recv", r.recv},
                     {"max_call_s", r.max_s}});
    }
    j["calls"] = calls;
    j["bytes_sent"] = sent;
    j["bytes_recv"] = recv;
    j["time_s"] = t;
    j["max_call_s"] = mx;
    j["ranks"] = m.ranks.size();
    j["time_across_ranks_s"] = {{"min", tmin}, {"mean", t / double(m.ranks.size())}, {"max", tmax}};
    j["per_rank"] = per;
    rows.push_back({t, j});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.time > b.time; });
  json sites = json::array();
  int id = 0;
  for (auto& r : rows) {
    r.j["id"] = ++id;
    sites.push_back(r.j);
  }
  json un = json::array();
  for (const auto& [fn, r] : unattributed)
    un.push_back({{"function", fn},
                  {"calls", r.calls},
                  {"time_s", r.time_s},
                  {"bytes_sent", r.sent},
                  {"bytes_recv", r.recv},
                  {"max_call_s", r.max_s}});
  json notes = json::array();
  for (const auto& n : resolver.notes()) notes.push_back(n);
  *out = {{"depth", depth},
          {"ranks", nranks},
          {"ranks_incomplete", incomplete},
          {"ranks_live", from_live},
          {"unattributed_calls", unattributed_calls},
          {"sites", sites},
          {"unattributed", un},
          {"notes", notes},
          {"problems", probs}};
  if (problems)
    for (const auto& p : probs) problems->push_back(p.get<std::string>());
  return true;
}

bool AttachToProfile(const std::string& dir, bool* attached, std::string* error,
                     std::vector<std::string>* problems, bool again) {
  *attached = false;
  std::ifstream in(dir + "/profile.json");
  if (!in) {
    *error = dir + "/profile.json: cannot be read";
    return false;
  }
  json p = json::parse(in, nullptr, false);
  if (p.is_discarded() || !p.is_object()) {
    *error = dir + "/profile.json: not a JSON object";
    return false;
  }
  if (p.contains("callsites") && !again) return true;
  json cs;
  if (!Build(dir, &cs, problems)) return true;
  p["callsites"] = cs;
  if (!profile::WriteProfile(dir, p, error, true)) return false;
  *attached = true;
  return true;
}

}  // namespace invmw::callsites
