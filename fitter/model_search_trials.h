// The trial design of issue 21 item 3, shared by fitter/model_search_test.cc (which asserts the
// search's recovery rates) and bench_model_search_oracle (which computes what an oracle that knows
// the true term set could tell apart on the same data). Test support, not part of the library.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fitter/data_table.h"
#include "fitter/model_search.h"

namespace invmw::fit::trials {

inline const std::vector<double> kLevels = {2, 4, 8, 16, 32};

struct Truth {
  std::vector<SearchTerm> terms;  // non-constant terms
  std::vector<double> coef;       // constant first
};

inline double Eval(const Truth& t, const std::vector<double>& x) {
  double v = t.coef[0];
  for (size_t k = 0; k < t.terms.size(); ++k) {
    double p = t.coef[k + 1];
    for (size_t f = 0; f < x.size(); ++f) {
      const FactorPower& fp = t.terms[k][f];
      p *= std::pow(x[f], SearchExponents()[fp.power].value) *
           std::pow(std::log2(x[f]), fp.log_power);
    }
    v += p;
  }
  return v;
}

inline FactorPower RandomPower(std::mt19937& rng) {
  std::uniform_int_distribution<int> pw(0, static_cast<int>(SearchExponents().size()) - 1),
      lg(0, kMaxLogExponent);
  for (;;) {
    FactorPower p{pw(rng), lg(rng)};
    if (!(p == ConstantPower())) return p;
  }
}

// Trial `seed`: with one factor, the constant and one or two terms; with two factors, the
// constant and either one product term or one term per factor. Every term contributes between 1
// and 10 times the constant at its largest value on the design, so each is visible in the data.
inline Truth MakeTruth(unsigned seed, int factors) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(1, 10);
  Truth t;
  t.coef.push_back(u(rng));
  int kind = std::uniform_int_distribution<int>(0, 1)(rng);
  if (factors == 1) {
    int n = kind + 1;
    while (static_cast<int>(t.terms.size()) < n) {
      SearchTerm term = {RandomPower(rng)};
      bool dup = false;
      for (const auto& o : t.terms) dup |= o == term;
      if (!dup) t.terms.push_back(term);
    }
  } else if (kind == 0) {
    t.terms.push_back({RandomPower(rng), RandomPower(rng)});
  } else {
    t.terms.push_back({RandomPower(rng), ConstantPower()});
    t.terms.push_back({ConstantPower(), RandomPower(rng)});
  }
  for (const auto& term : t.terms) {
    double mx = 0;
    for (double a : kLevels)
      for (double b : (factors == 2 ? kLevels : std::vector<double>{1})) {
        std::vector<double> x = factors == 2 ? std::vector<double>{a, b} : std::vector<double>{a};
        Truth one{{term}, {0, 1}};
        mx = std::max(mx, Eval(one, x));
      }
    t.coef.push_back(t.coef[0] * u(rng) / mx);
  }
  return t;
}

inline DataTable MakeData(const Truth& t, int factors, double noise, unsigned seed, int reps = 5) {
  std::mt19937 rng(seed * 7919u + 17);
  std::uniform_real_distribution<double> e(-noise, noise);
  DataTable d;
  d.source = "trial" + std::to_string(seed);
  d.columns =
      factors == 1 ? std::vector<std::string>{"p", "t"} : std::vector<std::string>{"p", "n", "t"};
  for (double a : kLevels)
    for (double b : (factors == 2 ? kLevels : std::vector<double>{0}))
      for (int r = 0; r < reps; ++r) {
        std::vector<double> x = factors == 2 ? std::vector<double>{a, b} : std::vector<double>{a};
        std::vector<double> row = x;
        row.push_back(Eval(t, x) * (1 + e(rng)));
        d.rows.push_back(row);
      }
  return d;
}

// The oracle (bench_model_search_oracle.cc explains it): relative least squares of a hypothesis
// whose terms are given, and every hypothesis of a truth's size and shape.
inline double TermAt(const SearchTerm& t, const std::vector<double>& x) {
  Truth one{{t}, {0, 1}};
  return Eval(one, x);
}

// Relative least squares of `terms` (constant implied) on rows (x, y), leaving out rows with
// group == skip; returns the coefficients (constant first) or empty when singular.
inline std::vector<double> Lsq(const std::vector<std::vector<double>>& z,
                               const std::vector<int>& group, int skip) {
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

inline Errors Score(const std::vector<SearchTerm>& terms,
                    const std::vector<std::vector<double>>& xs, const std::vector<double>& ys,
                    const std::vector<int>& group, int groups) {
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
inline std::vector<std::vector<SearchTerm>> Alternatives(const Truth& t, int factors) {
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

}  // namespace invmw::fit::trials
