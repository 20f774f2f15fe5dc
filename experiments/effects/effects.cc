#include "experiments/effects/effects.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/stats.h"
#include "experiments/effects/general_factorial.h"
#include "experiments/effects/sign_table.h"

namespace invmw::effects {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

Estimate MakeEstimate(double value, double scale, const ResponseEffects& r) {
  Estimate e;
  e.value = value;
  if (!r.has_error) {
    e.std_error = e.ci_low = e.ci_high = kNaN;
    return e;
  }
  e.std_error = r.s_e * std::sqrt(scale);
  e.ci_low = value - r.t * e.std_error;
  e.ci_high = value + r.t * e.std_error;
  e.significant = e.ci_low > 0 || e.ci_high < 0;
  return e;
}

void FinishAllocation(const AnalysisOptions& options, ResponseEffects* r) {
  if (options.max_order > 0) {
    std::vector<Term> kept;
    for (Term& t : r->terms) {
      if (t.order > options.max_order) {
        r->sse += t.ss;
        r->dof_error += t.dof;
        r->pooled.push_back(t.name);
      } else {
        kept.push_back(std::move(t));
      }
    }
    r->terms = std::move(kept);
  }
  r->has_error = r->dof_error > 0;
  // Without variation there is nothing to allocate; shares are undefined, not zero.
  const bool varies = r->sst > 0;
  const double mse = r->has_error ? r->sse / r->dof_error : kNaN;
  if (r->has_error) {
    r->s_e = std::sqrt(mse);
    r->t = stats::StudentTQuantile(1 - (1 - options.confidence) / 2, r->dof_error);
    r->error_variation = varies ? 100 * r->sse / r->sst : kNaN;
  } else {
    r->s_e = r->t = r->error_variation = kNaN;
  }
  for (Term& t : r->terms) {
    t.variation = varies ? 100 * t.ss / r->sst : kNaN;
    if (r->has_error) {
      const double ms = t.ss / t.dof;
      t.f = mse > 0 ? ms / mse : (ms > 0 ? std::numeric_limits<double>::infinity() : kNaN);
      t.p = stats::FSurvival(t.f, t.dof, r->dof_error);
    } else {
      t.f = t.p = kNaN;
    }
  }
}

bool AnalyzeDesign(const std::vector<Run>& rows, const AnalyzeRequest& request,
                   EffectsReport* report, std::string* error) {
  *report = EffectsReport();
  report->design = request.design;
  report->db = request.db;
  report->options = request.analysis;
  if (!(request.analysis.confidence > 0 && request.analysis.confidence < 1)) {
    *error = "confidence level must be between 0 and 1 (exclusive), e.g. 0.90";
    return false;
  }
  if (request.analysis.max_order < 0) {
    *error = "--max-order must be at least 1 (0: estimate every interaction)";
    return false;
  }
  Layout& layout = report->layout;
  if (!BuildLayout(rows, request.platform, &layout, error)) {
    *error = "design '" + request.design + "': " + *error;
    return false;
  }
  report->notes = layout.notes;

  using Force = AnalyzeRequest::Force;
  bool sign_table = layout.two_level;
  if (request.force == Force::kSignTable && !layout.two_level) {
    *error = "the sign table needs two-level factors; this design has a factor with " +
             std::to_string(std::max_element(layout.factors.begin(), layout.factors.end(),
                                             [](const Factor& a, const Factor& b) {
                                               return a.levels.size() < b.levels.size();
                                             })
                                ->levels.size()) +
             " levels";
    return false;
  }
  if (request.force == Force::kGeneral) {
    if (!layout.full) {
      *error = "the general method needs a full factorial; this is a 2^(k-p) fraction";
      return false;
    }
    sign_table = false;
  }
  report->method = sign_table ? Method::kSignTable : Method::kGeneral;

  std::vector<std::string> names = request.responses;
  const bool explicit_names = !names.empty();
  if (!explicit_names) names = ResponseNames(layout);
  if (names.empty()) {
    *error = "design '" + request.design + "': the successful runs recorded no responses";
    return false;
  }
  for (const std::string& name : names) {
    Observations obs;
    std::string why;
    if (!CollectResponse(layout, name, request.collect, &obs, &why)) {
      if (explicit_names) {
        *error = "design '" + request.design + "': " + why;
        return false;
      }
      report->notes.push_back("skipped: " + why);
      continue;
    }
    report->responses.push_back(sign_table ? AnalyzeSignTable(layout, obs, request.analysis)
                                           : AnalyzeGeneral(layout, obs, request.analysis));
  }
  if (report->responses.empty()) {
    *error = "design '" + request.design + "': no response could be analysed (" +
             report->notes.back() + ")";
    return false;
  }
  return true;
}

}  // namespace invmw::effects
