#include "fitter/model_transfer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>

namespace invmw::fit {

namespace {

std::string Num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// a1's bounds in the model file: a rate the bytes do not show (small messages on shared memory)
// is held at the upper bound rather than being infinite.
constexpr double kMaxRate = 1e9;  // MB/s

// Weighted least squares of y ~ sum_k c_k * x_k over the given columns; false if singular.
bool Lsq(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
         const std::vector<int>& cols, std::vector<double>* c, std::vector<double>* se,
         double* rel_rms) {
  size_t k = cols.size(), n = y.size();
  std::vector<double> a(k * k, 0), b(k, 0);
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < k; ++i) {
      double xi = x[r][cols[i]] / y[r];
      b[i] += xi;
      for (size_t j = 0; j < k; ++j) a[i * k + j] += xi * x[r][cols[j]] / y[r];
    }
  // k <= 2: explicit inverse.
  std::vector<double> inv(k * k);
  if (k == 1) {
    if (!(a[0] > 0)) return false;
    inv[0] = 1 / a[0];
  } else {
    double det = a[0] * a[3] - a[1] * a[2];
    if (!(std::fabs(det) > 1e-300) || !std::isfinite(det)) return false;
    inv = {a[3] / det, -a[1] / det, -a[2] / det, a[0] / det};
  }
  c->assign(k, 0);
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j) (*c)[i] += inv[i * k + j] * b[j];
  double ss = 0;
  for (size_t r = 0; r < n; ++r) {
    double m = 0;
    for (size_t i = 0; i < k; ++i) m += (*c)[i] * x[r][cols[i]];
    ss += (m / y[r] - 1) * (m / y[r] - 1);
  }
  *rel_rms = std::sqrt(ss / n);
  se->assign(k, -1);
  if (n > k)
    for (size_t i = 0; i < k; ++i) (*se)[i] = std::sqrt(ss / (n - k) * inv[i * k + i]);
  return true;
}

}  // namespace

CommRates FitCommRates(const DataTable& d, const std::string& comm, const std::string& bytes,
                       const std::string& messages) {
  int yc = d.Column(comm), bc = d.Column(bytes), mc = d.Column(messages);
  for (const auto& [c, n, what] : {std::make_tuple(yc, comm, "the communication time"),
                                   std::make_tuple(bc, bytes, "bytes per run"),
                                   std::make_tuple(mc, messages, "messages per run")})
    if (c < 0) throw SearchError(d.source + ": no column '" + n + "' (" + what + ")");
  std::vector<std::vector<double>> x;  // messages, bytes * 1e-6
  std::vector<double> y;
  for (size_t r = 0; r < d.rows.size(); ++r) {
    double t = d.rows[r][yc], b = d.rows[r][bc], m = d.rows[r][mc];
    if (std::isnan(t) || std::isnan(b) || std::isnan(m)) continue;
    if (!(t > 0) || !std::isfinite(t) || !(b >= 0) || !std::isfinite(b) || !(m >= 0) ||
        !std::isfinite(m))
      throw SearchError(d.RowOrigin(r) + ": '" + comm + "' = " + Num(t) + ", '" + bytes +
                        "' = " + Num(b) + ", '" + messages + "' = " + Num(m) +
                        ": the rate fit needs a time > 0 and bytes and messages >= 0");
    x.push_back({m, b * 1e-6});
    y.push_back(t);
  }
  if (y.size() < 3)
    throw SearchError(d.source + ": " + std::to_string(y.size()) + " row(s) have '" + comm +
                      "', '" + bytes + "' and '" + messages +
                      "'; fitting the rate a1 and latency b1 needs at least 3");
  CommRates cr;
  cr.rows = static_cast<int>(y.size());
  std::vector<double> c, se;
  double rms = 0;
  // Non-negative least squares over two unknowns: the full fit, else each one alone.
  bool both = Lsq(x, y, {0, 1}, &c, &se, &rms) && c[0] >= 0 && c[1] > 0;
  if (both) {
    cr.b1 = c[0];
    cr.b1_std_error = se[0];
    cr.a1 = 1 / c[1];
    if (se[1] >= 0) cr.a1_std_error = se[1] / (c[1] * c[1]);
  } else {
    std::vector<double> cb, sb, cm, sm;
    double rb = INFINITY, rm = INFINITY;
    bool okb = Lsq(x, y, {1}, &cb, &sb, &rb) && cb[0] > 0;
    bool okm = Lsq(x, y, {0}, &cm, &sm, &rm) && cm[0] > 0;
    if (!okb && !okm)
      throw SearchError(d.source + ": '" + comm + "' does not grow with '" + bytes + "' or '" +
                        messages + "': no rate a1 > 0 and latency b1 >= 0 fit it");
    if (okb && (!okm || rb <= rm)) {
      cr.a1 = 1 / cb[0];
      if (sb[0] >= 0) cr.a1_std_error = sb[0] / (cb[0] * cb[0]);
      cr.b1 = 0;
      cr.note = "b1 held at 0: the messages do not explain '" + comm + "' beyond the bytes";
      rms = rb;
    } else {
      cr.b1 = cm[0];
      cr.b1_std_error = sm[0];
      cr.a1 = kMaxRate;
      cr.note = "a1 held at " + Num(kMaxRate) + " MB/s: the bytes do not explain '" + comm +
                "' beyond the messages";
      rms = rm;
    }
  }
  cr.a1 = std::min(cr.a1, kMaxRate);
  cr.rel_rms = rms;
  return cr;
}

