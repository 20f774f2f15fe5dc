// `invmw fit`: calibrates a model file's parameters from measurements (the experiments' results
// database or a CSV file, both read into a DataTable) and reports estimates, intervals,
// validation errors and residuals as text or JSON, optionally writing the result as a platform
// table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "fitter/cli_common.h"
#include "fitter/derive.h"
#include "fitter/file_io.h"
#include "fitter/fit.h"
#include "fitter/platform_table.h"
#include "fitter/results_db.h"
#include "results/results_db.h"

namespace invmw::fit::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

// Measured responses no model expression is fitted to (opal: t_idle), reported so that what the
// model leaves out is visible next to what it explains.
struct Unmodelled {
  std::string column;
  int rows = 0;
  double mean = 0, min = 0, max = 0, share = NAN;  // share: mean of column / total's column
};

std::vector<Unmodelled> UnmodelledResponses(const Model& m, const DataTable& d) {
  std::vector<Unmodelled> out;
  int total = d.Column(m.total().column);
  for (const auto& name : d.response_columns) {
    bool modelled = false;
    for (const auto& r : m.responses()) modelled |= r.column == name;
    int c = d.Column(name);
    if (modelled || c < 0) continue;
    Unmodelled u;
    u.column = name;
    double sum = 0, share_sum = 0;
    int share_rows = 0;
    for (const auto& row : d.rows) {
      double v = row[c];
      if (!std::isfinite(v)) continue;
      u.min = u.rows ? std::min(u.min, v) : v;
      u.max = u.rows ? std::max(u.max, v) : v;
      sum += v;
      ++u.rows;
      if (total >= 0 && std::isfinite(row[total]) && row[total] > 0) {
        share_sum += v / row[total];
        ++share_rows;
      }
    }
    if (!u.rows) continue;
    u.mean = sum / u.rows;
    if (share_rows) u.share = share_sum / share_rows;
    out.push_back(u);
  }
  return out;
}

nlohmann::json ToJson(const Model& m, const DataTable& d, const FitOptions& o, const FitResult& r) {
  nlohmann::json j;
  j["model"] = m.name();
  j["model_file"] = m.source();
  j["data"] = d.source;
  j["weighting"] = o.weighting;
  j["converged"] = r.converged;
  j["solver_message"] = r.solver_message;
  j["iterations"] = r.iterations;
  j["starts"] = r.starts_run;
  j["observations"] = r.observations;
  j["dof"] = r.dof;
  j["sigma"] = Num(r.sigma);
  j["covariance_ok"] = r.covariance_ok;
  for (const auto& p : r.params) {
    j["parameters"].push_back({{"name", p.name},
                               {"unit", p.unit},
                               {"value", p.value},
                               {"std_error", Num(p.std_error)},
                               {"ci_low", Num(p.ci_low)},
                               {"ci_high", Num(p.ci_high)},
                               {"fixed", p.fixed},
                               {"unused", p.unused},
                               {"at_bound", p.at_bound}});
  }
  j["correlation"] = nlohmann::json::array();
  for (const auto& row : r.correlation) {
    nlohmann::json jr = nlohmann::json::array();
    for (double v : row) jr.push_back(Num(v));
    j["correlation"].push_back(jr);
  }
  for (const auto& s : r.responses) {
    j["responses"].push_back(
        {{"name", s.name},
         {"column", s.column},
         {"points", s.points},
         {"r2", Num(s.r2)},
         {"mape", Num(s.mape)},
         {"max_ape", Num(s.max_ape)},
         {"cv_mape", s.cv_mape < 0 ? nlohmann::json() : Num(s.cv_mape)},
         {"cv_max_ape", s.cv_max_ape < 0 ? nlohmann::json() : Num(s.cv_max_ape)}});
  }
  for (const auto& p : r.residuals) {
    // The factor values let a plot label and group design points without the data file.
    nlohmann::json factors = nlohmann::json::object();
    for (const auto& f : m.factors()) {
      int col = d.Column(f.name);
      if (col >= 0) factors[f.name] = Num(d.rows[p.row][col]);
    }
    j["residuals"].push_back(
        {{"row", p.row},
         {"point", p.row < d.groups.size() ? d.groups[p.row] : static_cast<long>(p.row)},
         {"factors", factors},
         {"origin", d.RowOrigin(p.row)},
         {"response", p.response},
         {"measured", p.measured},
         {"predicted", p.predicted},
         {"residual", p.residual},
         {"ape", Num(p.ape)}});
  }
  j["unmodelled"] = nlohmann::json::array();
  for (const auto& u : UnmodelledResponses(m, d))
    j["unmodelled"].push_back({{"column", u.column},
                               {"rows", u.rows},
                               {"mean", u.mean},
                               {"min", u.min},
                               {"max", u.max},
                               {"share_of_total", Num(u.share)}});
  j["identifiability"] = nlohmann::json::array();
  for (const auto& e : r.identifiability)
    j["identifiability"].push_back(
        {{"parameter", e.parameter}, {"reason", e.reason}, {"remedy", e.remedy}});
  // The parameter covariance (units of the parameters), for prediction intervals (invmw predict
  // --fit, invmw validate --fit).
  j["covariance"] = nlohmann::json::array();
  for (const auto& row : r.covariance) {
    nlohmann::json jr = nlohmann::json::array();
    for (double v : row) jr.push_back(Num(v));
    j["covariance"].push_back(jr);
  }
  j["loss"] = o.loss;
  j["warnings"] = r.warnings;
  return j;
}

