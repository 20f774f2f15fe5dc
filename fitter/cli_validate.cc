// `invmw validate`: measured runs of a design against the model's predictions for the same
// points, with the parameters of a calibrated table (held-out points on the calibration
// platform) or of a calibrated reference transferred to a target's probed table.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "fitter/cli_common.h"
#include "fitter/derive.h"
#include "fitter/file_io.h"
#include "fitter/predict.h"
#include "fitter/results_db.h"
#include "fitter/validate.h"
#include "results/results_db.h"

namespace invmw::fit::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

nlohmann::json Number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

nlohmann::json ToJson(const Model& m, const PlatformTable& table, const PlatformTable* ref,
                      const ResolvedParameters& rp, const std::string& design,
                      const std::string& run_platform, const std::string& db,
                      const std::string& label, const Validation& v) {
  nlohmann::json j;
  j["label"] = label;
  j["model"] = m.name();
  j["total"] = m.total().name;
  j["design"] = design;
  j["run_platform"] = run_platform;
  j["db"] = db;
  j["table"] = table.name;
  j["reference"] = ref ? nlohmann::json(ref->name) : nlohmann::json();
  j["rule"] =
      "replications of a point averaged; error = (predicted - measured mean) / measured mean; "
      "summary = median and worst |error| over the points";
  j["parameters"] = nlohmann::json::array();
  for (size_t k = 0; k < m.parameters().size(); ++k)
    j["parameters"].push_back({{"name", m.parameters()[k].name},
                               {"unit", m.parameters()[k].unit},
                               {"value", rp.values[k]},
                               {"origin", rp.origins[k]}});
  j["notes"] = rp.notes;
  j["points"] = nlohmann::json::array();
  for (const auto& p : v.points) {
    nlohmann::json jp{{"point", p.group}, {"factors", p.factors}, {"runs", p.runs}};
    for (const auto& r : p.responses) {
      jp["responses"][r.name] = {{"column", r.column},       {"replications", r.measured},
                                 {"mean", Number(r.mean)},   {"min", Number(r.min)},
                                 {"max", Number(r.max)},     {"sd", Number(r.sd)},
                                 {"predicted", r.predicted}, {"error_pct", Number(r.error_pct)}};
    }
    j["points"].push_back(jp);
  }
  for (const auto& s : v.summary) {
    j["summary"][s.name] = {{"column", s.column},
                            {"points", s.points},
                            {"unmeasured", s.unmeasured},
                            {"median_abs_error_pct", Number(s.median_abs_pct)},
                            {"mean_abs_error_pct", Number(s.mean_abs_pct)},
                            {"worst_abs_error_pct", Number(s.worst_abs_pct)},
                            {"worst_point", s.worst_group}};
  }
  return j;
}

void PrintText(const Model& m, const PlatformTable& table, const PlatformTable* ref,
               const ResolvedParameters& rp, const std::string& design,
               const std::string& run_platform, const Validation& v) {
  std::printf("validation of model %s on runs of design %s (run platform %s)\n", m.name().c_str(),
              design.c_str(), run_platform.empty() ? "as recorded" : run_platform.c_str());
  std::printf("parameters: table %s%s\n", table.name.c_str(),
              ref ? (", transferred from reference " + ref->name).c_str() : " as calibrated");
  for (size_t k = 0; k < m.parameters().size(); ++k)
    std::printf("  %-4s %s %-5s %s\n", m.parameters()[k].name.c_str(), Fmt(rp.values[k]).c_str(),
                m.parameters()[k].unit.c_str(), rp.origins[k].c_str());
  for (const auto& n : rp.notes) std::printf("  note: %s\n", n.c_str());
  const auto& rs = m.responses();
  std::printf("\n%-6s %-28s %4s %11s %10s %11s %8s\n", "POINT", "FACTORS", "REPS", "MEASURED[s]",
              "SD[s]", "PREDICTED", "ERROR%");
  for (const auto& p : v.points) {
    std::string f;
    for (const auto& [name, value] : p.factors) {
      if (m.FactorIndex(name) >= 0 && m.factors()[m.FactorIndex(name)].has_default) continue;
      char buf[48];
      std::snprintf(buf, sizeof buf, "%s%s=%g", f.empty() ? "" : " ", name.c_str(), value);
      f += buf;
    }
    const auto& t = p.responses.front();
    std::printf("%-6ld %-28s %4d %s %s %s %s\n", p.group, f.c_str(), t.measured,
                Fmt(t.mean).c_str(), Fmt(t.sd, 10).c_str(), Fmt(t.predicted).c_str(),
                Fmt(t.error_pct, 8).c_str());
  }
  std::printf("\n%-12s %-12s %6s %12s %12s %12s\n", "RESPONSE", "MEASURED AS", "POINTS",
              "MEDIAN|ERR|%", "MEAN|ERR|%", "WORST|ERR|%");
  for (size_t k = 0; k < rs.size(); ++k) {
    const auto& s = v.summary[k];
    std::printf("%-12s %-12s %6d %s %s %s", s.name.c_str(), s.column.c_str(), s.points,
                Fmt(s.median_abs_pct, 12).c_str(), Fmt(s.mean_abs_pct, 12).c_str(),
                Fmt(s.worst_abs_pct, 12).c_str());
    if (s.worst_group >= 0) std::printf(" (point %ld)", s.worst_group);
    if (s.unmeasured) std::printf(" [%d point(s) without a measured value]", s.unmeasured);
    std::printf("\n");
  }
}

