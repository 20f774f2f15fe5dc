#include "fitter/validate_summary.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "fitter/data_table.h"
#include "fitter/median.h"

namespace invmw::fit {

namespace {

constexpr double kZ75 = 0.6744897501960817;  // the median of |N(0, 1)|

// One point of one response, as the pool needs it.
struct PointFigure {
  double error_pct = NAN, floor_pct = NAN;
  int inside90 = -1;  // -1: no interval or no measured value
};

PooledFigures Figures(const std::vector<PointFigure>& pts, int draws, unsigned seed) {
  PooledFigures f;
  std::vector<double> abs, floors;
  for (const auto& p : pts) {
    if (p.inside90 >= 0) ++f.with90, f.in90 += p.inside90;
    if (!std::isfinite(p.error_pct)) continue;
    abs.push_back(std::fabs(p.error_pct));
    floors.push_back(p.floor_pct);
  }
  f.points = static_cast<int>(abs.size());
  if (abs.empty()) return f;
  f.median_abs_pct = Median(abs);
  f.worst_abs_pct = *std::max_element(abs.begin(), abs.end());
  ExactModelErrors(floors, draws, seed, &f.noise_floor_median_abs_pct,
                   &f.noise_floor_worst_abs_pct);
  return f;
}

double Num(const nlohmann::json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_number() ? o[key].get<double>() : NAN;
}

}  // namespace

void ExactModelErrors(const std::vector<double>& floors_pct, int draws, unsigned seed,
                      double* median_pct, double* worst_pct) {
  *median_pct = *worst_pct = NAN;
  if (floors_pct.empty() || draws < 1) return;
  std::vector<double> sd;
  for (double f : floors_pct)
    sd.push_back(f > 0 && std::isfinite(f) ? std::log1p(f / 100) / kZ75 : 0);
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> med, worst, e(sd.size());
  for (int b = 0; b < draws; ++b) {
    for (size_t i = 0; i < sd.size(); ++i) e[i] = 100 * std::fabs(std::expm1(sd[i] * z(rng)));
    med.push_back(Median(e));
    worst.push_back(*std::max_element(e.begin(), e.end()));
  }
  *median_pct = Median(med);
  *worst_pct = Median(worst);
}

ValidationPool PoolValidations(const std::vector<std::string>& paths, double significant_share,
                               int draws, unsigned seed) {
  if (!(significant_share >= 0 && significant_share < 1))
    throw DataError("significant share: must be a fraction of the total in [0, 1)");
  if (paths.empty()) throw DataError("no validation files to pool");
  ValidationPool pool;
  pool.significant_share = significant_share;
  std::vector<PointFigure> all_total;
  std::map<std::string, std::vector<PointFigure>> all_comp;
  for (const auto& path : paths) {
    const std::string what = " (expected `invmw validate --json` output)";
    std::ifstream in(path);
    if (!in) throw DataError(path + ": cannot read" + what);
    nlohmann::json j;
    try {
      in >> j;
    } catch (const std::exception& e) {
      throw DataError(path + ": not JSON" + what + ": " + e.what());
    }
    if (!j.is_object() || !j.contains("total") || !j["total"].is_string())
      throw DataError(path + ": no 'total' response name" + what);
    if (!j.contains("points") || !j["points"].is_array())
      throw DataError(path + ": no 'points' array" + what);
    const std::string total = j["total"].get<std::string>();
    if (pool.total.empty()) {
      pool.total = total;
    } else if (total != pool.total) {
      throw DataError(path + ": total '" + total + "' differs from the first file's '" +
                      pool.total + "' (validations of another model)");
    }
    const std::string statistic = j.contains("statistic") && j["statistic"].is_string()
                                      ? j["statistic"].get<std::string>()
                                      : "median";
    if (statistic != "median" && statistic != "mean")
      throw DataError(path + ": 'statistic' must be median or mean, got '" + statistic + "'");
    ValidationFigures vf;
    vf.file = path;
    vf.label = j.contains("label") && j["label"].is_string() ? j["label"].get<std::string>() : path;
    std::vector<PointFigure> tot;
    std::map<std::string, std::vector<PointFigure>> comp;
    for (size_t i = 0; i < j["points"].size(); ++i) {
      const auto& p = j["points"][i];
      const std::string at = path + ": points[" + std::to_string(i) + "]";
      if (!p.is_object() || !p.contains("responses") || !p["responses"].is_object())
        throw DataError(at + ": no 'responses' object" + what);
      const auto& rs = p["responses"];
      if (!rs.contains(total)) throw DataError(at + ": no response '" + total + "'" + what);
      auto figure = [&](const nlohmann::json& r) {
        PointFigure f;
        f.error_pct = Num(r, "error_pct");
        f.floor_pct = Num(r, "noise_floor_pct");
        const double measured = Num(r, statistic.c_str());
        if (r.contains("interval_90") && r["interval_90"].is_array() &&
            r["interval_90"].size() == 2 && r["interval_90"][0].is_number() &&
            r["interval_90"][1].is_number() && std::isfinite(measured))
          f.inside90 = r["interval_90"][0].get<double>() <= measured &&
                       measured <= r["interval_90"][1].get<double>();
        return f;
      };
      tot.push_back(figure(rs[total]));
      const double total_measured = Num(rs[total], statistic.c_str());
      for (const auto& [name, r] : rs.items()) {
        if (name == total) continue;
        if (std::find(pool.components.begin(), pool.components.end(), name) ==
            pool.components.end())
          pool.components.push_back(name);
        const double measured = Num(r, statistic.c_str());
        if (!(total_measured > 0 && measured > significant_share * total_measured)) continue;
        comp[name].push_back(figure(r));
      }
    }
    vf.total = Figures(tot, draws, seed);
    for (const auto& [name, pts] : comp) vf.components[name] = Figures(pts, draws, seed);
    // The validation's own floors where it has them, so that both reports show one figure.
    if (j.contains("summary") && j["summary"].is_object() && j["summary"].contains(total)) {
      const auto& s = j["summary"][total];
      if (std::isfinite(Num(s, "noise_floor_median_abs_error_pct")) &&
          std::isfinite(Num(s, "noise_floor_worst_abs_error_pct"))) {
        vf.total.noise_floor_median_abs_pct = Num(s, "noise_floor_median_abs_error_pct");
        vf.total.noise_floor_worst_abs_pct = Num(s, "noise_floor_worst_abs_error_pct");
      }
      for (auto& [name, f] : vf.components) {
        if (!j["summary"].contains(name) || !j["summary"][name].contains("significant")) continue;
        const auto& g = j["summary"][name]["significant"];
        if (Num(g, "share_of_total") != significant_share ||
            !std::isfinite(Num(g, "noise_floor_median_abs_error_pct")) ||
            !std::isfinite(Num(g, "noise_floor_worst_abs_error_pct")))
          continue;
        f.noise_floor_median_abs_pct = Num(g, "noise_floor_median_abs_error_pct");
        f.noise_floor_worst_abs_pct = Num(g, "noise_floor_worst_abs_error_pct");
      }
    }
    all_total.insert(all_total.end(), tot.begin(), tot.end());
    for (const auto& [name, pts] : comp)
      all_comp[name].insert(all_comp[name].end(), pts.begin(), pts.end());
    pool.validations.push_back(std::move(vf));
  }
  // Name order, as the header says: a component only a later file has would otherwise come last.
  std::sort(pool.components.begin(), pool.components.end());
  pool.all_total = Figures(all_total, draws, seed);
  for (const auto& [name, pts] : all_comp) pool.all_components[name] = Figures(pts, draws, seed);
  return pool;
}

}  // namespace invmw::fit
