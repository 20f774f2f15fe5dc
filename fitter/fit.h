// Calibration: least-squares estimation of a model's parameters from a table of measurements,
// with the statistics a person needs to trust (or distrust) the result.
//
// Why this shape: a fit is only useful with its uncertainty. Fit() solves the problem with Ceres
// (exact derivatives through the expression trees, bounds, optional robust loss, relative-error
// weighting, several starts) and then reports standard errors and confidence intervals from the
// covariance at the optimum (scaled by the residual variance), parameter correlations, R^2,
// percentage errors, leave-one-out cross-validation and every residual. When the design cannot
// identify a parameter (rank-deficient Jacobian) the result says which, instead of printing
// meaningless intervals.
//
// Contract: Fit() throws FitError for inputs that do not match (a factor the model needs is not
// in the data and has no default, no response column present, a non-positive measurement with
// relative weighting, with total weighting a model without a total or a row without a positive
// measured total, multi-start without bounds). Percentage errors leave out measured zeros. Solver
// trouble is reported in the result (converged = false, warnings), never thrown.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "fitter/data_table.h"
#include "fitter/model.h"

namespace invmw::fit {

struct FitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct FitOptions {
  // "absolute": residual = predicted - measured (seconds).
  // "relative": residual = (predicted - measured) / measured, so every point counts alike
  // whatever its magnitude (timings span orders of magnitude across a design).
  // "total": the total as "relative"; a component's residual = (predicted - measured) / the
  // run's measured total, so small, noisy components cannot outweigh the run time.
  std::string weighting = "relative";
  std::string loss = "none";  // "none", "huber" or "cauchy"
  double loss_scale = 0.1;    // where the robust loss starts to bend, in residual units
  int starts = 1;             // > 1: extra starts sampled inside the bounds, best result kept
  unsigned seed = 1;          // for the extra starts
  int max_iterations = 500;
  double function_tolerance = 1e-15;
  double gradient_tolerance = 1e-15;
  double parameter_tolerance = 1e-14;
  double confidence = 0.95;
  bool cross_validate = true;  // leave-one-out over design points
  int max_cv_rows = 2000;      // skip cross-validation above this many rows (it refits per row)
  std::vector<std::string> responses;   // fit only these response names; empty: all present
  std::map<std::string, double> fixed;  // parameters held at a value, not fitted

  bool IsValid(std::string* error) const;
};

struct ParamEstimate {
  std::string name, unit;
  double value = 0, std_error = 0, ci_low = 0, ci_high = 0;
  bool fixed = false;     // held by FitOptions::fixed
  bool unused = false;    // appears in no fitted response
  bool at_bound = false;  // ended on its lower or upper bound
};

struct PointResidual {
  size_t row;  // index into the data table
  std::string response;
  double measured, predicted;
  double residual;  // predicted - measured
  double ape;       // |residual| / |measured| * 100
};

struct ResponseStats {
  std::string name, column;
  int points = 0;
  double r2 = 0, mape = 0, max_ape = 0;
  double cv_mape = -1, cv_max_ape = -1;  // -1: not computed
};

// A parameter the design cannot determine, and what would determine it (issue 20): `reason` is
// "at bound", "interval spans zero" or "near-singular covariance" (with the partner named).
struct Identifiability {
  std::string parameter, reason, remedy;
};

struct FitResult {
  std::string model;
  bool converged = false;
  std::string solver_message;
  int iterations = 0;
  int starts_run = 0;
  double cost = 0;  // Ceres cost (half the sum of squared, lossed residuals)
  int observations = 0, dof = 0;
  double sigma = 0;                   // residual standard deviation in residual units
  std::vector<ParamEstimate> params;  // in model order
  bool covariance_ok = false;
  std::vector<std::vector<double>> correlation;  // model order; NaN where undefined
  std::vector<ResponseStats> responses;          // per fitted response, then "all"
  std::vector<PointResidual> residuals;
  std::vector<std::string> warnings;
  std::vector<Identifiability> identifiability;  // model order; empty when all are determined
  std::vector<std::vector<double>> covariance;   // parameter units, model order; NaN if undefined
  std::vector<double> Values() const;            // fitted parameter values in model order
};

FitResult Fit(const Model& model, const DataTable& data, const FitOptions& options);

}  // namespace invmw::fit
