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

}  // namespace invmw::fit::trials
