// `invmw effects --design NAME`: main effects, interactions, allocation of variation and
// confidence intervals of a design's responses, from the results database.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "common/file_io.h"
#include "experiments/effects/cli_common.h"
#include "experiments/effects/effects.h"
#include "experiments/effects/effects_report.h"
#include "results/results_db.h"

namespace invmw::effects {
namespace {

bool ParseCount(const std::string& s, const char* option, int min, int* out, std::string* error) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || v < min || v > 1000000) {
    *error = std::string(option) + " '" + s + "': expected an integer >= " + std::to_string(min);
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

// "0.9" or "90%"; a bare "90" is refused rather than guessed.
bool ParseConfidence(const std::string& s, double* out, std::string* error) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  bool percent = *end == '%' && end[1] == '\0';
  if (s.empty() || (*end && !percent) || !std::isfinite(v)) v = -1;
  if (percent) v /= 100;
  if (!(v > 0 && v < 1)) {
    *error = "--confidence '" + s + "': expected a level between 0 and 1, e.g. 0.90 or 90%";
    return false;
  }
  *out = v;
  return true;
}

int Effects(int argc, char** argv) {
  std::string design, db, json, platform, confidence, max_order, replications, method = "auto";
  std::vector<std::string> responses;
  bool log = false, all_effects = false, done = false;
  cli::Args args(
      "invmw effects --design NAME [options]",
      "Computes the main effects and interactions of a factorial design's responses, the\n"
      "allocation of variation (the percentage of the total variation each factor and\n"
      "interaction explains, and the error's when the design is replicated), and confidence\n"
      "intervals for the effects from the replications (Jain, \"The Art of Computer Systems\n"
      "Performance Analysis\", ch. 17-23). It reads the design's successful runs (status 'ok')\n"
      "from the results database that `invmw experiment run` and the CTest designs fill.\n\n"
      "Two-level designs, full or regular 2^(k-p) fractions, are analysed with the sign table\n"
      "(q0, qA, qAB, ... and, for a fraction, the confounding pattern); designs with more\n"
      "levels with the general k-factor method (an effect per level and level combination).\n"
      "Factor levels may be numbers (ordered ascending) or strings (in design order).\n"
      "Without replications there is no error term: every interaction is estimated, no\n"
      "intervals are given, unless --max-order pools the higher interactions into the error.");
  args.Option("--design", "NAME", &design, "design name as stored in the database (required)")
      .Option("--db", "FILE", &db, results::kDbHelp)
      .Repeated("--response", "R", &responses,
                "analyse this response (comma-separated lists too; default: every response "
                "recorded)")
      .Option("--json", "FILE", &json,
              "also write the analysis as JSON to FILE ('-': stdout "
              "instead of the text)")
      .Option("--platform", "NAME", &platform,
              "use the runs on this platform (needed when the same points ran on several)")
      .Option("--confidence", "LEVEL", &confidence,
              "confidence level of the intervals "
              "(default 0.90, as in Jain)")
      .Option("--max-order", "N", &max_order,
              "estimate interactions up to N factors, pool higher ones into the error (default: "
              "all)")
      .Option("--replications", "N", &replications,
              "use the first N successful replications of each point (default: all, which must "
              "be equally many)")
      .Flag("--log", &log, "analyse log10 of the responses (multiplicative effects, Jain 18.8)")
      .Option("--method", "M", &method, "auto (default), sign (sign table) or general")
      .Flag("--all-effects", &all_effects,
            "text: list every interaction effect of multi-level designs too")
      .Epilog(
          "Examples:\n"
          "  invmw effects --design opal-full --response t_wall\n"
          "  invmw effects --design smoke --db results.db --json effects.json\n"
          "  invmw effects --design opal-full --max-order 2 --log\n\n"
          "Exit status: 0 on success, 2 on bad usage or data (missing design points, unequal\n"
          "replications, a response some runs lack), each named in the message.");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (design.empty()) return cli::Fail("--design NAME is required (see --help)");

  AnalyzeRequest req;
  req.design = design;
  req.db = results::DbPath(db, cli::ExecutableDir());
  req.platform = platform;
  req.responses = SplitNames(responses);
  req.collect.log10 = log;
  std::string error;
  if (!confidence.empty() && !ParseConfidence(confidence, &req.analysis.confidence, &error))
    return cli::Fail(error);
  if (!max_order.empty() &&
      !ParseCount(max_order, "--max-order", 1, &req.analysis.max_order, &error))
    return cli::Fail(error);
  if (!replications.empty() &&
      !ParseCount(replications, "--replications", 1, &req.collect.replications, &error))
    return cli::Fail(error);
  if (method == "sign") {
    req.force = AnalyzeRequest::Force::kSignTable;
  } else if (method == "general") {
    req.force = AnalyzeRequest::Force::kGeneral;
  } else if (method != "auto") {
    return cli::Fail("--method '" + method + "': expected auto, sign or general");
  }

  std::vector<Run> rows;
  if (!LoadDesignRows(req.db, design, &rows, &error)) return cli::Fail(error);
  EffectsReport report;
  if (!AnalyzeDesign(rows, req, &report, &error)) return cli::Fail(error);

  if (json == "-") {
    std::cout << ToJson(report).dump(2) << "\n";
    return 0;
  }
  std::cout << FormatText(report, TextOptions{all_effects});
  if (!json.empty()) {
    try {
      WriteFileAtomic(json, ToJson(report).dump(2) + "\n");
    } catch (const FileError& e) {
      return cli::Fail(e.what());
    }
  }
  return 0;
}

}  // namespace

INVMW_VERB("effects", "effects, interactions and allocation of variation of a design", Effects);

}  // namespace invmw::effects
