// `invmw plot breakdown|measured-vs-predicted|predict`: the figures of the method (Figures 1, 4
// and 5-6 of the Opal paper) from the results database, a CSV file, or the JSON written by
// `invmw fit --json` and `invmw predict --json`. Each writes NAME.dat, NAME.gp, NAME.svg and
// NAME.png (see fitter/plot.h).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "fitter/cli_common.h"
#include "fitter/plot.h"
#include "fitter/results_db.h"
#include "results/results_db.h"

namespace invmw::fit::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

// Options every plot verb shares.
struct Output {
  std::string out, formats = "svg,png";
  bool no_render = false;
  void Declare(Args* a) {
    a->Option("--out", "DIR/NAME", &out,
              "output path without extension: writes NAME.dat, NAME.gp, NAME.svg, NAME.png")
        .Option("--format", "LIST", &formats, "images to draw: svg,png (default both)")
        .Flag("--no-render", &no_render, "write the data and gnuplot script only");
  }
  PlotOptions Options(int argc, char** argv) const {
    PlotOptions o;
    o.out = out;
    o.formats.clear();
    std::stringstream ss(formats);
    std::string f;
    while (std::getline(ss, f, ','))
      if (!f.empty()) o.formats.push_back(f);
    o.render = !no_render;
    o.command_line = "invmw plot";
    for (int i = 0; i < argc; ++i) o.command_line += std::string(" ") + argv[i];
    return o;
  }
};

int Report(const PlotFiles& f) {
  std::printf("data   %s\nscript %s\n", f.data.c_str(), f.script.c_str());
  for (const auto& img : f.images) std::printf("image  %s\n", img.c_str());
  if (!f.gnuplot_messages.empty())
    std::fprintf(stderr, "invmw: gnuplot said:\n%s", f.gnuplot_messages.c_str());
  return 0;
}

nlohmann::json ReadJson(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path);
    if (!in) throw PlotError(path + ": cannot open");
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw PlotError((path == "-" ? std::string("standard input") : path) +
                    ": not a JSON object (expected the output of invmw fit/predict --json)");
  return j;
}

