#include "fitter/results_db.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "results/results_db.h"

namespace invmw::fit {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Join(const std::set<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

// A factor value as a number: JSON numbers and booleans are, and so is text that spells a
// number completely ("4" from a design file that quoted it). Anything else is text.
bool AsNumber(const nlohmann::json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return std::isfinite(*out);
  }
  if (v.is_boolean()) {
    *out = v.get<bool>() ? 1 : 0;
    return true;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    *out = std::strtod(s.c_str(), &end);
    return !s.empty() && *end == '\0' && std::isfinite(*out);
  }
  return false;
}

struct Run {
  long id = 0, point = 0, replication = 0;
  std::string platform;
  nlohmann::json factors, responses;
};

nlohmann::json ParseObject(const std::string& text, const std::string& where, const char* column,
                           bool null_ok) {
  if (text.empty() && null_ok) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw DataError(where + ": column '" + column + "' is not a JSON object: '" +
                    text.substr(0, 80) + "'");
  }
  return j;
}

}  // namespace

DataTable LoadResults(const std::string& path, const ResultsQuery& q) {
  if (q.design.empty()) throw DataError(path + ": no design named (--design NAME)");
  // Opening read-only never creates an empty database where the user mistyped a path, and
  // reads one on read-only storage.
  struct stat sb;
  if (stat(path.c_str(), &sb) != 0)
    throw DataError(path + ": no results database there (run a design first, or give --db FILE)");
  std::vector<Run> runs;
  std::set<std::string> platforms;
  std::vector<std::pair<std::string, std::string>> designs;
  try {
    results::ResultsDb db(path, results::ResultsDb::kReadOnly);
    for (const results::RunRecord& row : db.Rows(q.design)) {
      if (row.status != "ok" || (!q.platform.empty() && row.platform != q.platform)) continue;
      Run r;
      r.id = row.id;
      r.point = row.point;
      r.replication = row.replication;
      r.platform = row.platform;
      std::string where = path + ": run id " + std::to_string(r.id);
      r.factors = ParseObject(row.factors, where, "factors", false);
      r.responses = ParseObject(row.responses, where, "responses", true);
      platforms.insert(r.platform);
      runs.push_back(std::move(r));
    }
    if (runs.empty()) designs = db.Designs(true);
  } catch (const results::DbError& e) {
    throw DataError(e.what());
  }
  // Rows come by point, replication, platform, id; a platform's rows stay together.
  std::stable_sort(runs.begin(), runs.end(),
                   [](const Run& a, const Run& b) { return a.platform < b.platform; });

  std::string what =
      "design '" + q.design + "'" + (q.platform.empty() ? "" : " on platform '" + q.platform + "'");
  if (runs.empty()) {
    // Say what is there, so a typo is obvious.
    std::set<std::string> have;
    for (const auto& [design, platform] : designs) have.insert(design + " (" + platform + ")");
    throw DataError(path + ": no successful run of " + what +
                    " (designs with successful runs: " + Join(have) + ")");
  }
  if (platforms.size() > 1) {
    throw DataError(path + ": " + what + " was run on several platforms (" + Join(platforms) +
                    "); their parameters differ, so choose one with --platform");
  }

  DataTable t;
  t.source = path + " design " + q.design + " platform " + *platforms.begin();
  // Columns: every numeric factor, then every response, in first-seen order.
  std::map<std::string, int> index;
  std::set<std::string> text_factors;
  auto column = [&](const std::string& name) {
    auto it = index.find(name);
    if (it != index.end()) return it->second;
    int k = static_cast<int>(t.columns.size());
    index[name] = k;
    t.columns.push_back(name);
    for (auto& row : t.rows) row.push_back(kNaN);
    return k;
  };
  for (const Run& r : runs) {
    for (const auto& [name, v] : r.factors.items()) {
      double x;
      if (!AsNumber(v, &x) && text_factors.insert(name).second)
        t.text_columns.emplace_back(name, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  for (const Run& r : runs) {
    std::string where = path + ": run id " + std::to_string(r.id);
    std::vector<std::pair<int, double>> cells;
    for (const auto& [name, v] : r.factors.items()) {
      if (text_factors.count(name)) continue;
      double x = 0;
      AsNumber(v, &x);
      cells.emplace_back(column(name), x);
    }
    for (const auto& [name, v] : r.responses.items()) {
      if (v.is_null()) continue;  // not measured in this run
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        throw DataError(where + ": response '" + name + "' is " + v.dump() +
                        ", expected a finite number of seconds");
      }
      // A response named like a factor would silently overwrite it.
      if (r.factors.contains(name))
        throw DataError(where + ": '" + name + "' is both a factor and a response");
      cells.emplace_back(column(name), v.get<double>());
      if (std::find(t.response_columns.begin(), t.response_columns.end(), name) ==
          t.response_columns.end())
        t.response_columns.push_back(name);
    }
    t.rows.emplace_back(t.columns.size(), kNaN);
    for (const auto& [k, x] : cells) t.rows.back()[k] = x;
    t.lines.push_back(0);
    t.labels.push_back("run " + std::to_string(r.id) + " (point " + std::to_string(r.point) +
                       ", replication " + std::to_string(r.replication) + ")");
    t.groups.push_back(r.point);
    t.replications.push_back(r.replication);
  }
  return t;
}

}  // namespace invmw::fit
