// The results database: one SQLite row per run of a design point (contract D; the schema is in
// results_db.cc and docs/experiments.md). The one place that knows the schema: the runner writes
// through it and the readers (effects, export, fit) read its rows and turn them into their own
// tables.
//
// Why SQLite with WAL: CTest may start the tests of several designs at once (RESOURCE_LOCK
// serialises the runs, not the readers), a runner may be killed at any moment, and the readers
// must never see half a row. Every write is one IMMEDIATE transaction; WAL lets readers go on
// while a runner writes, and busy_timeout makes concurrent writers wait instead of failing.
//
// Contract: in kCreate mode (the runner) the constructor creates the file (and its directory),
// the tables and the meta row schema = 1, or throws DbError naming the file and what failed; an
// existing database of another schema is refused. kExisting (reset) and kReadOnly (status and the
// readers: effects, export, fit) never create a file or directory: a missing database is a DbError
// naming the path; kReadOnly also reads databases on read-only storage (results/sqlite_readonly.h)
// and refuses Write/Delete. Write() inserts or replaces the row of (design, point, replication,
// platform), assigning run_order = (largest run_order of that design and platform) + 1 in the same
// transaction, so the order recorded is the order in which runs actually finished.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace invmw::results {

struct DbError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RunRecord {
  int64_t id = 0;  // set when read back
  std::string design;
  int point = 0, replication = 0;
  std::string platform;
  int64_t run_order = -1;  // assigned by Write()
  std::string factors;     // JSON object
  std::string responses;   // JSON object; empty = NULL
  std::string host, start_time;
  double duration = 0;  // seconds
  int exit_status = 0;
  std::string status;     // "ok" or "failed"
  std::string error;      // empty = NULL
  std::string trace_dir;  // empty = NULL
  // Batch platforms (Slurm): the job that ran it and its nodes (Slurm's compressed list,
  // e.g. "node[01-04]"); empty = NULL, and NULL for local and emulated runs.
  std::string job_id, node_list;
};

class ResultsDb {
 public:
  enum Mode { kCreate, kExisting, kReadOnly };
  explicit ResultsDb(const std::string& path, Mode mode = kCreate);
  ~ResultsDb();
  ResultsDb(const ResultsDb&) = delete;
  ResultsDb& operator=(const ResultsDb&) = delete;

  const std::string& path() const { return path_; }

  std::optional<RunRecord> Find(const std::string& design, int point, int replication,
                                const std::string& platform);
  // Rows of a design on a platform (all platforms when empty), by run_order.
  std::vector<RunRecord> Runs(const std::string& design, const std::string& platform);
  // Every row of a design (ok and failed, all platforms), by point, replication, platform, id:
  // what the readers (effects, export, fit) turn into their tables.
  std::vector<RunRecord> Rows(const std::string& design);
  // The (design, platform) pairs present (only those with an 'ok' run when ok_only), sorted:
  // for errors that list what the database does hold.
  std::vector<std::pair<std::string, std::string>> Designs(bool ok_only);
  // Inserts or replaces; returns the run_order given to the row.
  int64_t Write(const RunRecord& r);
  // Deletes a design's rows on a platform (all when empty); returns how many.
  int Delete(const std::string& design, const std::string& platform);

 private:
  void Exec(const char* sql, const char* what);
  void CheckSchema();
  bool HasColumn(const char* name);
  void AddLaterColumns();
  std::string Columns() const;
  bool later_columns_ = false;
  std::vector<RunRecord> Select(const std::string& design, const std::string& platform,
                                const char* order_by);
  std::string path_;
  Mode mode_;
  sqlite3* db_ = nullptr;
};

// The results database a verb uses: `given` (--db) if not empty, else $INVMW_EXPERIMENT_DB, else
// <build dir>/experiments/results.db when the invmw in `exe_dir` runs from a build tree (bin/ one
// level below a CMakeCache.txt), else ./results.db. One rule for the runner that writes the
// database and for every reader (contract D).
std::string DbPath(const std::string& given, const std::string& exe_dir);
// The --db help text of the verbs that use it.
inline constexpr const char* kDbHelp =
    "results database (default: $INVMW_EXPERIMENT_DB, else <build dir>/experiments/results.db "
    "when invmw runs from a build tree, else ./results.db)";

// ISO 8601 UTC with milliseconds, e.g. 2026-11-22T07:01:02.345Z.
std::string IsoTimeNow();

}  // namespace invmw::results
