// `invmw analyze DIR`: the inverse mapping of a traced run, as text and JSON.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "analysis/analysis.h"
#include "cli/args.h"
#include "cli/verb.h"
#include "common/file_io.h"

namespace invmw::analysis {
namespace {
namespace fs = std::filesystem;
using cli::Args;
using cli::Fail;

int AnalyzeVerb(int argc, char** argv) {
  bool done = false, opal = false, quiet = false;
  std::string json_path, threshold, threads_arg;
  std::vector<std::string> dirs;
  Args args(
      "invmw analyze [options] DIR",
      "Maps the OTF2 trace of a run (DIR/traces.otf2, written by `invmw run --trace`; DIR may\n"
      "also name an .otf2 anchor file) back onto the application's terms. Per rank and phase:\n"
      "computation (outside MPI), transfer, idle (waiting for a late partner), sync_wait\n"
      "(waiting in a barrier or collective for the last arrival), sync_op (the operation\n"
      "itself), io (MPI-IO), memory_io and unallocated (from sampler metrics, when recorded),\n"
      "paused (MPI_Pcontrol(0)). Phases start at each MPI_Pcontrol call, else at user regions,\n"
      "else the run is one phase. For the run: load imbalance (max/mean computation), the ranks\n"
      "others waited for, the critical path and its composition, and a classification\n"
      "(computation-, communication-, synchronization-, memory/I-O-bound or\n"
      "middleware-inefficient) with the shares behind it. Prints the report and writes the JSON.");
  args.Option("--json", "FILE", &json_path, "write the JSON here (default DIR/analysis.json)")
      .Flag("--opal", &opal,
            "also derive Opal's response variables (rank 0 = client, others = servers): t_wall, "
            "t_par_comp, t_seq_comp, t_comm, t_sync, t_idle; added to the JSON as \"opal\"")
      .Option("--unallocated-threshold", "SHARE", &threshold,
              "share of unallocated time that makes a run middleware-inefficient (default 0.4)")
      .Flag("--quiet", &quiet, "write the JSON only, print nothing")
      .Option("--threads", "N", &threads_arg,
              "threads reading and analysing the trace (default: the machine's cores); the "
              "results do not depend on it")
      .Positional("DIR", &dirs, 1, 1)
      .Epilog(
          "Exit status: 0 done, 1 the trace cannot be read, analysed or written, 2 bad usage or\n"
          "no trace in DIR.\n"
          "Methods and JSON keys: docs/analysis.md.");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  AnalyzeOptions options;
  if (!threshold.empty()) {
    char* end = nullptr;
    options.unallocated_threshold = std::strtod(threshold.c_str(), &end);
    std::string error;
    if (!end || *end || !options.IsValid(&error))
      return Fail("--unallocated-threshold " + threshold + ": expected a number in (0, 1]");
  }
  int threads = invmw::otf2::DefaultReadThreads();
  if (!threads_arg.empty()) {
    char* end = nullptr;
    const long n = std::strtol(threads_arg.c_str(), &end, 10);
    if (!end || *end || n < 1 || n > 256)
      return Fail("--threads " + threads_arg + ": expected a whole number 1..256");
    threads = int(n);
  }
  options.threads = threads;
  std::string anchor = dirs[0];
  fs::path dir = dirs[0];
  if (fs::is_directory(dir)) {
    anchor = (dir / "traces.otf2").string();
  } else {
    dir = fs::path(anchor).parent_path();
  }
  if (!fs::exists(anchor))
    return Fail(anchor + ": no trace (run with `invmw run --trace`, or name the .otf2 anchor)");
  if (json_path.empty()) json_path = (dir / "analysis.json").string();
  try {
    invmw::otf2::ReadOptions ro;
    ro.threads = threads;
    // Two passes: the first keeps what matching needs, the second streams each rank's events
    // (BuildTimelines), so memory grows with messages and calls, not with every event.
    ro.keep_events = false;
    // Only Opal's responses read the messages in send order.
    ro.sort_messages = opal;
    invmw::otf2::Trace trace = invmw::otf2::ReadTrace(anchor, ro);
    // invmw's traces hold no MPI_Init/MPI_Finalize records: the windows come from raw/.
    options.rank_windows = RankWindowsFromRun(dir.string(), trace);
    // Only the figures, unless Opal's responses need every segment and message; the messages
    // are freed once the analysis has what it needs of them (docs/analysis.md, "Memory").
    options.keep_details = opal;
    const Analysis a = Analyze(std::move(trace), options);
    nlohmann::json j = ToJson(a);
    std::string opal_text;
    if (opal) {
      const OpalBreakdown o = AnalyzeOpal(a);
      j["opal"] = ToJson(o);
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "\nOpal responses (client rank 0, %d servers, %d rounds, %d steps):\n"
                    "  t_wall %.6f  t_par_comp %.6f  t_seq_comp %.6f  t_comm %.6f  t_sync %.6f  "
                    "t_idle %.6f\n  (client waiting for the servers %.6f, unallocated %.6f)\n",
                    o.p, o.rounds, o.steps, o.responses.at("t_wall"), o.responses.at("t_par_comp"),
                    o.responses.at("t_seq_comp"), o.responses.at("t_comm"),
                    o.responses.at("t_sync"), o.responses.at("t_idle"), o.t_wait, o.t_unallocated);
      opal_text = buf;
      for (const auto& n : o.notes) opal_text += "  note: " + n + "\n";
    }
    // A reader (the experiment runner, a script) sees the previous analysis.json or the whole
    // new one; throws with the path and the reason.
    WriteFileAtomic(json_path, j.dump(1) + "\n");
    if (!quiet) {
      std::fputs(FormatText(a).c_str(), stdout);
      std::fputs(opal_text.c_str(), stdout);
      std::printf("\nJSON: %s\n", json_path.c_str());
    }
  } catch (const std::exception& e) {
    Fail(e.what());
    return 1;
  }
  return 0;
}

}  // namespace

INVMW_VERB("analyze", "inverse mapping of a traced run: time per rank and phase, critical path",
           AnalyzeVerb);

}  // namespace invmw::analysis
