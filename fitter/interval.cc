#include "fitter/interval.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fitter/median.h"

namespace invmw::fit {

double NormalQuantile(double p) {
  if (!(p > 0 && p < 1)) return NAN;
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425;
  if (p < lo) {
    double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lo) return -NormalQuantile(1 - p);
  double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

std::vector<ModelDiscrepancy> EstimateModelError(
    const Model& model, const std::vector<CalibrationResidual>& residuals) {
  const auto& rs = model.responses();
  std::vector<ModelDiscrepancy> out(rs.size());
  for (size_t k = 0; k < rs.size(); ++k) {
    out[k].response = rs[k].name;
    std::map<long, std::vector<double>> logs;  // point -> log(measured / predicted) per run
    for (const auto& r : residuals)
      if (r.response == rs[k].name && r.measured > 0 && r.predicted > 0 &&
          std::isfinite(r.measured) && std::isfinite(r.predicted))
        logs[r.point].push_back(std::log(r.measured / r.predicted));
    if (logs.empty()) continue;
    // A point's error is that of the median of its runs (3 or more), as the validation compares
    // (--statistic median): the mean let one stalled run of a point count as model error, while
    // the noise below, a median of variances, leaves such runs out. Its noise variance is then
    // (pi / 2) sigma^2 / n (the median's efficiency), sigma^2 / n for a mean of 1 or 2 runs.
    std::vector<double> abs_center, var, n, inv_eff;
    for (const auto& [point, e] : logs) {
      double mean = 0;
      for (double x : e) mean += x;
      mean /= e.size();
      const bool median = e.size() > 2;
      abs_center.push_back(std::fabs(median ? Median(e) : mean));
      n.push_back(e.size());
      inv_eff.push_back((median ? M_PI / 2 : 1.0) / e.size());
      if (e.size() < 2) continue;
      double ss = 0;
      for (double x : e) ss += (x - mean) * (x - mean);
      var.push_back(ss / (e.size() - 1));
    }
    // Median absolute value about zero over the normal's 0.6745: the points' spread without the
    // pull of the few points (stalls, a mis-specified corner) that would dominate a variance.
    double spread = Median(abs_center) / 0.674489750196;
    double total = spread * spread;
    double noise = 0;
    if (!var.empty()) {
      // The median of a sample variance with d degrees of freedom is about
      // sigma^2 (1 - 2/(9d))^3 (Wilson-Hilferty); d from the typical number of replications.
      double d = std::max(1.0, Median(n) - 1);
      double c = std::pow(1 - 2 / (9 * d), 3);
      noise = Median(var) / c;
    }
    // Without replications noise and discrepancy cannot be told apart: all of the spread then
    // counts as model error, which does not shrink with the replications (the cautious side).
    double inv_n = 0;
    for (double x : inv_eff) inv_n += x;
    inv_n /= inv_eff.size();
    out[k].points = static_cast<int>(logs.size());
    out[k].noise_sd_log = std::sqrt(noise);
    out[k].model_sd_log = std::sqrt(std::max(0.0, total - noise * inv_n));
  }
  return out;
}

void AddTransferError(const std::string& path, const Model& model,
                      std::vector<ModelDiscrepancy>* model_error) {
  std::ifstream in(path);
  if (!in)
    throw PredictError(path +
                       ": cannot read the transfer check (expected `invmw validate "
                       "--json` output)");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw PredictError(path + ": not JSON (expected `invmw validate --json` output): " + e.what());
  }
  if (!j.is_object() || !j.contains("points") || !j["points"].is_array())
    throw PredictError(path + ": no 'points' array (expected `invmw validate --json` output)");
  const std::string statistic = j.contains("statistic") && j["statistic"].is_string()
                                    ? j["statistic"].get<std::string>()
                                    : "median";
  if (statistic != "median" && statistic != "mean")
    throw PredictError(path + ": 'statistic' must be median or mean");
  const auto& rs = model.responses();
  for (size_t k = 0; k < rs.size() && k < model_error->size(); ++k) {
    ModelDiscrepancy& me = (*model_error)[k];
    if (me.points == 0) continue;
    std::vector<double> abs_log;
    double noise = 0;  // mean variance of the check's statistic from the per-run noise
    for (size_t i = 0; i < j["points"].size(); ++i) {
      const auto& p = j["points"][i];
      if (!p.is_object() || !p.contains("responses") || !p["responses"].contains(rs[k].name))
        continue;
      const auto& r = p["responses"][rs[k].name];
      auto num = [&](const char* key) {
        return r.contains(key) && r[key].is_number() ? r[key].get<double>() : NAN;
      };
      double measured = num(statistic.c_str()), predicted = num("predicted");
      double reps = num("replications");
      if (!(measured > 0 && predicted > 0 && reps >= 1)) continue;
      abs_log.push_back(std::fabs(std::log(measured / predicted)));
      double r_eff = statistic == "median" && reps > 2 ? reps / (M_PI / 2) : reps;
      noise += me.noise_sd_log * me.noise_sd_log / r_eff;
    }
    if (abs_log.empty()) continue;
    noise /= abs_log.size();
    double spread = Median(abs_log) / 0.674489750196;
    double t2 = spread * spread - me.model_sd_log * me.model_sd_log - noise;
    me.transfer_sd_log = std::max(me.transfer_sd_log, std::sqrt(std::max(0.0, t2)));
  }
}

FitUncertainty LoadFitUncertainty(const std::string& path, const Model& model) {
  std::ifstream in(path);
  if (!in) throw PredictError(path + ": cannot read the fit (expected `invmw fit --json` output)");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw PredictError(path + ": not JSON (expected `invmw fit --json` output): " + e.what());
  }
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(key))
      throw PredictError(path + ": no '" + key + "' (expected `invmw fit --json` output)");
    return j[key];
  };
  FitUncertainty f;
  const auto& params = need("parameters");
  const auto& cov = need("covariance");
  if (!params.is_array() || !cov.is_array() || cov.size() != params.size())
    throw PredictError(path + ": 'covariance' must be a square array of the 'parameters' size");
  for (const auto& p : params) {
    if (!p.contains("name") || !p["name"].is_string() || !p.contains("value") ||
        !p["value"].is_number())
      throw PredictError(path + ": every parameter needs a name and a numeric value");
    f.names.push_back(p["name"]);
    f.values.push_back(p["value"]);
  }
  for (const auto& row : cov) {
    if (!row.is_array() || row.size() != params.size())
      throw PredictError(path + ": 'covariance' must be a square array of the 'parameters' size");
    std::vector<double> r;
    for (const auto& v : row) r.push_back(v.is_number() ? v.get<double>() : NAN);
    f.covariance.push_back(r);
  }
  const auto& sigma = need("sigma");
  f.sigma = sigma.is_number() ? sigma.get<double>() : NAN;
  if (!std::isfinite(f.sigma) || f.sigma < 0)
    throw PredictError(path + ": 'sigma' must be a number >= 0");
  if (j.contains("weighting") && j["weighting"].is_string()) f.weighting = j["weighting"];
  // The residuals (optional: older fits and hand-written files lack them) give the model error.
  if (j.contains("residuals")) {
    const auto& res = j["residuals"];
    if (!res.is_array()) throw PredictError(path + ": 'residuals' must be an array");
    std::vector<CalibrationResidual> rows;
    for (size_t i = 0; i < res.size(); ++i) {
      const auto& r = res[i];
      auto num = [&](const char* key) {
        if (!r.is_object() || !r.contains(key) || !(r[key].is_number() || r[key].is_null()))
          throw PredictError(path + ": residuals[" + std::to_string(i) + "] has no numeric '" +
                             key + "'");
        return r[key].is_number() ? r[key].get<double>() : NAN;
      };
      if (!r.is_object() || !r.contains("response") || !r["response"].is_string())
        throw PredictError(path + ": residuals[" + std::to_string(i) + "] has no 'response'");
      CalibrationResidual c;
      c.response = r["response"];
      // A fit without design points (CSV rows) has one point per row.
      c.point = r.contains("point") && r["point"].is_number_integer() ? r["point"].get<long>()
                                                                      : static_cast<long>(i);
      c.measured = num("measured");
      c.predicted = num("predicted");
      rows.push_back(c);
    }
    f.model_error = EstimateModelError(model, rows);
  }
  for (const auto& p : model.parameters())
    if (std::find(f.names.begin(), f.names.end(), p.name) == f.names.end())
      throw PredictError(path + ": the fit has no parameter '" + p.name + "' of model " +
                         model.name());
  return f;
}

