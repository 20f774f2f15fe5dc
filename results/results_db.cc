#include "results/results_db.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <ctime>
#include <filesystem>
#include <memory>

#include "common/config.h"
#include "results/sqlite_readonly.h"

namespace invmw::results {

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  design TEXT NOT NULL,
  point INTEGER NOT NULL,
  replication INTEGER NOT NULL,
  platform TEXT NOT NULL,
  run_order INTEGER,
  factors TEXT NOT NULL,
  responses TEXT,
  host TEXT, start_time TEXT,
  duration REAL,
  exit_status INTEGER,
  status TEXT NOT NULL CHECK(status IN ('ok','failed')),
  error TEXT,
  trace_dir TEXT,
  job_id TEXT, node_list TEXT,
  UNIQUE(design, point, replication, platform));
INSERT OR IGNORE INTO meta(key, value) VALUES('schema', '1');
)sql";

constexpr const char* kColumns =
    "id, design, point, replication, platform, run_order, factors, responses, host, start_time, "
    "duration, exit_status, status, error, trace_dir";
// Added later (batch platforms, e.g. Slurm): read as NULL from a database that predates them and
// is opened read-only; writers add them (AddLaterColumns). The schema stays '1': the change is
// additive, so an older invmw still reads and writes such a database.
constexpr const char* kLaterColumns[] = {"job_id", "node_list"};

struct StmtFinalizer {
  void operator()(sqlite3_stmt* st) const { sqlite3_finalize(st); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

std::string Text(sqlite3_stmt* st, int col) {
  const unsigned char* t = sqlite3_column_text(st, col);
  return t ? reinterpret_cast<const char*>(t) : "";
}

RunRecord ReadRow(sqlite3_stmt* st) {
  RunRecord r;
  r.id = sqlite3_column_int64(st, 0);
  r.design = Text(st, 1);
  r.point = sqlite3_column_int(st, 2);
  r.replication = sqlite3_column_int(st, 3);
  r.platform = Text(st, 4);
  r.run_order = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
  r.factors = Text(st, 6);
  r.responses = Text(st, 7);
  r.host = Text(st, 8);
  r.start_time = Text(st, 9);
  r.duration = sqlite3_column_double(st, 10);
  r.exit_status = sqlite3_column_int(st, 11);
  r.status = Text(st, 12);
  r.error = Text(st, 13);
  r.trace_dir = Text(st, 14);
  r.job_id = Text(st, 15);
  r.node_list = Text(st, 16);
  return r;
}

Stmt Prepare(sqlite3* db, const std::string& path, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    sqlite3_finalize(raw);
    throw DbError(path + ": " + sqlite3_errmsg(db));
  }
  return Stmt(raw);
}

void BindText(sqlite3_stmt* st, int i, const std::string& s, bool null_if_empty) {
  if (null_if_empty && s.empty())
    sqlite3_bind_null(st, i);
  else
    sqlite3_bind_text(st, i, s.c_str(), -1, SQLITE_TRANSIENT);
}

}  // namespace

std::string DbPath(const std::string& given, const std::string& exe_dir) {
  if (!given.empty()) return given;
  const std::string env = config::Load().EXPERIMENT_DB;  // INVMW_EXPERIMENT_DB
  if (!env.empty()) return env;
  const std::filesystem::path build = std::filesystem::path(exe_dir).parent_path();
  std::error_code ec;
  if (std::filesystem::exists(build / "CMakeCache.txt", ec))
    return (build / "experiments" / "results.db").string();
  return "results.db";
}

std::string IsoTimeNow() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tmv;
  gmtime_r(&tv.tv_sec, &tmv);
  char b[40];
  size_t n = strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tmv);
  snprintf(b + n, sizeof b - n, ".%03dZ", static_cast<int>(tv.tv_usec / 1000));
  return b;
}

