// Figures a person opens: the time breakdown per process count (stacked bars, Figure 1 of the
// Opal paper), measured against predicted time per design point (Figure 4), and predicted time
// and speedup per platform (Figures 5-6), drawn by gnuplot as SVG and PNG.
//
// Why gnuplot scripts on disk: a figure must be reproducible and adjustable without invmw. Every
// plot writes NAME.dat (the numbers, whitespace-separated with a '#' header naming the columns),
// NAME.gp (a self-contained gnuplot script that reads NAME.dat from its own directory and writes
// NAME.svg and NAME.png), then runs `gnuplot NAME.gp` there. Editing the script and rerunning
// gnuplot regenerates the images; the data file is what tests and people check numbers against.
//
// The builders below turn invmw's outputs into plot data and never run anything; Render() writes
// and runs. Contract: builders throw PlotError naming the input and what is missing or
// inconsistent; Render throws PlotError when a file cannot be written or gnuplot fails (the
// message carries gnuplot's own error), after the script and data are on disk.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "fitter/data_table.h"

namespace invmw::fit {

struct PlotError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Stacked time components per value of one factor (usually the process count).
struct BreakdownData {
  std::string title, x_name;
  std::vector<double> x;
  std::vector<std::string> components;
  std::vector<std::vector<double>> values;  // [x index][component], seconds; mean of the runs
  std::string total_name;                   // e.g. "t_wall"; empty: no total drawn
  std::vector<double> total;                // [x index] mean measured total (points on the bars)
  std::vector<int> runs;                    // [x index] rows averaged
};

// From measurements (results database or CSV). Rows are filtered by `where` (column = value),
// then grouped by `x_name`; each component is averaged over a group's rows. `components` empty:
// the contract's components present in the data (t_par_comp, t_seq_comp, t_comm, t_sync,
// t_idle). Throws when rows of one group differ in another factor (the figure would mix design
// points), naming the factor and its values so the caller can add a `where`.
BreakdownData BreakdownFromTable(const DataTable& data, const std::string& x_name,
                                 const std::vector<std::pair<std::string, double>>& where,
                                 std::vector<std::string> components,
                                 const std::string& total_name);
// From `invmw predict --json` output: one platform's predicted components over the sweep.
BreakdownData BreakdownFromPrediction(const nlohmann::json& prediction, const std::string& platform,
                                      const std::string& source);

// Measured against predicted values of one response per design point.
struct MeasuredPredictedData {
  std::string title, response;
  std::vector<std::string> labels;  // varying factors of the point, e.g. "n=2000 u=1 p=3"
  std::vector<double> measured_mean, measured_min, measured_max, predicted;
  std::vector<int> runs;
  bool log_y = false;  // timings across a design span decades
};
// From `invmw fit --json` output. `response`: a response name or its column; empty: the total
// (the first response of the fit). Points are the fit's design points (replications grouped),
// optionally only those whose factors match `where` (one panel of Figure 4).
MeasuredPredictedData MeasuredPredictedFromFit(
    const nlohmann::json& fit, const std::string& response, const std::string& source,
    const std::vector<std::pair<std::string, double>>& where = {});

// Predicted time and speedup of several platforms over one sweep.
struct PredictionPlotData {
  std::string title, x_name;
  std::vector<double> x;
  std::vector<std::string> platforms;
  std::vector<std::vector<double>> time, speedup;  // [platform][x index]
};
PredictionPlotData PredictionFromJson(const nlohmann::json& prediction, const std::string& source);

struct PlotOptions {
  std::string out;                                 // path without extension, e.g. "plots/fig1"
  std::vector<std::string> formats{"svg", "png"};  // any of svg, png
  bool render = true;                              // false: write NAME.dat and NAME.gp only
  std::string command_line;                        // recorded in the script's header
};

struct PlotFiles {
  std::string data, script;
  std::vector<std::string> images;
  std::string gnuplot_messages;  // what gnuplot printed (warnings) when it succeeded
};

// Text of the data file and script; `base` is the file name without directory or extension.
std::string BreakdownDat(const BreakdownData& d);
std::string BreakdownScript(const BreakdownData& d, const std::string& base,
                            const std::vector<std::string>& terminals);
std::string MeasuredPredictedDat(const MeasuredPredictedData& d);
std::string MeasuredPredictedScript(const MeasuredPredictedData& d, const std::string& base,
                                    const std::vector<std::string>& terminals);
std::string PredictionDat(const PredictionPlotData& d);
std::string PredictionScript(const PredictionPlotData& d, const std::string& base,
                             const std::vector<std::string>& terminals);

// The gnuplot terminal per format: "svg", and "pngcairo" when this gnuplot has it, else "png".
std::vector<std::string> Terminals(const std::vector<std::string>& formats);

PlotFiles Render(const BreakdownData& d, const PlotOptions& o);
PlotFiles Render(const MeasuredPredictedData& d, const PlotOptions& o);
PlotFiles Render(const PredictionPlotData& d, const PlotOptions& o);

}  // namespace invmw::fit
