#include "fitter/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "fitter/fit.h"
#include "fitter/interval.h"
#include "fitter/tests/synthetic.h"

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

// Issue 20, item 2: the noise floor is what an exact model shows. No
// spread gives 0, one replication gives no floor, and on 300 points of an exact model with 10%
// multiplicative noise and 5 replications the floor of the median |error| lies close to the
// median |error| the exact model actually shows (both are about 0.674 * 1.25 * 10% / sqrt(5)).
TEST(Validate, NoiseFloorIsTheErrorOfAnExactModel) {
  EXPECT_EQ(NoiseFloorPct({2, 2, 2}, "median"), 0);
  EXPECT_TRUE(std::isnan(NoiseFloorPct({2}, "median")));
  // sd of log over sqrt(5), x 0.674: the median |error| of the mean of these five.
  double l[] = {std::log(1.0), std::log(1.1), std::log(0.9), std::log(1.2), std::log(0.8)};
  double lm = (l[0] + l[1] + l[2] + l[3] + l[4]) / 5, ss = 0;
  for (double x : l) ss += (x - lm) * (x - lm);
  EXPECT_NEAR(NoiseFloorPct({1, 1.1, 0.9, 1.2, 0.8}, "mean"),
              100 * std::expm1(0.6744897501960817 * std::sqrt(ss / 4 / 5)), 1e-9);
  EXPECT_GT(NoiseFloorPct({1, 1.1, 0.9, 1.2, 0.8}, "median"),
            NoiseFloorPct({1, 1.1, 0.9, 1.2, 0.8}, "mean"));

  Model m = PingPong();
  const double a1 = 100, b1 = 1e-4;
  std::mt19937_64 rng(42);
  std::normal_distribution<double> z(0, 1);
  DataTable d;
  d.source = "synthetic";
  d.columns = {"bytes", "t_meas", "t_lat"};
  for (long g = 0; g < 300; ++g) {
    double bytes = 1e4 * (g + 1);
    double t = b1 + bytes / (a1 * 1e6);
    for (int r = 0; r < 5; ++r) {
      d.rows.push_back({bytes, t * (1 + 0.1 * z(rng)), b1 * (1 + 0.1 * z(rng))});
      d.groups.push_back(g);
    }
  }
  Validation v = Validate(m, {a1, b1}, d, {});
  const ErrorSummary& s = v.summary[0];
  std::printf(
      "exact model: median |error| %.2f%%, noise floor %.2f%%; worst %.2f%%, floor %.2f%%\n",
      s.median_abs_pct, s.noise_floor_median_abs_pct, s.worst_abs_pct, s.noise_floor_worst_abs_pct);
  EXPECT_GT(s.noise_floor_median_abs_pct, 0.6 * s.median_abs_pct);
  EXPECT_LT(s.noise_floor_median_abs_pct, 1.5 * s.median_abs_pct);
  EXPECT_GT(s.noise_floor_worst_abs_pct, 0.5 * s.worst_abs_pct);
  EXPECT_LT(s.noise_floor_worst_abs_pct, 2.0 * s.worst_abs_pct);
  for (const auto& p : v.points) EXPECT_TRUE(std::isfinite(p.responses[0].noise_floor_pct));
  // 10% per-run noise: a median with a 2% floor needs pi/2 (0.1 x 0.674 / 0.0198)^2 = 18 runs.
  EXPECT_NEAR(s.sd_log_run, 0.1, 0.01);
  EXPECT_GE(s.replications_for_floor, 15);
  EXPECT_LE(s.replications_for_floor, 22);
  // A model 20% off sits far above its floor.
  Validation off = Validate(m, {a1 / 1.2, b1 * 1.2}, d, {});
  EXPECT_GT(off.summary[0].median_abs_pct, 3 * off.summary[0].noise_floor_median_abs_pct);
}

