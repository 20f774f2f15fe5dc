// `invmw report DIR`: the HTML page of a pipeline run (scripts/pipeline.sh).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/verb.h"
#include "report/html_report.h"

namespace invmw::report {
namespace {

int Report(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string out;
  cli::Args args("invmw report [--out FILE] DIR",
                 "Writes one static HTML page (no network needed: plots are inline SVG) with the\n"
                 "results of a pipeline run in DIR (scripts/pipeline.sh): the example's profile,\n"
                 "the fitted model parameters with their errors, measured vs predicted times, the\n"
                 "measured breakdown, and the predictions per platform. It reads\n"
                 "DIR/profile/profile.json, DIR/fit.json, DIR/predictions.json and\n"
                 "DIR/plots/{measured-vs-predicted,breakdown,predict}.svg; a missing or malformed\n"
                 "one is an error naming the file (and field).");
  args.Option("--out", "FILE", &out,
              "page to write (default: DIR/report.html; '-': standard output)")
      .Positional("DIR", &pos, 1, 1)
      .Epilog("example:\n  scripts/pipeline.sh --quick --out pl && invmw report pl");
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  std::string page;
  try {
    page = BuildHtmlReport(pos[0]);
  } catch (const ReportError& e) {
    return cli::Fail(e.what());
  }
  if (out == "-") {
    std::fwrite(page.data(), 1, page.size(), stdout);
    return 0;
  }
  if (out.empty()) out = pos[0] + "/report.html";
  std::ofstream f(out, std::ios::binary);
  if (!(f << page) || !f.flush()) return cli::Fail("cannot write " + out);
  std::printf("report written to %s\n", out.c_str());
  return 0;
}

}  // namespace
}  // namespace invmw::report

INVMW_VERB("report", "static HTML page of a pipeline run: profile, fit, plots, predictions",
           invmw::report::Report);
