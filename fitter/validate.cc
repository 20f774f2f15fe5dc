#include "fitter/validate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>

#include "fitter/median.h"

namespace invmw::fit {

namespace {

// The standard deviation of the statistic of x, relative: the replications' sd of log t over
// sqrt(R), times sqrt(pi/2) for the median of more than 2 (its efficiency under Gaussian noise).
// A parametric estimate: the bootstrap of a median of 5 values takes one of 5 values and
// understated the floor by half on synthetic data with known noise. NaN below 2 values.
double StatisticSdLog(const std::vector<double>& x, const std::string& statistic) {
  std::vector<double> l;
  for (double v : x)
    if (v > 0 && std::isfinite(v)) l.push_back(std::log(v));
  if (l.size() < 2) return NAN;
  double m = std::accumulate(l.begin(), l.end(), 0.0) / l.size(), ss = 0;
  for (double v : l) ss += (v - m) * (v - m);
  double f = statistic == "median" && l.size() > 2 ? M_PI / 2 : 1.0;
  return std::sqrt(ss / (l.size() - 1) * f / l.size());
}

// |error| in percent of an exact model at one point, drawn `resamples` times (seeded): the
// statistic's own noise, |sd * z|. Empty without a spread.
std::vector<double> NoiseDraws(const std::vector<double>& x, const std::string& statistic,
                               int resamples, unsigned seed) {
  std::vector<double> out;
  double sd = StatisticSdLog(x, statistic);
  if (!std::isfinite(sd)) return out;
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0, 1);
  for (int k = 0; k < resamples; ++k) out.push_back(100 * std::fabs(std::expm1(sd * z(rng))));
  return out;
}

// Pooled within-group standard deviation of log values (groups of one value add nothing).
double PooledSdLog(const std::map<long, std::vector<double>>& groups) {
  double ss = 0;
  long dof = 0;
  for (const auto& [g, v] : groups) {
    std::vector<double> l;
    for (double x : v)
      if (x > 0 && std::isfinite(x)) l.push_back(std::log(x));
    if (l.size() < 2) continue;
    double m = std::accumulate(l.begin(), l.end(), 0.0) / l.size();
    for (double x : l) ss += (x - m) * (x - m);
    dof += static_cast<long>(l.size()) - 1;
  }
  return dof > 0 ? std::sqrt(ss / dof) : NAN;
}

}  // namespace

double Statistic(std::vector<double> x, const std::string& statistic) {
  if (x.empty()) return NAN;
  if (statistic == "mean") return std::accumulate(x.begin(), x.end(), 0.0) / x.size();
  return Median(std::move(x));
}

double NoiseFloorPct(const std::vector<double>& x, const std::string& statistic) {
  double sd = StatisticSdLog(x, statistic);
  return std::isfinite(sd) ? 100 * std::expm1(0.6744897501960817 * sd) : NAN;
}

int ReplicationsForFloor(double sd_log, const std::string& statistic, double target_pct) {
  if (!std::isfinite(sd_log)) return 0;
  // NoiseFloorPct solved for R: floor = expm1(0.674 sd sqrt(f / R)), f = pi/2 for a median.
  double f = statistic == "median" ? M_PI / 2 : 1.0;
  double per = std::log1p(target_pct / 100) / 0.6744897501960817;
  double r = f * (sd_log / per) * (sd_log / per);
  return static_cast<int>(std::min(1e6, std::max(1.0, std::ceil(r))));
}

double MedianAbs(std::vector<double> values) {
  std::vector<double> v;
  for (double x : values)
    if (std::isfinite(x)) v.push_back(std::fabs(x));
  return Median(std::move(v));
}

