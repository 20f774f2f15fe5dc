#include "fitter/model_search.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace invmw::fit {

const std::vector<PowerExponent>& SearchExponents() {
  static const std::vector<PowerExponent> kExp = {
      {"-1", -1.0},     {"0", 0.0},       {"1/4", 0.25},    {"1/3", 1.0 / 3}, {"1/2", 0.5},
      {"2/3", 2.0 / 3}, {"3/4", 0.75},    {"1", 1.0},       {"5/4", 1.25},    {"4/3", 4.0 / 3},
      {"3/2", 1.5},     {"5/3", 5.0 / 3}, {"7/4", 1.75},    {"2", 2.0},       {"9/4", 2.25},
      {"7/3", 7.0 / 3}, {"5/2", 2.5},     {"8/3", 8.0 / 3}, {"11/4", 2.75},   {"3", 3.0}};
  return kExp;
}

FactorPower ConstantPower() {
  FactorPower p;
  p.power = 1;  // "0"
  return p;
}

namespace {

bool IsAbsent(const FactorPower& p) {
  return p.power == 1 && p.log_power == 0;
}

double PowerValue(const FactorPower& p, double x) {
  double v = std::pow(x, SearchExponents()[p.power].value);
  double l = std::log2(x);
  for (int k = 0; k < p.log_power; ++k) v *= l;
  return v;
}

double TermValue(const SearchTerm& t, const double* x) {
  double v = 1;
  for (size_t f = 0; f < t.size(); ++f)
    if (!IsAbsent(t[f])) v *= PowerValue(t[f], x[f]);
  return v;
}

std::string Num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

// Regularized incomplete beta I_x(a, b) by Lentz's continued fraction (Numerical Recipes 6.4).
double BetaCf(double a, double b, double x) {
  const double tiny = 1e-300;
  double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-14) break;
  }
  return h;
}

double IncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double bt = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                       b * std::log(1 - x));
  if (x < (a + 1) / (a + b + 2)) return bt * BetaCf(a, b, x) / a;
  return 1 - bt * BetaCf(b, a, 1 - x) / b;
}

// P(F > f) for an F distribution with d1, d2 degrees of freedom.
double FTail(double f, double d1, double d2) {
  if (!(f > 0)) return 1;
  return 1 - IncompleteBeta(d1 / 2, d2 / 2, d1 * f / (d1 * f + d2));
}

// Cholesky solve of the k x k system A x = b (row-major); false when A is not positive definite
// within rounding (a hypothesis whose terms the rows cannot tell apart).
bool Solve(std::vector<double> a, int k, const double* b, double* x) {
  double dmax = 0;
  for (int i = 0; i < k; ++i) dmax = std::max(dmax, a[i * k + i]);
  if (!(dmax > 0)) return false;
  for (int j = 0; j < k; ++j) {
    double d = a[j * k + j];
    for (int p = 0; p < j; ++p) d -= a[j * k + p] * a[j * k + p];
    if (!(d > 1e-11 * dmax)) return false;
    d = std::sqrt(d);
    a[j * k + j] = d;
    for (int i = j + 1; i < k; ++i) {
      double s = a[i * k + j];
      for (int p = 0; p < j; ++p) s -= a[i * k + p] * a[j * k + p];
      a[i * k + j] = s / d;
    }
  }
  std::vector<double> y(k);
  for (int i = 0; i < k; ++i) {
    double s = b[i];
    for (int p = 0; p < i; ++p) s -= a[i * k + p] * y[p];
    y[i] = s / a[i * k + i];
  }
  for (int i = k - 1; i >= 0; --i) {
    double s = y[i];
    for (int p = i + 1; p < k; ++p) s -= a[p * k + i] * x[p];
    x[i] = s / a[i * k + i];
  }
  return true;
}

