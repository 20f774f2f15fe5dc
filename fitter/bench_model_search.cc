// Benchmark (not a test): `invmw model search` time for one and two factors with 5 levels each
// and 3 replications (issue 21: target under 1 s for one factor, under 10 s for two), with and
// without the Ceres refit of the selected model. Data: known functions with +-2% uniform noise.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "fitter/fit.h"
#include "fitter/model.h"
#include "fitter/model_search.h"

using namespace invmw::fit;

namespace {

DataTable Make(int factors, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> e(-0.02, 0.02);
  DataTable d;
  d.source = "synthetic";
  d.columns =
      factors == 1 ? std::vector<std::string>{"p", "t"} : std::vector<std::string>{"p", "n", "t"};
  const double levels[] = {2, 4, 8, 16, 32};
  for (double p : levels)
    for (double n : levels) {
      if (factors == 1 && n != 2) continue;
      for (int r = 0; r < 3; ++r) {
        double t = factors == 1 ? 3 + 0.2 * p * std::log2(p)
                                : 2 + 0.05 * p * std::log2(p) + 0.01 * p * std::sqrt(n);
        if (factors == 1)
          d.rows.push_back({p, t * (1 + e(rng))});
        else
          d.rows.push_back({p, n, t * (1 + e(rng))});
      }
    }
  return d;
}

double Seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

}  // namespace

int main() {
  for (int factors : {1, 2}) {
    for (int max_terms : {3, 4}) {
      DataTable d = Make(factors, 7);
      std::vector<std::string> fs =
          factors == 1 ? std::vector<std::string>{"p"} : std::vector<std::string>{"p", "n"};
      SearchOptions o;
      o.max_terms = max_terms;
      const int reps = 5;
      auto t0 = std::chrono::steady_clock::now();
      SearchResult s;
      for (int i = 0; i < reps; ++i) s = SearchModel(d, "t", fs, o);
      double search = Seconds(t0) / reps;
      t0 = std::chrono::steady_clock::now();
      Model m = Model::Parse(SearchModelToml({s}, "bench", "bench"), "bench");
      FitResult f = Fit(m, d, FitOptions());
      double refit = Seconds(t0);
      std::printf(
          "%d factor(s), 5 levels, 3 replications (%zu rows), --max-terms %d (used %d): %ld "
          "hypotheses in "
          "%.3f s (%.0f per second); Ceres refit with LOO %.3f s; total %.3f s (target %s); "
          "selected %s%s\n",
          factors, d.rows.size(), max_terms, s.max_terms, s.hypotheses, search,
          s.hypotheses / search, refit, search + refit, factors == 1 ? "< 1 s" : "< 10 s",
          FormulaText(s.selected, fs).c_str(), f.converged ? "" : " (refit NOT converged)");
    }
  }
  return 0;
}
