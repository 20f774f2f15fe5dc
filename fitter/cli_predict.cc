// `invmw predict`: time, components and speedup of a model over a sweep, for several platforms
// side by side, with the transfer rule applied when a calibrated reference table is given.
#include <cmath>
#include <cstdio>
#include <string>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/verb.h"
#include "fitter/cli_common.h"
#include "fitter/interval.h"
#include "fitter/predict.h"

namespace invmw::fit::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

int RunPredict(int argc, char** argv) {
  // `--replay RUN_DIR` replaces --model/--set/--sweep: the trace replay lives in replay/ (it
  // reads traces, which fitter/ may not) and registers itself as the verb "predict --replay".
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--replay" || std::string(argv[i]).rfind("--replay=", 0) == 0) {
      for (const auto& v : invmw::cli::Verbs())
        if (std::string(v.name) == "predict --replay") return v.run(argc, argv);
      return Fail("predict: --replay is not available in this build (replay/ not linked)");
    }
  bool done = false, json = false;
  std::string model_name, sweep_text, reference, tables_dir, fit_json, statistic = "median";
  std::string replications_text = "1";
  std::vector<std::string> platforms, sets, transfer_checks;
  Args args(
      "invmw predict --model MODEL --platform P [--platform Q ...] --set F=V ... --sweep F=A..B",
      "Predicts the time, its components and the speedup (relative to the first sweep\n"
      "point) for every platform. With --reference, the target tables give a1, b1, b5\n"
      "(transfer = \"table\") and the reference's calibrated compute parameters are scaled\n"
      "by kernel-time or compute-rate ratios; the output says where every value came from.\n"
      "--replay RUN_DIR replaces --model/--set/--sweep: the run's trace is replayed by\n"
      "SimGrid on every platform (`invmw predict --replay RUN_DIR --help`).");
  args.Option("--model", "MODEL", &model_name, "built-in model name or file")
      .Repeated("--platform", "P", &platforms, "platform table name or file")
      .Repeated("--set", "F=V", &sets, "application factor value")
      .Option("--sweep", "F=A..B", &sweep_text, "factor to vary: A..B, A..B:STEP or V1,V2,...")
      .Option("--reference", "TABLE", &reference, "calibrated table to transfer from")
      .Option("--tables", "DIR", &tables_dir, "directory of platform tables")
      .Option("--fit", "FIT.json", &fit_json,
              "`invmw fit --json` of the calibration: 80/90/95% prediction intervals per point "
              "and response from its parameter covariance and residual noise")
      .Repeated("--transfer-check", "VALIDATION.json", &transfer_checks,
                "with --fit: `invmw validate --json` of calibration runs predicted through the "
                "transfer rule; their error beyond the model's widens the intervals")
      .Option("--replications", "R", &replications_text,
              "with --fit: intervals for the statistic of R runs (default 1: one run)")
      .Option("--statistic", "S", &statistic, "with --fit and R > 1: median (default) or mean")
      .Flag("--json", &json, "machine-readable output")
      .Epilog(
          "Example:\n  invmw predict --model opal --platform cray-j90 --platform fast-cops \\\n"
          "      --set n=4289 --set nt=140 --set s=10 --set u=1 --sweep p=1..7\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (model_name.empty()) return Fail("predict: --model is required");
  if (platforms.empty()) return Fail("predict: at least one --platform is required");
  if (sweep_text.empty()) return Fail("predict: --sweep is required (e.g. p=1..7)");
  if (!transfer_checks.empty() && fit_json.empty())
    return Fail("predict: --transfer-check needs --fit");
  int replications = 0;
  try {
    size_t used = 0;
    replications = std::stoi(replications_text, &used);
    if (used != replications_text.size()) replications = 0;
  } catch (const std::exception&) {
  }
  if (replications < 1)
    return Fail("predict: --replications must be a whole number >= 1, got '" + replications_text +
                "'");
  if (statistic != "median" && statistic != "mean")
    return Fail("predict: --statistic must be median or mean, got '" + statistic + "'");
  std::map<std::string, double> settings;
  std::string err;
  if (!ParseAssignments(sets, "--set", &settings, &err)) return Fail(err);
  try {
    Model m = Model::Load(ResolveModelPath(model_name));
    Sweep sweep = ParseSweep(sweep_text);
    std::unique_ptr<PlatformTable> ref;
    if (!reference.empty())
      ref = std::make_unique<PlatformTable>(
          LoadPlatformTable(ResolvePlatformTable(reference, tables_dir)));
    std::vector<PlatformTable> tables;
    std::vector<ResolvedParameters> resolved;
    std::vector<Prediction> preds;
    for (const auto& p : platforms) {
      tables.push_back(LoadPlatformTable(ResolvePlatformTable(p, tables_dir)));
      resolved.push_back(ResolveParameters(m, tables.back(), ref.get()));
      preds.push_back(Predict(m, resolved.back().values, settings, sweep));
      preds.back().platform = tables.back().name;
    }
    // Intervals per platform and sweep point (model.responses() order), with --fit.
    std::vector<std::vector<std::vector<ResponseInterval>>> intervals(tables.size());
    if (!fit_json.empty()) {
      FitUncertainty fu = LoadFitUncertainty(fit_json, m);
      for (const auto& c : transfer_checks) AddTransferError(c, m, &fu.model_error);
      for (size_t i = 0; i < tables.size(); ++i) {
        auto cov = TransferCovariance(m, fu, resolved[i], ref != nullptr);
        for (double x : sweep.values) {
          std::vector<double> f;
          for (const auto& fac : m.factors()) {
            auto it = settings.find(fac.name);
            f.push_back(fac.name == sweep.factor ? x
                        : it != settings.end()   ? it->second
                                                 : fac.default_value);
          }
          intervals[i].push_back(PredictionIntervals(m, f, resolved[i].values, cov, fu.sigma,
                                                     fu.weighting, replications, statistic,
                                                     &fu.model_error));
        }
      }
    }
    const auto& rs = m.responses();
    const auto& params = m.parameters();
    if (json) {
      nlohmann::json j;
      j["model"] = m.name();
      j["settings"] = settings;
      j["sweep"] = sweep.factor;
      for (size_t i = 0; i < tables.size(); ++i) {
        nlohmann::json jp;
        jp["platform"] = tables[i].name;
        for (size_t k = 0; k < params.size(); ++k) {
          jp["parameters"].push_back({{"name", params[k].name},
                                      {"unit", params[k].unit},
                                      {"value", resolved[i].values[k]},
                                      {"origin", resolved[i].origins[k]}});
        }
        jp["notes"] = resolved[i].notes;
        for (const auto& n : preds[i].notes) jp["notes"].push_back(n);
        for (size_t r = 0; r < preds[i].points.size(); ++r) {
          const auto& pt = preds[i].points[r];
          nlohmann::json jpt{{sweep.factor, pt.x}, {"time", pt.time}, {"speedup", pt.speedup}};
          for (size_t c = 0; c < pt.components.size(); ++c) jpt[rs[c + 1].name] = pt.components[c];
          if (!intervals[i].empty()) {
            for (size_t k = 0; k < rs.size(); ++k) {
              const ResponseInterval& ri = intervals[i][r][k];
              nlohmann::json jr{{"predicted", ri.predicted},
                                {"sd_parameters", ri.sd_param},
                                {"sd_noise", ri.sd_noise},
                                {"model_error_sd_log", ri.model_sd_log},
                                {"transfer_error_sd_log", ri.transfer_sd_log}};
              for (size_t l = 0; l < ri.intervals.size(); ++l)
                jr[kIntervalKeys[l]] = {ri.intervals[l].low, ri.intervals[l].high};
              jpt["responses"][rs[k].name] = jr;
            }
          }
          jp["points"].push_back(jpt);
        }
        jp["best"] = preds[i].points[preds[i].best].x;
        j["platforms"].push_back(jp);
      }
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("model %s;", m.name().c_str());
    for (const auto& f : m.factors()) {
      if (f.name == sweep.factor) continue;
      auto it = settings.find(f.name);
      std::printf(" %s=%g%s", f.name.c_str(), it != settings.end() ? it->second : f.default_value,
                  it != settings.end() ? "" : " (default)");
    }
    std::printf("\n\n%-14s", "PARAMETER");
    for (const auto& t : tables) std::printf(" %14s", t.name.c_str());
    std::printf("\n");
    for (size_t k = 0; k < params.size(); ++k) {
      std::string label = params[k].name + " [" + params[k].unit + "]";
      std::printf("%-14s", label.c_str());
      for (const auto& r : resolved) std::printf(" %s", Fmt(r.values[k], 14).c_str());
      std::printf("\n");
    }
    if (ref) {
      std::printf("\nparameter origins (reference %s):\n", ref->name.c_str());
      for (size_t i = 0; i < tables.size(); ++i)
        for (size_t k = 0; k < params.size(); ++k)
          std::printf("  %s %s: %s\n", tables[i].name.c_str(), params[k].name.c_str(),
                      resolved[i].origins[k].c_str());
    }
    std::printf("\n%-8s", sweep.factor.c_str());
    for (const auto& t : tables) std::printf(" %22s", t.name.c_str());
    std::printf("\n%-8s", "");
    for (size_t i = 0; i < tables.size(); ++i) std::printf(" %11s %10s", "TIME[s]", "SPEEDUP");
    std::printf("\n");
    for (size_t r = 0; r < sweep.values.size(); ++r) {
      std::printf("%-8g", sweep.values[r]);
      for (const auto& p : preds)
        std::printf(" %s %s", Fmt(p.points[r].time).c_str(), Fmt(p.points[r].speedup, 10).c_str());
      std::printf("\n");
    }
    if (!fit_json.empty()) {
      std::printf("\n90%% prediction intervals of %s [s] (%d run%s%s):\n", rs[0].name.c_str(),
                  replications, replications > 1 ? "s, " : "",
                  replications > 1 ? statistic.c_str() : "");
      for (size_t r = 0; r < sweep.values.size(); ++r) {
        std::printf("%-8g", sweep.values[r]);
        for (size_t i = 0; i < tables.size(); ++i)
          std::printf(" %s..%s", Fmt(intervals[i][r][0].intervals[1].low, 0).c_str(),
                      Fmt(intervals[i][r][0].intervals[1].high, 0).c_str());
        std::printf("\n");
      }
    }
    if (rs.size() > 1) {
      for (const auto& p : preds) {
        std::printf("\n%s components [s]:\n%-8s %11s", p.platform.c_str(), sweep.factor.c_str(),
                    rs[0].name.c_str());
        for (size_t c = 1; c < rs.size(); ++c) std::printf(" %11s", rs[c].name.c_str());
        std::printf("\n");
        for (const auto& pt : p.points) {
          std::printf("%-8g %s", pt.x, Fmt(pt.time).c_str());
          for (double v : pt.components) std::printf(" %s", Fmt(v).c_str());
          std::printf("\n");
        }
      }
    }
    std::printf("\nnotes:\n");
    for (size_t i = 0; i < preds.size(); ++i) {
      for (const auto& n : resolved[i].notes)
        std::printf("%s: %s\n", preds[i].platform.c_str(), n.c_str());
      for (const auto& n : preds[i].notes)
        std::printf("%s: %s\n", preds[i].platform.c_str(), n.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

}  // namespace

INVMW_VERB("predict", "predict time, components and speedup on platforms", RunPredict);

}  // namespace invmw::fit::cli