void PrintText(const Model& m, const DataTable& d, const FitOptions& o, const FitResult& r) {
  std::printf("model %s (%s) fitted to %s: %zu rows, %d observations, dof %d\n", m.name().c_str(),
              m.source().c_str(), d.source.c_str(), d.rows.size(), r.observations, r.dof);
  std::printf("weighting %s, loss %s, starts %d; solver %s after %d iterations: %s\n",
              o.weighting.c_str(), o.loss.c_str(), r.starts_run,
              r.converged ? "converged" : "did NOT converge", r.iterations,
              r.solver_message.c_str());
  std::printf("residual standard deviation %s (%s)\n\n", Fmt(r.sigma, 0).c_str(),
              o.weighting == "absolute" ? "s"
              : o.weighting == "total"  ? "relative; components as a fraction of their run's total"
                                        : "relative");
  std::printf("%-10s %-7s %11s %11s %11s %11s %8s  %s\n", "PARAMETER", "UNIT", "ESTIMATE",
              "STD.ERROR", "CI.LOW", "CI.HIGH", "REL.SE%", "NOTE");
  for (const auto& p : r.params) {
    std::string note = p.fixed ? "fixed" : p.unused ? "not in any fitted response" : "";
    if (p.at_bound) note = "at bound";
    std::printf("%-10s %-7s %s %s %s %s %s  %s\n", p.name.c_str(), p.unit.c_str(),
                Fmt(p.value).c_str(), Fmt(p.std_error).c_str(), Fmt(p.ci_low).c_str(),
                Fmt(p.ci_high).c_str(), Fmt(100 * p.std_error / std::fabs(p.value), 8).c_str(),
                note.c_str());
  }
  std::printf("(%g%% confidence intervals from the covariance, Student t with %d dof)\n",
              100 * o.confidence, r.dof);
  for (const auto& e : r.identifiability)
    std::printf("not determined by this design: %s (%s); remedy: %s\n", e.parameter.c_str(),
                e.reason.c_str(), e.remedy.c_str());
  std::printf("\n");
  if (r.covariance_ok) {
    std::printf("correlation %*s", 0, "");
    for (const auto& p : r.params) std::printf("%8s", p.name.c_str());
    std::printf("\n");
    for (size_t i = 0; i < r.params.size(); ++i) {
      std::printf("%-12s", r.params[i].name.c_str());
      for (size_t k = 0; k < r.params.size(); ++k) std::printf("%8.3f", r.correlation[i][k]);
      std::printf("\n");
    }
    std::printf("\n");
  }
  std::printf("%-12s %-12s %6s %9s %9s %9s %10s %10s\n", "RESPONSE", "COLUMN", "POINTS", "R2",
              "MAPE%", "MAX.APE%", "LOO.MAPE%", "LOO.MAX%");
  for (const auto& s : r.responses) {
    std::printf("%-12s %-12s %6d %s %s %s %s %s\n", s.name.c_str(), s.column.c_str(), s.points,
                Fmt(s.r2, 9).c_str(), Fmt(s.mape, 9).c_str(), Fmt(s.max_ape, 9).c_str(),
                Fmt(s.cv_mape < 0 ? NAN : s.cv_mape, 10).c_str(),
                Fmt(s.cv_max_ape < 0 ? NAN : s.cv_max_ape, 10).c_str());
  }
  std::vector<Unmodelled> um = UnmodelledResponses(m, d);
  if (!um.empty()) {
    std::printf("\nmeasured, not modelled (reported, not fitted):\n");
    for (const auto& u : um)
      std::printf("  %-12s mean %s s, %s..%s s over %d rows; %s%% of %s on average\n",
                  u.column.c_str(), Fmt(u.mean, 0).c_str(), Fmt(u.min, 0).c_str(),
                  Fmt(u.max, 0).c_str(), u.rows, Fmt(100 * u.share, 0).c_str(),
                  m.total().column.c_str());
  }
  auto where = [&](size_t row) {
    if (row < d.labels.size()) return d.labels[row];
    if (row < d.lines.size() && d.lines[row] > 0) return std::to_string(d.lines[row]);
    return "row " + std::to_string(row + 1);
  };
  int width = 12;
  for (const auto& p : r.residuals) width = std::max(width, static_cast<int>(where(p.row).size()));
  std::printf("\n%-*s %-12s %11s %11s %9s\n", width, d.labels.empty() ? "DATA LINE" : "RUN",
              "RESPONSE", "MEASURED", "PREDICTED", "ERROR%");
  for (const auto& p : r.residuals) {
    std::printf("%-*s %-12s %s %s %s\n", width, where(p.row).c_str(), p.response.c_str(),
                Fmt(p.measured).c_str(), Fmt(p.predicted).c_str(),
                Fmt(100 * p.residual / p.measured, 9).c_str());
  }
  for (const auto& w : r.warnings) std::fprintf(stderr, "invmw: warning: %s\n", w.c_str());
}

