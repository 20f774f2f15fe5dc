#include "replay/simgrid_run.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "common/subprocess.h"
#include "fitter/file_io.h"

namespace invmw::replay {
namespace {

std::string LastLines(const std::string& s, int n) {
  size_t pos = s.size();
  while (n-- > 0 && pos > 0) {
    pos = s.rfind('\n', pos - 1);
    if (pos == std::string::npos) return s;
  }
  return s.substr(pos + 1);
}

}  // namespace

std::vector<RankTimes> ParsePaje(const std::string& text, int ranks, double end_time,
                                 double* last_end) {
  std::vector<RankTimes> out(ranks);
  for (int r = 0; r < ranks; ++r) out[r].rank = r;
  std::map<std::string, std::string> event_of;    // event id -> PajeXxx
  std::map<std::string, int> rank_of;             // container alias -> rank
  std::map<std::string, std::string> value_name;  // entity value alias -> name
  struct State {
    std::vector<std::string> stack;
    double last = 0, end = -1;
  };
  std::vector<State> st(ranks);
  std::istringstream in(text);
  std::string line;
  auto account = [&](int r, double t) {
    State& s = st[r];
    if (!s.stack.empty() && t > s.last) {
      double d = t - s.last;
      if (value_name[s.stack.back()] == "computing")
        out[r].computation_s += d;
      else
        out[r].communication_s += d;
    }
    s.last = t;
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    if (line[0] == '%') {
      std::string kw, name, id;
      ls >> kw >> name >> id;
      if (kw == "%EventDef") event_of[id] = name;
      continue;
    }
    std::string id;
    ls >> id;
    const std::string& ev = event_of[id];
    if (ev == "PajeCreateContainer") {
      std::string time, alias, type, parent, name;
      ls >> time >> alias >> type >> parent;
      std::getline(ls, name);
      size_t p = name.find("rank-");
      if (p != std::string::npos) {
        int r = std::atoi(name.c_str() + p + 5);
        if (r >= 0 && r < ranks) rank_of[alias] = r;
      }
    } else if (ev == "PajeDefineEntityValue") {
      std::string alias, type, name;
      ls >> alias >> type >> name;
      value_name[alias] = name;
    } else if (ev == "PajePushState" || ev == "PajePopState" || ev == "PajeDestroyContainer") {
      double t = 0;
      std::string type, container, value;
      ls >> t >> type >> container >> value;
      auto it = rank_of.find(ev == "PajeDestroyContainer" ? container : container);
      if (it == rank_of.end()) continue;
      int r = it->second;
      account(r, t);
      if (ev == "PajePushState")
        st[r].stack.push_back(value);
      else if (ev == "PajePopState" && !st[r].stack.empty())
        st[r].stack.pop_back();
      else if (ev == "PajeDestroyContainer")
        st[r].end = t;
    }
  }
  if (last_end) {
    *last_end = 0;
    for (const auto& s : st) *last_end = std::max(*last_end, s.end);
  }
  for (int r = 0; r < ranks; ++r) {
    double busy = out[r].computation_s + out[r].communication_s;
    // Below the trace's 1 ns resolution the difference is rounding, not waiting.
    out[r].wait_s = end_time - busy > 1e-9 ? end_time - busy : 0;
  }
  return out;
}

ReplayResult RunReplay(const fit::SimgridPlatform& platform, int ranks, int host_count,
                       const std::string& index_file, const std::string& work_dir,
                       const std::string& smpirun, bool split) {
  const std::string xml = work_dir + "/platform.xml", hosts = work_dir + "/hostfile",
                    paje = work_dir + "/replay.paje";
  fit::WriteFileAtomic(xml, platform.xml);
  // Ranks go round-robin over the platform's hosts (node-0 .. node-N-1).
  std::string hostfile;
  if (host_count <= 0 || host_count > platform.nodes) host_count = platform.nodes;
  for (int r = 0; r < ranks; ++r) hostfile += "node-" + std::to_string(r % host_count) + "\n";
  fit::WriteFileAtomic(hosts, hostfile);
  std::vector<std::string> argv = {smpirun, "-platform",          xml, "-hostfile", hosts,
                                   "-np",   std::to_string(ranks)};
  std::istringstream cfg(platform.cfg);
  std::string line;
  while (std::getline(cfg, line))
    if (!line.empty()) argv.push_back(line);
  if (split) {
    for (const char* a : {"--cfg=tracing:yes", "--cfg=tracing/smpi:yes",
                          "--cfg=tracing/smpi/computing:yes", "--cfg=tracing/precision:9"})
      argv.push_back(a);
    argv.push_back("--cfg=tracing/filename:" + paje);
  }
  argv.push_back("-replay");
  argv.push_back(index_file);
  ReplayResult res;
  for (const auto& a : argv) res.command += (res.command.empty() ? "" : " ") + a;
  SubprocessResult run = RunCapture(argv);
  if (!run.started)
    throw std::runtime_error("cannot run '" + smpirun + "': " + run.error +
                             " (SimGrid's smpirun is in Debian's libsimgrid-dev; "
                             "scripts/setup.sh installs it)");
  if (!run.Succeeded())
    throw std::runtime_error("'" + res.command + "' failed (" + run.Describe() + "):\n" +
                             LastLines(run.output, 8));
  const std::string key = "Simulation time ";
  size_t p = run.output.rfind(key);
  if (p == std::string::npos)
    throw std::runtime_error("'" + res.command + "': no 'Simulation time' in its output:\n" +
                             LastLines(run.output, 8));
  res.predicted_wall_s = std::strtod(run.output.c_str() + p + key.size(), nullptr);
  if (!split) return res;
  std::ifstream f(paje);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) throw std::runtime_error(paje + ": SimGrid wrote no Paje trace");
  // The printed time has 6 decimals; the Paje trace's rank ends have 9.
  double end = 0;
  res.ranks = ParsePaje(text.str(), ranks, res.predicted_wall_s, &end);
  if (end > 0 && std::abs(end - res.predicted_wall_s) <= 1e-6) {
    res.predicted_wall_s = end;
    res.ranks = ParsePaje(text.str(), ranks, end, nullptr);
  }
  return res;
}

}  // namespace invmw::replay
