// The result of an effects analysis (Jain ch. 17-23): estimated effects with confidence
// intervals and the allocation of variation, for each response of a design. Both methods (the
// sign table of two-level designs and the general k-factor method) fill the same structures so
// that one report prints either.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/effects/factorial_layout.h"

namespace invmw::effects {

struct AnalysisOptions {
  double confidence = 0.90;  // two-sided level of the confidence intervals (Jain uses 90%)
  // Highest interaction order estimated (0: all). Higher-order terms are assumed negligible and
  // pooled into the error, as Jain does for two-factor designs without replication (ch. 21).
  int max_order = 0;
};

// An estimate with its confidence interval; std_error and the interval are NaN when the
// design has no error term (no replications and nothing pooled).
struct Estimate {
  double value = 0;
  double std_error = 0;
  double ci_low = 0, ci_high = 0;
  bool significant = false;  // the interval excludes zero
};

// One main effect or interaction.
struct Term {
  uint32_t mask = 0;  // bit i = factor i of the layout
  std::string name;   // "memory*cache"
  int order = 0;      // number of factors
  double ss = 0;      // sum of squares explained
  int dof = 0;
  double variation = 0;  // percentage of the total variation (SST)
  double f = 0, p = 0;   // F = MS / MSE and its p-value; NaN without error term
  // Sign table: the single effect q (value at the high levels of the term's factors) and the
  // terms confounded with it ("-A*B*C" when the alias has the opposite sign).
  Estimate q;
  std::vector<std::string> aliases;
  // General method: the effect at every combination of the term's levels (level indices of
  // the term's factors in factor order), e.g. alpha_j of a main effect, gamma_ij of an
  // interaction. Also filled for two-level designs (from the general method only).
  struct Cell {
    std::vector<int> levels;
    Estimate effect;
  };
  std::vector<Cell> cells;
};

struct ResponseEffects {
  std::string response;
  bool log10 = false;
  int replications = 0;
  int observations = 0;
  Estimate mean;  // q0 of the sign table, mu of the general method
  double ssy = 0, ss0 = 0, sst = 0;
  std::vector<Term> terms;  // estimated terms by order, then factor order
  // Error: replication error plus pooled terms. has_error false when dof_error == 0.
  bool has_error = false;
  double sse = 0;
  int dof_error = 0;
  double error_variation = 0;       // percentage of SST
  double s_e = 0;                   // standard deviation of errors
  double t = 0;                     // t[1 - alpha/2; dof_error] used for the intervals
  std::vector<std::string> pooled;  // names of terms pooled into the error
};

enum class Method { kSignTable, kGeneral };

struct EffectsReport {
  std::string design;
  std::string db;
  Layout layout;
  Method method = Method::kGeneral;
  AnalysisOptions options;
  std::vector<ResponseEffects> responses;
  std::vector<std::string> notes;
};

// Standard deviation, interval and significance of an estimate with variance factor `scale`:
// std_error = s_e * sqrt(scale).
Estimate MakeEstimate(double value, double scale, const ResponseEffects& r);
// Fills sst shares, F and p of the terms and the error of `r` once SS and dof are known, and
// pools the terms above options.max_order into the error.
void FinishAllocation(const AnalysisOptions& options, ResponseEffects* r);

}  // namespace invmw::effects

namespace invmw::effects {

// What to analyse.
struct AnalyzeRequest {
  std::string design, db;
  std::string platform;                // "" : all (see BuildLayout)
  std::vector<std::string> responses;  // empty: every response the runs recorded
  CollectOptions collect;
  AnalysisOptions analysis;
  enum class Force { kAuto, kSignTable, kGeneral } force = Force::kAuto;
};

// Lays out the design's rows and analyses each response: the sign table for two-level designs
// (full or regular fractions), the general method otherwise. A response named in the request
// that cannot be analysed is an error; with the default (all responses), a response that some
// runs lack is skipped with a note. Returns false with *error on failure.
bool AnalyzeDesign(const std::vector<Run>& rows, const AnalyzeRequest& request,
                   EffectsReport* report, std::string* error);

}  // namespace invmw::effects
