// Benchmark (not a test): calibration time of the 84-point Opal design (target < 100 ms,
// SPEC.md "Measured targets"), of a 10,000-point synthetic design, and prediction time for
// 1,000 points. Data are generated from known parameters with 2% multiplicative noise.
#include <chrono>
#include <cstdio>
#include <random>

#include "fitter/fit.h"
#include "fitter/predict.h"

using namespace invmw::fit;

namespace {

DataTable OpalData(int sizes, int servers, uint64_t seed) {
  Model m = Model::Load(ResolveModelPath("opal"));
  std::vector<double> truth(m.parameters().size());
  for (auto [n, v] : std::vector<std::pair<const char*, double>>{
           {"a1", 100}, {"b1", 20e-6}, {"a2", 5e-9}, {"a3", 5e-8}, {"a4", 1e-6}, {"b5", 2e-5}})
    truth[m.ParamIndex(n)] = v;
  DataTable d;
  d.source = "synthetic";
  d.columns = {"s", "p", "u", "n", "nt", "g", "alpha"};
  for (const auto& r : m.responses()) d.columns.push_back(r.column);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  for (int k = 0; k < sizes; ++k) {
    double n = 500 * std::pow(16.0, k / std::max(1.0, sizes - 1.0));
    for (double u : {1.0, 0.1})
      for (double nt : {100.0, 1e6})
        for (int p = 1; p <= servers; ++p) {
          std::vector<double> row = {10, double(p), u, n, nt, 0, 24};
          std::vector<double> f(m.factors().size());
          for (size_t c = 0; c < row.size(); ++c) f[m.FactorIndex(d.columns[c])] = row[c];
          for (const auto& r : m.responses())
            row.push_back(r.expr.Eval<double>(f.data(), truth.data()) * (1 + 0.02 * z(rng)));
          d.rows.push_back(row);
        }
  }
  return d;
}

double Ms(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
}

}  // namespace

int main() {
  Model m = Model::Load(ResolveModelPath("opal"));
  DataTable small = OpalData(3, 7, 1);
  FitOptions fit_only;
  fit_only.cross_validate = false;
  FitOptions with_cv;
  const int reps = 20;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) Fit(m, small, fit_only);
  std::printf(
      "opal 84-point design (%zu rows, 5 responses): fit + covariance + statistics  %8.2f ms\n",
      small.rows.size(), Ms(t0) / reps);
  t0 = std::chrono::steady_clock::now();
  Fit(m, small, with_cv);
  std::printf(
      "opal 84-point design: the same plus leave-one-out (84 refits)               %8.2f ms\n",
      Ms(t0));
  DataTable big = OpalData(250, 10, 2);  // 250 sizes x 2 x 2 x 10 = 10,000 rows
  t0 = std::chrono::steady_clock::now();
  FitResult r = Fit(m, big, fit_only);
  std::printf(
      "synthetic %zu-point design (5 responses): fit + covariance + statistics %8.2f ms "
      "(%s)\n",
      big.rows.size(), Ms(t0), r.converged ? "converged" : "NOT converged");
  PlatformTable t = LoadPlatformTable(ResolvePlatformTable("fast-cops", ""));
  std::vector<double> p = ResolveParameters(m, t, nullptr).values;
  Sweep sweep = ParseSweep("p=1..1000");
  t0 = std::chrono::steady_clock::now();
  Prediction pr;
  for (int i = 0; i < reps; ++i)
    pr = Predict(m, p, {{"n", 4289}, {"nt", 140}, {"s", 10}, {"u", 1}}, sweep);
  std::printf("prediction, 1,000 points (time + 4 components + speedup + notes)         %8.3f ms\n",
              Ms(t0) / reps);
  return 0;
}
