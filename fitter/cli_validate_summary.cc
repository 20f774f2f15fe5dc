// `invmw validate summary`: validations pooled, per validation and over all of them, with the
// figures issue 20's benchmark judges (fitter/validate_summary.h).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/verb.h"
#include "fitter/cli_common.h"
#include "fitter/file_io.h"
#include "fitter/validate_summary.h"

namespace invmw::fit::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

nlohmann::json ToJson(const PooledFigures& f) {
  return {{"points", f.points},
          {"median_abs_error_pct", Num(f.median_abs_pct)},
          {"worst_abs_error_pct", Num(f.worst_abs_pct)},
          {"noise_floor_median_abs_error_pct", Num(f.noise_floor_median_abs_pct)},
          {"noise_floor_worst_abs_error_pct", Num(f.noise_floor_worst_abs_pct)},
          {"in_90", f.in90},
          {"with_90", f.with90},
          {"coverage_90",
           f.with90 ? nlohmann::json(static_cast<double>(f.in90) / f.with90) : nlohmann::json()}};
}

nlohmann::json ToJson(const ValidationPool& p) {
  nlohmann::json j;
  j["total"] = p.total;
  j["significant_share"] = p.significant_share;
  j["validations"] = nlohmann::json::array();
  for (const auto& v : p.validations) {
    nlohmann::json jv{{"file", v.file}, {"label", v.label}, {"total", ToJson(v.total)}};
    jv["components"] = nlohmann::json::object();
    for (const auto& [name, f] : v.components) jv["components"][name] = ToJson(f);
    j["validations"].push_back(jv);
  }
  j["all"]["total"] = ToJson(p.all_total);
  j["all"]["components"] = nlohmann::json::object();
  for (const auto& [name, f] : p.all_components) j["all"]["components"][name] = ToJson(f);
  return j;
}

std::string Coverage(const PooledFigures& f) {
  if (!f.with90) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%d/%d (%.0f%%)", f.in90, f.with90, 100.0 * f.in90 / f.with90);
  return buf;
}

void Row(const char* first, const std::string& label, const PooledFigures& f) {
  std::printf("%-12s %-44s %6d %s %s %s %s  %s\n", first, label.c_str(), f.points,
              Fmt(f.median_abs_pct, 12).c_str(), Fmt(f.noise_floor_median_abs_pct, 8).c_str(),
              Fmt(f.worst_abs_pct, 12).c_str(), Fmt(f.noise_floor_worst_abs_pct, 8).c_str(),
              Coverage(f).c_str());
}

void PrintText(const ValidationPool& p) {
  std::printf(
      "%zu validation(s) pooled; FLOOR: what an exact model would show over the same points, "
      "given each point's replications\n",
      p.validations.size());
  std::printf("\n%-12s %-44s %6s %12s %8s %12s %8s  %s\n", "RESPONSE", "VALIDATION", "POINTS",
              "MEDIAN|ERR|%", "FLOOR%", "WORST|ERR|%", "FLOOR%", "IN90");
  // The same target of several pipeline runs has one label: then the file tells them apart.
  std::map<std::string, int> uses;
  for (const auto& v : p.validations) ++uses[v.label];
  auto name = [&](const ValidationFigures& v) {
    return uses[v.label] > 1 ? v.label + " (" + v.file + ")" : v.label;
  };
  for (const auto& v : p.validations) Row(p.total.c_str(), name(v), v.total);
  Row(p.total.c_str(), "all", p.all_total);
  std::printf("\ncomponents, over the points where each is more than %g%% of the measured total:\n",
              100 * p.significant_share);
  for (const auto& component : p.components) {
    for (const auto& v : p.validations) {
      auto it = v.components.find(component);
      if (it != v.components.end()) Row(component.c_str(), name(v), it->second);
    }
    auto it = p.all_components.find(component);
    Row(component.c_str(), "all", it != p.all_components.end() ? it->second : PooledFigures());
  }
}

int RunValidateSummary(int argc, char** argv) {
  bool done = false, json = false;
  std::string out, share_text;
  std::vector<std::string> files;
  Args args(
      "invmw validate summary [options] VALIDATION.json...",
      "Pools `invmw validate --json` files (one per target platform, or the same targets over\n"
      "several pipeline runs) and reports, per validation and over all of them, the figures a\n"
      "prediction benchmark judges: the total's median and worst |error| and how many points\n"
      "lie inside their 90% intervals, and each component's median and worst |error| over the\n"
      "points where it is more than a share of the measured total (a component of a few\n"
      "milliseconds can be far off without mattering). Every figure comes with its noise\n"
      "floor: what an exact model would show over the same points, given each point's\n"
      "replications (a validation's own floors where it reports them; pooled floors are\n"
      "redrawn, seeded, from the points' floors).");
  args.Positional("VALIDATION.json", &files, 1, -1)
      .Option("--significant-share", "F", &share_text,
              "components count where they are more than this fraction of the measured total "
              "(default 0.1)")
      .Option("--out", "FILE", &out, "also write the JSON result to FILE")
      .Flag("--json", &json, "print JSON instead of text")
      .Epilog(
          "Example:\n"
          "  invmw validate summary out/validation/[0-9]*.json\n\n"
          "Exit status: 0, or 2 on bad input (a file that is not `invmw validate --json` output,\n"
          "validations of different models, a share outside [0, 1)).\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  double share = 0.1;
  if (!share_text.empty() && !ParseShare(share_text, &share))
    return Fail("validate summary: --significant-share " + share_text +
                ": expected a fraction of the total, 0 <= F < 1");
  try {
    ValidationPool p = PoolValidations(files, share);
    nlohmann::json j = ToJson(p);
    if (!out.empty()) WriteFileAtomic(out, j.dump(2) + "\n");
    if (json)
      std::printf("%s\n", j.dump(2).c_str());
    else
      PrintText(p);
    return 0;
  } catch (const std::exception& e) {
    return Fail(std::string("validate summary: ") + e.what());
  }
}

}  // namespace

INVMW_VERB("validate summary", "pool validations: the benchmark's figures over all targets",
           RunValidateSummary);

}  // namespace invmw::fit::cli
