// Runs the points of a design and records one row per run in the results database.
//
// Why the runner owns the order, the platform and the bookkeeping: CTest starts tests in its
// own order and knows nothing of platforms or databases; `invmw experiment run` must produce
// the same rows whether it runs the whole design (randomized order from the design's seed) or
// CTest calls it for a single point.
//
// Each run: a fresh run directory <runs_dir>/<design>/<platform>/p<K>-r<R>; the command
//   local:     invmw run --trace --out DIR -- <launcher> <program> <args>
//   emulated:  invmw platform exec P --ranks N -- invmw run --trace --out DIR --
//                <launcher[0]> <platform's launcher options> <launcher[1..]>
//                invmw platform slot -- <program> <args>
//   simulated: invmw platform exec P --ranks N --out DIR -- <program>-smpi <args>
//                (SimGrid's smpirun replaces the launcher; the trace is SMPI's, converted)
// started in its own process group (cwd = DIR, output in DIR/runner.log), killed on timeout;
// then the responses from the trace (responses.h), then one transactional write.
//
// Contract: completed runs (status ok, same factor values) are skipped unless rerun is set;
// failed ones are run again. SIGINT/SIGTERM/SIGHUP during a run stop the command's process
// group, nothing is written for that run, the design stops, and RunDesign returns with
// `interrupted` set: the database only ever holds complete rows. Problems that prevent running
// at all (unknown platform, program not found, database) throw std::runtime_error.
#pragma once

#include <cstdio>
#include <string>

#include "experiments/runner/design.h"

namespace invmw::experiment {

struct RunnerOptions {
  std::string db_path;
  std::string platform;  // empty: the design's
  std::string runs_dir;  // empty: <directory of the database>/runs
  std::string invmw;     // the invmw executable (run, platform exec, platform slot)
  std::string bin_dir;   // programs named without a '/' are looked up here first
  bool rerun = false;
  int point = -1, replication = -1;  // >= 0: only this run
  bool dry_run = false;              // print the commands, run nothing
  bool tty = false;                  // progress bar instead of lines
};

struct RunSummary {
  int planned = 0;       // runs selected
  int already_done = 0;  // skipped: completed before
  int ok = 0, failed = 0;
  bool interrupted = false;
  int signal = 0;  // the signal that interrupted
};

RunSummary RunDesign(const Design& design, const RunnerOptions& options, FILE* out);

}  // namespace invmw::experiment
