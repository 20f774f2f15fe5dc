// `invmw predict --replay RUN_DIR --platform TABLE ...`: the run's trace replayed by SimGrid on
// each target platform (issue 19 item 3). `invmw predict` (fitter/) hands its arguments here when
// they contain --replay: fitter/ may not read traces (docs/architecture.md), this part may.
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/verb.h"
#include "fitter/platform_table.h"
#include "fitter/simgrid_export.h"
#include "otf2_reader/trace_reader.h"
#include "replay/simgrid_run.h"
#include "replay/ti_convert.h"

namespace invmw::replay {
namespace {

namespace fs = std::filesystem;
using invmw::cli::Args;
using invmw::cli::Fail;

// Removes the files this verb wrote into its own temporary directory, then the directory.
struct WorkDir {
  std::string path;
  ~WorkDir() {
    if (path.empty()) return;
    for (const char* n : {"platform.xml", "hostfile", "replay.paje", "index.txt"})
      ::unlink((path + "/" + n).c_str());
    for (int r = 0; r < ranks; ++r)
      ::unlink((path + "/rank-" + std::to_string(r) + ".txt").c_str());
    ::rmdir(path.c_str());
  }
  int ranks = 0;
};

int RunPredictReplay(int argc, char** argv) {
  // Reached as "predict --replay DIR ..." from main (argv[0] == "--replay") or from
  // `invmw predict` with the whole argument list (argv[0] == "predict").
  std::vector<std::string> words;
  words.push_back("predict");
  if (std::string(argv[0]) == "--replay") words.push_back("--replay");
  for (int i = 1; i < argc; ++i) words.push_back(argv[i]);
  std::vector<char*> av;
  for (auto& w : words) av.push_back(w.data());
  av.push_back(nullptr);

  bool done = false, json = false, no_split = false;
  std::string run_dir, reference, tables_dir, nodes_text, keep, smpirun = "smpirun";
  std::vector<std::string> platforms;
  Args args("invmw predict --replay RUN_DIR --platform TABLE [--platform TABLE2 ...]",
            "Replays the run's OTF2 trace (RUN_DIR/traces.otf2, `invmw run --trace`) with\n"
            "SimGrid on every target platform: computation bursts between MPI calls become\n"
            "amounts of work (measured seconds x the --reference table's host speed, run at the\n"
            "target's speed), messages and collectives keep their sizes, the rank count is the\n"
            "trace's own. Calls SimGrid's replay cannot express are listed with their time.");
  args.Option("--replay", "RUN_DIR", &run_dir, "run directory (or .otf2 anchor) to replay")
      .Repeated("--platform", "TABLE", &platforms, "target platform table name or file")
      .Option("--reference", "TABLE", &reference,
              "the table the run was measured on (its host speed scales the bursts)")
      .Option("--nodes", "N", &nodes_text, "hosts of the simulated cluster (default: ranks)")
      .Option("--tables", "DIR", &tables_dir, "directory of platform tables")
      .Option("--keep", "DIR", &keep,
              "keep the TI traces, platform, hostfile and Paje trace in DIR/TABLE/ (created; must "
              "be new or empty)")
      .Option("--smpirun", "PROG", &smpirun, "SimGrid's smpirun (default: from PATH)")
      .Flag("--no-split", &no_split,
            "no per-rank split (ranks[] empty): SimGrid without its Paje trace, ~4x faster "
            "and in constant memory on large traces")
      .Flag("--json", &json, "machine-readable output")
      .Epilog(
          "Example:\n  invmw run --trace -o run1 -np 4 ./app\n"
          "  invmw predict --replay run1 --reference fast-cops --platform slow-cops "
          "--platform fast-cops --json\n\n"
          "Rules and limits: docs/fitter.md \"Trace replay (`invmw predict --replay`)\".\n");
  if (int rc = args.Parse(static_cast<int>(words.size()), av.data(), &done); rc || done) return rc;
  if (run_dir.empty()) return Fail("predict --replay: RUN_DIR is required");
  if (platforms.empty()) return Fail("predict --replay: at least one --platform is required");
  int nodes = 0;
  if (!nodes_text.empty()) {
    char* end = nullptr;
    long n = std::strtol(nodes_text.c_str(), &end, 10);
    if (nodes_text.empty() || *end || n < 1 || n > 1000000)
      return Fail("predict --replay: --nodes '" + nodes_text +
                  "': expected an integer from 1 to 1000000");
    nodes = static_cast<int>(n);
  }
  std::string anchor = run_dir;
  if (fs::is_directory(run_dir)) anchor = (fs::path(run_dir) / "traces.otf2").string();
  if (!fs::exists(anchor))
    return Fail(anchor + ": no trace (run with `invmw run --trace`, or name the .otf2 anchor)");
  try {
    const otf2::Trace trace = otf2::ReadTrace(anchor);
    ConvertOptions co;
    std::string reference_name;
    if (!reference.empty()) {
      fit::PlatformTable ref =
          fit::LoadPlatformTable(fit::ResolvePlatformTable(reference, tables_dir));
      fit::SimgridOptions so;
      co.measured_speed_flops = fit::ExportSimgrid(ref, so).speed_flops;
      reference_name = ref.name;
    }
    std::vector<fit::PlatformTable> tables;
    for (const auto& p : platforms)
      tables.push_back(fit::LoadPlatformTable(fit::ResolvePlatformTable(p, tables_dir)));

    nlohmann::json out;
    out["run"] = run_dir;
    out["trace"] = anchor;
    out["reference"] = reference_name.empty() ? nlohmann::json() : nlohmann::json(reference_name);
    out["platforms"] = nlohmann::json::array();
    int ranks = 0;
    for (const auto& table : tables) {
      fit::SimgridOptions so;
      // Unscaled bursts keep their measured seconds: written at the target's speed.
      ConvertOptions this_co = co;
      fit::SimgridPlatform plat0 = fit::ExportSimgrid(table, so);
      if (this_co.measured_speed_flops <= 0) this_co.measured_speed_flops = plat0.speed_flops;
      Conversion conv = ConvertTrace(trace, this_co);
      ranks = conv.ranks;
      so.nodes = nodes > 0 ? std::max(nodes, 2) : std::max(conv.ranks, 2);
      fit::SimgridPlatform plat = fit::ExportSimgrid(table, so);

      WorkDir wd;
      std::string dir;
      if (!keep.empty()) {
        dir = (fs::path(keep) / table.name).string();
        std::error_code ec;
        // Never overwrite what an earlier run (or the user) put there.
        if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
          throw std::runtime_error("--keep: " + dir +
                                   " exists and is not empty; name a new directory");
        fs::create_directories(dir, ec);
        if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
      } else {
        const char* tmp = std::getenv("TMPDIR");
        std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/invmw-replay-XXXXXX";
        if (!mkdtemp(tmpl.data())) throw std::runtime_error(tmpl + ": cannot create directory");
        dir = wd.path = tmpl;
        wd.ranks = conv.ranks;
      }
      const std::string index = WriteTiTraces(conv, dir);
      ReplayResult rr = RunReplay(plat, conv.ranks, nodes, index, dir, smpirun, !no_split);

      nlohmann::json pj;
      pj["table"] = table.name;
      pj["predicted_wall_s"] = rr.predicted_wall_s;
      pj["measured_wall_s"] = conv.measured_wall_s;
      pj["speedup"] = rr.predicted_wall_s > 0 ? conv.measured_wall_s / rr.predicted_wall_s : 0;
      pj["ranks"] = nlohmann::json::array();
      for (const auto& r : rr.ranks)
        pj["ranks"].push_back({{"rank", r.rank},
                               {"computation_s", r.computation_s},
                               {"communication_s", r.communication_s},
                               {"wait_s", r.wait_s}});
      pj["unexpressed"] = nlohmann::json::array();
      for (const auto& u : conv.unexpressed)
        pj["unexpressed"].push_back({{"function", u.function},
                                     {"calls", u.calls},
                                     {"time_s", u.time_s},
                                     {"share", u.share}});
      out["platforms"].push_back(pj);
    }
    // Also with --json (stdout stays machine-readable): calls left out of the simulation make
    // the prediction too short by up to their time, which a user must not miss.
    if (!out["platforms"].empty() && !out["platforms"][0]["unexpressed"].empty()) {
      double share = 0;
      std::string names;
      for (const auto& u : out["platforms"][0]["unexpressed"]) {
        share += u["share"].get<double>();
        names += (names.empty() ? "" : ", ") + u["function"].get<std::string>();
      }
      std::fprintf(stderr,
                   "invmw: warning: predict --replay: calls SimGrid's replay cannot express are "
                   "not simulated (%.2f%% of the ranks' measured time; a probe's wait moves to "
                   "the receive after it): %s\n",
                   100 * share, names.c_str());
    }
    out["ranks"] = ranks;
    if (json) {
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    std::printf("replay of %s (%d ranks), bursts scaled from %s\n", anchor.c_str(), ranks,
                reference_name.empty() ? "(none: measured seconds at the target's speed)"
                                       : reference_name.c_str());
    for (const auto& pj : out["platforms"]) {
      std::printf("\nplatform %s: predicted %.6g s, measured %.6g s, speedup %.4g\n",
                  pj["table"].get<std::string>().c_str(), pj["predicted_wall_s"].get<double>(),
                  pj["measured_wall_s"].get<double>(), pj["speedup"].get<double>());
      if (pj["ranks"].empty())
        std::printf("  per-rank split not computed (--no-split)\n");
      else
        std::printf("  %5s %14s %16s %10s\n", "rank", "computation_s", "communication_s", "wait_s");
      for (const auto& r : pj["ranks"])
        std::printf("  %5d %14.6g %16.6g %10.6g\n", r["rank"].get<int>(),
                    r["computation_s"].get<double>(), r["communication_s"].get<double>(),
                    r["wait_s"].get<double>());
      if (pj["unexpressed"].empty()) {
        std::printf("  every MPI call was expressed\n");
      } else {
        std::printf("  not replayed (SimGrid cannot express them; their time is not simulated):\n");
        for (const auto& u : pj["unexpressed"])
          std::printf("    %-40s %8llu calls %12.6g s %6.2f%%\n",
                      u["function"].get<std::string>().c_str(),
                      static_cast<unsigned long long>(u["calls"].get<uint64_t>()),
                      u["time_s"].get<double>(), 100 * u["share"].get<double>());
      }
    }
    return 0;
  } catch (const std::exception& e) {
    return Fail(std::string("predict --replay: ") + e.what());
  }
}

}  // namespace

int PredictReplayMain(int argc, char** argv) {
  return RunPredictReplay(argc, argv);
}

}  // namespace invmw::replay

INVMW_VERB("predict --replay", "predict a traced run's time on platforms by SimGrid replay",
           invmw::replay::PredictReplayMain);