// Issue 20, item 2: the median (default) resists a stalled replication, the mean does not.
TEST(Validate, MedianIsTheDefaultStatisticAndResistsAStalledRun) {
  Model m = PingPong();
  DataTable d;
  d.source = "test";
  d.columns = {"bytes", "t_meas", "t_lat"};
  // Prediction 0.0101 s; four good runs and one stalled at 3x.
  d.rows = {{1e6, 0.0101, 1e-4},
            {1e6, 0.0100, 1e-4},
            {1e6, 0.0102, 1e-4},
            {1e6, 0.0101, 1e-4},
            {1e6, 0.0303, 1e-4}};
  d.groups = {0, 0, 0, 0, 0};
  Validation med = Validate(m, {100, 1e-4}, d, {});
  EXPECT_EQ(med.statistic, "median");
  EXPECT_DOUBLE_EQ(med.points[0].responses[0].median, 0.0101);
  EXPECT_NEAR(med.points[0].responses[0].error_pct, 0, 1e-9);
  ValidateOptions o;
  o.statistic = "mean";
  Validation mean = Validate(m, {100, 1e-4}, d, {}, o);
  EXPECT_LT(mean.points[0].responses[0].error_pct, -25);
  o.statistic = "mode";
  EXPECT_THROW(Validate(m, {100, 1e-4}, d, {}, o), DataError);
}

// Issue 20 (pipeline's extra replications): each point's own replications for the floor target,
// from its own spread: a quiet point needs no more than it has, a spread one (per-run times as
// plfD's stalled p = 1 point, 0.57-0.80 s) needs many; they must bring its floor to the target.
TEST(Validate, ReplicationsForTheFloorPerPoint) {
  Model m = PingPong();
  DataTable d;
  d.source = "test";
  d.columns = {"bytes", "t_meas", "t_lat"};
  const std::vector<double> quiet = {0.0101, 0.01011, 0.01009, 0.0101, 0.01012};
  const std::vector<double> spread = {0.0057, 0.0067, 0.0077, 0.0080, 0.0080};
  for (double t : quiet) d.rows.push_back({1e6, t, 1e-4}), d.groups.push_back(0);
  for (double t : spread) d.rows.push_back({5e5, t, 1e-4}), d.groups.push_back(1);
  Validation v = Validate(m, {100, 1e-4}, d, {});
  const auto& q = v.points[0].responses[0];
  const auto& s = v.points[1].responses[0];
  EXPECT_LT(q.noise_floor_pct, 2);
  EXPECT_LE(q.replications_for_floor, 5);
  EXPECT_GE(q.replications_for_floor, 1);
  EXPECT_GT(s.noise_floor_pct, 2);
  EXPECT_GT(s.replications_for_floor, 5);
  // The inverse of the floor: R' replications of the same sd of log t have a floor at the
  // target, R' - 1 above it.
  double sd = 0, mean = 0;
  for (double t : spread) mean += std::log(t) / spread.size();
  for (double t : spread) sd += (std::log(t) - mean) * (std::log(t) - mean) / (spread.size() - 1);
  sd = std::sqrt(sd);
  auto floor_at = [&](int r) {
    return 100 * std::expm1(0.6744897501960817 * sd * std::sqrt(M_PI / 2 / r));
  };
  EXPECT_LE(floor_at(s.replications_for_floor), 2 + 1e-9);
  EXPECT_GT(floor_at(s.replications_for_floor - 1), 2);
  EXPECT_EQ(s.replications_for_floor, ReplicationsForFloor(sd, "median", 2));
  // The floor matches NoiseFloorPct at the point's own count.
  EXPECT_NEAR(floor_at(5), s.noise_floor_pct, 1e-9);
  // A looser target asks for fewer; no spread, no figure.
  EXPECT_LT(ReplicationsForFloor(sd, "median", 5), s.replications_for_floor);
  EXPECT_EQ(ReplicationsForFloor(NAN, "median", 2), 0);
  // The target is an option (the quick pipeline's stage uses a lower one): a tighter target asks
  // more of the quiet point too.
  ValidateOptions o;
  o.floor_target_pct = 0.01;
  Validation tight = Validate(m, {100, 1e-4}, d, {}, o);
  EXPECT_EQ(tight.floor_target_pct, 0.01);
  EXPECT_GT(tight.points[0].responses[0].replications_for_floor, 5);
  EXPECT_GT(tight.points[1].responses[0].replications_for_floor, s.replications_for_floor);
  o.floor_target_pct = 0;
  EXPECT_THROW(Validate(m, {100, 1e-4}, d, {}, o), DataError);
}

