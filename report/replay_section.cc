// Why its own file: the replay rows join two independent outputs (the validation files and the
// replay files) by run platform and design point; the page's other sections are plain views of
// one file each (html_report.cc).
#include "report/replay_section.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/xml_escape.h"
#include "report/html_report.h"
#include "report/json_fields.h"

namespace invmw::report {
namespace {

using nlohmann::json;

std::string Fmt(double v, const char* f = "%.5g") {
  if (!std::isfinite(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string Row(const std::vector<std::string>& cells, const char* tag = "td") {
  std::string r = "<tr>";
  for (const auto& c : cells) r += std::string("<") + tag + ">" + c + "</" + tag + ">";
  return r + "</tr>\n";
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Replayed {
  std::vector<double> predicted;  // one per replayed reference run (replication)
  double unexpressed_share = 0;   // largest over the runs
};

}  // namespace

std::string ReplaySection(const std::string& dir) {
  std::string h = "<h2>Trace replay (SimGrid) next to the analytic model</h2>\n";
  const std::vector<std::string> replays = JsonFiles(dir + "/replay");
  if (replays.empty())
    return h + "<p class=warn>No trace replay in " + XmlEscape(dir) +
           "/replay: this pipeline did not replay its traces.</p>\n";
  // (run platform, design point) -> the replays' predictions over the reference's runs.
  std::map<std::pair<std::string, long>, Replayed> by;
  std::string reference;
  for (const auto& file : replays) {
    const json r = ReadJson(file);
    const long point = static_cast<long>(Number(r, "point", file, ""));
    const json& names = Field(r, "run_platforms", file, "");
    const json& plats = Field(Field(r, "replay", file, ""), "platforms", file, "replay.");
    if (!names.is_array() || !plats.is_array() || names.size() != plats.size())
      throw ReportError(file + ": 'run_platforms' and 'replay.platforms' differ in length");
    if (reference.empty() && r["replay"].contains("reference") &&
        r["replay"]["reference"].is_string())
      reference = r["replay"]["reference"].get<std::string>();
    for (size_t i = 0; i < plats.size(); ++i) {
      const std::string w = "replay.platforms[" + std::to_string(i) + "].";
      if (!names[i].is_string())
        throw ReportError(file + ": 'run_platforms[" + std::to_string(i) + "]' is not a string");
      Replayed& x = by[{names[i].get<std::string>(), point}];
      x.predicted.push_back(Number(plats[i], "predicted_wall_s", file, w));
      double share = 0;
      for (const json& u : Field(plats[i], "unexpressed", file, w))
        share += Number(u, "share", file, w + "unexpressed[].");
      x.unexpressed_share = std::max(x.unexpressed_share, share);
    }
  }
  h += "<p>The reference runs' OTF2 traces (one per replication of each validation point) "
       "replayed by SimGrid (<code>invmw predict --replay</code>) on each platform's probed "
       "table, computation bursts scaled from the reference's table" +
       (reference.empty() ? std::string() : " (" + XmlEscape(reference) + ")") +
       "; the replay's prediction is the median over the replications. Both errors are "
       "(predicted &minus; measured mean) / measured mean, against the same measured mean as "
       "the validation above. Rows without a replay: that platform or point was not "
       "replayed.</p>\n";
  std::string summary = "<table class=replay>\n" +
                        Row({"validation", "run platform", "points", "analytic median |error| %",
                             "replay median |error| %", "analytic worst %", "replay worst %"},
                            "th");
  std::string detail = "<table class=replay>\n" +
                       Row({"validation", "point", "factors", "measured mean (s)", "analytic (s)",
                            "analytic error %", "replay (s)", "replay error %", "not replayed %"},
                           "th");
  for (const auto& file : ValidationFiles(dir)) {
    const json v = ReadJson(file);
    const std::string label = Text(v, "label", file, "");
    const std::string platform = v.value("run_platform", "");
    const std::string total = Text(v, "total", file, "");
    std::vector<double> ea, er;
    int k = 0;
    for (const json& pt : Field(v, "points", file, "")) {
      const std::string w = "points[" + std::to_string(k++) + "].";
      const long point = static_cast<long>(Number(pt, "point", file, w));
      const json& t = Field(Field(pt, "responses", file, w), total, file, w + "responses.");
      const double mean =
          t.contains("mean") && t["mean"].is_number() ? t["mean"].get<double>() : NAN;
      const double analytic = t.contains("predicted") && t["predicted"].is_number()
                                  ? t["predicted"].get<double>()
                                  : NAN;
      const double e_a = mean > 0 ? 100 * (analytic - mean) / mean : NAN;
      double replay = NAN, e_r = NAN, share = NAN;
      auto it = by.find({platform, point});
      if (it != by.end()) {
        replay = Median(it->second.predicted);
        e_r = mean > 0 ? 100 * (replay - mean) / mean : NAN;
        share = 100 * it->second.unexpressed_share;
      }
      if (std::isfinite(e_a)) ea.push_back(std::fabs(e_a));
      if (std::isfinite(e_r)) er.push_back(std::fabs(e_r));
      std::string f;
      for (const auto& [name, value] : Field(pt, "factors", file, w).items())
        f += (f.empty() ? "" : " ") + name + "=" +
             (value.is_number() ? Fmt(value.get<double>()) : value.dump());
      detail +=
          Row({XmlEscape(label), std::to_string(point), XmlEscape(f), Fmt(mean), Fmt(analytic),
               Fmt(e_a, "%.1f"), Fmt(replay), Fmt(e_r, "%.1f"), Fmt(share, "%.2f")});
    }
    auto worst = [](const std::vector<double>& e) {
      return e.empty() ? NAN : *std::max_element(e.begin(), e.end());
    };
    summary +=
        Row({XmlEscape(label), XmlEscape(platform), std::to_string(k), Fmt(Median(ea), "%.1f"),
             Fmt(Median(er), "%.1f"), Fmt(worst(ea), "%.1f"), Fmt(worst(er), "%.1f")});
  }
  return h + summary + "</table>\n" + detail + "</table>\n";
}

}  // namespace invmw::report
