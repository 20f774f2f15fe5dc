#include "fitter/tests/synthetic.h"

#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

namespace invmw::fit::testing {

DataTable Synthesize(const Model& model, const std::vector<std::string>& factor_names,
                     const std::vector<std::vector<double>>& rows,
                     const std::map<std::string, double>& truth, double noise, uint64_t seed) {
  DataTable t;
  t.source = "synthetic";
  t.columns = factor_names;
  for (const auto& r : model.responses()) t.columns.push_back(r.column);
  std::vector<double> p(model.parameters().size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = truth.at(model.parameters()[i].name);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  for (const auto& row : rows) {
    std::vector<double> f(model.factors().size());
    for (size_t i = 0; i < f.size(); ++i) {
      const Factor& fac = model.factors()[i];
      auto it = std::find(factor_names.begin(), factor_names.end(), fac.name);
      f[i] = it == factor_names.end() ? fac.default_value : row[it - factor_names.begin()];
    }
    std::vector<double> out = row;
    for (const auto& r : model.responses())
      out.push_back(r.expr.Eval<double>(f.data(), p.data()) * (1 + noise * z(rng)));
    t.rows.push_back(out);
  }
  return t;
}

const std::map<std::string, double>& OpalTruth() {
  static const std::map<std::string, double> truth = {{"a1", 100},  {"b1", 20e-6}, {"a2", 5e-9},
                                                      {"a3", 5e-8}, {"a4", 1e-6},  {"b5", 2e-5}};
  return truth;
}

std::vector<std::vector<double>> OpalDesign() {
  std::vector<std::vector<double>> rows;
  for (double n : {500.0, 2000.0, 8000.0})
    for (double u : {1.0, 0.1})
      for (double nt : {100.0, 1e6})
        for (double p = 1; p <= 7; ++p) rows.push_back({10, p, u, n, nt, 0, 24});
  return rows;
}

const std::vector<std::string>& OpalFactors() {
  static const std::vector<std::string> names = {"s", "p", "u", "n", "nt", "g", "alpha"};
  return names;
}

namespace {

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("sqlite: " + msg + " in: " + sql.substr(0, 60));
  }
}

}  // namespace

void WriteOpalResultsDb(const std::string& path, const SyntheticDbRun& run) {
  Model m = Model::Load(ResolveModelPath("opal"));
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error(path + ": cannot create database");
  }
  struct Closer {
    sqlite3* db;
    ~Closer() { sqlite3_close(db); }
  } closer{db};
  Exec(db,
       "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
       "INSERT OR REPLACE INTO meta VALUES('schema', '1');"
       "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, design TEXT NOT NULL,"
       " point INTEGER NOT NULL, replication INTEGER NOT NULL, platform TEXT NOT NULL,"
       " run_order INTEGER, factors TEXT NOT NULL, responses TEXT, host TEXT, start_time TEXT,"
       " duration REAL, exit_status INTEGER,"
       " status TEXT NOT NULL CHECK(status IN ('ok','failed')), error TEXT, trace_dir TEXT,"
       " UNIQUE(design, point, replication, platform));"
       "BEGIN;");
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO runs(design, point, replication, platform, run_order, "
                         "factors, responses, host, start_time, duration, exit_status, status, "
                         "error) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, 'synthetic', "
                         "'2026-01-01T00:00:00Z', ?8, ?9, ?10, ?11)",
                         -1, &st, nullptr) != SQLITE_OK) {
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db));
  }
  const auto design = OpalDesign();
  int order = 0;
  for (int rep = 0; rep <= run.replications; ++rep) {
    bool failed = rep == run.replications;  // one extra, failed run per point
    DataTable d = Synthesize(m, OpalFactors(), design, run.truth, run.noise, run.seed * 1000 + rep);
    for (size_t i = 0; i < d.rows.size(); ++i) {
      nlohmann::json factors, responses;
      for (size_t k = 0; k < OpalFactors().size(); ++k) factors[OpalFactors()[k]] = d.rows[i][k];
      factors["mpi"] = "openmpi";
      for (size_t k = OpalFactors().size(); k < d.columns.size(); ++k)
        responses[d.columns[k]] = failed ? 1e9 : d.rows[i][k];
      responses["t_idle"] = 0.01 * responses["t_wall"].get<double>();
      std::string f = factors.dump(), r = responses.dump();
      sqlite3_bind_text(st, 1, run.design.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(st, 2, static_cast<sqlite3_int64>(i));
      sqlite3_bind_int(st, 3, rep);
      sqlite3_bind_text(st, 4, run.platform.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int(st, 5, order++);
      sqlite3_bind_text(st, 6, f.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st, 7, r.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_double(st, 8, responses["t_wall"].get<double>());
      sqlite3_bind_int(st, 9, failed ? 1 : 0);
      sqlite3_bind_text(st, 10, failed ? "failed" : "ok", -1, SQLITE_STATIC);
      if (failed) {
        sqlite3_bind_text(st, 11, "exit status 1", -1, SQLITE_STATIC);
      } else {
        sqlite3_bind_null(st, 11);
      }
      if (sqlite3_step(st) != SQLITE_DONE) {
        std::string msg = sqlite3_errmsg(db);
        sqlite3_finalize(st);
        throw std::runtime_error(path + ": insert: " + msg);
      }
      sqlite3_reset(st);
    }
  }
  sqlite3_finalize(st);
  Exec(db, "COMMIT;");
}

}  // namespace invmw::fit::testing