// Issue 20, item 1: pairing with the reference platform's run of the same point and replication
// (measured beside it) divides out the drift both saw. The machine's speed drifts by 0.75..1.4
// between replications; each run also has 1% noise of its own. Raw, sd(log t) across time is
// about the drift's; within pairs it is about sqrt(2) x 1%, and the noise floor drops with it.
TEST(Validate, PairedReferenceRunsCancelDrift) {
  Model m = PingPong();
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0, 1);
  std::uniform_real_distribution<double> drift(0.75, 1.4);
  DataTable target, ref;
  target.source = "target";
  ref.source = "reference";
  target.columns = ref.columns = {"bytes", "t_meas", "t_lat"};
  for (long g = 0; g < 20; ++g) {
    double bytes = 1e5 * (g + 1), t = 1e-4 + bytes / 100e6, tr = 3e-5 + bytes / 300e6;
    for (long r = 0; r < 5; ++r) {
      double d = drift(rng);
      target.rows.push_back({bytes, t * d * (1 + 0.01 * z(rng)), 1e-4});
      ref.rows.push_back({bytes, tr * d * (1 + 0.01 * z(rng)), 3e-5});
      target.groups.push_back(g);
      ref.groups.push_back(g);
      target.replications.push_back(r);
      ref.replications.push_back(r);
    }
  }
  // The reference's last run of point 0 is missing: that target run stays unpaired.
  ref.rows.pop_back();
  ref.groups.pop_back();
  ref.replications.pop_back();
  ValidateOptions o;
  o.paired = &ref;
  o.paired_name = "ref";
  Validation raw = Validate(m, {100, 1e-4}, target, {});
  Validation paired = Validate(m, {100, 1e-4}, target, {}, o);
  ASSERT_TRUE(paired.paired);
  EXPECT_FALSE(raw.paired);
  EXPECT_EQ(paired.drift.pairs, 99);
  EXPECT_EQ(paired.drift.unpaired, 1);
  std::printf("sd(log t) across time %.3f, within pairs %.3f; floor %.2f%% -> %.2f%%\n",
              paired.drift.sd_log_across_time, paired.drift.sd_log_within_pairs,
              raw.summary[0].noise_floor_median_abs_pct,
              paired.summary[0].noise_floor_median_abs_pct);
  EXPECT_GT(paired.drift.sd_log_across_time, 0.1);
  EXPECT_LT(paired.drift.sd_log_within_pairs, 0.03);
  EXPECT_LT(paired.summary[0].noise_floor_median_abs_pct,
            0.3 * raw.summary[0].noise_floor_median_abs_pct);
  EXPECT_GT(paired.drift.median_abs_drift_pct, 3);
  ASSERT_EQ(paired.points[3].pairs.size(), 5u);
  EXPECT_NE(paired.points[3].pairs[0].reference_run, "");
  EXPECT_TRUE(paired.drift.applied);
  // A partner with stalls of its own and no shared drift: pairing would add noise, so the runs
  // stay raw (applied = false) and the errors are those of the unpaired validation.
  DataTable quiet = target, stalled = ref;
  for (size_t r = 0; r < quiet.rows.size(); ++r) quiet.rows[r][1] = 1e-4 + quiet.rows[r][0] / 100e6;
  for (size_t r = 0; r < stalled.rows.size(); ++r) stalled.rows[r][1] *= r % 3 ? 1 : 1.8;
  o.paired = &stalled;
  Validation noisy = Validate(m, {100, 1e-4}, quiet, {}, o);
  EXPECT_FALSE(noisy.drift.applied);
  EXPECT_NEAR(noisy.summary[0].median_abs_pct, 0, 1e-9);
  o.paired = &ref;
  DataTable bad = target;
  bad.replications.clear();
  EXPECT_THROW(Validate(m, {100, 1e-4}, bad, {}, o), DataError);
}

