// `invmw report DIR`: the HTML page of a pipeline run (scripts/pipeline.sh).
#include <cerrno>
#include <cstdio>
#include <cstring>
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
                 "Writes one static HTML page (no network needed: plots are embedded SVG images)\n"
                 "with the results of a pipeline run in DIR (scripts/pipeline.sh): the example's\n"
                 "profile, the fitted model parameters with their errors, measured vs predicted\n"
                 "times, the measured breakdown, and the predictions per platform. It reads\n"
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
  // A temporary name first: an interrupted or failed write never leaves a truncated page.
  const std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << page;
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      return cli::Fail("cannot write " + out);
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::remove(tmp.c_str());
    return cli::Fail("cannot write " + out + ": " + std::strerror(errno));
  }
  std::printf("report written to %s\n", out.c_str());
  return 0;
}

}  // namespace
}  // namespace invmw::report

INVMW_VERB("report", "static HTML page of a pipeline run: profile, fit, plots, predictions",
           invmw::report::Report);
