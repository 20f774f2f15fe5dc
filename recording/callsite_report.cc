#include "recording/callsite_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace invmw::profile {

using nlohmann::json;

namespace {

constexpr size_t kTopSites = 20;

std::string Clip(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - (n - 3));
}

template <typename T>
T Get(const json& j, const char* k, T d) {
  return j.is_object() && j.contains(k) ? j[k].get<T>() : d;
}

}  // namespace

void RenderCallSites(const json& p, std::ostringstream& os) {
  if (!p.contains("callsites") || !p["callsites"].is_object()) return;
  const json& c = p["callsites"];
  const json& sites = c.contains("sites") ? c["sites"] : json::array();
  double total = 0;
  for (const auto& s : sites) total += Get(s, "time_s", 0.0);
  for (const auto& u : c.value("unattributed", json::array())) total += Get(u, "time_s", 0.0);
  char line[640];
  os << "\nMPI call sites (" << sites.size() << " sites from " << c.value("ranks", 0) << " ranks, "
     << c.value("depth", 0) << " frame(s) each; site % = share of all MPI time "
     << "at call sites; min/mean/max = a rank's time at the site over the ranks that used it)\n";
  std::snprintf(line, sizeof line, "%4s %-22s %-40s %10s %11s %7s %11s %11s %11s %12s %12s\n", "id",
                "function", "location", "calls", "time_s", "site%", "min_rank_s", "mean_rank_s",
                "max_rank_s", "bytes_sent", "bytes_recv");
  os << "Top call sites by time\n" << line;
  for (size_t i = 0; i < sites.size() && i < kTopSites; ++i) {
    const json& s = sites[i];
    const json& a = s["time_across_ranks_s"];
    const double t = Get(s, "time_s", 0.0);
    std::snprintf(line, sizeof line,
                  "%4d %-22s %-40s %10llu %11.6f %7.2f %11.6f %11.6f %11.6f %12llu %12llu\n",
                  Get(s, "id", 0), Get<std::string>(s, "function", "").c_str(),
                  Clip(Get<std::string>(s, "location", ""), 40).c_str(),
                  (unsigned long long)Get<uint64_t>(s, "calls", 0), t,
                  total > 0 ? 100 * t / total : 0.0, Get(a, "min", 0.0), Get(a, "mean", 0.0),
                  Get(a, "max", 0.0), (unsigned long long)Get<uint64_t>(s, "bytes_sent", 0),
                  (unsigned long long)Get<uint64_t>(s, "bytes_recv", 0));
    os << line;
  }
  if (sites.size() > kTopSites)
    os << "  (" << sites.size() - kTopSites << " more in the per-function tables below)\n";
  // Frames beyond the first (INVMW_WRAP_CALLSITE_DEPTH >= 2) of the sites shown.
  bool deep = false;
  for (size_t i = 0; i < sites.size() && i < kTopSites; ++i) {
    if (!sites[i].contains("frames")) continue;
    if (!deep) os << "Call paths (innermost first)\n";
    deep = true;
    os << "  " << Get(sites[i], "id", 0) << ":";
    for (const auto& f : sites[i]["frames"]) os << " " << Get<std::string>(f, "location", "?");
    os << "\n";
  }
  std::map<std::string, std::vector<const json*>> by_func;
  for (const auto& s : sites) by_func[Get<std::string>(s, "function", "")].push_back(&s);
  os << "\nCall sites per function\n";
  std::snprintf(line, sizeof line, "  %4s %-48s %10s %11s %7s %12s %12s\n", "id", "location",
                "calls", "time_s", "fn%", "bytes_sent", "bytes_recv");
  os << line;
  for (const auto& [fn, list] : by_func) {
    double ft = 0;
    for (const json* s : list) ft += Get(*s, "time_s", 0.0);
    os << fn << "\n";
    for (const json* s : list) {
      const double t = Get(*s, "time_s", 0.0);
      std::snprintf(line, sizeof line, "  %4d %-48s %10llu %11.6f %7.2f %12llu %12llu\n",
                    Get(*s, "id", 0), Clip(Get<std::string>(*s, "location", ""), 48).c_str(),
                    (unsigned long long)Get<uint64_t>(*s, "calls", 0), t,
                    ft > 0 ? 100 * t / ft : 0.0,
                    (unsigned long long)Get<uint64_t>(*s, "bytes_sent", 0),
                    (unsigned long long)Get<uint64_t>(*s, "bytes_recv", 0));
      os << line;
    }
  }
  const json un = c.value("unattributed", json::array());
  if (!un.empty()) {
    os << "Unattributed (the call-site table was full: raise INVMW_WRAP_CALLSITE_SLOTS)\n";
    for (const auto& u : un) {
      std::snprintf(line, sizeof line,
                    "  %-22s %10llu calls %11.6f s %12llu B sent %12llu B recv\n",
                    Get<std::string>(u, "function", "").c_str(),
                    (unsigned long long)Get<uint64_t>(u, "calls", 0), Get(u, "time_s", 0.0),
                    (unsigned long long)Get<uint64_t>(u, "bytes_sent", 0),
                    (unsigned long long)Get<uint64_t>(u, "bytes_recv", 0));
      os << line;
    }
  }
  for (const auto& n : c.value("notes", json::array()))
    if (n.is_string()) os << "  note: " << n.get<std::string>() << "\n";
  for (const auto& n : c.value("problems", json::array()))
    if (n.is_string()) os << "  problem: " << n.get<std::string>() << "\n";
  const json none = json::array();
  const json& live = c.contains("ranks_live") ? c["ranks_live"] : none;
  if (!c.value("ranks_incomplete", json::array()).empty()) {
    json without = json::array();
    for (const auto& r : c["ranks_incomplete"])
      if (std::find(live.begin(), live.end(), r) == live.end()) without.push_back(r);
    os << "  ranks without MPI_Finalize: " << c["ranks_incomplete"].dump();
    if (!live.empty()) os << "; their tables from the live call-site files: " << live.dump();
    if (!without.empty()) os << "; no call-site table: " << without.dump();
    os << "\n";
  }
}

}  // namespace invmw::profile