Validation Validate(const Model& model, const std::vector<double>& params, const DataTable& data,
                    const std::map<std::string, double>& settings, const ValidateOptions& opts) {
  if (opts.statistic != "mean" && opts.statistic != "median")
    throw DataError("statistic: must be \"mean\" or \"median\", got \"" + opts.statistic + "\"");
  if (!(opts.floor_target_pct > 0) || !std::isfinite(opts.floor_target_pct))
    throw DataError("floor target: must be a positive percentage");
  if (!(opts.significant_share >= 0 && opts.significant_share < 1))
    throw DataError("significant share: must be a fraction of the total in [0, 1)");
  const auto& factors = model.factors();
  // Where every factor's value comes from: a data column, a setting, or the model's default.
  std::vector<int> col(factors.size(), -1);
  std::vector<double> fixed(factors.size(), NAN);
  for (size_t i = 0; i < factors.size(); ++i) {
    const std::string& name = factors[i].name;
    auto it = settings.find(name);
    if (it != settings.end()) {
      fixed[i] = it->second;
    } else if ((col[i] = data.Column(name)) < 0) {
      if (!factors[i].has_default)
        throw DataError(data.source + ": no column for factor '" + name + "' of model " +
                        model.name() + " and no value given for it (--set " + name + "=VALUE)");
      fixed[i] = factors[i].default_value;
    }
  }
  for (const auto& [name, v] : settings) {
    if (model.FactorIndex(name) < 0)
      throw DataError("--set " + name + ": model " + model.name() + " has no factor '" + name +
                      "'");
  }
  const auto& rs = model.responses();
  std::vector<int> rcol(rs.size());
  for (size_t k = 0; k < rs.size(); ++k) rcol[k] = data.Column(rs[k].column);
  if (rcol[0] < 0)
    throw DataError(data.source + ": no measured column '" + rs[0].column + "' for the total of " +
                    model.name());

  // Rows grouped by design point (each row its own point when the table has no groups).
  std::map<long, std::vector<size_t>> groups;
  for (size_t r = 0; r < data.rows.size(); ++r)
    groups[data.groups.empty() ? static_cast<long>(r) : data.groups[r]].push_back(r);

  Validation v;
  v.statistic = opts.statistic;
  v.floor_target_pct = opts.floor_target_pct;
  v.significant_share = opts.significant_share;
  // Drift of each row: its paired reference run over the reference's median at that point.
  std::vector<double> drift(data.rows.size(), 1.0);
  std::vector<std::string> partner(data.rows.size());
  if (opts.paired) {
    const DataTable& ref = *opts.paired;
    if (data.replications.size() != data.rows.size() ||
        ref.replications.size() != ref.rows.size() || ref.groups.size() != ref.rows.size())
      throw DataError("pairing with " + opts.paired_name +
                      ": needs the point and replication of every run (results database rows)");
    int tc = ref.Column(rs[0].column);
    if (tc < 0)
      throw DataError(ref.source + ": no measured column '" + rs[0].column + "' to pair with");
    std::map<long, std::vector<double>> ref_by_point;
    std::map<std::pair<long, long>, size_t> ref_row;
    for (size_t r = 0; r < ref.rows.size(); ++r) {
      double t = ref.rows[r][tc];
      if (!(t > 0 && std::isfinite(t))) continue;
      ref_by_point[ref.groups[r]].push_back(t);
      ref_row[{ref.groups[r], ref.replications[r]}] = r;
    }
    v.paired = true;
    v.drift.reference = opts.paired_name;
    std::map<long, std::vector<double>> raw, normalized;
    std::vector<double> drifts;
    for (size_t r = 0; r < data.rows.size(); ++r) {
      long g = data.groups.empty() ? static_cast<long>(r) : data.groups[r];
      auto it = ref_row.find({g, data.replications[r]});
      double t = data.rows[r][rcol[0]];
      if (it == ref_row.end()) {
        ++v.drift.unpaired;
        continue;
      }
      ++v.drift.pairs;
      drift[r] = ref.rows[it->second][tc] / Median(ref_by_point[g]);
      partner[r] = ref.RowOrigin(it->second);
      drifts.push_back(100 * (drift[r] - 1));
      raw[g].push_back(t);
      normalized[g].push_back(t / drift[r]);
    }
    v.drift.sd_log_across_time = PooledSdLog(raw);
    v.drift.sd_log_within_pairs = PooledSdLog(normalized);
    // A partner with stalls of its own adds its noise instead of removing the machine's drift
    // (seen under heavy load: 0.04 across time, 0.22 within pairs); then the runs stay raw.
    v.drift.applied = v.drift.sd_log_within_pairs < v.drift.sd_log_across_time;
    if (!v.drift.applied) std::fill(drift.begin(), drift.end(), 1.0);
    v.drift.median_abs_drift_pct = MedianAbs(drifts);
    for (double d : drifts)
      v.drift.worst_abs_drift_pct = std::isfinite(v.drift.worst_abs_drift_pct)
                                        ? std::max(v.drift.worst_abs_drift_pct, std::fabs(d))
                                        : std::fabs(d);
  }
  std::vector<std::vector<double>> errors(rs.size());
  // Per response and point: the bootstrap deviations behind the noise floors (empty: none).
  std::vector<std::vector<std::vector<double>>> deviations(rs.size());
  std::vector<std::array<int, 3>> covered(rs.size(), std::array<int, 3>{0, 0, 0});
  std::vector<int> with_interval(rs.size(), 0);
  std::vector<std::array<std::vector<double>, 3>> rel_width(rs.size());
  // Per response and point: whether the component is significant (SignificantSummary) and
  // whether the measured value is inside the 90% interval (-1: no interval or no value).
  std::vector<std::vector<char>> significant(rs.size());
  std::vector<std::vector<int>> inside90(rs.size());
  // Per response, each point's (normalized) replications, for the pooled per-run spread.
  std::vector<std::map<long, std::vector<double>>> spread(rs.size());
  for (const auto& [group, rows] : groups) {
    ValidatedPoint pt;
    pt.group = group;
    std::vector<double> f(factors.size());
    for (size_t i = 0; i < factors.size(); ++i) {
      f[i] = col[i] >= 0 ? data.rows[rows.front()][col[i]] : fixed[i];
      for (size_t r : rows) {
        if (col[i] >= 0 && data.rows[r][col[i]] != f[i])
          throw DataError(data.RowOrigin(r) + ": factor '" + factors[i].name +
                          "' differs between replications of design point " +
                          std::to_string(group));
      }
      if (!std::isfinite(f[i]))
        throw DataError(data.RowOrigin(rows.front()) + ": factor '" + factors[i].name +
                        "' has no value");
      pt.factors[factors[i].name] = f[i];
    }
    for (size_t r : rows) {
      pt.runs.push_back(data.RowOrigin(r));
      if (!partner[r].empty()) pt.pairs.push_back({data.RowOrigin(r), partner[r], drift[r]});
    }
    std::vector<ResponseInterval> iv;
    if (opts.cov) {
      int reps = 0;
      for (size_t r : rows) reps += std::isfinite(data.rows[r][rcol[0]]);
      iv = PredictionIntervals(model, f, params, *opts.cov, opts.sigma, opts.weighting, reps,
                               opts.statistic, opts.model_error);
    }
    for (size_t k = 0; k < rs.size(); ++k) {
      ValidatedResponse vr;
      vr.name = rs[k].name;
      vr.column = rs[k].column;
      std::vector<double> m;
      if (rcol[k] >= 0)
        for (size_t r : rows)
          if (std::isfinite(data.rows[r][rcol[k]])) m.push_back(data.rows[r][rcol[k]] / drift[r]);
      vr.measured = static_cast<int>(m.size());
      if (m.empty()) {
        vr.mean = vr.min = vr.max = vr.sd = vr.median = NAN;
      } else {
        vr.mean = std::accumulate(m.begin(), m.end(), 0.0) / m.size();
        vr.min = *std::min_element(m.begin(), m.end());
        vr.max = *std::max_element(m.begin(), m.end());
        double ss = 0;
        for (double x : m) ss += (x - vr.mean) * (x - vr.mean);
        vr.sd = m.size() > 1 ? std::sqrt(ss / (m.size() - 1)) : 0;
        vr.median = Median(m);
      }
      vr.predicted = rs[k].expr.Eval<double>(f.data(), params.data());
      const double measured = opts.statistic == "mean" ? vr.mean : vr.median;
      vr.error_pct = (std::isfinite(measured) && measured != 0)
                         ? 100 * (vr.predicted - measured) / measured
                         : NAN;
      errors[k].push_back(vr.error_pct);
      if (k == 0) {
        significant[k].push_back(0);
      } else {
        const auto& t = pt.responses.front();
        const double total = opts.statistic == "mean" ? t.mean : t.median;
        significant[k].push_back(std::isfinite(measured) && std::isfinite(total) && total > 0 &&
                                 measured > opts.significant_share * total);
      }
      inside90[k].push_back(-1);
      if (std::isfinite(vr.error_pct)) spread[k][group] = m;
      // One seed per point and response, so a point's floor does not depend on the others.
      deviations[k].push_back(std::isfinite(vr.error_pct)
                                  ? NoiseDraws(m, opts.statistic, opts.bootstrap,
                                               opts.seed + 7919u * static_cast<unsigned>(group) +
                                                   104729u * static_cast<unsigned>(k))
                                  : std::vector<double>());
      vr.noise_floor_pct = NoiseFloorPct(m, opts.statistic);
      vr.replications_for_floor =
          ReplicationsForFloor(PooledSdLog({{group, m}}), opts.statistic, opts.floor_target_pct);
      if (!iv.empty()) {
        vr.has_intervals = true;
        vr.model_sd_log = iv[k].model_sd_log;
        vr.transfer_sd_log = iv[k].transfer_sd_log;
        for (size_t l = 0; l < vr.intervals.size(); ++l) {
          vr.intervals[l] = iv[k].intervals[l];
          if (vr.predicted > 0)
            rel_width[k][l].push_back((vr.intervals[l].high - vr.intervals[l].low) / vr.predicted);
          if (std::isfinite(measured))
            covered[k][l] += vr.intervals[l].low <= measured && measured <= vr.intervals[l].high;
        }
        if (std::isfinite(measured))
          inside90[k].back() = vr.intervals[1].low <= measured && measured <= vr.intervals[1].high;
        with_interval[k] += std::isfinite(measured);
      }
      pt.responses.push_back(vr);
    }
    v.points.push_back(std::move(pt));
  }
  for (size_t k = 0; k < rs.size(); ++k) {
    ErrorSummary s;
    s.name = rs[k].name;
    s.column = rs[k].column;
    double sum = 0;
    for (size_t i = 0; i < errors[k].size(); ++i) {
      double e = errors[k][i];
      if (!std::isfinite(e)) {
        ++s.unmeasured;
        continue;
      }
      ++s.points;
      sum += std::fabs(e);
      if (std::fabs(e) > s.worst_abs_pct || s.worst_group < 0) {
        s.worst_abs_pct = std::fabs(e);
        s.worst_group = v.points[i].group;
      }
    }
    s.median_abs_pct = MedianAbs(errors[k]);
    // An exact model's median and worst |error| over a set of points, per draw, then the median
    // over draws; points without a spread (one replication) count as 0.
    auto floors = [&](const std::vector<size_t>& which, double* median, double* worst) {
      std::vector<double> med_b, worst_b;
      bool any = false;
      for (size_t i : which) any = any || !deviations[k][i].empty();
      for (int b = 0; any && b < opts.bootstrap; ++b) {
        std::vector<double> e;
        for (size_t i : which) e.push_back(deviations[k][i].empty() ? 0 : deviations[k][i][b]);
        med_b.push_back(Median(e));
        worst_b.push_back(*std::max_element(e.begin(), e.end()));
      }
      *median = Median(med_b);
      *worst = Median(worst_b);
    };
    std::vector<size_t> with_error, large;
    for (size_t i = 0; i < errors[k].size(); ++i) {
      if (!std::isfinite(errors[k][i])) continue;
      with_error.push_back(i);
      if (significant[k][i]) large.push_back(i);
    }
    floors(with_error, &s.noise_floor_median_abs_pct, &s.noise_floor_worst_abs_pct);
    if (!large.empty()) {
      SignificantSummary& g = s.significant;
      g.points = static_cast<int>(large.size());
      std::vector<double> e;
      int in = 0, with = 0;
      for (size_t i : large) {
        e.push_back(errors[k][i]);
        g.worst_abs_pct = std::isfinite(g.worst_abs_pct)
                              ? std::max(g.worst_abs_pct, std::fabs(errors[k][i]))
                              : std::fabs(errors[k][i]);
        if (inside90[k][i] >= 0) ++with, in += inside90[k][i];
      }
      g.median_abs_pct = MedianAbs(e);
      floors(large, &g.noise_floor_median_abs_pct, &g.noise_floor_worst_abs_pct);
      if (with) g.coverage_90 = static_cast<double>(in) / with;
    }
    // Replications chosen from the measured spread: the fewest whose statistic has a median
    // |error| of at most ValidateOptions::floor_target_pct for an exact model.
    s.sd_log_run = PooledSdLog(spread[k]);
    s.replications_for_floor =
        ReplicationsForFloor(s.sd_log_run, opts.statistic, opts.floor_target_pct);
    for (size_t l = 0; l < s.coverage.size(); ++l) {
      if (with_interval[k]) s.coverage[l] = static_cast<double>(covered[k][l]) / with_interval[k];
      if (!rel_width[k][l].empty()) s.median_relative_width[l] = Median(rel_width[k][l]);
    }
    if (opts.cov) {
      s.model_sd_log = s.transfer_sd_log = 0;
      if (opts.model_error && k < opts.model_error->size() && (*opts.model_error)[k].points > 0) {
        s.model_sd_log = (*opts.model_error)[k].model_sd_log;
        s.transfer_sd_log = (*opts.model_error)[k].transfer_sd_log;
      }
    }
    s.mean_abs_pct = s.points ? sum / s.points : NAN;
    if (!s.points) s.worst_abs_pct = NAN;
    v.summary.push_back(s);
  }
  return v;
}

}  // namespace invmw::fit