int RunValidate(int argc, char** argv) {
  bool done = false, json = false;
  std::string model_name, design, db_path, run_platform, table_name, reference, tables_dir, label,
      out;
  std::vector<std::string> sets, derives;
  Args args(
      "invmw validate --model MODEL --design NAME --table TABLE [--reference TABLE] [options]",
      "Predicts every design point of a design's measured runs (results database) and\n"
      "reports per point the measured time (mean, spread over replications), the predicted\n"
      "time and the error, for the total and every component, then the median and worst\n"
      "absolute error per response. Without --reference, TABLE's parameters are used as they\n"
      "are (a calibrated table on held-out points of its own platform); with --reference, the\n"
      "calibrated reference is transferred to TABLE (a target's probed table) by the rule of\n"
      "invmw predict: a1, b1, b5 from TABLE, a2..a4 scaled by the kernel-time ratio.\n"
      "Rule: error = (predicted - measured mean) / measured mean, in percent.");
  args.Option("--model", "MODEL", &model_name, "built-in model name or file")
      .Option("--design", "NAME", &design, "the measured runs: this design's rows")
      .Option("--db", "FILE", &db_path, results::kDbHelp)
      .Option("--platform", "NAME", &run_platform,
              "only runs on this run platform (needed when the design ran on several)")
      .Option("--table", "TABLE", &table_name, "platform table whose parameters predict (required)")
      .Option("--reference", "TABLE", &reference, "calibrated table to transfer from to --table")
      .Option("--tables", "DIR", &tables_dir, "directory of platform tables")
      .Repeated("--set", "F=V", &sets, "value of a factor the runs do not record")
      .Repeated("--derive", "F=EXPR", &derives,
                "factor F computed from the runs' columns, as for invmw fit")
      .Option("--label", "TEXT", &label, "name of this validation in reports (default: TABLE)")
      .Option("--out", "FILE", &out, "also write the JSON result to FILE")
      .Flag("--json", &json, "print JSON instead of text")
      .Epilog(
          "Examples:\n"
          "  invmw validate --model opal --design val --platform emu-4x50-100mbit \\\n"
          "      --table probed-100mbit.toml --reference calibrated.toml\n"
          "  invmw validate --model opal --design holdout --table calibrated.toml --json\n\n"
          "Exit status: 0, or 2 on bad input (no such design, platform or table; a factor the\n"
          "model needs that neither the runs nor --set give).\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (model_name.empty()) return Fail("validate: --model is required");
  if (design.empty()) return Fail("validate: --design is required");
  if (table_name.empty()) return Fail("validate: --table is required");
  std::map<std::string, double> settings;
  std::string err;
  if (!ParseAssignments(sets, "--set", &settings, &err)) return Fail(err);
  try {
    Model m = Model::Load(ResolveModelPath(model_name));
    PlatformTable table = LoadPlatformTable(ResolvePlatformTable(table_name, tables_dir));
    std::unique_ptr<PlatformTable> ref;
    if (!reference.empty())
      ref = std::make_unique<PlatformTable>(
          LoadPlatformTable(ResolvePlatformTable(reference, tables_dir)));
    ResolvedParameters rp = ResolveParameters(m, table, ref.get());
    std::string db = results::DbPath(db_path, invmw::cli::ExecutableDir());
    DataTable d = LoadResults(db, {design, run_platform});
    AddDerivedColumns(&d, derives);
    Validation v = Validate(m, rp.values, d, settings);
    nlohmann::json j = ToJson(m, table, ref.get(), rp, design, run_platform, db,
                              label.empty() ? table.name : label, v);
    if (!out.empty()) {
      WriteFileAtomic(out, j.dump(2) + "\n");
    }
    if (json)
      std::printf("%s\n", j.dump(2).c_str());
    else
      PrintText(m, table, ref.get(), rp, design, run_platform, v);
    return 0;
  } catch (const std::exception& e) {
    return Fail(std::string("validate: ") + e.what());
  }
}

}  // namespace

INVMW_VERB("validate", "measured runs of a design against the model's predictions", RunValidate);

}  // namespace invmw::fit::cli