// The rows of one search reduced to per-design-point Gram matrices of the candidate columns
// (weighted by 1/measured, scaled to at most 1) and the weighted response (always 1).
struct Problem {
  std::vector<SearchTerm> columns;  // columns[0] is the constant
  std::vector<double> scale;
  int m = 0;  // columns + 1 (the response)
  int rows = 0;
  std::vector<std::vector<double>> group_gram;
  std::vector<double> total;
  int groups = 0;
  double pure_ss = 0;  // replications' spread around their point's best constant (pure error)
  double At(const std::vector<double>& g, int i, int j) const { return g[i * m + j]; }
};

Problem Prepare(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                const std::vector<int>& group, int groups, std::vector<SearchTerm> columns) {
  Problem p;
  p.columns = std::move(columns);
  int c = static_cast<int>(p.columns.size());
  p.m = c + 1;
  p.rows = static_cast<int>(y.size());
  std::vector<std::vector<double>> z(y.size(), std::vector<double>(p.m));
  p.scale.assign(c, 0);
  for (size_t r = 0; r < y.size(); ++r) {
    for (int k = 0; k < c; ++k) {
      z[r][k] = TermValue(p.columns[k], x[r].data()) / y[r];
      p.scale[k] = std::max(p.scale[k], std::fabs(z[r][k]));
    }
    z[r][c] = 1;
  }
  for (int k = 0; k < c; ++k)
    if (!(p.scale[k] > 0) || !std::isfinite(p.scale[k])) p.scale[k] = 1;
  p.group_gram.assign(groups, std::vector<double>(p.m * p.m, 0));
  p.total.assign(p.m * p.m, 0);
  for (size_t r = 0; r < y.size(); ++r) {
    for (int k = 0; k < c; ++k) z[r][k] /= p.scale[k];
    auto& g = p.group_gram[group[r]];
    for (int i = 0; i < p.m; ++i)
      for (int j = 0; j < p.m; ++j) g[i * p.m + j] += z[r][i] * z[r][j];
  }
  for (const auto& g : p.group_gram) {
    for (int i = 0; i < p.m * p.m; ++i) p.total[i] += g[i];
    if (g[0] > 0) p.pure_ss += std::max(0.0, g[c * p.m + c] - g[c] * g[c] / g[0]);
  }
  p.groups = groups;
  return p;
}

// Fits hypothesis `cols` (column indices, constant first), checks its terms and cross-validates
// it. Returns false when it is not a valid hypothesis (h->why_invalid says why).
bool Evaluate(const Problem& p, const std::vector<int>& cols, const SearchOptions& o,
              Hypothesis* h) {
  int k = static_cast<int>(cols.size());
  int yi = p.m - 1;
  std::vector<double> a(k * k), b(k), beta(k);
  for (int i = 0; i < k; ++i) {
    b[i] = p.At(p.total, cols[i], yi);
    for (int j = 0; j < k; ++j) a[i * k + j] = p.At(p.total, cols[i], cols[j]);
  }
  h->terms.clear();
  for (int c : cols) h->terms.push_back(p.columns[c]);
  h->valid = false;
  if (!Solve(a, k, b.data(), beta.data())) {
    h->why_invalid = "terms not distinguishable on this design";
    return false;
  }
  auto rss_of = [&](const std::vector<double>& g, const std::vector<double>& bt) {
    double s = p.At(g, yi, yi);
    for (int i = 0; i < k; ++i) {
      s -= 2 * bt[i] * p.At(g, cols[i], yi);
      for (int j = 0; j < k; ++j) s += bt[i] * bt[j] * p.At(g, cols[i], cols[j]);
    }
    return std::max(s, 0.0);
  };
  double rss = rss_of(p.total, beta);
  int dof = p.rows - k;
  double s2 = dof > 0 ? rss / dof : NAN;
  h->coef.assign(k, 0);
  h->std_error.assign(k, NAN);
  for (int i = 0; i < k; ++i) {
    std::vector<double> e(k, 0), col(k);
    e[i] = 1;
    Solve(a, k, e.data(), col.data());
    double se = std::sqrt(std::max(s2 * col[i], 0.0));
    h->coef[i] = beta[i] / p.scale[cols[i]];
    h->std_error[i] = se / p.scale[cols[i]];
    if (i > 0 && !(beta[i] > 0)) {
      h->why_invalid = "a term's coefficient is not positive";
      return false;
    }
    if (i > 0 && !(beta[i] > o.t_min * se)) {
      h->why_invalid = "a term's coefficient is not significant";
      return false;
    }
  }
  h->train_rms = std::sqrt(rss / p.rows);
  int df_lof = p.groups - k, df_pe = p.rows - p.groups;
  if (df_lof > 0 && df_pe > 0 && p.pure_ss > 0)
    h->lack_of_fit_p =
        FTail(std::max(rss - p.pure_ss, 0.0) / df_lof / (p.pure_ss / df_pe), df_lof, df_pe);
  double cv = 0;
  std::vector<double> ag(k * k), bg(k), bt(k);
  for (const auto& g : p.group_gram) {
    for (int i = 0; i < k; ++i) {
      bg[i] = b[i] - p.At(g, cols[i], yi);
      for (int j = 0; j < k; ++j) ag[i * k + j] = a[i * k + j] - p.At(g, cols[i], cols[j]);
    }
    if (!Solve(ag, k, bg.data(), bt.data())) {
      h->why_invalid = "terms not distinguishable without one of the design points";
      return false;
    }
    cv += rss_of(g, bt);
  }
  h->cv_rms = std::sqrt(cv / p.rows);
  h->valid = true;
  return true;
}