ResultsDb::ResultsDb(const std::string& path, Mode mode) : path_(path), mode_(mode) {
  if (mode == kReadOnly) {
    std::string error;
    db_ = OpenReadOnly(path, &error);
    if (!db_) throw DbError(error);
    sqlite3_busy_timeout(db_, 60000);
    try {
      CheckSchema();
      later_columns_ = HasColumn(kLaterColumns[0]) && HasColumn(kLaterColumns[1]);
    } catch (...) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
    return;
  }
  int flags = SQLITE_OPEN_READWRITE;
  if (mode == kCreate) {
    std::error_code ec;
    auto dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    flags |= SQLITE_OPEN_CREATE;
  } else {
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
      throw DbError(path + ": no such file (no results database there)");
  }
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw DbError(path + ": cannot open the results database: " + msg);
  }
  // Concurrent CTest runs and readers wait for each other instead of failing with SQLITE_BUSY.
  sqlite3_busy_timeout(db_, 60000);
  try {
    Exec("PRAGMA journal_mode=WAL", "enable write-ahead logging");
    Exec("PRAGMA synchronous=NORMAL", "set synchronous mode");
    if (mode == kCreate) Exec(kSchema, "create the tables");
    CheckSchema();
    AddLaterColumns();
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

void ResultsDb::CheckSchema() {
  sqlite3_stmt* raw = nullptr;
  sqlite3_prepare_v2(db_, "SELECT value FROM meta WHERE key='schema'", -1, &raw, nullptr);
  Stmt st(raw);
  if (!st)
    throw DbError(path_ + ": not a results database of the expected schema (no table 'meta')");
  std::string schema = sqlite3_step(st.get()) == SQLITE_ROW ? Text(st.get(), 0) : "";
  if (schema != "1")
    throw DbError(path_ + ": results database of schema '" + schema +
                  "'; this invmw writes schema 1");
}

bool ResultsDb::HasColumn(const char* name) {
  Stmt st = Prepare(db_, path_, "SELECT name FROM pragma_table_info('runs')");
  while (sqlite3_step(st.get()) == SQLITE_ROW)
    if (Text(st.get(), 0) == name) return true;
  return false;
}

void ResultsDb::AddLaterColumns() {
  for (const char* c : kLaterColumns) {
    if (HasColumn(c)) continue;
    try {
      Exec(("ALTER TABLE runs ADD COLUMN " + std::string(c) + " TEXT").c_str(),
           "add a column to the runs table");
    } catch (const DbError&) {
      // Another runner may have added it in the meantime.
      if (!HasColumn(c)) throw;
    }
  }
  later_columns_ = true;
}

std::string ResultsDb::Columns() const {
  return std::string(kColumns) + (later_columns_ ? ", job_id, node_list" : ", NULL, NULL");
}

ResultsDb::~ResultsDb() {
  if (db_) sqlite3_close(db_);
}

void ResultsDb::Exec(const char* sql, const char* what) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw DbError(path_ + ": cannot " + what + ": " + msg);
  }
}

std::optional<RunRecord> ResultsDb::Find(const std::string& design, int point, int replication,
                                         const std::string& platform) {
  Stmt st = Prepare(db_, path_,
                    "SELECT " + Columns() +
                        " FROM runs WHERE design=? AND point=? AND replication=? AND platform=?");
  sqlite3_stmt* raw = st.get();
  BindText(raw, 1, design, false);
  sqlite3_bind_int(raw, 2, point);
  sqlite3_bind_int(raw, 3, replication);
  BindText(raw, 4, platform, false);
  int rc = sqlite3_step(raw);
  if (rc == SQLITE_ROW) return ReadRow(raw);
  if (rc != SQLITE_DONE) throw DbError(path_ + ": " + sqlite3_errmsg(db_));
  return std::nullopt;
}

