// Validation of predictions against measured runs: a model with resolved parameters (a
// calibrated table, or a reference transferred to a target's probed table) predicts every design
// point of measured runs, and the errors are summarised per response.
//
// Why it is separate from prediction: a prediction is a claim, a validation is its measured
// error, and it must be computed from the same rows a person can query in the results database.
// The rule is fixed and simple so that anyone can recompute it (the pipeline's test does, from
// SQL): replications of one design point are averaged (mean, with min, max and standard
// deviation kept), the error of a point is (predicted - measured mean) / measured mean, and a
// response's summary is the median and the worst of the absolute errors over its points.
// Points whose measured mean is zero or missing have no error and are counted as such.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fitter/data_table.h"
#include "fitter/model.h"

namespace invmw::fit {

struct ValidatedResponse {
  std::string name;                           // model response (t_opal, t_par_comp, ...)
  std::string column;                         // measured column (t_wall, t_par_comp, ...)
  double mean = 0, min = 0, max = 0, sd = 0;  // over the point's replications; NaN if unmeasured
  int measured = 0;                           // replications with a value
  double predicted = 0;
  double error_pct = 0;  // NaN when the measured mean is 0 or missing
};

struct ValidatedPoint {
  long group = 0;                            // design point
  std::map<std::string, double> factors;     // the model's factors as used
  std::vector<std::string> runs;             // what each replication is ("run 17 (point 3, ...)")
  std::vector<ValidatedResponse> responses;  // model.responses() order
};

struct ErrorSummary {
  std::string name, column;
  int points = 0;      // points with an error
  int unmeasured = 0;  // points without one
  double median_abs_pct = 0, mean_abs_pct = 0, worst_abs_pct = 0;
  long worst_group = -1;
};

struct Validation {
  std::vector<ValidatedPoint> points;  // ordered by design point
  std::vector<ErrorSummary> summary;   // model.responses() order
};

// params: model parameter order. settings: values for factors the data lack (else the model's
// default). Throws DataError naming a factor that has neither a column nor a value.
Validation Validate(const Model& model, const std::vector<double>& params, const DataTable& data,
                    const std::map<std::string, double>& settings);

// Median of |x| over the finite values (NaN if none).
double MedianAbs(std::vector<double> values);

}  // namespace invmw::fit