struct Outcome {
  std::vector<Hypothesis> valid;  // sorted by CV error
  long tried = 0;
  Hypothesis selected;
};

// Every hypothesis of the constant plus up to max_terms-1 other columns; selection as documented.
Outcome Enumerate(const Problem& p, int max_terms, const SearchOptions& o) {
  Outcome out;
  int c = static_cast<int>(p.columns.size());
  std::vector<int> cols = {0};
  std::vector<Hypothesis> best(max_terms + 1);
  std::vector<bool> have(max_terms + 1, false);
  // Recursive over increasing column indices.
  auto rec = [&](auto&& self, int next) -> void {
    Hypothesis h;
    ++out.tried;
    if (Evaluate(p, cols, o, &h)) {
      int k = static_cast<int>(cols.size());
      if (!have[k] || h.train_rms < best[k].train_rms) {
        best[k] = h;
        have[k] = true;
      }
      out.valid.push_back(std::move(h));
    }
    if (static_cast<int>(cols.size()) >= max_terms) return;
    for (int i = next; i < c; ++i) {
      cols.push_back(i);
      self(self, i + 1);
      cols.pop_back();
    }
  };
  rec(rec, 1);
  std::stable_sort(out.valid.begin(), out.valid.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.cv_rms < b.cv_rms; });
  // Within a size the best training error wins (equal numbers of coefficients). Across sizes:
  // the fewest terms that explain the data as well as the replications allow (no significant
  // lack of fit at level alpha), and a bigger hypothesis only when it predicts held-out points
  // clearly better (margin). When no size passes the test (no replications, or a response the
  // normal form does not capture), the cross-validated error decides: more terms only when they
  // cut it by margin_no_fit.
  int chosen = 0;
  if (o.alpha > 0)
    for (int k = 1; k <= max_terms && !chosen; ++k)
      if (have[k] && best[k].lack_of_fit_p > o.alpha) chosen = k;
  double margin = chosen ? o.margin : o.margin_no_fit;
  if (!chosen) chosen = 1;
  for (int k = chosen + 1; k <= max_terms; ++k)
    if (have[k] && best[k].cv_rms < (1 - margin) * best[chosen].cv_rms) chosen = k;
  if (have[chosen]) out.selected = best[chosen];
  return out;
}

