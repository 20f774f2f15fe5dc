// Validation of predictions against measured runs: a model with resolved parameters (a
// calibrated table, or a reference transferred to a target's probed table) predicts every design
// point of measured runs, and the errors are summarised per response.
//
// Why it is separate from prediction: a prediction is a claim, a validation is its measured
// error, and it must be computed from the same rows a person can query in the results database.
// The rule is fixed and simple so that anyone can recompute it (the pipeline's test does, from
// SQL): replications of one design point are summarised by a statistic (median by default, or
// mean; min, max and standard deviation kept), the error of a point is (predicted - measured) /
// measured, and a response's summary is the median and the worst of the absolute errors over its
// points, each next to its noise floor (issue 20). With a paired reference, each run is first
// divided by the drift its partner saw.
// Points whose measured mean is zero or missing have no error and are counted as such.
#pragma once

#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fitter/data_table.h"
#include "fitter/interval.h"
#include "fitter/model.h"

namespace invmw::fit {

struct ValidatedResponse {
  std::string name;                           // model response (t_opal, t_par_comp, ...)
  std::string column;                         // measured column (t_wall, t_par_comp, ...)
  double mean = 0, min = 0, max = 0, sd = 0;  // over the point's replications; NaN if unmeasured
  double median = 0;
  int measured = 0;  // replications with a value
  double predicted = 0;
  double error_pct = 0;  // against the options' statistic; NaN when it is 0 or missing
  // The |error| an exact model would show at this point given the replications' spread
  // (NoiseFloorPct); NaN with fewer than 2 replications.
  double noise_floor_pct = NAN;
  // The replications this point needs for a floor of ValidateOptions::floor_target_pct, from
  // its own sd of log t (ReplicationsForFloor; 0 with fewer than 2 replications): the pipeline's
  // extra replications where the noise is (issue 20).
  int replications_for_floor = 0;
  bool has_intervals = false;
  std::array<Interval, 3> intervals{};  // kIntervalLevels order, for the statistic's value
  double model_sd_log = 0;              // the model error the intervals hold (log units)
  double transfer_sd_log = 0;           // and the transfer rule's error (log units)
};

// A run paired with the reference platform's run of the same point and replication, taken next
// to it in time: drift = reference run / the reference's median at that point.
struct DriftPair {
  std::string run, reference_run;
  double drift = NAN;
};

struct ValidatedPoint {
  long group = 0;                            // design point
  std::map<std::string, double> factors;     // the model's factors as used
  std::vector<std::string> runs;             // what each replication is ("run 17 (point 3, ...)")
  std::vector<ValidatedResponse> responses;  // model.responses() order
  std::vector<DriftPair> pairs;              // with ValidateOptions::paired
};

// The same figures over the points where a component's measured statistic is more than
// ValidateOptions::significant_share of the measured total's (issue 20's benchmark judges
// components "larger than 10% of the total": a component of a few milliseconds can be 100% off
// without mattering to anyone). Points 0 for the total itself and where no point qualifies.
struct SignificantSummary {
  int points = 0;
  double median_abs_pct = NAN, worst_abs_pct = NAN;
  // An exact model's median and worst |error| over these points.
  double noise_floor_median_abs_pct = NAN, noise_floor_worst_abs_pct = NAN;
  double coverage_90 = NAN;  // share inside their 90% intervals (NaN: none)
};

struct ErrorSummary {
  std::string name, column;
  int points = 0;      // points with an error
  int unmeasured = 0;  // points without one
  double median_abs_pct = 0, mean_abs_pct = 0, worst_abs_pct = 0;
  long worst_group = -1;
  // What an exact model would show as median and worst |error| over these points, given each
  // point's replication spread (seeded draws of each point's statistic noise, median over draws).
  double noise_floor_median_abs_pct = NAN, noise_floor_worst_abs_pct = NAN;
  std::array<double, 3> coverage{NAN, NAN, NAN};  // share of points inside each interval
  // Median over points of (high - low) / predicted per interval: what the coverage costs.
  std::array<double, 3> median_relative_width{NAN, NAN, NAN};
  double model_sd_log = NAN;     // the model error the intervals hold (NaN: no intervals)
  double transfer_sd_log = NAN;  // the transfer rule's error they hold (NaN: no intervals)
  // The per-run spread (sd of log t over replications, pooled over points) and the replications
  // per point it takes to bring a point's floor to ValidateOptions::floor_target_pct (0: no
  // spread measured).
  double sd_log_run = NAN;
  int replications_for_floor = 0;
  SignificantSummary significant;  // components only
};

// Drift cancellation: the sd of log t over replications of a point (pooled over points), of the
// raw runs (across time) and of the runs normalized by their paired reference (within pairs).
struct DriftSummary {
  std::string reference;
  int pairs = 0, unpaired = 0;
  double sd_log_across_time = NAN, sd_log_within_pairs = NAN;
  double median_abs_drift_pct = NAN, worst_abs_drift_pct = NAN;
  // Whether the runs were divided by their drift: only when that lowers the noise
  // (sd_log_within_pairs < sd_log_across_time); else the statistic uses the raw runs.
  bool applied = false;
};

struct Validation {
  std::string statistic;
  std::vector<ValidatedPoint> points;  // ordered by design point
  std::vector<ErrorSummary> summary;   // model.responses() order
  bool paired = false;
  DriftSummary drift;              // when paired
  double floor_target_pct = 2;     // ValidateOptions::floor_target_pct, as used
  double significant_share = 0.1;  // ValidateOptions::significant_share, as used
};

struct ValidateOptions {
  std::string statistic = "median";  // of a point's replications: "median" or "mean"
  // The reference platform's runs of the same design, one per (point, replication) of the data,
  // each measured right beside its partner: every run of the data is divided by its partner's
  // drift before the statistic. Needs `replications` in both tables.
  const DataTable* paired = nullptr;
  std::string paired_name;  // for the report
  // Prediction intervals: covariance of the parameters (model order) and the fit's noise model;
  // no intervals when cov is null.
  const std::vector<std::vector<double>>* cov = nullptr;
  double sigma = 0;
  std::string weighting = "relative";
  // The calibration's model error per response (EstimateModelError, model.responses() order);
  // null: the intervals use sigma alone.
  const std::vector<ModelDiscrepancy>* model_error = nullptr;
  int bootstrap = 400;             // draws for the summary's noise floors
  double floor_target_pct = 2;     // for ErrorSummary::replications_for_floor
  double significant_share = 0.1;  // for ErrorSummary::significant, a fraction in [0, 1)
  unsigned seed = 20;
};

// params: model parameter order. settings: values for factors the data lack (else the model's
// default). Throws DataError naming a factor that has neither a column nor a value.
Validation Validate(const Model& model, const std::vector<double>& params, const DataTable& data,
                    const std::map<std::string, double>& settings,
                    const ValidateOptions& options = ValidateOptions());

// The noise floor of one point in percent: the median |error| an exact model shows against the
// statistic of these replications, 0.674 x the statistic's relative sd (the replications' sd of
// log t / sqrt(R), x sqrt(pi/2) for a median of more than 2). NaN below 2 values.
double NoiseFloorPct(const std::vector<double>& x, const std::string& statistic);

// The fewest replications whose statistic has a median |error| of at most target_pct for an
// exact model, given a per-run sd of log t: the inverse of NoiseFloorPct. 0 when sd_log is NaN.
int ReplicationsForFloor(double sd_log, const std::string& statistic, double target_pct);

double Statistic(std::vector<double> x, const std::string& statistic);  // NaN if empty

// Median of |x| over the finite values (NaN if none).
double MedianAbs(std::vector<double> values);

}  // namespace invmw::fit
