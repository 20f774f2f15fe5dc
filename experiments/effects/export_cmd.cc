// `invmw results export --design NAME --format csv|extrap`: a design's successful runs for
// spreadsheets and other modelling tools.
#include <fstream>
#include <sstream>
#include <iostream>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "common/file_io.h"
#include "experiments/effects/cli_common.h"
#include "experiments/effects/results_export.h"
#include "results/results_db.h"

namespace invmw::effects {
namespace {

int Export(int argc, char** argv) {
  std::string design, db, format, output, platform;
  std::vector<std::string> where, responses;
  bool done = false;
  cli::Args args(
      "invmw results export --design NAME --format csv|extrap [options]",
      "Writes the successful runs (status 'ok') of a design from the results database:\n"
      "  csv     one row per run: point, replication, platform, then one column per factor and\n"
      "          per response (empty when a run did not record it); RFC 4180 quoting, numbers\n"
      "          with 17 significant digits.\n"
      "  extrap  Extra-P JSON lines, one per run and response:\n"
      "          {\"params\": {factor: value, ...}, \"metric\": response, \"value\": y}\n"
      "          Extra-P parameters are numbers: a string factor with a single value in the\n"
      "          selection is left out, one with several values needs --where.");
  args.Option("--design", "NAME", &design, "design name as stored in the database (required)")
      .Option("--db", "FILE", &db, results::kDbHelp)
      .Option("--format", "F", &format, "csv or extrap (required)")
      .Option("-o", "FILE", &output, "write to FILE instead of stdout")
      .Option("--output", "FILE", &output, "same as -o")
      .Option("--platform", "NAME", &platform, "only runs on this platform")
      .Repeated("--where", "FACTOR=VALUE", &where, "only runs with this factor level")
      .Repeated("--response", "R", &responses, "only these responses (default: all)")
      .Epilog(
          "Examples:\n"
          "  invmw results export --design opal-full --format csv -o opal.csv\n"
          "  invmw results export --design opal-full --format extrap --where cutoff=0 -o "
          "opal.jsonl");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (design.empty()) return cli::Fail("--design NAME is required (see --help)");
  if (format != "csv" && format != "extrap")
    return cli::Fail(format.empty() ? "--format csv|extrap is required (see --help)"
                                    : "--format '" + format + "': expected csv or extrap");
  ExportOptions options;
  options.platform = platform;
  options.responses = SplitNames(responses);
  for (const auto& w : where) {
    size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      return cli::Fail("--where '" + w + "': expected FACTOR=VALUE");
    options.where.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  std::string error, note;
  std::vector<Run> rows;
  const std::string db_path = results::DbPath(db, cli::ExecutableDir());
  if (!LoadDesignRows(db_path, design, &rows, &error)) return cli::Fail(error);

  // To a file: built in memory and renamed into place, so a failed export neither truncates
  // nor removes what the user had at that path.
  const bool to_file = !output.empty() && output != "-";
  std::ostringstream buffer;
  std::ostream& out = to_file ? static_cast<std::ostream&>(buffer) : std::cout;
  bool ok = format == "csv" ? WriteCsv(rows, options, out, &error)
                            : WriteExtrapJsonLines(rows, options, out, &note, &error);
  if (!ok) return cli::Fail(error);
  if (to_file) {
    try {
      WriteFileAtomic(output, buffer.str());
    } catch (const FileError& e) {
      return cli::Fail(e.what());
    }
  }
  if (!note.empty()) std::fprintf(stderr, "invmw: note: %s\n", note.c_str());
  return 0;
}

}  // namespace

INVMW_VERB("results export", "export a design's results as CSV or Extra-P JSON lines", Export);

}  // namespace invmw::effects