std::vector<SearchTerm> SingleFactorColumns(size_t factors, size_t f) {
  std::vector<SearchTerm> cols;
  cols.push_back(SearchTerm(factors, ConstantPower()));
  for (int i = 0; i < static_cast<int>(SearchExponents().size()); ++i)
    for (int j = 0; j <= kMaxLogExponent; ++j) {
      FactorPower fp{i, j};
      if (IsAbsent(fp)) continue;
      SearchTerm t(factors, ConstantPower());
      t[f] = fp;
      cols.push_back(t);
    }
  return cols;
}

std::string Origin(const DataTable& d, size_t row) {
  return d.RowOrigin(row);
}

}  // namespace

bool IsConstantTerm(const SearchTerm& t) {
  for (const auto& p : t)
    if (!IsAbsent(p)) return false;
  return true;
}

SearchResult SearchModel(const DataTable& data, const std::string& response,
                         const std::vector<std::string>& factors, const SearchOptions& o) {
  SearchResult res;
  res.response = response;
  res.factors = factors;
  if (factors.empty()) throw SearchError("model search: no factors to search over");
  if (o.max_terms < 2 || o.max_terms > 6)
    throw SearchError("model search: --max-terms must be 2..6 (terms, the constant included)");
  int yc = data.Column(response);
  if (yc < 0)
    throw SearchError(data.source + ": no column '" + response + "' (the response to model)");
  std::vector<int> fc;
  for (const auto& f : factors) {
    int c = data.Column(f);
    if (c < 0) throw SearchError(data.source + ": no column '" + f + "' (a factor to search)");
    if (c == yc) throw SearchError("model search: '" + f + "' is both a factor and the response");
    fc.push_back(c);
  }
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  std::vector<size_t> origin;
  std::string first_skipped;
  for (size_t r = 0; r < data.rows.size(); ++r) {
    double v = data.rows[r][yc];
    if (std::isnan(v)) {
      if (!res.skipped_rows++) first_skipped = Origin(data, r);
      continue;
    }
    if (!std::isfinite(v) || v <= 0)
      throw SearchError(Origin(data, r) + ": response '" + response + "' is " + Num(v) +
                        "; the search fits relative errors and needs measurements > 0");
    std::vector<double> xr;
    for (size_t f = 0; f < fc.size(); ++f) {
      double xv = data.rows[r][fc[f]];
      if (std::isnan(xv))
        throw SearchError(Origin(data, r) + ": factor '" + factors[f] +
                          "' is missing in a row that has '" + response + "'");
      if (!std::isfinite(xv) || xv <= 0)
        throw SearchError(Origin(data, r) + ": factor '" + factors[f] + "' is " + Num(xv) +
                          "; the normal form (x^i * log2(x)^j) needs factor values > 0");
      xr.push_back(xv);
    }
    x.push_back(xr);
    y.push_back(v);
    origin.push_back(r);
  }
  if (res.skipped_rows)
    res.warnings.push_back(std::to_string(res.skipped_rows) + " row(s) without a value of '" +
                           response + "' left out (first: " + first_skipped + ")");
  res.rows = static_cast<int>(y.size());
  if (y.empty()) throw SearchError(data.source + ": no row has a value of '" + response + "'");
  for (size_t f = 0; f < factors.size(); ++f) {
    std::set<double> levels;
    for (const auto& xr : x) levels.insert(xr[f]);
    if (levels.size() < 2)
      throw SearchError(data.source + ": factor '" + factors[f] + "' has one level (" +
                        Num(*levels.begin()) + ") in the rows of '" + response +
                        "'; it cannot be modelled (leave it out of --factors)");
  }
  double ymin = *std::min_element(y.begin(), y.end());
  double ymax = *std::max_element(y.begin(), y.end());
  if (ymin == ymax)
    throw SearchError(data.source + ": response '" + response + "' is constant (" + Num(ymin) +
                      " in all " + std::to_string(y.size()) +
                      " rows): there is nothing to search; its model is that constant");
  std::map<std::vector<double>, int> point_of;
  std::vector<int> group;
  for (const auto& xr : x) {
    auto it = point_of.emplace(xr, static_cast<int>(point_of.size())).first;
    group.push_back(it->second);
  }
  res.points = static_cast<int>(point_of.size());
  // Holding one design point out must leave more points than the hypothesis has terms.
  res.max_terms = std::min(o.max_terms, res.points - 2);
  if (res.max_terms < 2)
    throw SearchError(data.source + ": response '" + response + "' has " +
                      std::to_string(res.points) +
                      " design point(s); a model with one term besides the constant needs at "
                      "least 4 (two coefficients, one point held out, one to check)");
  if (res.max_terms < o.max_terms)
    res.warnings.push_back("'" + response + "' has " + std::to_string(res.points) +
                           " design points: hypotheses limited to " +
                           std::to_string(res.max_terms) + " terms (of --max-terms " +
                           std::to_string(o.max_terms) + ")");

  Outcome out;
  if (factors.size() == 1) {
    Problem p = Prepare(x, y, group, res.points, SingleFactorColumns(1, 0));
    out = Enumerate(p, res.max_terms, o);
  } else {
    // Extra-P's multi-parameter approach: the best single-factor terms of each factor (on the
    // rows where the other factors are at their smallest level), then every hypothesis built
    // from these terms alone and from their products.
    std::vector<std::vector<FactorPower>> kept(factors.size());
    for (size_t f = 0; f < factors.size(); ++f) {
      // One line per combination of the other factors' levels; a term's rank is its best rank
      // on any line, so a product term that is small on one line is found on another.
      std::map<std::vector<double>, std::vector<size_t>> lines;
      for (size_t r = 0; r < x.size(); ++r) {
        std::vector<double> key = x[r];
        key[f] = 0;
        lines[key].push_back(r);
      }
      std::map<FactorPower, std::pair<int, double>> rank;  // best (rank, cv) of each term
      auto search_line = [&](const std::vector<size_t>& rows) {
        std::vector<std::vector<double>> xs;
        std::vector<double> ys;
        std::map<double, int> pt;
        std::vector<int> gs;
        for (size_t r : rows) {
          xs.push_back({x[r][f]});
          ys.push_back(y[r]);
          gs.push_back(pt.emplace(x[r][f], static_cast<int>(pt.size())).first->second);
        }
        int mt = std::min(o.max_terms, static_cast<int>(pt.size()) - 2);
        if (mt < 2) return false;
        Problem p = Prepare(xs, ys, gs, static_cast<int>(pt.size()), SingleFactorColumns(1, 0));
        Outcome one = Enumerate(p, mt, o);
        res.hypotheses += one.tried;
        // Rank the one-term hypotheses of the line by training error (same size, so comparable).
        std::vector<const Hypothesis*> singles;
        for (const auto& h : one.valid)
          if (h.terms.size() == 2) singles.push_back(&h);
        std::stable_sort(
            singles.begin(), singles.end(),
            [](const Hypothesis* a, const Hypothesis* b) { return a->train_rms < b->train_rms; });
        auto note = [&](const FactorPower& t, std::pair<int, double> v) {
          auto it = rank.find(t);
          if (it == rank.end())
            rank[t] = v;
          else if (v < it->second)
            it->second = v;
        };
        for (size_t n = 0; n < singles.size() && static_cast<int>(n) < o.per_factor; ++n)
          note(singles[n]->terms[1][0], {static_cast<int>(n), singles[n]->train_rms});
        // The terms of the line's best two-term hypothesis too: a term that only shows beside
        // another (communication rising in p under computation falling in p) is never a valid
        // one-term hypothesis of the line, since alone its coefficient is negative. Only when
        // the pair halves the best single term's error: a pair that merely fits noise better
        // would widen the combinations (and the chance of over-fitting) for nothing.
        const Hypothesis* pair = nullptr;
        for (const auto& h : one.valid)
          if (h.terms.size() == 3 && (!pair || h.train_rms < pair->train_rms)) pair = &h;
        if (pair && (singles.empty() || pair->train_rms < 0.5 * singles[0]->train_rms))
          for (size_t i = 1; i < pair->terms.size(); ++i)
            note(pair->terms[i][0], {1, pair->train_rms});
        return true;
      };
      bool any = false;
      for (const auto& l : lines) any |= search_line(l.second);
      if (!any) {  // no line with enough levels: all rows, the other factors as noise
        std::vector<size_t> all(x.size());
        for (size_t r = 0; r < x.size(); ++r) all[r] = r;
        search_line(all);
      }
      if (rank.empty())
        res.warnings.push_back("factor '" + factors[f] +
                               "': no line of the design has 4 or more of its levels with the "
                               "others fixed, nor do all rows; no term in it was searched");
      std::vector<std::pair<std::pair<int, double>, FactorPower>> order;
      for (const auto& [t, v] : rank) order.push_back({v, t});
      std::sort(order.begin(), order.end());
      for (const auto& e : order)
        if (static_cast<int>(kept[f].size()) < o.per_factor) kept[f].push_back(e.second);
    }
    std::vector<SearchTerm> cols;
    cols.push_back(SearchTerm(factors.size(), ConstantPower()));
    // Every product of one kept term per factor of every non-empty subset of factors.
    std::vector<SearchTerm> partial = {SearchTerm(factors.size(), ConstantPower())};
    for (size_t f = 0; f < factors.size(); ++f) {
      std::vector<SearchTerm> next = partial;
      for (const auto& t : partial)
        for (const auto& fp : kept[f]) {
          SearchTerm u = t;
          u[f] = fp;
          next.push_back(u);
        }
      partial = std::move(next);
    }
    for (const auto& t : partial)
      if (!IsConstantTerm(t)) cols.push_back(t);
    Problem p = Prepare(x, y, group, res.points, cols);
    out = Enumerate(p, res.max_terms, o);
  }
  res.hypotheses += out.tried;
  if (out.selected.terms.empty())
    throw SearchError("model search: no valid hypothesis for '" + response + "'");
  res.selected = out.selected;
  for (const auto& h : out.valid) {
    if (static_cast<int>(res.runners_up.size()) >= o.runners_up) break;
    if (h.terms == res.selected.terms) continue;
    res.runners_up.push_back(h);
  }
  return res;
}

