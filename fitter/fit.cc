#include "fitter/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <ceres/ceres.h>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <set>

#include "common/stats.h"

namespace invmw::fit {

namespace {

constexpr int kMaxParams = 64;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Observation {
  size_t row;
  int response;  // index into model.responses()
  double y;
  double weight;
};

// Everything that stays fixed while the solver moves the parameters.
struct Context {
  const Model* model;
  const FitOptions* opts;
  std::vector<std::vector<double>> factors;  // per data row, in model factor order
  std::vector<Observation> obs;
  std::vector<int> responses;           // fitted response indices
  std::vector<std::vector<int>> slots;  // per response: parameter slots it reads
  std::vector<double> scale;            // parameter = x * scale
  std::vector<char> free;               // per parameter: fitted
  std::vector<char> used;               // per parameter: read by a fitted response
};

// One residual: a response of one design point. Parameters are optimised in scaled form
// (x = value / scale) so that a1 ~ 100 and a2 ~ 1e-9 look alike to the solver and to the
// covariance computation.
struct ResidualFunctor {
  const Expr* expr;
  const double* factors;
  double y, weight;
  const std::vector<int>* slots;
  const std::vector<double>* scale;

  template <typename T>
  bool operator()(T const* const* blocks, T* residual) const {
    T p[kMaxParams];
    for (size_t k = 0; k < slots->size(); ++k) {
      int s = (*slots)[k];
      p[s] = blocks[k][0] * (*scale)[s];
    }
    residual[0] = (expr->Eval<T>(factors, p) - T(y)) * weight;
    // A non-finite value or derivative (a pole, log of a negative) makes Ceres reject the step
    // quietly; returning true would let Ceres log a screen per residual and go on with NaNs.
    using std::isfinite;
    return isfinite(residual[0]);  // for a Jet: its value and every derivative (ceres::isfinite)
  }
};

// Ceres logs through glog; its warnings are for Ceres developers and would bury invmw's own
// messages. Everything below FATAL is dropped (the fitter reports trouble in its result).
void QuietCeresLogging() {
  static std::once_flag once;
  std::call_once(once, [] { FLAGS_minloglevel = google::GLOG_FATAL; });
}

std::string Str(double v) {
  if (std::isnan(v)) return "nan";  // not "-nan": the sign of a NaN means nothing to a user
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

struct Built {
  std::unique_ptr<ceres::LossFunction> loss;
  std::unique_ptr<ceres::Problem> problem;
};

Built BuildProblem(const Context& c, std::vector<double>* x, const std::vector<char>& use_row) {
  Built b;
  const FitOptions& o = *c.opts;
  if (o.loss == "huber") b.loss = std::make_unique<ceres::HuberLoss>(o.loss_scale);
  if (o.loss == "cauchy") b.loss = std::make_unique<ceres::CauchyLoss>(o.loss_scale);
  ceres::Problem::Options po;
  po.loss_function_ownership = ceres::DO_NOT_TAKE_OWNERSHIP;
  b.problem = std::make_unique<ceres::Problem>(po);
  const auto& params = c.model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (!c.used[i]) continue;
    double* blk = x->data() + i;
    b.problem->AddParameterBlock(blk, 1);
    if (!c.free[i]) {
      b.problem->SetParameterBlockConstant(blk);
      continue;
    }
    if (std::isfinite(params[i].lower))
      b.problem->SetParameterLowerBound(blk, 0, params[i].lower / c.scale[i]);
    if (std::isfinite(params[i].upper))
      b.problem->SetParameterUpperBound(blk, 0, params[i].upper / c.scale[i]);
  }
  for (const Observation& ob : c.obs) {
    if (!use_row[ob.row]) continue;
    const Response& r = c.model->responses()[ob.response];
    const std::vector<int>& slots = c.slots[ob.response];
    auto* f =
        new ResidualFunctor{&r.expr, c.factors[ob.row].data(), ob.y, ob.weight, &slots, &c.scale};
    auto* cost = new ceres::DynamicAutoDiffCostFunction<ResidualFunctor, 4>(f);
    std::vector<double*> blocks;
    for (int s : slots) {
      cost->AddParameterBlock(1);
      blocks.push_back(x->data() + s);
    }
    cost->SetNumResiduals(1);
    b.problem->AddResidualBlock(cost, b.loss.get(), blocks);
  }
  return b;
}

ceres::Solver::Summary Solve(const Context& c, std::vector<double>* x,
                             const std::vector<char>& use_row) {
  Built b = BuildProblem(c, x, use_row);
  ceres::Solver::Options so;
  so.minimizer_type = ceres::TRUST_REGION;
  so.trust_region_strategy_type = ceres::LEVENBERG_MARQUARDT;
  so.linear_solver_type = ceres::DENSE_QR;
  so.max_num_iterations = c.opts->max_iterations;
  so.function_tolerance = c.opts->function_tolerance;
  so.gradient_tolerance = c.opts->gradient_tolerance;
  so.parameter_tolerance = c.opts->parameter_tolerance;
  so.logging_type = ceres::SILENT;
  so.minimizer_progress_to_stdout = false;
  so.num_threads = 1;
  ceres::Solver::Summary summary;
  ceres::Solve(so, b.problem.get(), &summary);
  return summary;
}

std::vector<double> Unscale(const Context& c, const std::vector<double>& x) {
  std::vector<double> v(x.size());
  for (size_t i = 0; i < x.size(); ++i) v[i] = x[i] * c.scale[i];
  return v;
}

double Predict(const Context& c, int response, size_t row, const std::vector<double>& values) {
  return c.model->responses()[response].expr.Eval<double>(c.factors[row].data(), values.data());
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Which responses to fit: the ones asked for, else every one the data have a column for.
void BindResponses(const DataTable& data, Context* c) {
  const Model& model = *c->model;
  const FitOptions& opts = *c->opts;
  const auto& rs = model.responses();
  if (!opts.responses.empty()) {
    for (const std::string& want : opts.responses) {
      int found = -1;
      for (size_t i = 0; i < rs.size(); ++i)
        if (rs[i].name == want || rs[i].column == want) found = static_cast<int>(i);
      if (found < 0) throw FitError("model " + model.name() + " has no response '" + want + "'");
      if (data.Column(rs[found].column) < 0) {
        throw FitError(data.source + ": no column '" + rs[found].column + "' for response '" +
                       want + "' (columns: " + Join(data.columns) + ")");
      }
      c->responses.push_back(found);
    }
  } else {
    std::vector<std::string> wanted;
    for (size_t i = 0; i < rs.size(); ++i) {
      wanted.push_back(rs[i].column);
      if (data.Column(rs[i].column) >= 0) c->responses.push_back(static_cast<int>(i));
    }
    if (c->responses.empty()) {
      throw FitError(data.source + ": none of the model's response columns (" + Join(wanted) +
                     ") is in the data (columns: " + Join(data.columns) + ")");
    }
  }
}

// The factors the fitted responses read and their data columns (-1: the model's default).
struct FactorColumns {
  std::set<int> need;
  std::vector<int> col;  // per model factor
};

FactorColumns BindFactors(const DataTable& data, Context* c, std::vector<std::string>* warnings) {
  const Model& model = *c->model;
  const auto& rs = model.responses();
  FactorColumns fc;
  c->slots.resize(rs.size());
  c->used.assign(model.parameters().size(), 0);
  for (int r : c->responses) {
    for (int f : rs[r].expr.FactorSlots()) fc.need.insert(f);
    c->slots[r] = rs[r].expr.ParamSlots();
    for (int s : c->slots[r]) c->used[s] = 1;
  }
  const auto& factors = model.factors();
  fc.col.assign(factors.size(), -1);
  for (int f : fc.need) {
    fc.col[f] = data.Column(factors[f].name);
    if (fc.col[f] < 0) {
      for (const auto& [name, example] : data.text_columns) {
        if (name == factors[f].name) {
          throw FitError(data.source + ": factor '" + name + "' holds text (e.g. '" + example +
                         "'), but model " + model.name() + " needs it as a number");
        }
      }
      if (!factors[f].has_default) {
        throw FitError(data.source + ": the data lack factor '" + factors[f].name +
                       "', which model " + model.name() +
                       " uses and gives no default (columns: " + Join(data.columns) + ")");
      }
      warnings->push_back("factor '" + factors[f].name +
                          "' is not in the data; using the model's "
                          "default " +
                          std::to_string(factors[f].default_value));
    }
  }
  return fc;
}

// The model's total response and its data column, which --weighting total divides by.
struct TotalColumn {
  int response = -1;  // -1: the model has no total
  int col = -1;       // -1: not in the data
};

TotalColumn BindTotal(const DataTable& data, const Context& c) {
  const Model& model = *c.model;
  const auto& rs = model.responses();
  TotalColumn t;
  for (size_t r = 0; r < rs.size(); ++r)
    if (rs[r].is_total) t.response = static_cast<int>(r);
  t.col = t.response >= 0 ? data.Column(rs[t.response].column) : -1;
  if (c.opts->weighting == "total" && t.response < 0)
    throw FitError("model " + model.name() + " has no total; use --weighting relative");
  if (c.opts->weighting == "total" && t.col < 0)
    throw FitError(data.source + ": no column '" + rs[t.response].column +
                   "' (the model's total), " +
                   "which --weighting total divides each component's error by");
  return t;
}

// Row i's value of every model factor: the data's, else the model's default.
void BindRowFactors(const DataTable& data, size_t i, const FactorColumns& fc, Context* c) {
  const auto& factors = c->model->factors();
  for (size_t f = 0; f < factors.size(); ++f) {
    double v = factors[f].has_default ? factors[f].default_value : kNaN;
    if (fc.col[f] >= 0) v = data.rows[i][fc.col[f]];
    if (fc.need.count(static_cast<int>(f)) && std::isnan(v)) {
      throw FitError(data.RowOrigin(i) + ": factor '" + factors[f].name + "' has no value");
    }
    if (fc.need.count(static_cast<int>(f)) && !std::isfinite(v)) {
      throw FitError(data.RowOrigin(i) + ": factor '" + factors[f].name + "' is " + Str(v) +
                     ", expected a finite number");
    }
    c->factors[i][f] = v;
  }
}

// The weight of measurement y of response r in row i, as --weighting says.
double ObservationWeight(const DataTable& data, size_t i, int r, double y, const TotalColumn& total,
                         const Context& c) {
  const auto& rs = c.model->responses();
  const std::string& weighting = c.opts->weighting;
  double w = 1;
  if (weighting == "total" && !rs[r].is_total) {
    // A component's error in units of its run's measured total: a millisecond off counts the
    // same in every component of a run, so components of a few percent of the run (whose
    // measurements are mostly noise) cannot outweigh the ones that make up its time.
    double t = total.col >= 0 ? data.rows[i][total.col] : kNaN;
    if (!(t > 0)) {
      throw FitError(data.RowOrigin(i) + ": column '" + rs[total.response].column + "' is " +
                     (std::isnan(t) ? std::string("missing") : std::to_string(t)) +
                     "; total weighting needs the run's positive measured total");
    }
    w = 1 / t;
  } else if (weighting == "relative" || weighting == "total") {
    if (!(y > 0)) {
      throw FitError(data.RowOrigin(i) + ": column '" + rs[r].column + "' is " + std::to_string(y) +
                     "; relative-error weighting needs positive " +
                     "measurements (use --weighting absolute)");
    }
    w = 1 / y;
  }
  if (!std::isfinite(w)) {
    throw FitError(data.RowOrigin(i) + ": column '" + rs[r].column + "' is " + Str(y) +
                   ", too small to divide by for " + weighting + " weighting");
  }
  return w;
}

// Row i's measurements of the fitted responses (missing ones are skipped).
void BindRowObservations(const DataTable& data, size_t i, const TotalColumn& total, Context* c) {
  const auto& rs = c->model->responses();
  for (int r : c->responses) {
    double y = data.rows[i][data.Column(rs[r].column)];
    if (std::isnan(y)) continue;
    if (!std::isfinite(y)) {
      throw FitError(data.RowOrigin(i) + ": column '" + rs[r].column + "' is " + Str(y) +
                     ", expected a finite measurement");
    }
    c->obs.push_back({i, r, y, ObservationWeight(data, i, r, y, total, *c)});
  }
}

// Which parameters are free, and the scale each is optimised in.
void BindParameters(Context* c) {
  const Model& model = *c->model;
  const FitOptions& opts = *c->opts;
  const auto& params = model.parameters();
  for (const auto& [name, value] : opts.fixed) {
    int k = model.ParamIndex(name);
    if (k < 0)
      throw FitError("cannot fix '" + name + "': model " + model.name() + " has no such parameter");
    // The bounds state where the model is defined (a rate > 0); holding a parameter outside
    // them would evaluate the model where it has no meaning.
    const Parameter& p = params[k];
    if (!std::isfinite(value) || value < p.lower || value > p.upper) {
      throw FitError("cannot fix '" + name + "' at " + Str(value) + ": outside its bounds [" +
                     Str(p.lower) + ", " + Str(p.upper) + "] in model " + model.name() + " (" +
                     model.source() + ")");
    }
  }
  c->free.assign(params.size(), 0);
  c->scale.assign(params.size(), 1.0);
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    c->free[i] = c->used[i] && !opts.fixed.count(p.name);
    double ref = opts.fixed.count(p.name) ? opts.fixed.at(p.name) : p.initial;
    if (ref != 0) {
      c->scale[i] = std::fabs(ref);
    } else if (p.HasBounds()) {
      c->scale[i] = std::max(std::fabs(p.lower), std::fabs(p.upper));
    }
    if (!(c->scale[i] > 0)) c->scale[i] = 1;
    if (opts.starts > 1 && c->free[i] && !p.HasBounds()) {
      throw FitError("parameter '" + p.name + "' of model " + model.name() +
                     " needs finite 'lower' and 'upper' bounds: several starts are sampled "
                     "inside the bounds");
    }
  }
}

Context Bind(const Model& model, const DataTable& data, const FitOptions& opts,
             std::vector<std::string>* warnings) {
  Context c;
  c.model = &model;
  c.opts = &opts;
  const auto& params = model.parameters();
  if (params.size() > static_cast<size_t>(kMaxParams)) {
    throw FitError("model " + model.name() + " has " + std::to_string(params.size()) +
                   " parameters; the fitter supports at most " + std::to_string(kMaxParams));
  }
  BindResponses(data, &c);
  const FactorColumns fc = BindFactors(data, &c, warnings);
  const TotalColumn total = BindTotal(data, c);
  c.factors.assign(data.rows.size(), std::vector<double>(model.factors().size(), 0.0));
  for (size_t i = 0; i < data.rows.size(); ++i) {
    BindRowFactors(data, i, fc, &c);
    BindRowObservations(data, i, total, &c);
  }
  if (c.obs.empty()) throw FitError(data.source + ": no measured values to fit");
  BindParameters(&c);
  return c;
}

// The first observation whose residual or derivative is not finite at the scaled parameters x,
// described with its data row, response, the components that are not finite, and the factor
// and parameter values it read; empty when all are finite. Evaluating every residual up front
// turns "Ceres failed" (or a crash in the covariance) into a message naming the culprit.
std::string NonFinitePoint(const Context& c, const DataTable& data, const std::vector<double>& x,
                           const char* at) {
  const Model& m = *c.model;
  const auto& rs = m.responses();
  std::vector<double> values(x.size());
  for (size_t i = 0; i < x.size(); ++i) values[i] = x[i] * c.scale[i];
  for (const Observation& ob : c.obs) {
    const Response& r = rs[ob.response];
    const std::vector<int>& slots = c.slots[ob.response];
    ResidualFunctor f{&r.expr, c.factors[ob.row].data(), ob.y, ob.weight, &slots, &c.scale};
    ceres::DynamicAutoDiffCostFunction<ResidualFunctor, 4> cost(new ResidualFunctor(f));
    std::vector<const double*> blocks;
    for (int sl : slots) {
      cost.AddParameterBlock(1);
      blocks.push_back(x.data() + sl);
    }
    cost.SetNumResiduals(1);
    // Derivatives only for the parameters Ceres moves: it asks for no others.
    std::vector<double> jac(slots.size());
    std::vector<double*> jacs;
    for (size_t k = 0; k < slots.size(); ++k) jacs.push_back(c.free[slots[k]] ? &jac[k] : nullptr);
    double res = 0;
    if (cost.Evaluate(blocks.data(), &res, jacs.data())) continue;
    double pred = Predict(c, ob.response, ob.row, values);
    std::string what =
        std::isfinite(pred) ? "has a derivative that is not finite" : "is " + Str(pred);
    std::string msg = data.RowOrigin(ob.row) + ": response '" + r.name + "' (column " + r.column +
                      ") of model " + m.name() + " " + what + " at the " + at;
    // Which components (of those whose factors this row has) are not finite.
    std::vector<std::string> bad;
    for (size_t k = 0; k < rs.size(); ++k) {
      if (static_cast<int>(k) == ob.response) continue;
      bool known = true;
      for (int fs : rs[k].expr.FactorSlots()) known &= std::isfinite(c.factors[ob.row][fs]);
      if (!known) continue;
      double v = rs[k].expr.Eval<double>(c.factors[ob.row].data(), values.data());
      if (!std::isfinite(v))
        bad.push_back((rs[k].is_total ? "total '" : "component '") + rs[k].name + "' is " + Str(v));
    }
    if (!bad.empty()) msg += " (" + Join(bad) + ")";
    std::vector<std::string> read;
    for (int fs : r.expr.FactorSlots())
      read.push_back(m.factors()[fs].name + "=" + Str(c.factors[ob.row][fs]));
    for (int ps : slots) read.push_back(m.parameters()[ps].name + "=" + Str(values[ps]));
    msg += "; it reads " + Join(read) +
           ": the row or the parameter values lie outside the model's domain (a division by "
           "zero, log or sqrt of a negative, an overflow)";
    return msg;
  }
  return "";
}

// Names the parameters that move together in the Jacobian's near-null space.
std::string DiagnoseRank(const Context& c, std::vector<double>* x,
                         std::set<std::string>* unidentified = nullptr) {
  std::vector<char> all(c.factors.size(), 1);
  Built b = BuildProblem(c, x, all);
  ceres::Problem::EvaluateOptions eo;
  std::vector<int> idx;
  for (size_t i = 0; i < c.free.size(); ++i) {
    if (c.free[i]) {
      eo.parameter_blocks.push_back(x->data() + i);
      idx.push_back(static_cast<int>(i));
    }
  }
  ceres::CRSMatrix crs;
  b.problem->Evaluate(eo, nullptr, nullptr, nullptr, &crs);
  Eigen::MatrixXd j = Eigen::MatrixXd::Zero(crs.num_rows, crs.num_cols);
  for (int r = 0; r < crs.num_rows; ++r)
    for (int k = crs.rows[r]; k < crs.rows[r + 1]; ++k) j(r, crs.cols[k]) = crs.values[k];
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(j, Eigen::ComputeFullV);
  const auto& sv = svd.singularValues();
  double top = sv.size() ? sv(0) : 0;
  std::set<std::string> names;
  int rank = 0;
  for (int k = 0; k < sv.size(); ++k) {
    if (sv(k) > top * 1e-7) {
      ++rank;
      continue;
    }
    for (int i = 0; i < static_cast<int>(idx.size()); ++i)
      if (std::fabs(svd.matrixV()(i, k)) > 0.2) names.insert(c.model->parameters()[idx[i]].name);
  }
  for (int i = 0; i < static_cast<int>(idx.size()); ++i) {
    if (j.col(i).norm() == 0) names.insert(c.model->parameters()[idx[i]].name);
  }
  if (unidentified) *unidentified = names;
  std::string out = "Jacobian rank " + std::to_string(rank) + " of " + std::to_string(idx.size()) +
                    " free parameters";
  if (!names.empty()) {
    out += "; not identifiable from this design: " +
           Join(std::vector<std::string>(names.begin(), names.end()));
  }
  return out;
}

// The first start in scaled form: the fixed values and the model's initial ones.
std::vector<double> FirstStart(const Context& c) {
  const Model& model = *c.model;
  const FitOptions& opts = *c.opts;
  const auto& params = model.parameters();
  std::vector<double> x0(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    double v = opts.fixed.count(params[i].name) ? opts.fixed.at(params[i].name) : params[i].initial;
    x0[i] = v / c.scale[i];
    if (!std::isfinite(x0[i])) {
      throw FitError("parameter '" + params[i].name + "' of model " + model.name() + " starts at " +
                     Str(v) + ", expected a finite number");
    }
  }
  return x0;
}

// Solves from x0 and from opts.starts - 1 points drawn inside the bounds (log-uniform where
// they span more than a decade); the lowest usable cost wins. Returns the scaled parameters of
// the best solution (x0 when none is usable) and records the solver's outcome in res.
std::vector<double> SolveFromStarts(const Context& c, const std::vector<double>& x0,
                                    const std::vector<char>& all_rows, FitResult* res) {
  const FitOptions& opts = *c.opts;
  const auto& params = c.model->parameters();
  std::mt19937_64 rng(opts.seed);
  std::vector<double> best;
  ceres::Solver::Summary best_summary;
  double best_cost = std::numeric_limits<double>::infinity();
  for (int s = 0; s < opts.starts; ++s) {
    std::vector<double> x = x0;
    if (s > 0) {
      for (size_t i = 0; i < params.size(); ++i) {
        if (!c.free[i]) continue;
        double lo = params[i].lower, hi = params[i].upper;
        std::uniform_real_distribution<double> u(0, 1);
        double v =
            lo > 0 && hi / lo > 10 ? lo * std::pow(hi / lo, u(rng)) : lo + (hi - lo) * u(rng);
        x[i] = v / c.scale[i];
      }
    }
    ceres::Solver::Summary sum = Solve(c, &x, all_rows);
    ++res->starts_run;
    if (sum.IsSolutionUsable() && sum.final_cost < best_cost) {
      best_cost = sum.final_cost;
      best = x;
      best_summary = sum;
    }
  }
  if (best.empty()) {
    res->converged = false;
    res->solver_message = "no start produced a usable solution";
    return x0;
  }
  res->converged = best_summary.termination_type == ceres::CONVERGENCE;
  res->solver_message = best_summary.message;
  res->iterations = static_cast<int>(best_summary.iterations.size());
  res->cost = best_summary.final_cost;
  if (!res->converged) res->warnings.push_back("solver did not converge: " + best_summary.message);
  return best;
}

// Residuals at the fitted values, degrees of freedom and the residual standard deviation.
void ComputeResiduals(const Context& c, const std::vector<double>& values, size_t nfree,
                      FitResult* res) {
  res->observations = static_cast<int>(c.obs.size());
  res->dof = res->observations - static_cast<int>(nfree);
  double ssr = 0;
  for (const Observation& ob : c.obs) {
    double pred = Predict(c, ob.response, ob.row, values);
    double r = pred - ob.y;
    ssr += (r * ob.weight) * (r * ob.weight);
    res->residuals.push_back({ob.row, c.model->responses()[ob.response].name, ob.y, pred, r,
                              ob.y != 0 ? std::fabs(r / ob.y) * 100 : kNaN});
  }
  res->sigma = res->dof > 0 ? std::sqrt(ssr / res->dof) : kNaN;
  if (res->dof <= 0) {
    res->warnings.push_back("no degrees of freedom left (" + std::to_string(res->observations) +
                            " observations, " + std::to_string(nfree) +
                            " free parameters): no standard errors");
  }
}

// Covariance of the scaled parameters at best, then in parameter units (NaN where undefined);
// sets res->covariance_ok.
std::vector<std::vector<double>> ComputeCovariance(const Context& c,
                                                   const std::vector<double>& best,
                                                   const std::vector<char>& all_rows,
                                                   FitResult* res) {
  const size_t np = c.model->parameters().size();
  std::vector<std::vector<double>> cov(np, std::vector<double>(np, kNaN));
  std::vector<double> xb = best;
  Built b = BuildProblem(c, &xb, all_rows);
  ceres::Covariance::Options co;
  co.algorithm_type = ceres::DENSE_SVD;
  co.num_threads = 1;
  ceres::Covariance covariance(co);
  std::vector<std::pair<const double*, const double*>> blocks;
  for (size_t i = 0; i < np; ++i)
    for (size_t j = i; j < np; ++j)
      if (c.free[i] && c.free[j]) blocks.emplace_back(xb.data() + i, xb.data() + j);
  if (covariance.Compute(blocks, b.problem.get())) {
    res->covariance_ok = true;
    double s2 = res->sigma * res->sigma;
    for (size_t i = 0; i < np; ++i) {
      for (size_t j = i; j < np; ++j) {
        if (!c.free[i] || !c.free[j]) continue;
        double v = 0;
        covariance.GetCovarianceBlock(xb.data() + i, xb.data() + j, &v);
        cov[i][j] = cov[j][i] = v * c.scale[i] * c.scale[j] * s2;
      }
    }
  } else {
    std::set<std::string> names;
    res->warnings.push_back("covariance failed: " + DiagnoseRank(c, &xb, &names) +
                            "; no standard errors (change the design or fix parameters)");
    for (const auto& n : names)
      res->identifiability.push_back(
          {n, "near-singular covariance",
           "fix it from the platform's probes (--fix " + n +
               "=VALUE) or add design points that vary the factors its term depends on, so "
               "that it no longer moves together with another parameter"});
  }
  return cov;
}

// Parameters the design does not determine (issue 20, item 3), after the rank diagnosis of
// ComputeCovariance: one ended on a bound (its interval means nothing), its interval spans zero
// (the data cannot tell it from no effect), or it is almost a linear combination of another
// (|correlation| above kNearSingular: the covariance is near-singular along their difference).
// Each comes with a remedy, because the caller (the pipeline) acts on it.
void ReportIdentifiability(const Context& c, FitResult* res) {
  constexpr double kNearSingular = 0.995;
  const size_t np = res->params.size();
  std::set<std::string> listed;
  for (const auto& e : res->identifiability) listed.insert(e.parameter);
  auto add = [&](const std::string& name, const std::string& reason, const std::string& remedy) {
    if (listed.insert(name).second) res->identifiability.push_back({name, reason, remedy});
  };
  const std::string probes =
      "take it from the platform's probes (--fix NAME=VALUE, the source "
      "named in the table)";
  for (size_t i = 0; i < np; ++i) {
    const ParamEstimate& e = res->params[i];
    if (!c.free[i] || e.unused) continue;
    std::string fix = probes;
    fix.replace(fix.find("NAME"), 4, e.name);
    if (e.at_bound) {
      add(e.name, "at bound",
          fix + ", or add design points where its term is a larger share of the time");
    } else if (res->covariance_ok && std::isfinite(e.ci_low) && e.ci_low < 0 && e.ci_high > 0) {
      add(e.name, "interval spans zero",
          fix +
              ", or add replications and design points where its term is a larger share of "
              "the time");
    }
  }
  for (size_t i = 0; i < np && res->covariance_ok; ++i) {
    for (size_t j = i + 1; j < np; ++j) {
      double r = res->correlation[i][j];
      if (!(std::fabs(r) > kNearSingular)) continue;
      for (size_t k : {i, j}) {
        const std::string& other = res->params[k == i ? j : i].name;
        std::string fix = probes;
        fix.replace(fix.find("NAME"), 4, res->params[k].name);
        add(res->params[k].name,
            "near-singular covariance (correlation with " + other + " " + Str(r) + ")",
            fix + ", or add design points that vary the factors that separate its term from " +
                other + "'s");
      }
    }
  }
}

// Each parameter's estimate, standard error and interval, with warnings about the ones that
// are not determined; then the correlation matrix.
void ReportParameters(const Context& c, const std::vector<double>& values,
                      const std::vector<std::vector<double>>& cov, FitResult* res) {
  const FitOptions& opts = *c.opts;
  const auto& params = c.model->parameters();
  const size_t np = params.size();
  res->params.resize(np);
  double tq = res->dof > 0 ? stats::StudentTQuantile(0.5 + opts.confidence / 2, res->dof) : kNaN;
  for (size_t i = 0; i < np; ++i) {
    ParamEstimate& e = res->params[i];
    e.name = params[i].name;
    e.unit = params[i].unit;
    e.value = values[i];
    e.fixed = opts.fixed.count(params[i].name) > 0;
    e.unused = !c.used[i];
    if (c.free[i]) {
      double tol = 1e-8 * c.scale[i];
      e.at_bound = std::fabs(values[i] - params[i].lower) < tol ||
                   std::fabs(values[i] - params[i].upper) < tol;
    }
    e.std_error = res->covariance_ok && c.free[i] ? std::sqrt(std::max(0.0, cov[i][i])) : kNaN;
    e.ci_low = e.value - tq * e.std_error;
    e.ci_high = e.value + tq * e.std_error;
    if (e.unused && !e.fixed) {
      res->warnings.push_back("parameter '" + e.name +
                              "' appears in no fitted response; it keeps its initial value");
    }
    if (e.at_bound) {
      res->warnings.push_back("parameter '" + e.name +
                              "' ended on a bound; its interval is "
                              "not meaningful");
    }
    if (res->covariance_ok && c.free[i] && e.std_error > std::fabs(e.value)) {
      res->warnings.push_back("parameter '" + e.name + "' is poorly determined (standard error " +
                              "larger than the estimate)");
    }
  }
  res->correlation.assign(np, std::vector<double>(np, kNaN));
  for (size_t i = 0; i < np; ++i)
    for (size_t j = 0; j < np; ++j)
      if (res->covariance_ok && c.free[i] && c.free[j])
        res->correlation[i][j] = cov[i][j] / std::sqrt(cov[i][i] * cov[j][j]);
  res->covariance = cov;
  ReportIdentifiability(c, res);
}

// Leave-one-out cross-validation: refit without each design point, predict it. Returns the
// absolute percentage errors per fitted response (in c.responses order).
std::vector<std::vector<double>> CrossValidate(const Context& c, const DataTable& data,
                                               const std::vector<double>& best,
                                               const std::vector<char>& all_rows,
                                               std::vector<std::string>* cv_failed) {
  std::vector<std::vector<double>> cv_ape(c.responses.size());
  std::vector<char> has_obs(data.rows.size(), 0);
  for (const Observation& ob : c.obs) has_obs[ob.row] = 1;
  for (size_t i = 0; i < data.rows.size(); ++i) {
    if (!has_obs[i]) continue;
    // Replications of one design point leave together: predicting a point from its own
    // other replications would understate the error of predicting an unseen point.
    auto same_point = [&](size_t k) {
      return data.groups.size() == data.rows.size() ? data.groups[k] == data.groups[i] : k == i;
    };
    bool first_of_group = true;
    for (size_t k = 0; k < i && first_of_group; ++k)
      if (has_obs[k] && same_point(k)) first_of_group = false;
    if (!first_of_group) continue;
    std::vector<char> use = all_rows;
    for (size_t k = 0; k < data.rows.size(); ++k)
      if (same_point(k)) use[k] = 0;
    std::vector<double> x = best;
    Solve(c, &x, use);
    std::vector<double> v = Unscale(c, x);
    for (const Observation& ob : c.obs) {
      if (!same_point(ob.row) || ob.y == 0) continue;
      size_t k =
          std::find(c.responses.begin(), c.responses.end(), ob.response) - c.responses.begin();
      double pred = Predict(c, ob.response, ob.row, v);
      if (!std::isfinite(pred)) {
        cv_failed->push_back(data.RowOrigin(ob.row));
        continue;
      }
      cv_ape[k].push_back(std::fabs(pred - ob.y) / std::fabs(ob.y) * 100);
    }
  }
  return cv_ape;
}

// Cross-validation when asked for and affordable; its warnings go into res.
std::vector<std::vector<double>> MaybeCrossValidate(const Context& c, const DataTable& data,
                                                    const std::vector<double>& best,
                                                    const std::vector<char>& all_rows, size_t nfree,
                                                    FitResult* res) {
  const FitOptions& opts = *c.opts;
  bool do_cv = opts.cross_validate && static_cast<int>(data.rows.size()) <= opts.max_cv_rows &&
               data.rows.size() > nfree + 1;
  if (!do_cv) {
    if (opts.cross_validate) {
      res->warnings.push_back("leave-one-out cross-validation skipped (" +
                              std::to_string(data.rows.size()) + " rows; limit " +
                              std::to_string(opts.max_cv_rows) + ")");
    }
    return std::vector<std::vector<double>>(c.responses.size());
  }
  std::vector<std::string> cv_failed;
  std::vector<std::vector<double>> cv_ape = CrossValidate(c, data, best, all_rows, &cv_failed);
  if (!cv_failed.empty()) {
    res->warnings.push_back("leave-one-out: the model refitted without " + cv_failed.front() +
                            (cv_failed.size() > 1
                                 ? " (and " + std::to_string(cv_failed.size() - 1) + " more)"
                                 : std::string()) +
                            " predicts a value that is not finite there; left out of LOO.MAPE");
  }
  return cv_ape;
}

// Per-response and overall statistics: MAPE, maximum APE, R² and the cross-validated errors.
void ReportResponses(const Context& c, const std::vector<std::vector<double>>& cv_ape,
                     FitResult* res) {
  const Model& model = *c.model;
  ResponseStats overall;
  overall.name = overall.column = "all";
  double all_ape_sum = 0, all_cv_sum = 0;
  size_t all_cv_n = 0, all_ape_n = 0;
  for (size_t k = 0; k < c.responses.size(); ++k) {
    int r = c.responses[k];
    ResponseStats st;
    st.name = model.responses()[r].name;
    st.column = model.responses()[r].column;
    double mean = 0;
    std::vector<const PointResidual*> pts;
    for (const auto& pr : res->residuals)
      if (pr.response == st.name) pts.push_back(&pr);
    for (const auto* p : pts) mean += p->measured;
    st.points = static_cast<int>(pts.size());
    if (pts.empty()) continue;
    mean /= pts.size();
    double ss_res = 0, ss_tot = 0;
    // Measured zeros (possible with absolute or total weighting) have no percentage error.
    size_t ape_n = 0;
    for (const auto* p : pts) {
      ss_res += p->residual * p->residual;
      ss_tot += (p->measured - mean) * (p->measured - mean);
      if (p->measured == 0) continue;
      st.mape += p->ape;
      st.max_ape = std::max(st.max_ape, p->ape);
      ++ape_n;
    }
    all_ape_sum += st.mape;
    all_ape_n += ape_n;
    st.mape = ape_n ? st.mape / ape_n : kNaN;
    st.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : kNaN;
    if (!cv_ape[k].empty()) {
      st.cv_mape = std::accumulate(cv_ape[k].begin(), cv_ape[k].end(), 0.0) / cv_ape[k].size();
      st.cv_max_ape = *std::max_element(cv_ape[k].begin(), cv_ape[k].end());
      all_cv_sum += st.cv_mape * cv_ape[k].size();
      all_cv_n += cv_ape[k].size();
      overall.cv_max_ape = std::max(overall.cv_max_ape, st.cv_max_ape);
    }
    overall.points += st.points;
    overall.max_ape = std::max(overall.max_ape, st.max_ape);
    res->responses.push_back(st);
  }
  overall.mape = all_ape_n ? all_ape_sum / all_ape_n : kNaN;
  overall.r2 = kNaN;
  if (all_cv_n) overall.cv_mape = all_cv_sum / all_cv_n;
  if (res->responses.size() > 1) res->responses.push_back(overall);
}

}  // namespace

bool FitOptions::IsValid(std::string* error) const {
  auto fail = [&](const std::string& m) {
    if (error) *error = m;
    return false;
  };
  if (weighting != "absolute" && weighting != "relative" && weighting != "total")
    return fail("weighting: must be \"absolute\", \"relative\" or \"total\", got \"" + weighting +
                "\"");
  if (loss != "none" && loss != "huber" && loss != "cauchy")
    return fail("loss: must be \"none\", \"huber\" or \"cauchy\", got \"" + loss + "\"");
  if (!(loss_scale > 0)) return fail("loss_scale: must be > 0");
  if (starts < 1) return fail("starts: must be >= 1");
  if (max_iterations < 1) return fail("max_iterations: must be >= 1");
  if (!(function_tolerance > 0) || !(gradient_tolerance > 0) || !(parameter_tolerance > 0))
    return fail("function/gradient/parameter_tolerance: must be > 0");
  if (!(confidence > 0 && confidence < 1)) return fail("confidence: must lie in (0, 1)");
  if (max_cv_rows < 0) return fail("max_cv_rows: must be >= 0");
  return true;
}

std::vector<double> FitResult::Values() const {
  std::vector<double> v;
  for (const auto& p : params) v.push_back(p.value);
  return v;
}

FitResult Fit(const Model& model, const DataTable& data, const FitOptions& opts) {
  std::string err;
  if (!opts.IsValid(&err)) throw FitError("invalid fit options: " + err);
  QuietCeresLogging();
  FitResult res;
  res.model = model.name();
  Context c = Bind(model, data, opts, &res.warnings);
  const size_t np = model.parameters().size();

  const std::vector<double> x0 = FirstStart(c);
  if (std::string bad = NonFinitePoint(c, data, x0, "initial parameter values"); !bad.empty())
    throw FitError(bad);
  const std::vector<char> all_rows(data.rows.size(), 1);
  const std::vector<double> best = SolveFromStarts(c, x0, all_rows, &res);
  const std::vector<double> values = Unscale(c, best);
  // Ceres only accepts steps whose residuals evaluate, so this is a last line of defence: the
  // covariance must never be computed at a point where the model is not finite.
  const std::string bad_final = NonFinitePoint(c, data, best, "fitted parameter values");
  if (!bad_final.empty()) {
    res.converged = false;
    res.warnings.push_back(bad_final + "; no standard errors");
  }

  const size_t nfree = std::count(c.free.begin(), c.free.end(), 1);
  ComputeResiduals(c, values, nfree, &res);
  std::vector<std::vector<double>> cov(np, std::vector<double>(np, kNaN));
  if (res.dof > 0 && nfree > 0 && bad_final.empty())
    cov = ComputeCovariance(c, best, all_rows, &res);
  ReportParameters(c, values, cov, &res);
  ReportResponses(c, MaybeCrossValidate(c, data, best, all_rows, nfree, &res), &res);
  return res;
}

}  // namespace invmw::fit