// Issue 20, item 6: calibrate Opal on the paper's design (5% multiplicative noise, known truth),
// then 1000 new single runs at random points (seeded) with the same noise: the 80/90/95%
// intervals from the fit's covariance and residual noise cover close to 80/90/95% of them.
TEST(Validate, PredictionIntervalsCoverTheirShareOfSyntheticRuns) {
  Model m = Model::Load(ResolveModelPath("opal"));
  const auto& truth = testing::OpalTruth();
  DataTable cal =
      testing::Synthesize(m, testing::OpalFactors(), testing::OpalDesign(), truth, 0.05, 99);
  FitOptions fo;
  fo.cross_validate = false;
  FitResult fr = Fit(m, cal, fo);
  ASSERT_TRUE(fr.covariance_ok);
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> un(500, 8000);
  std::uniform_int_distribution<int> up(1, 7);
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 1000; ++i)
    rows.push_back(
        {10, double(up(rng)), i % 2 ? 1.0 : 0.1, std::round(un(rng)), i % 3 ? 1e6 : 100, 0, 24});
  DataTable val = testing::Synthesize(m, testing::OpalFactors(), rows, truth, 0.05, 7);
  ValidateOptions o;
  o.cov = &fr.covariance;
  o.sigma = fr.sigma;
  o.weighting = fo.weighting;
  o.bootstrap = 10;
  Validation v = Validate(m, fr.Values(), val, {}, o);
  const ErrorSummary& s = v.summary[0];
  std::printf("coverage of 1000 synthetic runs: 80%% %.3f, 90%% %.3f, 95%% %.3f\n", s.coverage[0],
              s.coverage[1], s.coverage[2]);
  EXPECT_GE(s.coverage[0], 0.75);
  EXPECT_LE(s.coverage[0], 0.85);
  EXPECT_GE(s.coverage[1], 0.85);
  EXPECT_LE(s.coverage[1], 0.95);
  EXPECT_GE(s.coverage[2], 0.91);
  EXPECT_LE(s.coverage[2], 0.99);
  const auto& r = v.points[0].responses[0];
  ASSERT_TRUE(r.has_intervals);
  EXPECT_LT(r.intervals[2].low, r.intervals[1].low);
  EXPECT_LT(r.intervals[1].low, r.predicted);
  EXPECT_GT(r.intervals[0].high, r.predicted);
  // Without the noise model (parameter covariance alone) the intervals are far too narrow.
  o.sigma = 0;
  EXPECT_LT(Validate(m, fr.Values(), val, {}, o).summary[0].coverage[1], 0.6);
}