std::string TermText(const SearchTerm& t, const std::vector<std::string>& factors) {
  std::string s;
  for (size_t f = 0; f < t.size(); ++f) {
    if (IsAbsent(t[f])) continue;
    const std::string& x = factors[f];
    std::string e = SearchExponents()[t[f].power].text;
    auto add = [&](const std::string& part) { s += (s.empty() ? "" : " * ") + part; };
    if (e == "1")
      add(x);
    else if (e != "0")
      add(x + "^" + (e.size() > 1 ? "(" + e + ")" : e));
    if (t[f].log_power == 1) add("log2(" + x + ")");
    if (t[f].log_power > 1) add("log2(" + x + ")^" + std::to_string(t[f].log_power));
  }
  return s.empty() ? "1" : s;
}

std::string TermExpr(const SearchTerm& t, const std::vector<std::string>& factors) {
  std::string s;
  for (size_t f = 0; f < t.size(); ++f) {
    if (IsAbsent(t[f])) continue;
    const std::string& x = factors[f];
    std::string e = SearchExponents()[t[f].power].text;
    auto add = [&](const std::string& part) { s += (s.empty() ? "" : "*") + part; };
    if (e == "1")
      add(x);
    else if (e != "0")
      add(x + "^(" + e + ")");
    if (t[f].log_power == 1) add("(log(" + x + ")/log(2))");
    if (t[f].log_power > 1) add("(log(" + x + ")/log(2))^" + std::to_string(t[f].log_power));
  }
  return s.empty() ? "1" : s;
}

