#include "experiments/effects/results_export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "experiments/effects/factorial_layout.h"

namespace invmw::effects {
namespace {

std::string Number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// A factor value as a CSV cell: numbers exactly as stored, strings as they are.
std::string FactorCell(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();
  return Number(v.get<double>());
}

}  // namespace

std::string CsvField(const std::string& s) {
  bool quote = s.find_first_of(",\"\r\n") != std::string::npos ||
               (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

bool SelectRuns(const std::vector<Run>& rows, const ExportOptions& options,
                std::vector<Run>* selected, std::vector<std::string>* factor_names,
                std::vector<std::string>* response_names, std::string* error) {
  selected->clear();
  factor_names->clear();
  response_names->clear();
  std::set<std::string> all_factors, all_responses;
  for (const Run& r : rows) {
    for (auto it = r.factors.begin(); it != r.factors.end(); ++it) {
      if (all_factors.insert(it.key()).second) factor_names->push_back(it.key());
    }
    for (const auto& n : r.response_order)
      if (all_responses.insert(n).second) response_names->push_back(n);
  }
  for (const auto& [name, value] : options.where) {
    if (!all_factors.count(name)) {
      *error = "--where " + name + "=" + value + ": the design has no factor '" + name + "'";
      return false;
    }
  }
  for (const auto& n : options.responses) {
    if (!all_responses.count(n)) {
      *error = "--response " + n + ": no run of the design recorded it";
      return false;
    }
  }
  if (!options.responses.empty()) *response_names = options.responses;
  for (const Run& r : rows) {
    if (!r.ok) continue;
    if (!options.platform.empty() && r.platform != options.platform) continue;
    bool keep = true;
    for (const auto& [name, value] : options.where)
      keep = keep && r.factors.contains(name) && LevelLabel(r.factors[name]) == value;
    if (keep) selected->push_back(r);
  }
  return true;
}

bool WriteCsv(const std::vector<Run>& rows, const ExportOptions& options, std::ostream& out,
              std::string* error) {
  std::vector<Run> runs;
  std::vector<std::string> factors, responses;
  if (!SelectRuns(rows, options, &runs, &factors, &responses, error)) return false;
  const std::vector<std::string> fixed = {"point", "replication", "platform"};
  std::set<std::string> seen(fixed.begin(), fixed.end());
  for (const auto& n : factors) {
    if (!seen.insert(n).second) {
      *error = "factor '" + n +
               "' has the name of a fixed CSV column (point, replication, "
               "platform)";
      return false;
    }
  }
  for (const auto& n : responses) {
    if (!seen.insert(n).second) {
      *error = "response '" + n +
               "' has the name of a factor or fixed column; the CSV header "
               "would be ambiguous";
      return false;
    }
  }
  std::string line;
  for (const auto& n : fixed) line += CsvField(n) + ",";
  for (const auto& n : factors) line += CsvField(n) + ",";
  for (const auto& n : responses) line += CsvField(n) + ",";
  line.pop_back();
  out << line << "\n";
  for (const Run& r : runs) {
    line =
        std::to_string(r.point) + "," + std::to_string(r.replication) + "," + CsvField(r.platform);
    for (const auto& n : factors)
      line += "," + (r.factors.contains(n) ? CsvField(FactorCell(r.factors[n])) : "");
    for (const auto& n : responses) {
      auto it = r.responses.find(n);
      line += "," + (it == r.responses.end() ? "" : Number(it->second));
    }
    out << line << "\n";
  }
  return true;
}

bool WriteExtrapJsonLines(const std::vector<Run>& rows, const ExportOptions& options,
                          std::ostream& out, std::string* note, std::string* error) {
  std::vector<Run> runs;
  std::vector<std::string> factors, responses;
  if (!SelectRuns(rows, options, &runs, &factors, &responses, error)) return false;
  std::vector<std::string> params, dropped;
  for (const auto& n : factors) {
    std::set<std::string> strings;
    bool numeric = true;
    for (const Run& r : runs) {
      if (!r.factors.contains(n)) {
        *error = "run id " + std::to_string(r.id) + " lacks factor '" + n +
                 "'; Extra-P needs the same parameters on every line";
        return false;
      }
      if (!r.factors[n].is_number()) {
        numeric = false;
        strings.insert(LevelLabel(r.factors[n]));
      }
    }
    if (numeric) {
      params.push_back(n);
    } else if (strings.size() == 1 && runs.size() > 0) {
      dropped.push_back(n + "=" + *strings.begin());
    } else {
      *error = "factor '" + n + "' has string levels (" + *strings.begin() + ", " +
               *std::next(strings.begin()) +
               ", ...); Extra-P parameters must be numbers: export one level at a time with "
               "--where " +
               n + "=VALUE, or use --format csv";
      return false;
    }
  }
  if (!dropped.empty()) {
    *note = "left out string factors with a single value:";
    for (const auto& d : dropped) *note += " " + d;
  }
  for (const Run& r : runs) {
    nlohmann::ordered_json p = nlohmann::ordered_json::object();
    for (const auto& n : params) p[n] = r.factors[n];
    for (const auto& m : responses) {
      auto it = r.responses.find(m);
      if (it == r.responses.end()) continue;
      nlohmann::ordered_json line;
      line["params"] = p;
      line["metric"] = m;
      line["value"] = it->second;
      out << line.dump() << "\n";
    }
  }
  return true;
}

}  // namespace invmw::effects