// Issue 20, item 6: a model that is wrong by a point-to-point discrepancy (sd 0.10 in log t, the
// same for every replication of a point) on top of 3% per-run noise. The calibration has 3
// replications per point, the validation is the median of 5 runs at 400 new points, each with a
// discrepancy of its own. The fit's residual sd divided by the replications (the old intervals)
// covers far too few; with the model error estimated from the calibration's residuals
// (EstimateModelError) the 80/90/95% intervals cover close to their share.
TEST(Validate, IntervalsHoldTheModelErrorOfTheCalibration) {
  Model m = Model::Load(ResolveModelPath("opal"));
  const auto& truth = testing::OpalTruth();
  const double tau = 0.10, noise = 0.03;
  std::mt19937_64 rng(2020);
  std::normal_distribution<double> z(0, 1);
  // Replicated rows of a design, every response of a point times exp(tau z_point).
  auto replicate = [&](const std::vector<std::vector<double>>& design, int reps, uint64_t seed) {
    std::vector<std::vector<double>> rows;
    std::vector<long> groups;
    for (size_t i = 0; i < design.size(); ++i)
      for (int r = 0; r < reps; ++r) {
        rows.push_back(design[i]);
        groups.push_back(static_cast<long>(i));
      }
    DataTable d = testing::Synthesize(m, testing::OpalFactors(), rows, truth, noise, seed);
    d.groups = groups;
    std::vector<double> bias(design.size());
    for (double& b : bias) b = std::exp(tau * z(rng));
    const size_t nf = testing::OpalFactors().size();
    for (size_t r = 0; r < d.rows.size(); ++r)
      for (size_t c = nf; c < d.columns.size(); ++c) d.rows[r][c] *= bias[groups[r]];
    return d;
  };
  DataTable cal = replicate(testing::OpalDesign(), 3, 99);
  FitOptions fo;
  fo.cross_validate = false;
  FitResult fr = Fit(m, cal, fo);
  ASSERT_TRUE(fr.covariance_ok);
  std::vector<CalibrationResidual> res;
  for (const auto& p : fr.residuals)
    res.push_back({p.response, cal.groups[p.row], p.measured, p.predicted});
  std::vector<ModelDiscrepancy> me = EstimateModelError(m, res);
  ASSERT_EQ(me.size(), m.responses().size());
  std::printf("estimated model error sd(log) %.4f (true %.2f), per-run noise %.4f (true %.2f)\n",
              me[0].model_sd_log, tau, me[0].noise_sd_log, noise);
  EXPECT_NEAR(me[0].model_sd_log, tau, 0.035);
  EXPECT_NEAR(me[0].noise_sd_log, noise, 0.01);
  EXPECT_EQ(me[0].points, 84);

  std::uniform_real_distribution<double> un(500, 8000);
  std::uniform_int_distribution<int> up(1, 7);
  std::vector<std::vector<double>> design;
  for (int i = 0; i < 400; ++i)
    design.push_back(
        {10, double(up(rng)), i % 2 ? 1.0 : 0.1, std::round(un(rng)), i % 3 ? 1e6 : 100, 0, 24});
  DataTable val = replicate(design, 5, 7);
  ValidateOptions o;
  o.cov = &fr.covariance;
  o.sigma = fr.sigma;
  o.weighting = fo.weighting;
  o.bootstrap = 10;
  o.model_error = &me;
  Validation v = Validate(m, fr.Values(), val, {}, o);
  const ErrorSummary& s = v.summary[0];
  std::printf(
      "coverage with the model error: 80%% %.3f, 90%% %.3f, 95%% %.3f; median 90%% width "
      "%.3f of the prediction\n",
      s.coverage[0], s.coverage[1], s.coverage[2], s.median_relative_width[1]);
  EXPECT_GE(s.coverage[0], 0.73);
  EXPECT_LE(s.coverage[0], 0.87);
  EXPECT_GE(s.coverage[1], 0.85);
  EXPECT_LE(s.coverage[1], 0.95);
  EXPECT_GE(s.coverage[2], 0.91);
  EXPECT_LE(s.coverage[2], 0.99);
  EXPECT_NEAR(s.model_sd_log, me[0].model_sd_log, 1e-12);
  EXPECT_NEAR(v.points[0].responses[0].model_sd_log, me[0].model_sd_log, 1e-12);
  // Honest but not useless: about 2 z sd = 2 * 1.645 * 0.10 wide, not several times that.
  EXPECT_GT(s.median_relative_width[1], 0.25);
  EXPECT_LT(s.median_relative_width[1], 0.45);
  // The old intervals: the residual sd shrunk by the replications.
  o.model_error = nullptr;
  Validation old = Validate(m, fr.Values(), val, {}, o);
  std::printf("coverage without it: 90%% %.3f\n", old.summary[0].coverage[1]);
  EXPECT_LT(old.summary[0].coverage[1], 0.8);
}