std::vector<std::vector<double>> TransferCovariance(const Model& model, const FitUncertainty& fit,
                                                    const ResolvedParameters& resolved,
                                                    bool transferred) {
  const auto& ps = model.parameters();
  const size_t np = ps.size();
  std::vector<double> scale(np, 0);
  std::vector<size_t> at(np, 0);
  for (size_t i = 0; i < np; ++i) {
    at[i] = std::find(fit.names.begin(), fit.names.end(), ps[i].name) - fit.names.begin();
    if (at[i] >= fit.names.size()) continue;
    // Resolved values from a table (origin "table ...") are the target's own probes.
    bool from_fit =
        !transferred || i >= resolved.origins.size() || resolved.origins[i].rfind("table ", 0) != 0;
    double v = fit.values[at[i]];
    if (from_fit && v != 0) scale[i] = resolved.values[i] / v;
  }
  std::vector<std::vector<double>> cov(np, std::vector<double>(np, 0));
  for (size_t i = 0; i < np; ++i)
    for (size_t k = 0; k < np; ++k) {
      if (scale[i] == 0 || scale[k] == 0) continue;
      double c = fit.covariance[at[i]][at[k]];
      cov[i][k] = std::isfinite(c) ? c * scale[i] * scale[k] : 0;
    }
  return cov;
}

