#include "fitter/interval.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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

std::vector<ResponseInterval> PredictionIntervals(const Model& model,
                                                  const std::vector<double>& factors,
                                                  const std::vector<double>& params,
                                                  const std::vector<std::vector<double>>& cov,
                                                  double sigma, const std::string& weighting,
                                                  int replications, const std::string& statistic) {
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
    double sd = std::hypot(ri.sd_param, ri.sd_noise);
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
