#include "experiments/effects/results_db.h"

#include <sqlite3.h>

#include <cmath>
#include <memory>

#include "common/sqlite_readonly.h"

namespace invmw::effects {
namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Read-only: an analysis must never create an empty database where the user mistyped a path,
// and must read a database on read-only storage.
Db Open(const std::string& path, std::string* error) {
  return Db(sqlite::OpenReadOnly(path, error));
}

std::string Text(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? reinterpret_cast<const char*>(t) : "";
}

}  // namespace

bool LoadRuns(const std::string& db_path, const std::string& design, std::vector<Run>* runs,
              std::string* error) {
  runs->clear();
  Db db = Open(db_path, error);
  if (!db) return false;
  const char* sql =
      "SELECT id, point, replication, platform, run_order, factors, responses, status, error "
      "FROM runs WHERE design = ?1 ORDER BY point, replication, platform, id";
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db.get(), sql, -1, &raw, nullptr) != SQLITE_OK) {
    *error =
        db_path + ": not a results database (contract D table 'runs'): " + sqlite3_errmsg(db.get());
    return false;
  }
  Stmt stmt(raw);
  sqlite3_bind_text(raw, 1, design.c_str(), -1, SQLITE_TRANSIENT);
  int rc;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
    Run r;
    r.id = sqlite3_column_int64(raw, 0);
    r.point = sqlite3_column_int64(raw, 1);
    r.replication = sqlite3_column_int64(raw, 2);
    r.platform = Text(raw, 3);
    r.run_order = sqlite3_column_type(raw, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(raw, 4);
    const std::string where = db_path + ": run id " + std::to_string(r.id) + " (point " +
                              std::to_string(r.point) + ", replication " +
                              std::to_string(r.replication) + ")";
    try {
      r.factors = nlohmann::ordered_json::parse(Text(raw, 5));
    } catch (const std::exception& e) {
      *error = where + ": column 'factors' is not valid JSON: " + e.what();
      return false;
    }
    if (!r.factors.is_object()) {
      *error = where + ": column 'factors' must be a JSON object {factor: value}";
      return false;
    }
    for (auto it = r.factors.begin(); it != r.factors.end(); ++it) {
      if (!it.value().is_number() && !it.value().is_string()) {
        *error = where + ": factor '" + it.key() + "' must be a number or a string, got " +
                 it.value().dump();
        return false;
      }
    }
    if (sqlite3_column_type(raw, 6) != SQLITE_NULL) {
      nlohmann::ordered_json resp;
      try {
        resp = nlohmann::ordered_json::parse(Text(raw, 6));
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
          r.responses[it.key()] = it.value().get<double>();
          r.response_order.push_back(it.key());
        }
      }
    }
    r.ok = Text(raw, 7) == "ok";
    r.error = Text(raw, 8);
    runs->push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) {
    *error = db_path + ": reading runs failed: " + sqlite3_errmsg(db.get());
    return false;
  }
  return true;
}

std::vector<std::string> DesignNames(const std::string& db_path) {
  std::vector<std::string> names;
  std::string error;
  Db db = Open(db_path, &error);
  if (!db) return names;
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db.get(), "SELECT DISTINCT design FROM runs ORDER BY design", -1, &raw,
                         nullptr) != SQLITE_OK)
    return names;
  Stmt stmt(raw);
  while (sqlite3_step(raw) == SQLITE_ROW) names.push_back(Text(raw, 0));
  return names;
}

}  // namespace invmw::effects