int64_t ResultsDb::Write(const RunRecord& r) {
  if (mode_ == kReadOnly) throw DbError(path_ + ": opened read-only");
  // IMMEDIATE takes the write lock at once, so the run_order read below cannot be raced by
  // another writer between the SELECT and the INSERT.
  Exec("BEGIN IMMEDIATE", "start a transaction");
  try {
    sqlite3_stmt* raw = nullptr;
    const char* max_sql =
        "SELECT COALESCE(MAX(run_order), -1) + 1 FROM runs WHERE design=? AND platform=?";
    if (sqlite3_prepare_v2(db_, max_sql, -1, &raw, nullptr) != SQLITE_OK)
      throw DbError(path_ + ": " + sqlite3_errmsg(db_));
    Stmt max_st(raw);
    BindText(raw, 1, r.design, false);
    BindText(raw, 2, r.platform, false);
    if (sqlite3_step(raw) != SQLITE_ROW) throw DbError(path_ + ": " + sqlite3_errmsg(db_));
    int64_t order = sqlite3_column_int64(raw, 0);

    const char* ins =
        "INSERT INTO runs(design, point, replication, platform, run_order, factors, responses, "
        "host, start_time, duration, exit_status, status, error, trace_dir, job_id, node_list) "
        "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT(design, point, replication, platform) DO UPDATE SET "
        "run_order=excluded.run_order, factors=excluded.factors, responses=excluded.responses, "
        "host=excluded.host, start_time=excluded.start_time, duration=excluded.duration, "
        "exit_status=excluded.exit_status, status=excluded.status, error=excluded.error, "
        "trace_dir=excluded.trace_dir, job_id=excluded.job_id, node_list=excluded.node_list";
    raw = nullptr;
    if (sqlite3_prepare_v2(db_, ins, -1, &raw, nullptr) != SQLITE_OK)
      throw DbError(path_ + ": " + sqlite3_errmsg(db_));
    Stmt st(raw);
    BindText(raw, 1, r.design, false);
    sqlite3_bind_int(raw, 2, r.point);
    sqlite3_bind_int(raw, 3, r.replication);
    BindText(raw, 4, r.platform, false);
    sqlite3_bind_int64(raw, 5, order);
    BindText(raw, 6, r.factors, false);
    BindText(raw, 7, r.responses, true);
    BindText(raw, 8, r.host, true);
    BindText(raw, 9, r.start_time, true);
    sqlite3_bind_double(raw, 10, r.duration);
    sqlite3_bind_int(raw, 11, r.exit_status);
    BindText(raw, 12, r.status, false);
    BindText(raw, 13, r.error, true);
    BindText(raw, 14, r.trace_dir, true);
    BindText(raw, 15, r.job_id, true);
    BindText(raw, 16, r.node_list, true);
    if (sqlite3_step(raw) != SQLITE_DONE)
      throw DbError(path_ + ": cannot write the run of point " + std::to_string(r.point) + ": " +
                    sqlite3_errmsg(db_));
    Exec("COMMIT", "commit");
    return order;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<RunRecord> ResultsDb::Select(const std::string& design, const std::string& platform,
                                         const char* order_by) {
  Stmt st = Prepare(db_, path_,
                    "SELECT " + Columns() + " FROM runs WHERE design=?" +
                        (platform.empty() ? "" : " AND platform=?") + " ORDER BY " + order_by);
  BindText(st.get(), 1, design, false);
  if (!platform.empty()) BindText(st.get(), 2, platform, false);
  std::vector<RunRecord> out;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) out.push_back(ReadRow(st.get()));
  if (rc != SQLITE_DONE) throw DbError(path_ + ": reading runs failed: " + sqlite3_errmsg(db_));
  return out;
}

std::vector<RunRecord> ResultsDb::Runs(const std::string& design, const std::string& platform) {
  return Select(design, platform, "platform, run_order, point, replication");
}

std::vector<RunRecord> ResultsDb::Rows(const std::string& design) {
  return Select(design, "", "point, replication, platform, id");
}

std::vector<std::pair<std::string, std::string>> ResultsDb::Designs(bool ok_only) {
  std::string sql = std::string("SELECT DISTINCT design, platform FROM runs") +
                    (ok_only ? " WHERE status = 'ok'" : "") + " ORDER BY design, platform";
  Stmt st = Prepare(db_, path_, sql);
  std::vector<std::pair<std::string, std::string>> out;
  while (sqlite3_step(st.get()) == SQLITE_ROW)
    out.emplace_back(Text(st.get(), 0), Text(st.get(), 1));
  return out;
}

int ResultsDb::Delete(const std::string& design, const std::string& platform) {
  if (mode_ == kReadOnly) throw DbError(path_ + ": opened read-only");
  std::string sql =
      std::string("DELETE FROM runs WHERE design=?") + (platform.empty() ? "" : " AND platform=?");
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK)
    throw DbError(path_ + ": " + sqlite3_errmsg(db_));
  Stmt st(raw);
  BindText(raw, 1, design, false);
  if (!platform.empty()) BindText(raw, 2, platform, false);
  if (sqlite3_step(raw) != SQLITE_DONE) throw DbError(path_ + ": " + sqlite3_errmsg(db_));
  return sqlite3_changes(db_);
}

}  // namespace invmw::results
