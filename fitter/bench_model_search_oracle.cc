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
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "fitter/model_search.h"
#include "fitter/model_search_trials.h"

using namespace invmw::fit;
using namespace invmw::fit::trials;

namespace {

double TermAt(const SearchTerm& t, const std::vector<double>& x) {
  Truth one{{t}, {0, 1}};
  return Eval(one, x);
}

// Relative least squares of `terms` (constant implied) on rows (x, y), leaving out rows with
// group == skip; returns the coefficients (constant first) or empty when singular.
std::vector<double> Lsq(const std::vector<std::vector<double>>& z, const std::vector<int>& group,
                        int skip) {
  size_t k = z.empty() ? 0 : z[0].size() - 1;  // last entry: weighted response (1)
  std::vector<double> a(k * k, 0), b(k, 0);
  for (size_t r = 0; r < z.size(); ++r) {
    if (group[r] == skip) continue;
    for (size_t i = 0; i < k; ++i) {
      b[i] += z[r][i] * z[r][k];
      for (size_t j = 0; j < k; ++j) a[i * k + j] += z[r][i] * z[r][j];
    }
  }
  double dmax = 0;
  for (size_t i = 0; i < k; ++i) dmax = std::max(dmax, a[i * k + i]);
  for (size_t j = 0; j < k; ++j) {  // Cholesky in place
    double d = a[j * k + j];
    for (size_t p = 0; p < j; ++p) d -= a[j * k + p] * a[j * k + p];
    if (!(d > 1e-12 * dmax)) return {};
    d = std::sqrt(d);
    a[j * k + j] = d;
    for (size_t i = j + 1; i < k; ++i) {
      double s = a[i * k + j];
      for (size_t p = 0; p < j; ++p) s -= a[i * k + p] * a[j * k + p];
      a[i * k + j] = s / d;
    }
  }
  std::vector<double> y(k), x(k);
  for (size_t i = 0; i < k; ++i) {
    double s = b[i];
    for (size_t p = 0; p < i; ++p) s -= a[i * k + p] * y[p];
    y[i] = s / a[i * k + i];
  }
  for (size_t i = k; i-- > 0;) {
    double s = y[i];
    for (size_t p = i + 1; p < k; ++p) s -= a[p * k + i] * x[p];
    x[i] = s / a[i * k + i];
  }
  return x;
}

struct Errors {
  double train = INFINITY, cv = INFINITY;
  bool positive = false;  // every term's coefficient > 0 (the search's validity rule)
};

Errors Score(const std::vector<SearchTerm>& terms, const std::vector<std::vector<double>>& xs,
             const std::vector<double>& ys, const std::vector<int>& group, int groups) {
  std::vector<std::vector<double>> z(xs.size(), std::vector<double>(terms.size() + 2));
  for (size_t r = 0; r < xs.size(); ++r) {
    z[r][0] = 1 / ys[r];
    for (size_t k = 0; k < terms.size(); ++k) z[r][k + 1] = TermAt(terms[k], xs[r]) / ys[r];
    z[r].back() = 1;
  }
  for (size_t k = 0; k + 1 < z[0].size(); ++k) {  // scale columns for conditioning
    double m = 0;
    for (const auto& row : z) m = std::max(m, std::fabs(row[k]));
    for (auto& row : z) row[k] /= m;
  }
  auto rss = [&](const std::vector<double>& c, int only) {
    double s = 0;
    for (size_t r = 0; r < z.size(); ++r) {
      if (only >= 0 && group[r] != only) continue;
      double v = -z[r].back();
      for (size_t k = 0; k < c.size(); ++k) v += c[k] * z[r][k];
      s += v * v;
    }
    return s;
  };
  Errors e;
  std::vector<double> c = Lsq(z, group, -1);
  if (c.empty()) return e;
  e.train = std::sqrt(rss(c, -1) / z.size());
  e.positive = true;
  for (size_t k = 1; k < c.size(); ++k) e.positive &= c[k] > 0;
  double cv = 0;
  for (int g = 0; g < groups; ++g) {
    std::vector<double> cg = Lsq(z, group, g);
    if (cg.empty()) return e;
    cv += rss(cg, g);
  }
  e.cv = std::sqrt(cv / z.size());
  return e;
}

// Every hypothesis of the truth's size and shape (see the header comment).
std::vector<std::vector<SearchTerm>> Alternatives(const Truth& t, int factors) {
  std::vector<FactorPower> powers;
  for (int i = 0; i < static_cast<int>(SearchExponents().size()); ++i)
    for (int j = 0; j <= kMaxLogExponent; ++j)
      if (!(FactorPower{i, j} == ConstantPower())) powers.push_back(FactorPower{i, j});
  std::vector<std::vector<SearchTerm>> out;
  FactorPower c = ConstantPower();
  if (factors == 1) {
    for (size_t a = 0; a < powers.size(); ++a) {
      if (t.terms.size() == 1)
        out.push_back({{powers[a]}});
      else
        for (size_t b = a + 1; b < powers.size(); ++b) out.push_back({{powers[a]}, {powers[b]}});
    }
  } else if (t.terms.size() == 1) {
    for (const auto& p : powers) {
      out.push_back({{p, c}});
      out.push_back({{c, p}});
      for (const auto& q : powers) out.push_back({{p, q}});
    }
  } else {
    for (const auto& p : powers)
      for (const auto& q : powers) out.push_back({{p, c}, {c, q}});
  }
  return out;
}

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
  }
  return 0;
}
