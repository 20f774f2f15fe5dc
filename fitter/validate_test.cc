#include "fitter/validate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace invmw::fit {
namespace {

// t = b1 + bytes/a1 with a1 = 100 MB/s, b1 = 1e-4 s: known predictions for known points.
Model PingPong() {
  return Model::Parse(R"toml(
schema = 1
name = "pp"
[factors]
bytes = "message size"
[parameters]
a1 = { unit = "MB/s", initial = 1, lower = 0, upper = 1e9 }
b1 = { unit = "s", initial = 1, lower = 0, upper = 1 }
[components]
t_lat = { expr = "b1" }
[total]
name = "t"
column = "t_meas"
expr = "b1 + bytes / (a1 * 1e6)"
)toml",
                      "pp.toml");
}

TEST(Validate, AveragesReplicationsAndComputesErrorsPerPoint) {
  Model m = PingPong();
  DataTable d;
  d.source = "test";
  d.columns = {"bytes", "t_meas", "t_lat"};
  // Point 0 (1 MB): prediction 0.0101 s; replications 0.010 and 0.012 (mean 0.011).
  // Point 1 (0 B): prediction 1e-4 s; one replication 2e-4 (error -50%); t_lat missing.
  d.rows = {{1e6, 0.010, 1e-4}, {1e6, 0.012, 1e-4}, {0, 2e-4, NAN}};
  d.groups = {0, 0, 1};
  Validation v = Validate(m, {100, 1e-4}, d, {});
  ASSERT_EQ(v.points.size(), 2u);
  const auto& t0 = v.points[0].responses[0];
  EXPECT_EQ(t0.measured, 2);
  EXPECT_NEAR(t0.mean, 0.011, 1e-12);
  EXPECT_NEAR(t0.min, 0.010, 1e-12);
  EXPECT_NEAR(t0.max, 0.012, 1e-12);
  EXPECT_NEAR(t0.sd, std::sqrt(2e-6), 1e-12);
  EXPECT_NEAR(t0.predicted, 0.0101, 1e-12);
  EXPECT_NEAR(t0.error_pct, 100 * (0.0101 - 0.011) / 0.011, 1e-9);
  EXPECT_NEAR(v.points[1].responses[0].error_pct, -50, 1e-9);
  // Summary of the total: |errors| 8.18% and 50%: median 29.09%, worst 50% at point 1.
  const auto& s = v.summary[0];
  EXPECT_EQ(s.points, 2);
  EXPECT_NEAR(s.median_abs_pct, 0.5 * (100 * 0.0009 / 0.011 + 50), 1e-9);
  EXPECT_NEAR(s.worst_abs_pct, 50, 1e-9);
  EXPECT_EQ(s.worst_group, 1);
  // The component: point 0 exact, point 1 unmeasured.
  EXPECT_EQ(v.summary[1].points, 1);
  EXPECT_EQ(v.summary[1].unmeasured, 1);
  EXPECT_NEAR(v.summary[1].median_abs_pct, 0, 1e-9);
}

TEST(Validate, FactorsComeFromColumnsSettingsOrDefaults) {
  Model m = PingPong();
  DataTable d;
  d.source = "db";
  d.columns = {"t_meas"};
  d.rows = {{0.0101}};
  EXPECT_THROW(Validate(m, {100, 1e-4}, d, {}), DataError);  // no bytes anywhere
  Validation v = Validate(m, {100, 1e-4}, d, {{"bytes", 1e6}});
  EXPECT_NEAR(v.points[0].responses[0].error_pct, 0, 1e-9);
  EXPECT_THROW(Validate(m, {100, 1e-4}, d, {{"bytes", 1e6}, {"nosuch", 1}}), DataError);
}

TEST(Validate, ReplicationsOfOnePointMustAgreeOnFactors) {
  Model m = PingPong();
  DataTable d;
  d.source = "db";
  d.columns = {"bytes", "t_meas"};
  d.rows = {{1, 0.1}, {2, 0.1}};
  d.groups = {3, 3};
  EXPECT_THROW(Validate(m, {100, 1e-4}, d, {}), DataError);
}

TEST(Validate, MedianAbsIgnoresNaN) {
  EXPECT_DOUBLE_EQ(MedianAbs({-3, 1, NAN, 2}), 2);
  EXPECT_TRUE(std::isnan(MedianAbs({NAN})));
}

}  // namespace
}  // namespace invmw::fit
