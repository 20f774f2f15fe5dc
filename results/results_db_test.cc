// The results database: contract D's schema, upserts, run_order, and concurrent writers.
#include "results/results_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>

namespace invmw::results {
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
  EXPECT_EQ(cols, (std::set<std::string>{"id", "design", "point", "replication", "platform",
                                         "run_order", "factors", "responses", "host", "start_time",
                                         "duration", "exit_status", "status", "error", "trace_dir",
                                         "job_id", "node_list"}));
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

// `experiment status` with a mistyped --db created the file and its directories.
TEST(ResultsDb, ReadersCreateNothing) {
  TempDir t;
  for (auto mode : {ResultsDb::kReadOnly, ResultsDb::kExisting}) {
    std::string path = t.path + "/no/such/dir/r.db";
    try {
      ResultsDb db(path, mode);
      ADD_FAILURE() << "opened a database that does not exist";
    } catch (const DbError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": no such file"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(t.path + "/no"));
  }
  { ResultsDb db(t.path + "/r.db"); }
  ResultsDb ro(t.path + "/r.db", ResultsDb::kReadOnly);
  EXPECT_THROW(ro.Write(Row("d", 0, 0, "ok")), DbError);
  EXPECT_THROW(ro.Delete("d", ""), DbError);
}

// A database written before the batch columns (job_id, node_list) existed: readers get them
// empty without changing the file, a writer adds them and its rows keep them; older rows stay.
TEST(ResultsDb, OpensADatabaseFromBeforeTheJobColumns) {
  TempDir t;
  const std::string path = t.path + "/old.db";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  const char* old_schema =
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
      "CREATE TABLE runs(id INTEGER PRIMARY KEY, design TEXT NOT NULL, point INTEGER NOT NULL,"
      " replication INTEGER NOT NULL, platform TEXT NOT NULL, run_order INTEGER,"
      " factors TEXT NOT NULL, responses TEXT, host TEXT, start_time TEXT, duration REAL,"
      " exit_status INTEGER, status TEXT NOT NULL CHECK(status IN ('ok','failed')), error TEXT,"
      " trace_dir TEXT, UNIQUE(design, point, replication, platform));"
      "INSERT INTO meta VALUES('schema','1');"
      "INSERT INTO runs(design,point,replication,platform,run_order,factors,status)"
      " VALUES('d',0,0,'local',0,'{}','ok');";
  ASSERT_EQ(sqlite3_exec(raw, old_schema, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  {
    ResultsDb ro(path, ResultsDb::kReadOnly);
    auto rows = ro.Rows("d");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].job_id, "");
    EXPECT_EQ(rows[0].node_list, "");
  }
  {
    ResultsDb db(path);
    RunRecord r = Row("d", 1, 0, "ok");
    r.platform = "cluster";
    r.job_id = "4711";
    r.node_list = "node[01-02]";
    db.Write(r);
  }
  ResultsDb ro(path, ResultsDb::kReadOnly);
  auto rows = ro.Rows("d");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].job_id, "");
  EXPECT_EQ(rows[1].job_id, "4711");
  EXPECT_EQ(rows[1].node_list, "node[01-02]");
  auto found = ro.Find("d", 1, 0, "cluster");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->job_id, "4711");
}

// Runs `fn` in a child that cannot write the test's directories: as nobody when the test runs
// as root (root ignores permissions), else as ourselves. Returns the child's exit status.
int AsReader(const std::function<int()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(77);
    int rc = 99;
    try {
      rc = fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "reader: %s\n", e.what());
      rc = 98;
    }
    _exit(rc);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::set<std::string> Listing(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A WAL database on read-only storage was "not a results database": SQLite could not create
// its -shm there. Read-only opening falls back to immutable=1 and creates nothing.
TEST(ResultsDb, ReadsAWalDatabaseInAReadOnlyDirectory) {
  TempDir t;
  std::string dir = t.path + "/ro", path = dir + "/r.db";
  fs::create_directories(dir);
  {
    ResultsDb db(path);
    db.Write(Row("d", 0, 0, "ok"));
    db.Write(Row("d", 1, 0, "failed"));
  }
  ASSERT_EQ(Listing(dir), (std::set<std::string>{"r.db"}));  // checkpointed on close
  chmod(t.path.c_str(), 0755);
  chmod(dir.c_str(), 0555);
  int rc = AsReader([&] {
    ResultsDb db(path, ResultsDb::kReadOnly);
    return db.Runs("d", "local").size() == 2 ? 0 : 1;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(Listing(dir), (std::set<std::string>{"r.db"}));
  chmod(dir.c_str(), 0755);
}

// Rows still in the write-ahead log are read, or the open is refused; they are never silently
// missing (immutable=1 would ignore the log).
TEST(ResultsDb, RowsInTheWriteAheadLogAreNeverSkipped) {
  TempDir t;
  std::string dir = t.path + "/live", path = dir + "/r.db";
  fs::create_directories(dir);
  {
    ResultsDb db(path);
    db.Write(Row("d", 0, 0, "ok"));
  }
  sqlite3* w = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &w), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(w,
                         "PRAGMA wal_autocheckpoint=0; INSERT INTO runs(design, point, "
                         "replication, platform, factors, status) "
                         "VALUES('d', 1, 0, 'local', '{}', 'ok')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_GT(fs::file_size(path + "-wal"), 0u);
  // A copy without the -shm, as an archive of the files would hold it.
  std::string copy = t.path + "/copy";
  fs::create_directories(copy);
  fs::copy_file(path, copy + "/r.db");
  fs::copy_file(path + "-wal", copy + "/r.db-wal");
  chmod(t.path.c_str(), 0755);
  for (const std::string& d : {dir, copy}) {
    chmod(d.c_str(), 0555);
    for (const auto& e : fs::directory_iterator(d)) chmod(e.path().c_str(), 0644);
    int rc = AsReader([&] {
      try {
        ResultsDb db(d + "/r.db", ResultsDb::kReadOnly);
        return db.Runs("d", "local").size() == 2 ? 0 : 1;  // 1: the logged row was skipped
      } catch (const DbError& e) {
        std::string msg = e.what();
        return msg.find("write-ahead log") != std::string::npos ? 2 : 3;
      }
    });
    EXPECT_TRUE(rc == 0 || rc == 2) << d << ": reader exit " << rc;
    if (d == dir) {
      EXPECT_EQ(rc, 0);  // with the writer's -shm, SQLite reads the log
    }
    chmod(d.c_str(), 0755);
  }
  sqlite3_close(w);
}

}  // namespace
}  // namespace invmw::results
