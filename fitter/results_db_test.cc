#include "fitter/results_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "fitter/fit.h"
#include "fitter/tests/synthetic.h"

namespace invmw::fit {
namespace {

// A database in a fresh temporary directory, removed with the fixture.
class ResultsDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/invmw-fit-db-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/results.db";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << msg;
  }
  std::string dir_, path_;
};

testing::SyntheticDbRun SyntheticRun(const std::string& platform, double a1) {
  testing::SyntheticDbRun r;
  r.design = "opal-84";
  r.platform = platform;
  r.truth = testing::OpalTruth();
  r.truth["a1"] = a1;
  return r;
}

std::string ErrorOf(const std::string& path, const ResultsQuery& q) {
  try {
    LoadResults(path, q);
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(ResultsDbTest, LoadsOkRunsOfOneDesignAndPlatform) {
  testing::WriteOpalResultsDb(path_, SyntheticRun("emu-a", 100));
  testing::WriteOpalResultsDb(path_, SyntheticRun("local", 1000));
  DataTable t = LoadResults(path_, {"opal-84", "emu-a"});
  // 84 points x 2 ok replications; the failed third replication is not read.
  ASSERT_EQ(t.rows.size(), 168u);
  ASSERT_EQ(t.groups.size(), 168u);
  EXPECT_EQ(t.groups[0], 0);
  EXPECT_EQ(t.groups[1], 0);  // ordered by point, then replication
  EXPECT_EQ(t.groups[2], 1);
  for (const char* c : {"s", "p", "u", "n", "nt", "g", "alpha", "t_wall", "t_par_comp",
                        "t_seq_comp", "t_comm", "t_sync", "t_idle"})
    EXPECT_GE(t.Column(c), 0) << c;
  EXPECT_LT(t.Column("mpi"), 0);
  ASSERT_EQ(t.text_columns.size(), 1u);
  EXPECT_EQ(t.text_columns[0].first, "mpi");
  EXPECT_EQ(t.text_columns[0].second, "openmpi");
  for (const auto& row : t.rows) EXPECT_LT(row[t.Column("t_wall")], 1e8);
  EXPECT_NE(t.RowOrigin(3).find("run "), std::string::npos);
  EXPECT_NE(t.RowOrigin(3).find("(point 1, replication 1)"), std::string::npos);
}

TEST_F(ResultsDbTest, FitRecoversTheTruthOfTheChosenPlatform) {
  testing::WriteOpalResultsDb(path_, SyntheticRun("emu-a", 100));
  testing::WriteOpalResultsDb(path_, SyntheticRun("local", 1000));
  Model m = Model::Load(ResolveModelPath("opal"));
  FitOptions o;
  o.cross_validate = true;
  for (const auto& [platform, a1] : {std::pair<std::string, double>{"emu-a", 100},
                                     std::pair<std::string, double>{"local", 1000}}) {
    FitResult r = Fit(m, LoadResults(path_, {"opal-84", platform}), o);
    ASSERT_TRUE(r.converged) << r.solver_message;
    EXPECT_EQ(r.observations, 168 * 5);  // total and the four modelled components
    for (const auto& p : r.params) {
      double truth = p.name == "a1" ? a1 : testing::OpalTruth().at(p.name);
      EXPECT_NEAR(p.value, truth, 0.05 * truth) << platform << " " << p.name;
      EXPECT_LE(p.ci_low, p.ci_high);
    }
    // Cross-validation left out whole design points: 84 refits' predictions for 168 rows.
    ASSERT_FALSE(r.responses.empty());
    EXPECT_GT(r.responses[0].cv_mape, 0);
    EXPECT_LT(r.responses[0].cv_mape, 10);
  }
}

TEST_F(ResultsDbTest, ErrorsNameWhatIsWrong) {
  EXPECT_NE(ErrorOf(path_, {"opal-84", ""}).find("no results database there"), std::string::npos);
  testing::WriteOpalResultsDb(path_, SyntheticRun("emu-a", 100));
  testing::WriteOpalResultsDb(path_, SyntheticRun("local", 1000));
  std::string e = ErrorOf(path_, {"opal-84", ""});
  EXPECT_NE(e.find("several platforms (emu-a, local)"), std::string::npos) << e;
  e = ErrorOf(path_, {"opal-48", "local"});
  EXPECT_NE(e.find("no successful run of design 'opal-48' on platform 'local'"), std::string::npos)
      << e;
  EXPECT_NE(e.find("opal-84 (emu-a), opal-84 (local)"), std::string::npos) << e;
  Sql("UPDATE runs SET responses = '{\"t_wall\": \"slow\"}' WHERE id = 5");
  e = ErrorOf(path_, {"opal-84", "emu-a"});
  EXPECT_NE(e.find("run id 5: response 't_wall' is \"slow\""), std::string::npos) << e;
  Sql("UPDATE runs SET responses = '{' WHERE id = 5");
  e = ErrorOf(path_, {"opal-84", "emu-a"});
  EXPECT_NE(e.find("run id 5: column 'responses' is not a JSON object"), std::string::npos) << e;
}

TEST_F(ResultsDbTest, TextFactorNeededByTheModelIsAClearError) {
  testing::WriteOpalResultsDb(path_, SyntheticRun("emu-a", 100));
  // The design wrote the cut-off as a word: the model cannot use it.
  Sql("UPDATE runs SET factors = json_set(factors, '$.nt', 'none') WHERE point = 3");
  DataTable t = LoadResults(path_, {"opal-84", "emu-a"});
  try {
    Fit(Model::Load(ResolveModelPath("opal")), t, FitOptions());
    FAIL() << "expected an error";
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("factor 'nt' holds text (e.g. 'none')"), std::string::npos)
        << e.what();
  }
}

TEST_F(ResultsDbTest, NotAResultsDatabase) {
  Sql("CREATE TABLE other(x)");
  std::string e = ErrorOf(path_, {"opal-84", ""});
  EXPECT_NE(e.find("not a results database of the expected schema"), std::string::npos) << e;
}

}  // namespace
}  // namespace invmw::fit
