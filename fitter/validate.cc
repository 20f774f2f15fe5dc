#include "fitter/validate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace invmw::fit {

double MedianAbs(std::vector<double> values) {
  std::vector<double> v;
  for (double x : values)
    if (std::isfinite(x)) v.push_back(std::fabs(x));
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Validation Validate(const Model& model, const std::vector<double>& params, const DataTable& data,
                    const std::map<std::string, double>& settings) {
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
  std::vector<std::vector<double>> errors(rs.size());
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
    for (size_t r : rows) pt.runs.push_back(data.RowOrigin(r));
    for (size_t k = 0; k < rs.size(); ++k) {
      ValidatedResponse vr;
      vr.name = rs[k].name;
      vr.column = rs[k].column;
      std::vector<double> m;
      if (rcol[k] >= 0)
        for (size_t r : rows)
          if (std::isfinite(data.rows[r][rcol[k]])) m.push_back(data.rows[r][rcol[k]]);
      vr.measured = static_cast<int>(m.size());
      if (m.empty()) {
        vr.mean = vr.min = vr.max = vr.sd = NAN;
      } else {
        vr.mean = std::accumulate(m.begin(), m.end(), 0.0) / m.size();
        vr.min = *std::min_element(m.begin(), m.end());
        vr.max = *std::max_element(m.begin(), m.end());
        double ss = 0;
        for (double x : m) ss += (x - vr.mean) * (x - vr.mean);
        vr.sd = m.size() > 1 ? std::sqrt(ss / (m.size() - 1)) : 0;
      }
      vr.predicted = rs[k].expr.Eval<double>(f.data(), params.data());
      vr.error_pct =
          (std::isfinite(vr.mean) && vr.mean != 0) ? 100 * (vr.predicted - vr.mean) / vr.mean : NAN;
      errors[k].push_back(vr.error_pct);
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
    s.mean_abs_pct = s.points ? sum / s.points : NAN;
    if (!s.points) s.worst_abs_pct = NAN;
    v.summary.push_back(s);
  }
  return v;
}

}  // namespace invmw::fit