std::string FormulaText(const Hypothesis& h, const std::vector<std::string>& factors) {
  std::string s;
  for (size_t k = 0; k < h.terms.size(); ++k) {
    if (k) s += h.coef[k] < 0 ? " - " : " + ";
    double c = k ? std::fabs(h.coef[k]) : h.coef[k];
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", c);
    s += b;
    if (!IsConstantTerm(h.terms[k])) s += " * " + TermText(h.terms[k], factors);
  }
  return s;
}

std::string CoefficientName(const std::vector<SearchResult>& results, size_t r, size_t k) {
  std::string base = "c" + std::to_string(k);
  return results.size() > 1 ? results[r].response + "_" + base : base;
}

std::string TomlQuote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

void WriteModelTomlHead(std::ostream& o, const std::vector<SearchResult>& results,
                        const std::string& name, const std::string& description) {
  o << "schema = 1\nname = " << TomlQuote(name) << "\ndescription = " << TomlQuote(description)
    << "\n\n";
  o << "[factors]\n";
  std::set<std::string> seen;
  for (const auto& r : results)
    for (const auto& f : r.factors)
      if (seen.insert(f).second) o << f << " = " << TomlQuote("factor of the search") << "\n";
  o << "\n[parameters]\n";
}

std::string SearchModelToml(const std::vector<SearchResult>& results, const std::string& name,
                            const std::string& description) {
  if (results.empty()) throw SearchError("model search: no result to write");
  // Names become TOML keys and expression symbols: only identifiers can be both.
  auto identifier = [](const std::string& n) {
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    for (char c : n)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
  };
  for (const auto& r : results) {
    std::vector<std::string> names = r.factors;
    names.push_back(r.response);
    for (const auto& n : names)
      if (!identifier(n))
        throw SearchError("model search: column '" + n +
                          "' is not a name a model file can use (letters, digits and _, not "
                          "starting with a digit); rename the column");
  }
  std::ostringstream o;
  o << "# Written by `invmw model search`: the selected hypothesis of each response, its\n"
       "# coefficients as parameters with their estimates (Ceres refit, else least squares) as\n"
       "# initial values.\n";
  WriteModelTomlHead(o, results, name, description);
  for (size_t r = 0; r < results.size(); ++r) {
    const Hypothesis& h = results[r].selected;
    for (size_t k = 0; k < h.terms.size(); ++k) {
      double init = h.coef[k] != 0 ? h.coef[k] : 1e-12;
      o << CoefficientName(results, r, k) << " = { kind = \"application\", transfer = \"keep\", "
        << "initial = " << Num(init) << ", description = "
        << TomlQuote("coefficient of " + TermText(h.terms[k], results[r].factors) + " in " +
                     results[r].response)
        << " }\n";
    }
  }
  auto expr = [&](size_t r) {
    const Hypothesis& h = results[r].selected;
    std::string s;
    for (size_t k = 0; k < h.terms.size(); ++k) {
      if (k) s += " + ";
      s += CoefficientName(results, r, k);
      if (!IsConstantTerm(h.terms[k])) s += "*" + TermExpr(h.terms[k], results[r].factors);
    }
    return s;
  };
  if (results.size() > 1) {
    o << "\n[components]\n";
    for (size_t r = 1; r < results.size(); ++r)
      o << results[r].response << " = { expr = " << TomlQuote(expr(r))
        << ", column = " << TomlQuote(results[r].response) << " }\n";
  }
  o << "\n[total]\nname = " << TomlQuote(results[0].response)
    << "\ncolumn = " << TomlQuote(results[0].response) << "\nexpr = " << TomlQuote(expr(0)) << "\n";
  return o.str();
}

}  // namespace invmw::fit
