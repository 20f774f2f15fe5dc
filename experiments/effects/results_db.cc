#include "experiments/effects/results_db.h"

#include "results/results_db.h"

namespace invmw::effects {
namespace {

// Factors and responses of one row, checked against what contract D promises; false with
// *error naming the row and the column otherwise.
bool ParseRow(const std::string& db_path, const results::RunRecord& row, Run* r,
              std::string* error) {
  r->id = row.id;
  r->point = row.point;
  r->replication = row.replication;
  r->platform = row.platform;
  r->run_order = row.run_order;
  const std::string where = db_path + ": run id " + std::to_string(r->id) + " (point " +
                            std::to_string(r->point) + ", replication " +
                            std::to_string(r->replication) + ")";
  try {
    r->factors = nlohmann::ordered_json::parse(row.factors);
  } catch (const std::exception& e) {
    *error = where + ": column 'factors' is not valid JSON: " + e.what();
    return false;
  }
  if (!r->factors.is_object()) {
    *error = where + ": column 'factors' must be a JSON object {factor: value}";
    return false;
  }
  for (auto it = r->factors.begin(); it != r->factors.end(); ++it) {
    if (!it.value().is_number() && !it.value().is_string()) {
      *error = where + ": factor '" + it.key() + "' must be a number or a string, got " +
               it.value().dump();
      return false;
    }
  }
  // The reader gives NULL as empty text: a run without responses.
  if (!row.responses.empty()) {
    nlohmann::ordered_json resp;
    try {
      resp = nlohmann::ordered_json::parse(row.responses);
    } catch (const std::exception& e) {
      *error = where + ": column 'responses' is not valid JSON: " + e.what();
      return false;
    }
    if (!resp.is_object() && !resp.is_null()) {
      *error = where + ": column 'responses' must be a JSON object {response: number}";
      return false;
    }
    if (resp.is_object()) {
      for (auto it = resp.begin(); it != resp.end(); ++it) {
        if (it.value().is_null()) continue;  // a response the run could not extract
        if (!it.value().is_number()) {
          *error =
              where + ": response '" + it.key() + "' must be a number, got " + it.value().dump();
          return false;
        }
        r->responses[it.key()] = it.value().get<double>();
        r->response_order.push_back(it.key());
      }
    }
  }
  r->ok = row.status == "ok";
  r->error = row.error;
  return true;
}

}  // namespace

bool LoadRuns(const std::string& db_path, const std::string& design, std::vector<Run>* runs,
              std::string* error) {
  runs->clear();
  std::vector<results::RunRecord> rows;
  try {
    // Read-only: an analysis must never create an empty database where the user mistyped a
    // path, and must read a database on read-only storage.
    results::ResultsDb db(db_path, results::ResultsDb::kReadOnly);
    rows = db.Rows(design);
  } catch (const results::DbError& e) {
    *error = e.what();
    return false;
  }
  for (const results::RunRecord& row : rows) {
    Run r;
    if (!ParseRow(db_path, row, &r, error)) return false;
    runs->push_back(std::move(r));
  }
  return true;
}

std::vector<std::string> DesignNames(const std::string& db_path) {
  std::vector<std::string> names;
  try {
    results::ResultsDb db(db_path, results::ResultsDb::kReadOnly);
    for (const auto& [design, platform] : db.Designs(false))
      if (names.empty() || names.back() != design) names.push_back(design);
  } catch (const results::DbError&) {
  }
  return names;
}

}  // namespace invmw::effects