int ResultIndex(const std::vector<SearchResult>& results, const std::string& response) {
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].response == response) return static_cast<int>(i);
  return -1;
}

namespace {

bool IsProfileColumn(const SearchResult& r, const TransferSpec& s) {
  return !s.comm.empty() && (r.response == s.bytes || r.response == s.messages);
}

void CheckSpec(const std::vector<SearchResult>& results, const TransferSpec& spec,
               const CommRates* rates) {
  if (results.empty()) throw SearchError("model search: no result to write");
  for (const auto& c : spec.compute)
    if (ResultIndex(results, c) < 0)
      throw SearchError("model search: --compute '" + c + "' is not one of the --response names");
  if (!spec.comm.empty()) {
    for (const auto& n : {spec.comm, spec.bytes, spec.messages})
      if (n.empty() || ResultIndex(results, n) < 0)
        throw SearchError(
            "model search: --comm needs searches of the response, --bytes and "
            "--messages ('" +
            n + "' missing)");
    if (Contains(spec.compute, spec.comm))
      throw SearchError("model search: '" + spec.comm + "' is both --compute and --comm");
    if (!rates) throw SearchError("model search: --comm without fitted rates");
  }
  for (const auto& r : results) {
    if (r.response == "a1" || r.response == "b1" || Contains(r.factors, "a1") ||
        Contains(r.factors, "b1") || r.response == spec.scale_kernel)
      throw SearchError("model search: column '" + r.response +
                        "' has the name of a platform parameter; rename it");
  }
}

// A coefficient that is not a platform value is written as a number: it is the application's
// (the same on every machine), so no table needs to hold it, and it may be negative, which
// platform tables refuse.
bool IsPlatformCoef(const std::vector<SearchResult>& results, const TransferSpec& spec, size_t r,
                    size_t k) {
  return Contains(spec.compute, results[r].response) &&
         !IsConstantTerm(results[r].selected.terms[k]);
}

std::string TermsExpr(const std::vector<SearchResult>& results, const TransferSpec& spec,
                      size_t r) {
  const Hypothesis& h = results[r].selected;
  std::string s;
  for (size_t k = 0; k < h.terms.size(); ++k) {
    if (k) s += " + ";
    s += IsPlatformCoef(results, spec, r, k) ? CoefficientName(results, r, k)
                                             : "(" + Num(h.coef[k]) + ")";
    if (!IsConstantTerm(h.terms[k])) s += "*" + TermExpr(h.terms[k], results[r].factors);
  }
  return s;
}

}  // namespace

