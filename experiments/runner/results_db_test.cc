// The results database: contract D's schema, upserts, run_order, and concurrent writers.
#include "experiments/runner/results_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

namespace invmw::experiment {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/invmw-runner-db-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

RunRecord Row(const std::string& design, int point, int rep, const std::string& status) {
  RunRecord r;
  r.design = design;
  r.point = point;
  r.replication = rep;
  r.platform = "local";
  r.factors = "{\"n\":" + std::to_string(point) + "}";
  r.responses = status == "ok" ? "{\"t_wall\":1.5}" : "";
  r.host = "h";
  r.start_time = IsoTimeNow();
  r.duration = 1.25;
  r.status = status;
  r.error = status == "ok" ? "" : "exit status 1";
  r.trace_dir = "/tmp/x";
  return r;
}

TEST(ResultsDb, SchemaOfContractD) {
  TempDir t;
  std::string path = t.path + "/sub/results.db";
  { ResultsDb db(path); }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  std::set<std::string> cols;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA table_info(runs)", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW)
    cols.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
  sqlite3_finalize(st);
  EXPECT_EQ(cols,
            (std::set<std::string>{"id", "design", "point", "replication", "platform", "run_order",
                                   "factors", "responses", "host", "start_time", "duration",
                                   "exit_status", "status", "error", "trace_dir"}));
  sqlite3_prepare_v2(raw, "SELECT value FROM meta WHERE key='schema'", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "1");
  sqlite3_finalize(st);
  // The status check of the schema holds.
  EXPECT_NE(sqlite3_exec(raw,
                         "INSERT INTO runs(design, point, replication, platform, factors, status) "
                         "VALUES('d', 0, 0, 'local', '{}', 'maybe')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
}

TEST(ResultsDb, UpsertKeepsOneRowPerRunAndCountsRunOrder) {
  TempDir t;
  ResultsDb db(t.path + "/r.db");
  EXPECT_EQ(db.Write(Row("d", 0, 0, "failed")), 0);
  EXPECT_EQ(db.Write(Row("d", 1, 0, "ok")), 1);
  EXPECT_EQ(db.Write(Row("other", 0, 0, "ok")), 0);  // run_order is per design
  EXPECT_EQ(db.Write(Row("d", 0, 0, "ok")), 2);      // the failed run, run again
  auto rows = db.Runs("d", "local");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].point, 1);
  EXPECT_EQ(rows[1].point, 0);
  EXPECT_EQ(rows[1].status, "ok");
  EXPECT_EQ(rows[1].error, "");
  EXPECT_EQ(rows[1].responses, "{\"t_wall\":1.5}");
  EXPECT_DOUBLE_EQ(rows[1].duration, 1.25);
  auto f = db.Find("d", 1, 0, "local");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->factors, "{\"n\":1}");
  EXPECT_FALSE(db.Find("d", 1, 1, "local").has_value());
  EXPECT_EQ(db.Delete("d", "local"), 2);
  EXPECT_TRUE(db.Runs("d", "").empty());
  EXPECT_EQ(db.Runs("other", "").size(), 1u);
}

TEST(ResultsDb, ConcurrentWritersLoseNothing) {
  TempDir t;
  std::string path = t.path + "/r.db";
  { ResultsDb db(path); }
  const int kProcs = 4, kRows = 50;
  std::vector<pid_t> kids;
  for (int k = 0; k < kProcs; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      try {
        ResultsDb db(path);
        for (int i = 0; i < kRows; ++i) db.Write(Row("d", k * kRows + i, 0, "ok"));
      } catch (...) {
        _exit(1);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int st = 0;
    waitpid(pid, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  ResultsDb db(path);
  auto rows = db.Runs("d", "local");
  ASSERT_EQ(rows.size(), size_t(kProcs * kRows));
  std::set<int64_t> orders;
  for (const auto& r : rows) orders.insert(r.run_order);
  EXPECT_EQ(orders.size(), rows.size());
  EXPECT_EQ(*orders.rbegin(), kProcs * kRows - 1);
}

TEST(ResultsDb, RefusesOtherSchemas) {
  TempDir t;
  std::string path = t.path + "/r.db";
  { ResultsDb db(path); }
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_exec(raw, "UPDATE meta SET value='7' WHERE key='schema'", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  try {
    ResultsDb db(path);
    ADD_FAILURE() << "opened";
  } catch (const DbError& e) {
    EXPECT_NE(std::string(e.what()).find("schema '7'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace invmw::experiment
