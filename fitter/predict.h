// Prediction: a model, application factors and a platform's parameters give the time, its
// components and the speedup over a sweep of one factor (usually the process count), with notes
// on the bottleneck.
//
// Why the transfer rule lives here: a calibrated reference platform and the target's table must
// be combined the same way by every caller. Rule (SPEC.md "fitter"): parameters with
// transfer = "table" (a1, b1, b5) come from the target's table; transfer = "compute" (a2, a3,
// a4) are the reference's values scaled by target/reference kernel time ([kernels].<param>),
// or else by reference/target compute rate ([measures].mflops_adjusted); "keep" and anything
// the target lacks keep the reference value. Every choice is recorded in `origins`, so the
// output can say where each number came from. Without a reference, every parameter must be in
// the target's table.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "fitter/model.h"
#include "fitter/platform_table.h"

namespace invmw::fit {

struct PredictError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ResolvedParameters {
  std::vector<double> values;        // model parameter order
  std::vector<std::string> origins;  // per parameter, e.g. "target table" or "reference x 0.78"
  std::vector<std::string> notes;    // things the user must know (reference values kept, ...)
};

ResolvedParameters ResolveParameters(const Model& model, const PlatformTable& target,
                                     const PlatformTable* reference);

struct Sweep {
  std::string factor;
  std::vector<double> values;
};
// "p=1..7", "p=1..64:2" (step), "p=1,2,4,8".
Sweep ParseSweep(const std::string& text);
// "n=4289" -> {"n", 4289}.
std::pair<std::string, double> ParseSetting(const std::string& text);

struct PredictPoint {
  double x = 0;
  double time = 0;
  std::vector<double> components;  // model.responses()[1..] order
  double speedup = 0;              // time at the first sweep point / time here
};

struct Prediction {
  std::string platform;
  std::vector<PredictPoint> points;
  std::vector<std::string> notes;  // bottlenecks
  size_t best = 0;                 // index of the shortest time
};

// settings: factor values (the sweep factor's is taken from the sweep); factors with a model
// default may be omitted. Throws PredictError naming a factor that has no value.
Prediction Predict(const Model& model, const std::vector<double>& params,
                   const std::map<std::string, double>& settings, const Sweep& sweep);

}  // namespace invmw::fit
