// Prediction intervals (issue 20, item 6): where a measured time will lie, from the calibrated
// parameters' covariance (delta method, gradients by central differences through the model's
// expressions) plus the measured noise model (the calibration's residual standard deviation,
// which holds per-run noise, drift and quota stalls as the calibration runs saw them).
//
// Why log-normal: run times are positive and their noise is multiplicative, so a relative
// standard deviation s gives [y exp(-z s), y exp(z s)]; a prediction of zero or less falls back
// to y -/+ z sd. The noise of a statistic of R replications shrinks as 1/R (mean) or pi/(2R)
// (median, its asymptotic efficiency under Gaussian noise).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "fitter/model.h"
#include "fitter/predict.h"

namespace invmw::fit {

// The interval levels, in the order of the JSON keys interval_80, interval_90, interval_95.
constexpr std::array<double, 3> kIntervalLevels = {0.80, 0.90, 0.95};
constexpr std::array<const char*, 3> kIntervalKeys = {"interval_80", "interval_90", "interval_95"};

// The model's own error (issue 20, item 6), per response, from the calibration's residuals in
// log space: the replications of a point differ by run-to-run noise only (noise_sd_log, which
// shrinks with the replications of the measured statistic), while the points' mean residuals
// scatter by that noise over the replications plus the model's discrepancy (model_sd_log, which
// no replication removes). Robust: the points' spread is the median |mean log residual| / 0.6745
// (about zero, so a systematic offset of the fit counts as model error), the noise the median of
// the points' replication variances over its expectation. points == 0: no estimate (a fit
// without residuals or replications; the intervals then use the fit's sigma alone).
struct ModelDiscrepancy {
  std::string response;
  double model_sd_log = 0;  // discrepancy of a point's true value from the model, log units
  double noise_sd_log = 0;  // per-run noise of one run, log units
  int points = 0;           // calibration points with a usable (positive) residual
  // The transfer rule's own error (predicting another platform), from transfer checks
  // (AddTransferError); added to model_sd_log in quadrature.
  double transfer_sd_log = 0;
};

// One calibration residual: design point (replications share it), measured and predicted value.
struct CalibrationResidual {
  std::string response;
  long point = 0;
  double measured = 0, predicted = 0;
};

// Per response of the model (model.responses() order); responses without residuals get points 0.
std::vector<ModelDiscrepancy> EstimateModelError(const Model& model,
                                                 const std::vector<CalibrationResidual>& residuals);

// A transfer check: `invmw validate --json` of calibration runs (never the held-out runs that
// are being predicted) predicted through the transfer rule from this fit, e.g. the calibration
// design on the reference predicted from the reference's own probes (how far probe-derived
// parameters are from the fitted ones), or the calibration design of another calibrated platform
// (leave one platform out). Per response, the points' robust spread of log(measured / predicted)
// beyond what model_sd_log and the check's replication noise explain is the transfer error; with
// several checks the largest counts. Responses without a model error estimate are left alone.
// Throws PredictError naming the file and what is missing.
void AddTransferError(const std::string& path, const Model& model,
                      std::vector<ModelDiscrepancy>* model_error);

// What a fit says about its own uncertainty (`invmw fit --json`): parameter values and
// covariance in model order, the residual standard deviation and the weighting it is in.
struct FitUncertainty {
  std::vector<std::string> names;
  std::vector<double> values;
  std::vector<std::vector<double>> covariance;  // NaN entries (fixed, undetermined) count as 0
  double sigma = 0;                             // per-run residual sd, in weighting units
  std::string weighting = "relative";           // "relative", "total" or "absolute"
  // From the fit's residuals (model.responses() order); empty when the fit has none.
  std::vector<ModelDiscrepancy> model_error;
};

// Reads `invmw fit --json` output. Throws PredictError naming the file and what is missing, or
// a parameter the model has and the fit lacks.
FitUncertainty LoadFitUncertainty(const std::string& path, const Model& model);

// The covariance of resolved parameters (model order): a value taken from the reference's
// calibration keeps its variance scaled by (resolved / fitted)^2 (the transfer rule's ratio);
// with `transferred`, a value from a target's probed table counts as exact (its probe noise is
// not in the fit); without, every value is the calibrated table's own.
std::vector<std::vector<double>> TransferCovariance(const Model& model, const FitUncertainty& fit,
                                                    const ResolvedParameters& resolved,
                                                    bool transferred);

struct Interval {
  double low = 0, high = 0;
};

struct ResponseInterval {
  double predicted = 0;
  double sd_param = 0, sd_noise = 0;    // absolute, of the prediction and of the measured value
  double model_sd_log = 0;              // the model's own error in the interval (log units)
  double transfer_sd_log = 0;           // the transfer rule's error in the interval (log units)
  std::array<Interval, 3> intervals{};  // kIntervalLevels order
};

// Intervals for every response of the model (model.responses() order) at one point. factors:
// model factor order. replications/statistic: the measured value is the "mean" or "median" of
// that many runs (1: a single run). model_error (model.responses() order, optional): a response
// with an estimate (points > 0) takes its per-run noise from noise_sd_log instead of sigma and
// adds model_sd_log, which does not shrink with the replications.
std::vector<ResponseInterval> PredictionIntervals(
    const Model& model, const std::vector<double>& factors, const std::vector<double>& params,
    const std::vector<std::vector<double>>& cov, double sigma, const std::string& weighting,
    int replications, const std::string& statistic,
    const std::vector<ModelDiscrepancy>* model_error = nullptr);

// Standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9).
double NormalQuantile(double p);

}  // namespace invmw::fit
