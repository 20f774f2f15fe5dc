#include "fitter/validate_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "fitter/data_table.h"

namespace invmw::fit {
namespace {

// A validation file as `invmw validate --json` writes it, with only what the pool reads.
struct Point {
  double total, total_err, total_floor, lo, hi;  // measured median, error, floor, interval_90
  double comp, comp_err;                         // the component's median and error
};

std::string WriteValidation(const std::string& name, const std::string& total,
                            const std::vector<Point>& pts, bool with_summary = false) {
  nlohmann::json j;
  j["label"] = name;
  j["total"] = total;
  j["statistic"] = "median";
  j["points"] = nlohmann::json::array();
  for (const auto& p : pts) {
    nlohmann::json r;
    r[total] = {{"median", p.total},
                {"error_pct", p.total_err},
                {"noise_floor_pct", p.total_floor},
                {"interval_90", {p.lo, p.hi}}};
    r["t_c"] = {{"median", p.comp}, {"error_pct", p.comp_err}, {"noise_floor_pct", 0.0}};
    j["points"].push_back({{"responses", r}});
  }
  if (with_summary)
    j["summary"][total] = {{"noise_floor_median_abs_error_pct", 1.25},
                           {"noise_floor_worst_abs_error_pct", 2.5}};
  std::string path =
      ::testing::TempDir() + "pool-" + name + "-" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << j.dump();
  return path;
}

TEST(ValidateSummary, PoolsTheTotalsAndTheSignificantComponents) {
  // File a: errors 1, -3 (both inside their intervals); the component is 50% and 5% of the
  // total. File b: errors 10, -20, 2 (the -20 outside); component 20%, 30%, 1%.
  std::string a = WriteValidation(
      "a", "t", {{1.0, 1, 0, 0.9, 1.1, 0.5, 40}, {2.0, -3, 0, 1.9, 2.1, 0.1, 90}}, true);
  std::string b = WriteValidation("b", "t",
                                  {{1.0, 10, 0, 0.9, 1.2, 0.2, -10},
                                   {1.0, -20, 0, 1.1, 1.3, 0.3, 20},
                                   {1.0, 2, 0, 0.9, 1.1, 0.01, 500}});
  ValidationPool p = PoolValidations({a, b}, 0.1);
  EXPECT_EQ(p.total, "t");
  ASSERT_EQ(p.validations.size(), 2u);
  EXPECT_EQ(p.validations[0].label, "a");
  EXPECT_EQ(p.validations[0].total.points, 2);
  EXPECT_NEAR(p.validations[0].total.median_abs_pct, 2, 1e-12);
  EXPECT_NEAR(p.validations[0].total.noise_floor_median_abs_pct, 1.25, 1e-12);  // its own
  EXPECT_EQ(p.validations[0].total.in90, 2);
  EXPECT_EQ(p.validations[1].total.in90, 2);
  EXPECT_EQ(p.validations[1].total.with90, 3);
  EXPECT_NEAR(p.validations[1].total.noise_floor_median_abs_pct, 0, 1e-12);  // floors 0
  // Over all: |errors| 1, 3, 10, 20, 2: median 3, worst 20, 4 of 5 inside.
  EXPECT_EQ(p.all_total.points, 5);
  EXPECT_NEAR(p.all_total.median_abs_pct, 3, 1e-12);
  EXPECT_NEAR(p.all_total.worst_abs_pct, 20, 1e-12);
  EXPECT_EQ(p.all_total.in90, 4);
  EXPECT_EQ(p.all_total.with90, 5);
  // The component where it is more than 10% of the total: 40 (a), -10 and 20 (b).
  ASSERT_EQ(p.components, std::vector<std::string>{"t_c"});
  EXPECT_EQ(p.validations[0].components.at("t_c").points, 1);
  EXPECT_EQ(p.validations[1].components.at("t_c").points, 2);
  EXPECT_EQ(p.all_components.at("t_c").points, 3);
  EXPECT_NEAR(p.all_components.at("t_c").median_abs_pct, 20, 1e-12);
  EXPECT_NEAR(p.all_components.at("t_c").worst_abs_pct, 40, 1e-12);
  EXPECT_EQ(p.all_components.at("t_c").with90, 0);  // no intervals given
  // Every point counts with a share of 0.
  EXPECT_EQ(PoolValidations({a, b}, 0).all_components.at("t_c").points, 5);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(ValidateSummary, RefusesWhatIsNotAValidation) {
  std::string a = WriteValidation("ta", "t", {{1.0, 1, 0, 0.9, 1.1, 0.5, 40}});
  std::string other = WriteValidation("tb", "t_other", {{1.0, 1, 0, 0.9, 1.1, 0.5, 40}});
  std::string junk = ::testing::TempDir() + "pool-junk-" + std::to_string(getpid()) + ".json";
  std::ofstream(junk) << "{\"total\": \"t\", \"points\": [{\"responses\": {}}]}";
  auto message = [](const std::vector<std::string>& files, double share) {
    try {
      PoolValidations(files, share);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({a, other}, 0.1).find("differs from the first file's 't'"), std::string::npos);
  EXPECT_NE(message({junk}, 0.1).find("points[0]: no response 't'"), std::string::npos);
  EXPECT_NE(message({a + ".none"}, 0.1).find("cannot read"), std::string::npos);
  EXPECT_NE(message({a}, 1.0).find("significant share"), std::string::npos);
  EXPECT_NE(message({}, 0.1).find("no validation files"), std::string::npos);
  for (const auto& f : {a, other, junk}) std::remove(f.c_str());
}

// An exact model's median |error| over points with one floor F is F (the floor is defined as
// that median); over points without a spread it is 0.
TEST(ValidateSummary, ExactModelErrorsFromFloors) {
  double med = NAN, worst = NAN;
  ExactModelErrors({10, 10, 10, 10, 10}, 2000, 20, &med, &worst);
  EXPECT_NEAR(med, 10, 1.0);
  EXPECT_GT(worst, med);
  ExactModelErrors({0, 0, NAN}, 100, 20, &med, &worst);
  EXPECT_EQ(med, 0);
  EXPECT_EQ(worst, 0);
}

}  // namespace
}  // namespace invmw::fit