int RunFit(int argc, char** argv) {
  bool done = false, json = false, no_cv = false, force = false;
  std::string model_name, data_path, design, db_path, run_platform,
      weighting = "relative", loss = "none", loss_scale, starts, seed, out_table, platform_name,
      base_table, tables_dir;
  std::vector<std::string> responses, fixes, derives, fixes_from;
  Args args("invmw fit --model MODEL (--design NAME [--db FILE] | --data FILE.csv) [options]",
            "Calibrates the parameters of a model file from measurements with Ceres Solver\n"
            "(least squares, exact derivatives). Reports estimates, standard errors, confidence\n"
            "intervals, correlations, R2, percentage errors, leave-one-out cross-validation and\n"
            "the residual of every design point.\n"
            "Measurements come from the results database (every successful run of the design,\n"
            "replications as separate rows; factor and response names are the columns) or from\n"
            "a CSV file. The model's total is fitted to its column (t_wall for opal) and each\n"
            "component to its own (t_comm, ...), jointly, wherever the data have them.");
  args.Option("--model", "MODEL", &model_name, "built-in model name (opal, dyana, ...) or file")
      .Option("--design", "NAME", &design, "fit the runs of this design from the results database")
      .Option("--db", "FILE", &db_path, results::kDbHelp)
      .Option("--platform", "NAME", &run_platform,
              "only runs on this run platform (needed when the design ran on several)")
      .Option("--data", "FILE", &data_path, "CSV: header of factor and response column names")
      .Option("--weighting", "W", &weighting,
              "relative (default: error / measured value), total (a component's error / the run's "
              "measured total) or absolute")
      .Option("--loss", "L", &loss, "robust loss: none (default), huber, cauchy")
      .Option("--loss-scale", "X", &loss_scale, "where the robust loss bends (default 0.1)")
      .Option("--starts", "N", &starts, "number of starts (extra ones sampled inside bounds)")
      .Option("--seed", "N", &seed, "random seed for the extra starts")
      .Repeated("--response", "NAME", &responses, "fit only this response")
      .Repeated("--fix", "NAME=VALUE", &fixes, "hold a parameter at a value")
      .Repeated("--fix-from", "NAME=TABLE", &fixes_from,
                "hold a parameter at TABLE's value of it (e.g. a probed table's a2); the "
                "written table names TABLE and its source")
      .Repeated("--derive", "F=EXPR", &derives,
                "add factor F computed from the data's columns (model expression syntax), e.g. "
                "nt from rc, or s=10")
      .Flag("--no-cv", &no_cv, "skip leave-one-out cross-validation")
      .Flag("--json", &json, "machine-readable output")
      .Option("--out", "FILE", &out_table, "write the fitted parameters as a platform table")
      .Option("--out-table", "FILE", &out_table, "same as --out")
      .Flag("--force", &force, "overwrite an existing --out table")
      .Option("--platform-name", "NAME", &platform_name, "name in the written table")
      .Option("--base-table", "TABLE", &base_table,
              "copy [measures] and [kernels] of this table into the written one")
      .Option("--tables", "DIR", &tables_dir, "directory of platform tables (for --base-table)")
      .Epilog(
          "Examples:\n  invmw fit --model opal --design opal-full --platform local --out "
          "local.toml\n"
          "  invmw fit --model opal --data runs.csv --json > fit.json   # input of `invmw plot`\n"
          "  invmw fit --model opal --design opal-full --derive s=10 \\\n"
          "      --derive 'nt=if(rc > 0, 4/3*3.14159265*rc^3*0.0334, 1e9)'  # rows record rc\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (model_name.empty()) return Fail("fit: --model is required");
  if (data_path.empty() == design.empty())
    return Fail("fit: give either --design NAME (results database) or --data FILE.csv");
  if (design.empty() && (!db_path.empty() || !run_platform.empty()))
    return Fail("fit: --db and --platform select runs of a --design; they do not apply to --data");
  // As `platform probe`: a calibrated table is not overwritten by accident (checked before the
  // fit, which can take long).
  if (!out_table.empty() && !force && access(out_table.c_str(), F_OK) == 0)
    return Fail("fit: " + out_table + " exists (use --force to overwrite it)");
  FitOptions o;
  o.weighting = weighting;
  o.loss = loss;
  o.responses = responses;
  o.cross_validate = !no_cv;
  std::string err;
  if (!ParseAssignments(fixes, "--fix", &o.fixed, &err)) return Fail(err);
  auto integer = [&](const std::string& s, const char* opt, int* out) {
    if (s.empty()) return true;
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0') {
      err = std::string(opt) + " '" + s + "': expected an integer";
      return false;
    }
    *out = static_cast<int>(v);
    return true;
  };
  int seed_v = 1;
  if (!integer(starts, "--starts", &o.starts) || !integer(seed, "--seed", &seed_v))
    return Fail(err);
  o.seed = static_cast<unsigned>(seed_v);
  if (!loss_scale.empty()) {
    char* end = nullptr;
    o.loss_scale = std::strtod(loss_scale.c_str(), &end);
    if (*end != '\0') return Fail("--loss-scale '" + loss_scale + "': expected a number");
  }
  if (!o.IsValid(&err)) return Fail("fit: " + err);
  std::map<std::string, std::string> fixed_source;  // parameter -> where its value came from
  try {
    for (const auto& f : fixes_from) {
      size_t eq = f.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == f.size())
        return Fail("fit: --fix-from '" + f + "': expected NAME=TABLE");
      std::string name = f.substr(0, eq);
      PlatformTable t = LoadPlatformTable(ResolvePlatformTable(f.substr(eq + 1), tables_dir));
      const TableValue* v = t.Parameter(name);
      if (!v)
        return Fail("fit: --fix-from " + f + ": table " + t.path + " has no parameter '" + name +
                    "'");
      if (o.fixed.count(name)) return Fail("fit: " + name + " is held by --fix and --fix-from");
      o.fixed[name] = v->value;
      fixed_source[name] = "fixed from table " + t.name + " (" + v->source + ")";
    }
    if (!o.IsValid(&err)) return Fail("fit: " + err);
    Model m = Model::Load(ResolveModelPath(model_name));
    DataTable d = design.empty()
                      ? ReadCsv(data_path)
                      : LoadResults(results::DbPath(db_path, invmw::cli::ExecutableDir()),
                                    {design, run_platform});
    AddDerivedColumns(&d, derives);
    FitResult r = Fit(m, d, o);
    if (json) {
      std::printf("%s\n", ToJson(m, d, o, r).dump(2).c_str());
    } else {
      PrintText(m, d, o, r);
    }
    if (!out_table.empty()) {
      PlatformTable t;
      if (!base_table.empty()) t = LoadPlatformTable(ResolvePlatformTable(base_table, tables_dir));
      t.parameters.clear();
      t.name =
          platform_name.empty() ? (t.name.empty() ? m.name() + "-fit" : t.name) : platform_name;
      if (t.title.empty()) t.title = t.name;
      char date[32];
      std::time_t now = std::time(nullptr);
      std::strftime(date, sizeof date, "%Y-%m-%d", std::localtime(&now));
      t.description = "calibrated by invmw fit of model " + m.name() + " to " + d.source + " on " +
                      date + (t.description.empty() ? "" : "; base: " + t.description);
      for (const auto& p : r.params) {
        TableValue v;
        v.name = p.name;
        v.value = p.value;
        v.unit = p.unit;
        v.std_error = std::isfinite(p.std_error) ? p.std_error : -1;
        v.source = fixed_source.count(p.name) ? fixed_source[p.name]
                   : p.fixed                  ? "held fixed in the fit"
                   : p.unused                 ? "model initial value (not in any fitted response)"
                                              : "fit of " + m.name() + " to " + d.source;
        t.parameters.push_back(v);
      }
      WriteFileAtomic(out_table, FormatPlatformTable(t));
      std::fprintf(stderr, "invmw: wrote platform table %s\n", out_table.c_str());
    }
    return r.converged ? 0 : 1;
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

}  // namespace

INVMW_VERB("fit", "calibrate a model's parameters from measurements", RunFit);

}  // namespace invmw::fit::cli