std::vector<ResponseInterval> PredictionIntervals(
    const Model& model, const std::vector<double>& factors, const std::vector<double>& params,
    const std::vector<std::vector<double>>& cov, double sigma, const std::string& weighting,
    int replications, const std::string& statistic,
    const std::vector<ModelDiscrepancy>* model_error) {
  const auto& rs = model.responses();
  const size_t np = params.size();
  std::vector<double> y(rs.size());
  for (size_t k = 0; k < rs.size(); ++k)
    y[k] = rs[k].expr.Eval<double>(factors.data(), params.data());
  // Central differences: the models are smooth in their parameters, and a step well below a
  // standard error keeps the linearisation where the interval is.
  std::vector<std::vector<double>> grad(rs.size(), std::vector<double>(np, 0));
  std::vector<double> x = params;
  for (size_t i = 0; i < np; ++i) {
    double var = i < cov.size() ? cov[i][i] : 0;
    if (!(var > 0)) continue;
    double h = std::max({std::fabs(params[i]) * 1e-6, std::sqrt(var) * 1e-3, 1e-300});
    x[i] = params[i] + h;
    std::vector<double> up(rs.size());
    for (size_t k = 0; k < rs.size(); ++k)
      up[k] = rs[k].expr.Eval<double>(factors.data(), x.data());
    x[i] = params[i] - h;
    for (size_t k = 0; k < rs.size(); ++k)
      grad[k][i] = (up[k] - rs[k].expr.Eval<double>(factors.data(), x.data())) / (2 * h);
    x[i] = params[i];
  }
  double r_eff = std::max(1, replications);
  if (statistic == "median" && replications > 2) r_eff /= M_PI / 2;
  std::vector<ResponseInterval> out(rs.size());
  for (size_t k = 0; k < rs.size(); ++k) {
    ResponseInterval& ri = out[k];
    ri.predicted = y[k];
    double vp = 0;
    for (size_t i = 0; i < np; ++i)
      for (size_t j = 0; j < np; ++j)
        if (grad[k][i] != 0 && grad[k][j] != 0 && std::isfinite(cov[i][j]))
          vp += grad[k][i] * cov[i][j] * grad[k][j];
    ri.sd_param = std::sqrt(std::max(0.0, vp));
    // The residual sd is in the fit's weighting units: relative to the response itself, to the
    // run's total (components under "total"), or seconds.
    double unit = weighting == "absolute"           ? 1.0
                  : (weighting == "total" && k > 0) ? std::fabs(y[0])
                                                    : std::fabs(y[k]);
    ri.sd_noise = sigma * unit / std::sqrt(r_eff);
    // The calibration's residual sd holds the model's error too; divided by the replications it
    // made the intervals of a median of 5 runs far too narrow. With the residuals' split, only
    // the per-run noise shrinks, and the discrepancy is added whole.
    double s_model = 0;
    if (model_error && k < model_error->size() && (*model_error)[k].points > 0) {
      const ModelDiscrepancy& me = (*model_error)[k];
      ri.sd_noise = me.noise_sd_log * std::fabs(y[k]) / std::sqrt(r_eff);
      ri.model_sd_log = me.model_sd_log;
      ri.transfer_sd_log = me.transfer_sd_log;
      s_model = std::hypot(me.model_sd_log, me.transfer_sd_log);
    }
    double sd = std::sqrt(ri.sd_param * ri.sd_param + ri.sd_noise * ri.sd_noise +
                          s_model * s_model * y[k] * y[k]);
    for (size_t l = 0; l < kIntervalLevels.size(); ++l) {
      double z = NormalQuantile(0.5 + kIntervalLevels[l] / 2);
      if (y[k] > 0) {
        double s = sd / y[k];
        ri.intervals[l] = {y[k] * std::exp(-z * s), y[k] * std::exp(z * s)};
      } else {
        ri.intervals[l] = {y[k] - z * sd, y[k] + z * sd};
      }
    }
  }
  return out;
}

}  // namespace invmw::fit