// A transfer check's points are off by exp(+-0.13) (median |log| = 0.6745 * 0.13) with no noise:
// beyond a model error of 0.05 the transfer error is sqrt(0.13^2 - 0.05^2) = 0.12; a second,
// smaller check does not lower it; a file without points is refused with its name.
TEST(Validate, TransferErrorFromACheck) {
  Model m = Model::Load(ResolveModelPath("opal"));
  std::vector<ModelDiscrepancy> me(m.responses().size());
  me[0].points = 10;
  me[0].model_sd_log = 0.05;
  const double d = 0.13 * 0.674489750196;
  auto write = [&](const std::string& path, double scale) {
    nlohmann::json j;
    j["statistic"] = "median";
    for (int i = 0; i < 9; ++i) {
      double e = scale * (i < 4 ? d * 0.5 : i == 4 ? d : d * 2) * (i % 2 ? 1 : -1);
      j["points"].push_back(
          {{"responses",
            {{m.responses()[0].name,
              {{"median", 2 * std::exp(e)}, {"predicted", 2.0}, {"replications", 3}}}}}});
    }
    std::ofstream(path) << j.dump();
  };
  const std::string dir = ::testing::TempDir();
  write(dir + "/check1.json", 1);
  write(dir + "/check2.json", 0.5);
  AddTransferError(dir + "/check1.json", m, &me);
  EXPECT_NEAR(me[0].transfer_sd_log, 0.12, 1e-6);
  AddTransferError(dir + "/check2.json", m, &me);
  EXPECT_NEAR(me[0].transfer_sd_log, 0.12, 1e-6);
  EXPECT_EQ(me[1].transfer_sd_log, 0);  // no model error estimate: left alone
  std::ofstream(dir + "/bad.json") << "{}";
  try {
    AddTransferError(dir + "/bad.json", m, &me);
    FAIL() << "no error";
  } catch (const PredictError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: no 'points'"), std::string::npos) << e.what();
  }
}

// Issue 20's benchmark judges components "larger than 10% of the total": the significant
// summary is the same figures over only those points, with the floor over only those points.
TEST(Validate, SignificantComponentsAreSummarisedOverTheirOwnPoints) {
  Model m = PingPong();  // t_lat = b1 = 1e-4 s at every point
  DataTable d;
  d.source = "test";
  d.columns = {"bytes", "t_meas", "t_lat"};
  // t_lat's share of the measured total: 95% (error -50%), 11% (-20%), 0.5% and 0.25% (+100%
  // each, with a wide spread: their floors are large).
  d.rows = {{0, 2.1e-4, 2e-4},      {0, 2.1e-4, 2e-4},     {1e5, 1.1e-3, 1.25e-4},
            {1e5, 1.1e-3, 1.25e-4}, {1e6, 0.0101, 2.5e-5}, {1e6, 0.0101, 7.5e-5},
            {2e6, 0.0201, 2.5e-5},  {2e6, 0.0201, 7.5e-5}};
  d.groups = {0, 0, 1, 1, 2, 2, 3, 3};
  Validation v = Validate(m, {100, 1e-4}, d, {});
  EXPECT_DOUBLE_EQ(v.significant_share, 0.1);
  const auto& all = v.summary[1];
  EXPECT_EQ(all.points, 4);
  EXPECT_NEAR(all.median_abs_pct, 75, 1e-9);
  EXPECT_GT(all.noise_floor_median_abs_pct, 5);  // the spread points lift the median
  const auto& g = all.significant;
  EXPECT_EQ(g.points, 2);
  EXPECT_NEAR(g.median_abs_pct, 35, 1e-9);
  EXPECT_NEAR(g.worst_abs_pct, 50, 1e-9);
  EXPECT_NEAR(g.noise_floor_median_abs_pct, 0, 1e-12);  // both without a spread
  EXPECT_TRUE(std::isnan(g.coverage_90));               // no intervals without --fit
  EXPECT_EQ(v.summary[0].significant.points, 0);        // the total is not a component
  ValidateOptions every;
  every.significant_share = 0;
  Validation v0 = Validate(m, {100, 1e-4}, d, {}, every);
  EXPECT_EQ(v0.summary[1].significant.points, 4);
  EXPECT_NEAR(v0.summary[1].significant.median_abs_pct, 75, 1e-9);
  ValidateOptions bad;
  bad.significant_share = 1;
  EXPECT_THROW(Validate(m, {100, 1e-4}, d, {}, bad), DataError);
}

TEST(Validate, NormalQuantile) {
  EXPECT_NEAR(NormalQuantile(0.95), 1.6448536, 1e-6);
  EXPECT_NEAR(NormalQuantile(0.975), 1.9599640, 1e-6);
  EXPECT_NEAR(NormalQuantile(0.01), -2.3263479, 1e-6);
}

}  // namespace
}  // namespace invmw::fit
