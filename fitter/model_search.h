// Automatic model search (issue 21): finds, for a measured response, the performance model
// c0 + sum_k c_k * prod_f x_f^i * log2(x_f)^j (Extra-P's performance model normal form) that
// predicts held-out design points best, and writes it as a model file of the model language.
//
// Why this shape: thousands of hypotheses must be ranked, so ranking uses weighted linear least
// squares on per-design-point Gram matrices (a hypothesis and all of its cross-validation folds
// cost a few tiny solves, never a pass over the data), and only the selected hypothesis is
// refitted with the Ceres fitter (Fit()) for its confidence intervals. The number of terms is
// chosen by a lack-of-fit test against the replications and by leave-one-design-point-out
// cross-validation, not by training error: a hypothesis with more terms must show that the
// smaller one misses the data, or predict held-out points clearly better, which is what keeps
// noise from being modelled. See docs/fitter.md "Model search".
//
// Contract: SearchModel() throws SearchError with a message naming the response, factor or row
// for inputs that cannot be searched (missing columns, a factor with one level or a value <= 0,
// a response that is constant or <= 0, too few design points); rows whose response is missing
// are left out and counted.
#pragma once

#include <cmath>
#include <stdexcept>
#include <ostream>
#include <string>
#include <vector>

#include "fitter/data_table.h"

namespace invmw::fit {

struct SearchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The exponents i of x^i in the normal form, as text ("-1", "1/4", ...) and value.
struct PowerExponent {
  const char* text;
  double value;
};
const std::vector<PowerExponent>& SearchExponents();  // 20 values, "0" among them
constexpr int kMaxLogExponent = 2;                    // j in {0, 1, 2}

// One factor's part of a term: x^exponent[power] * log2(x)^log_power (power of "0", log_power 0:
// the factor is absent from the term).
struct FactorPower {
  int power = 0;  // index into SearchExponents()
  int log_power = 0;
  bool operator==(const FactorPower& o) const {
    return power == o.power && log_power == o.log_power;
  }
  bool operator<(const FactorPower& o) const {
    return power != o.power ? power < o.power : log_power < o.log_power;
  }
};
FactorPower ConstantPower();  // x^0 * log2(x)^0

// A term: one FactorPower per searched factor (in SearchResult::factors order).
using SearchTerm = std::vector<FactorPower>;
bool IsConstantTerm(const SearchTerm& t);

struct SearchOptions {
  int max_terms = 3;           // terms of a hypothesis, the constant included
  double margin = 0.5;         // a bigger hypothesis must cut the CV error by this fraction
  double margin_no_fit = 0.1;  // the same when no size passes the lack-of-fit test
  double t_min = 2.0;          // a term's coefficient must be positive and t = c/se above this
  double alpha = 0.01;         // lack-of-fit test level (0: selection by cross-validation alone)
  int per_factor = 10;         // multi-factor: best terms kept per factor for the combinations
  int runners_up = 5;          // hypotheses reported after the selected one
};

struct Hypothesis {
  std::vector<SearchTerm> terms;  // constant first
  std::vector<double> coef, std_error;
  double train_rms = 0;  // relative RMS error on all rows
  double cv_rms = 0;     // relative RMS error on held-out design points
  // Lack-of-fit F test against the replications' spread: P(F > observed); NaN without
  // replications or without points to spare.
  double lack_of_fit_p = NAN;
  bool valid = false;
  std::string why_invalid;
};

struct SearchResult {
  std::string response;
  std::vector<std::string> factors;
  int rows = 0, points = 0, skipped_rows = 0;
  int max_terms = 0;  // as used (may be below the option for few design points)
  long hypotheses = 0;
  Hypothesis selected;
  std::vector<Hypothesis> runners_up;
  std::vector<std::string> warnings;
};

// Searches the normal form over `factors` for column `response` of `data`. Residuals are
// relative ((model - measured) / measured), replications are rows, design points are the distinct
// tuples of factor values.
SearchResult SearchModel(const DataTable& data, const std::string& response,
                         const std::vector<std::string>& factors, const SearchOptions& options);

// "p^(1/2) * log2(p)^2" (human-readable) and the model-language expression of a term.
std::string TermText(const SearchTerm& t, const std::vector<std::string>& factors);
std::string TermExpr(const SearchTerm& t, const std::vector<std::string>& factors);
// "c0 + c1 * p^(1/2)" with numbers for the coefficients.
std::string FormulaText(const Hypothesis& h, const std::vector<std::string>& factors);

// A model file (docs/fitter.md) for the selected hypotheses: the first response is the
// [total], the others are [components] tied to their columns. Coefficients are parameters
// (application, transfer keep) with the least-squares values as initial values; with several
// responses their names carry the response as prefix (t_c0, ...).
std::string SearchModelToml(const std::vector<SearchResult>& results, const std::string& name,
                            const std::string& description);
// A TOML basic string of s (quotes and backslashes escaped).
std::string TomlQuote(const std::string& s);
// The head of a searched model's file: schema, name, description, [factors] (every searched
// factor once) and the [parameters] header. Shared by SearchModelToml and the transfer writer.
void WriteModelTomlHead(std::ostream& o, const std::vector<SearchResult>& results,
                        const std::string& name, const std::string& description);
// Parameter name of coefficient k of result r in SearchModelToml's file.
std::string CoefficientName(const std::vector<SearchResult>& results, size_t r, size_t k);

}  // namespace invmw::fit