int RunBreakdown(int argc, char** argv) {
  bool done = false;
  std::string design, db, platform, data, prediction, x = "p", total = "t_wall";
  std::vector<std::string> where, components;
  Output out;
  Args args(
      "invmw plot breakdown (--design D [--db FILE] [--platform P] | --data FILE.csv |\n"
      "                      --prediction PRED.json [--platform P]) --out DIR/NAME [options]",
      "Stacked bars of the time components per process count (Figure 1 of the Opal paper):\n"
      "the mean of every component over the runs with that process count, and the measured\n"
      "total as a point on each bar. Other factors must be the same within a bar: pin them\n"
      "with --where (e.g. --where n=2000 --where u=1 --where nt=100). With --prediction, the\n"
      "predicted components of one platform from `invmw predict --json`.");
  args.Option("--design", "NAME", &design, "runs of this design from the results database")
      .Option("--db", "FILE", &db, "results database (default as for invmw fit)")
      .Option("--platform", "NAME", &platform, "run platform (database) or predicted platform")
      .Option("--data", "FILE", &data, "CSV measurements instead of the database")
      .Option("--prediction", "FILE", &prediction, "output of invmw predict --json ('-': stdin)")
      .Option("--x", "FACTOR", &x, "factor on the x axis (default p)")
      .Repeated("--where", "F=V", &where, "keep only rows with this factor value")
      .Repeated("--component", "NAME", &components,
                "component to stack (default: t_par_comp t_seq_comp t_comm t_sync t_idle present)")
      .Option("--total", "NAME", &total, "measured total drawn on the bars (default t_wall; none)");
  out.Declare(&args);
  args.Epilog(
      "Example:\n  invmw plot breakdown --design opal-full --platform local --where n=2000 \\\n"
      "      --where u=1 --where nt=100 --out plots/breakdown\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  int sources = !design.empty() + !data.empty() + !prediction.empty();
  if (sources != 1)
    return Fail("plot breakdown: give exactly one of --design, --data and --prediction");
  if (out.out.empty()) return Fail("plot breakdown: --out DIR/NAME is required");
  std::map<std::string, double> filters;
  std::string err;
  if (!ParseAssignments(where, "--where", &filters, &err)) return Fail(err);
  try {
    BreakdownData d;
    if (!prediction.empty()) {
      if (!where.empty() || !components.empty())
        return Fail("plot breakdown: --where and --component apply to measurements only");
      d = BreakdownFromPrediction(ReadJson(prediction), platform, prediction);
    } else {
      DataTable t = data.empty() ? LoadResults(results::DbPath(db, invmw::cli::ExecutableDir()),
                                               {design, platform})
                                 : ReadCsv(data);
      d = BreakdownFromTable(t, x, {filters.begin(), filters.end()}, components,
                             total == "none" ? "" : total);
    }
    return Report(Render(d, out.Options(argc, argv)));
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

int RunMeasuredPredicted(int argc, char** argv) {
  bool done = false, log_y = false;
  std::string fit, response;
  std::vector<std::string> where;
  Output out;
  Args args("invmw plot measured-vs-predicted --fit FIT.json --out DIR/NAME [options]",
            "Measured against predicted time per design point (Figure 4 of the Opal paper):\n"
            "bars of the mean measurement (with the spread of the replications) and of the\n"
            "calibrated model's prediction, labelled by the factors that vary. FIT.json is the\n"
            "output of `invmw fit ... --json`.");
  args.Option("--fit", "FILE", &fit, "output of invmw fit --json ('-': standard input)")
      .Option("--response", "NAME", &response,
              "response or its column (default: the total, e.g. t_wall)")
      .Repeated("--where", "F=V", &where, "only design points with this factor value")
      .Flag("--log", &log_y, "logarithmic time axis");
  out.Declare(&args);
  args.Epilog(
      "Example:\n  invmw fit --model opal --design opal-full --json > fit.json\n"
      "  invmw plot measured-vs-predicted --fit fit.json --out plots/measured-vs-predicted\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (fit.empty()) return Fail("plot measured-vs-predicted: --fit FILE is required");
  if (out.out.empty()) return Fail("plot measured-vs-predicted: --out DIR/NAME is required");
  std::map<std::string, double> filters;
  std::string err;
  if (!ParseAssignments(where, "--where", &filters, &err)) return Fail(err);
  try {
    MeasuredPredictedData d =
        MeasuredPredictedFromFit(ReadJson(fit), response, fit, {filters.begin(), filters.end()});
    d.log_y = log_y;
    return Report(Render(d, out.Options(argc, argv)));
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

int RunPredictPlot(int argc, char** argv) {
  bool done = false;
  std::string prediction;
  Output out;
  Args args("invmw plot predict --prediction PRED.json --out DIR/NAME [options]",
            "Predicted time and speedup per platform over the sweep (Figures 5-6 of the Opal\n"
            "paper), side by side. PRED.json is the output of `invmw predict ... --json`.");
  args.Option("--prediction", "FILE", &prediction,
              "output of invmw predict --json ('-': standard input)");
  out.Declare(&args);
  args.Epilog(
      "Example:\n  invmw predict --model opal --platform cray-j90 --platform fast-cops \\\n"
      "      --set n=4289 --set nt=140 --set s=10 --set u=1 --sweep p=1..7 --json > pred.json\n"
      "  invmw plot predict --prediction pred.json --out plots/predict\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (prediction.empty()) return Fail("plot predict: --prediction FILE is required");
  if (out.out.empty()) return Fail("plot predict: --out DIR/NAME is required");
  try {
    PredictionPlotData d = PredictionFromJson(ReadJson(prediction), prediction);
    return Report(Render(d, out.Options(argc, argv)));
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

}  // namespace

INVMW_VERB("plot breakdown", "stacked time components per process count (SVG, PNG)", RunBreakdown);
INVMW_VERB("plot measured-vs-predicted", "measured vs model time per design point (SVG, PNG)",
           RunMeasuredPredicted);
INVMW_VERB("plot predict", "predicted time and speedup per platform (SVG, PNG)", RunPredictPlot);

}  // namespace invmw::fit::cli