std::string TransferModelToml(const std::vector<SearchResult>& results, const TransferSpec& spec,
                              const CommRates* rates, const std::string& name,
                              const std::string& description) {
  CheckSpec(results, spec, rates);
  // Identifiers are checked by SearchModelToml; its text is not reused, the check is.
  (void)SearchModelToml(results, name, description);
  std::vector<size_t> resp;  // responses proper (not bytes or messages)
  for (size_t r = 0; r < results.size(); ++r)
    if (!IsProfileColumn(results[r], spec)) resp.push_back(r);
  const std::string& first = results[resp[0]].response;
  bool total_is_sum = resp.size() > 1 && !Contains(spec.compute, first) && first != spec.comm;
  std::ostringstream o;
  o << "# Written by `invmw model search` with transfer: computation coefficients scale with the\n"
       "# platform parameter "
    << spec.scale_kernel
    << " of the tables, communication is messages * b1 + bytes / (a1 * 1e6).\n"
       "# Predict on the measured machine with its --out-table, on another one with\n"
       "# `--platform OTHER --reference MEASURED-TABLE`.\n";
  WriteModelTomlHead(o, results, name, description);
  for (size_t r = 0; r < results.size(); ++r) {
    if (total_is_sum && r == resp[0]) continue;  // the total is the sum of the components
    const Hypothesis& h = results[r].selected;
    for (size_t k = 0; k < h.terms.size(); ++k) {
      if (!IsPlatformCoef(results, spec, r, k)) continue;
      std::string what = "coefficient of " + TermText(h.terms[k], results[r].factors) + " in " +
                         results[r].response;
      if (!(h.coef[k] > 0))
        throw SearchError("model search: the " + what + " is " + Num(h.coef[k]) +
                          "; a computation coefficient must be > 0 to scale with " +
                          spec.scale_kernel);
      o << CoefficientName(results, r, k)
        << " = { kind = \"platform\", transfer = \"compute\", scale_kernel = "
        << TomlQuote(spec.scale_kernel) << ", unit = \"s\", lower = 0, initial = " << Num(h.coef[k])
        << ", description = " << TomlQuote(what) << " }\n";
    }
  }
  if (!spec.comm.empty()) {
    o << "a1 = { unit = \"MB/s\", kind = \"platform\", transfer = \"table\", initial = "
      << Num(rates->a1) << ", lower = 1e-3, upper = " << Num(kMaxRate)
      << ", description = \"communication rate, MB = 10^6 bytes\" }\n";
    o << "b1 = { unit = \"s\", kind = \"platform\", transfer = \"table\", initial = "
      << Num(rates->b1) << ", lower = 0, upper = 10, description = \"overhead per message\" }\n";
    int b = ResultIndex(results, spec.bytes), m = ResultIndex(results, spec.messages);
    o << "\n[definitions]\n"
      << spec.bytes << " = " << TomlQuote(TermsExpr(results, spec, b)) << "\n"
      << spec.messages << " = " << TomlQuote(TermsExpr(results, spec, m)) << "\n";
  }
  auto expr = [&](size_t r) {
    if (results[r].response == spec.comm)
      return "b1 * " + spec.messages + " + " + spec.bytes + " / (a1 * 1e6)";
    return TermsExpr(results, spec, r);
  };
  if (resp.size() > 1) {
    o << "\n[components]\n";
    for (size_t i = 1; i < resp.size(); ++i)
      o << results[resp[i]].response << " = { expr = " << TomlQuote(expr(resp[i]))
        << ", column = " << TomlQuote(results[resp[i]].response) << " }\n";
  }
  std::string total;
  if (total_is_sum) {
    for (size_t i = 1; i < resp.size(); ++i)
      total += (i > 1 ? " + " : "") + results[resp[i]].response;
  } else {
    total = expr(resp[0]);
  }
  o << "\n[total]\nname = " << TomlQuote(first) << "\ncolumn = " << TomlQuote(first)
    << "\nexpr = " << TomlQuote(total) << "\n";
  return o.str();
}

PlatformTable MeasuredTable(const std::vector<SearchResult>& results, const TransferSpec& spec,
                            const CommRates* rates, const PlatformTable* machine,
                            const std::string& name, const std::string& data_source) {
  CheckSpec(results, spec, rates);
  PlatformTable t;
  t.name = name;
  t.title = name + " (measured)";
  t.description = "the machine the data of " + data_source +
                  " came from, as `invmw model search --out-table` measured it";
  if (machine) {
    t.description += "; scale parameter, measures and kernels from " + machine->path;
    t.topology = machine->topology;
  }
  if (!spec.comm.empty()) {
    TableValue a1{"a1", rates->a1, "MB/s",
                  "fitted: " + spec.comm + " = " + spec.messages + " * b1 + " + spec.bytes +
                      " / (a1 * 1e6) over " + std::to_string(rates->rows) + " runs of " +
                      data_source + " (relative RMS error " + Num(100 * rates->rel_rms) + "%)" +
                      (rates->note.empty() ? "" : "; " + rates->note),
                  rates->a1_std_error};
    TableValue b1 = a1;
    b1.name = "b1";
    b1.value = rates->b1;
    b1.unit = "s";
    b1.std_error = rates->b1_std_error;
    t.parameters.push_back(a1);
    t.parameters.push_back(b1);
  }
  for (size_t r = 0; r < results.size(); ++r) {
    if (!Contains(spec.compute, results[r].response)) continue;
    const Hypothesis& h = results[r].selected;
    for (size_t k = 0; k < h.terms.size(); ++k) {
      if (IsConstantTerm(h.terms[k])) continue;
      TableValue v;
      v.name = CoefficientName(results, r, k);
      v.value = h.coef[k];
      v.unit = "s";
      v.std_error = std::isfinite(h.std_error[k]) ? h.std_error[k] : -1;
      v.source = "searched: coefficient of " + TermText(h.terms[k], results[r].factors) + " in " +
                 results[r].response + " (" + data_source + "); scales with " + spec.scale_kernel;
      t.parameters.push_back(v);
    }
  }
  if (machine) {
    if (const TableValue* s = machine->Parameter(spec.scale_kernel)) {
      TableValue v = *s;
      v.source = "from " + machine->name + (s->source.empty() ? "" : ": " + s->source);
      t.parameters.push_back(v);
    }
    t.measures = machine->measures;
    t.kernels = machine->kernels;
  }
  return t;
}

}  // namespace invmw::fit
