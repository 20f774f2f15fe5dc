// Oracle for the model search's trial design (issue 21 item 3; not a test): for each of the 100
// seeded functions of fitter/model_search_trials.h and each noise level, what could a selector
// that KNOWS the true number of terms and their shape achieve on the same noisy data?
//  - train: the true terms have the smallest training error (relative least squares) among all
//    hypotheses of the same size and shape (one factor: constant + the same number of terms of the
//    normal form; two factors, product truth: constant + one term of p, of n or a product; one
//    term per factor: constant + one term of p + one term of n);
//  - cv: the same with the leave-one-design-point-out error (what the search ranks by);
//  - separable: on noise-free data, the nearest other hypothesis of that size and shape misses
//    the function by more than the noise's standard error of a design point's mean
//    (a/sqrt(3*5) for noise uniform in +-a, 5 replications); below that no method can tell the
//    two apart reliably;
//  - invisible: a two-term truth whose smaller term is below the noise amplitude at every level.
// Printed next to the search's own recovery on the same data.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "fitter/model_search.h"
#include "fitter/model_search_trials.h"

using namespace invmw::fit;
using namespace invmw::fit::trials;

namespace {

struct Counts {
  int train = 0, cv = 0, train_pos = 0, cv_pos = 0, separable = 0, separable_pos = 0, invisible = 0,
      search = 0, search_overfit = 0;
};

}  // namespace

int main() {
  const char* cls_name[3] = {"one factor, one term", "one factor, two terms", "two factors"};
  for (double noise : {0.01, 0.05}) {
    Counts n[3];
    int trials[3] = {0, 0, 0};
    std::vector<double> nearest_of[3];
    for (unsigned seed = 1; seed <= 100; ++seed) {
      int factors = seed <= 50 ? 1 : 2;
      Truth t = MakeTruth(seed, factors);
      int cls = factors == 2 ? 2 : static_cast<int>(t.terms.size()) - 1;
      ++trials[cls];
      DataTable d = MakeData(t, factors, noise, seed);
      std::vector<std::vector<double>> xs;
      std::vector<double> ys, exact;
      std::vector<int> group;
      for (size_t r = 0; r < d.rows.size(); ++r) {
        xs.push_back(std::vector<double>(d.rows[r].begin(), d.rows[r].begin() + factors));
        ys.push_back(d.rows[r][factors]);
        exact.push_back(Eval(t, xs.back()));
        group.push_back(static_cast<int>(r / 5));  // MakeData: 5 consecutive replications
      }
      int groups = static_cast<int>(d.rows.size() / 5);
      std::set<SearchTerm> want(t.terms.begin(), t.terms.end());
      Errors truth = Score(t.terms, xs, ys, group, groups);
      bool train_best = true, cv_best = true, train_pos = true, cv_pos = true;
      double nearest = INFINITY, nearest_pos = INFINITY;
      for (const auto& h : Alternatives(t, factors)) {
        if (std::set<SearchTerm>(h.begin(), h.end()) == want) continue;
        Errors e = Score(h, xs, ys, group, groups);
        train_best &= truth.train < e.train;
        cv_best &= truth.cv < e.cv;
        Errors ex = Score(h, xs, exact, group, groups);
        nearest = std::min(nearest, ex.train);
        if (e.positive) {
          train_pos &= truth.train < e.train;
          cv_pos &= truth.cv < e.cv;
        }
        if (ex.positive) nearest_pos = std::min(nearest_pos, ex.train);
      }
      n[cls].train += train_best;
      n[cls].cv += cv_best;
      n[cls].train_pos += train_pos;
      n[cls].cv_pos += cv_pos;
      n[cls].separable_pos += nearest_pos > noise / std::sqrt(15.0);
      nearest_of[cls].push_back(nearest_pos);
      n[cls].separable += nearest > noise / std::sqrt(15.0);
      if (t.terms.size() == 2) {
        bool inv = false;
        for (size_t k = 0; k < 2; ++k) {
          bool all = true;
          for (size_t r = 0; r < xs.size(); ++r)
            all &= t.coef[k + 1] * TermAt(t.terms[k], xs[r]) / exact[r] < noise;
          inv |= all;
        }
        n[cls].invisible += inv;
      }
      std::vector<std::string> fs =
          factors == 1 ? std::vector<std::string>{"p"} : std::vector<std::string>{"p", "n"};
      SearchResult s = SearchModel(d, "t", fs, SearchOptions());
      std::set<SearchTerm> got;
      for (const auto& term : s.selected.terms)
        if (!IsConstantTerm(term)) got.insert(term);
      n[cls].search += got == want;
      n[cls].search_overfit += got.size() > want.size();
    }
    Counts all;
    for (int c = 0; c < 3; ++c) {
      all.train += n[c].train;
      all.cv += n[c].cv;
      all.train_pos += n[c].train_pos;
      all.cv_pos += n[c].cv_pos;
      all.separable_pos += n[c].separable_pos;
      all.separable += n[c].separable;
      all.invisible += n[c].invisible;
      all.search += n[c].search;
      all.search_overfit += n[c].search_overfit;
    }
    std::printf(
        "noise +-%g%%: oracle (true size and shape known) picks the truth in %d of 100 by "
        "training error, %d by leave-one-point-out error; among alternatives with positive "
        "coefficients only (the search's validity rule): %d and %d. Nearest other hypothesis "
        "of the shape farther from the noise-free function than the noise's standard error of "
        "a point mean: %d (positive alternatives only: %d); a true term below the noise at "
        "every level: %d. Search: %d recovered, %d over-fitted.\n",
        100 * noise, all.train, all.cv, all.train_pos, all.cv_pos, all.separable, all.separable_pos,
        all.invisible, all.search, all.search_overfit);
    for (int c = 0; c < 3; ++c)
      std::printf(
          "  %-22s (%2d trials): oracle train %2d cv %2d, positive-only train %2d cv %2d, "
          "separable %2d (positive-only %2d), invisible term %2d; search %2d (over-fitted %d)\n",
          cls_name[c], trials[c], n[c].train, n[c].cv, n[c].train_pos, n[c].cv_pos, n[c].separable,
          n[c].separable_pos, n[c].invisible, n[c].search, n[c].search_overfit);
    for (int c = 0; c < 3; ++c) {
      std::sort(nearest_of[c].begin(), nearest_of[c].end());
      std::printf(
          "  %-22s: noise-free distance (relative RMS) to the nearest positive alternative: "
          "median %.3g%%, largest %.3g%%; the noise's standard error of a point mean "
          "%.3g%%\n",
          cls_name[c], 100 * nearest_of[c][nearest_of[c].size() / 2], 100 * nearest_of[c].back(),
          100 * noise / std::sqrt(15.0));
    }
  }
  return 0;
}
