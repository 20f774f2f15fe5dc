// The verbs of the experiment runner:
//   invmw design show FILE        points, alias structure, number of runs
//   invmw design ctest FILE ...   the CTest script of a design (used by invmw_add_design)
//   invmw experiment run FILE     run a design (or one point of it) into the results database
//   invmw experiment status FILE  what the database holds for a design; CTest's after-step
//   invmw experiment reset FILE   forget a design's runs (rows and run directories)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "common/file_io.h"
#include "common/config.h"
#include "experiments/runner/design.h"
#include "results/results_db.h"
#include "experiments/runner/responses.h"
#include "experiments/runner/run_dirs.h"
#include "experiments/runner/runner.h"

namespace invmw::experiment {
namespace {

namespace fs = std::filesystem;
using cli::Args;
using cli::Fail;

// The readers' rule too (results/results_db.h): INVMW_EXPERIMENT_DB, else the build tree's.
std::string DefaultDb() {
  return results::DbPath("", cli::ExecutableDir());
}

std::string SelfExe() {
  return cli::ExecutableDir() + "/invmw";
}

bool LoadOrFail(const std::string& path, Design* d, int* rc) {
  try {
    *d = LoadDesign(path);
    for (size_t i = 0; i < d->responses.size(); ++i)
      if (std::string why = CheckResponseName(d->responses[i]); !why.empty()) {
        *rc = Fail(path + ": responses[" + std::to_string(i) + "]: " + why);
        return false;
      }
    return true;
  } catch (const DesignError& e) {
    *rc = Fail(e.what());
    return false;
  }
}

// --platform becomes a path component of the run directories: a plain name only.
bool PlatformOrFail(const std::string& platform, int* rc) {
  if (platform.empty()) return true;
  if (std::string why = CheckPathName(platform); !why.empty()) {
    *rc = Fail("--platform '" + platform + "': " + why);
    return false;
  }
  return true;
}

const char* kDbHelp =
    "results database (default: $INVMW_EXPERIMENT_DB, else <build dir>/experiments/results.db "
    "when invmw runs from a build tree, else ./results.db)";

// ---------------------------------------------------------------------------------------------
int DesignShow(int argc, char** argv) {
  std::vector<std::string> files;
  bool commands = false, json = false;
  Args args("invmw design show [options] FILE",
            "Prints a design file's factors and levels, its points in standard order (the first\n"
            "factor varies fastest; these are the point numbers of the results database and of\n"
            "the CTest tests), derived values, and the number of runs (points x replications).\n"
            "For a 2^(k-p) fractional design also the generators, the defining relation, the\n"
            "resolution and the confounding pattern (which effects are aliased with which).\n"
            "The file is checked completely; errors name the line and the field.");
  args.Flag("--commands", &commands, "also print the command line of every point (replication 0)")
      .Flag("--json", &json, "print the points as JSON instead")
      .Positional("FILE", &files, 1, 1)
      .Epilog("example:\n  invmw design show experiments/designs/smoke.toml");
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  Design d;
  int rc = 0;
  if (!LoadOrFail(files[0], &d, &rc)) return rc;
  std::vector<Point> points = ExpandPoints(d);
  if (json) {
    nlohmann::ordered_json j;
    j["design"] = d.name;
    j["type"] = d.fractional ? "fractional" : "full";
    j["points"] = d.NumPoints();
    j["replications"] = d.replications;
    j["runs"] = d.NumRuns();
    j["platform"] = d.platform;
    if (d.fractional) j["resolution"] = Aliases(d).resolution;
    for (const Point& p : points) {
      nlohmann::ordered_json pj = nlohmann::ordered_json::parse(p.FactorsJson(d));
      for (const auto& [k, v] : p.derived) pj[k] = v;
      j["point_values"].push_back(pj);
    }
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }
  std::printf("design %s (%s)\n", d.name.c_str(), d.file.c_str());
  if (!d.description.empty()) std::printf("  %s\n", d.description.c_str());
  std::printf("\nfactors:\n");
  for (const auto& f : d.factors) {
    std::string levels;
    for (const auto& l : f.levels) levels += (levels.empty() ? "" : ", ") + l.Text();
    std::printf("  %c  %-10s %zu level%s: %s%s%s\n", f.letter, f.name.c_str(), f.levels.size(),
                f.levels.size() == 1 ? "" : "s", levels.c_str(),
                f.description.empty() ? "" : "  -- ", f.description.c_str());
  }
  for (const auto& dv : d.derived)
    std::printf("  derived %s = %s\n", dv.name.c_str(), dv.expression.c_str());
  if (d.fractional) {
    AliasStructure a = Aliases(d);
    int k = static_cast<int>(d.factors.size()), p = static_cast<int>(d.generators.size());
    std::printf(
        "\n2^(%d-%d) fractional factorial design, resolution %s (%lld points instead of %lld)\n", k,
        p, RomanResolution(a.resolution).c_str(), static_cast<long long>(d.NumPoints()), 1LL << k);
    std::printf("generators:");
    for (const auto& g : d.generators)
      std::printf("  %c = %s", d.factors[g.factor].letter, EffectName(g.word, g.sign).c_str());
    std::printf("\ndefining relation: ");
    for (size_t i = 0; i < a.defining_relation.size(); ++i)
      std::printf("%s%s", i ? " = " : "",
                  EffectName(a.defining_relation[i].effect, a.defining_relation[i].sign).c_str());
    std::printf("\nconfounding (each estimate is the sum of the effects on its line):\n");
    for (const auto& set : a.alias_sets) {
      std::printf(" ");
      for (size_t i = 0; i < set.size(); ++i)
        std::printf("%s %s", i ? " =" : "", EffectName(set[i].effect, set[i].sign).c_str());
      std::printf("\n");
    }
  } else {
    std::printf("\nfull factorial design: %lld points\n", static_cast<long long>(d.NumPoints()));
  }
  std::printf("runs: %lld points x %d replication%s = %lld, on platform %s, timeout %s s per run\n",
              static_cast<long long>(d.NumPoints()), d.replications, d.replications == 1 ? "" : "s",
              static_cast<long long>(d.NumRuns()), d.platform.c_str(),
              FormatNumber(d.timeout_s).c_str());
  std::string resp;
  for (const auto& r : d.responses) resp += (resp.empty() ? "" : ", ") + r;
  std::printf("responses: %s\n\npoints (standard order):\n  %5s", resp.c_str(), "point");
  for (const auto& f : d.factors) std::printf(" %10s", f.name.c_str());
  for (const auto& dv : d.derived) std::printf(" %10s", dv.name.c_str());
  std::printf("\n");
  RunnerOptions ro;
  ro.invmw = SelfExe();
  ro.bin_dir = cli::ExecutableDir();
  for (const Point& p : points) {
    std::printf("  %5d", p.index);
    for (const auto& l : p.levels) std::printf(" %10s", l.Text().c_str());
    for (const auto& dv : d.derived)
      std::printf(" %10s", FormatNumber(p.derived.at(dv.name)).c_str());
    std::printf("\n");
  }
  if (commands) {
    std::printf("\ncommands (replication 0, run directories under the database's runs/):\n");
    ro.db_path = DefaultDb();
    ro.dry_run = true;
    try {
      for (const Point& p : points) {
        ro.point = p.index;
        ro.replication = 0;
        RunDesign(d, ro, stdout);
      }
    } catch (const std::exception& e) {
      return Fail(e.what());
    }
  }
  std::vector<RunSlot> order = RunOrder(d);
  std::printf("\nrandomized run order (seed %llu):", static_cast<unsigned long long>(d.seed));
  for (size_t i = 0; i < order.size() && i < 40; ++i)
    std::printf(" %d%s", order[i].point,
                d.replications > 1 ? ("/" + std::to_string(order[i].replication)).c_str() : "");
  std::printf("%s\n", order.size() > 40 ? " ..." : "");
  return 0;
}

// ---------------------------------------------------------------------------------------------
// CMake bracket argument, safe for any path.
std::string Bracket(const std::string& s) {
  return "[==[" + s + "]==]";
}

int DesignCtest(int argc, char** argv) {
  std::vector<std::string> files;
  std::string db, output, labels, lock = "invmw_experiment_runs";
  bool fresh = false;
  Args args("invmw design ctest [options] FILE",
            "Writes the CTest script of a design: one test per point and replication\n"
            "(<design>.p<K>.r<R>, running `invmw experiment run FILE --point K --replication R`),\n"
            "labelled with the design's name, `factorial` and the given labels, sharing one\n"
            "RESOURCE_LOCK so runs never overlap, and an after-step <design>.summary\n"
            "(`invmw experiment status --require-complete`) that needs them through a fixture.\n"
            "With --fresh a <design>.reset step forgets earlier runs first, so every ctest run\n"
            "measures again. The CMake function invmw_add_design() runs this at build time and\n"
            "includes the result with TEST_INCLUDE_FILES.");
  args.Option("--db", "FILE", &db, kDbHelp)
      .Option("--output", "FILE", &output, "write here instead of stdout")
      .Option("--labels", "L1,L2", &labels, "more labels for every test of the design")
      .Option("--lock", "NAME", &lock, "the RESOURCE_LOCK (default invmw_experiment_runs)")
      .Flag("--fresh", &fresh, "add the reset step")
      .Positional("FILE", &files, 1, 1);
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  Design d;
  int rc = 0;
  if (!LoadOrFail(files[0], &d, &rc)) return rc;
  if (db.empty()) db = DefaultDb();
  std::string file = fs::absolute(files[0]).string();
  // Labels come comma- or semicolon-separated; each appears once.
  std::vector<std::string> label_list = {d.name, "factorial"};
  for (char& c : labels)
    if (c == ',') c = ';';
  std::stringstream ls(labels);
  for (std::string l; std::getline(ls, l, ';');)
    if (!l.empty() && std::find(label_list.begin(), label_list.end(), l) == label_list.end())
      label_list.push_back(l);
  std::string all_labels;
  for (const auto& l : label_list) all_labels += (all_labels.empty() ? "" : ";") + l;
  std::string env = "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";
  int timeout = static_cast<int>(d.timeout_s) + 60;
  std::string runs_fixture = d.name + "_runs", fresh_fixture = d.name + "_fresh";
  std::string s = "# Generated by `invmw design ctest` from " + file + "; do not edit.\n";
  auto common = [&](const std::string& name, const std::string& extra) {
    s += "set_tests_properties(" + Bracket(name) + " PROPERTIES LABELS " + Bracket(all_labels) +
         " ENVIRONMENT " + Bracket(env) + " " + extra + ")\n";
  };
  std::string exe = Bracket(SelfExe()), qfile = Bracket(file), qdb = Bracket(db);
  if (fresh) {
    std::string name = d.name + ".reset";
    s += "add_test(" + Bracket(name) + " " + exe + " experiment reset " + qfile + " --db " + qdb +
         ")\n";
    common(name, "FIXTURES_SETUP " + Bracket(fresh_fixture) + " RESOURCE_LOCK " + Bracket(lock));
  }
  for (int r = 0; r < d.replications; ++r) {
    for (int p = 0; p < d.NumPoints(); ++p) {
      std::string name = d.name + ".p" + std::to_string(p) + ".r" + std::to_string(r);
      s += "add_test(" + Bracket(name) + " " + exe + " experiment run " + qfile + " --db " + qdb +
           " --point " + std::to_string(p) + " --replication " + std::to_string(r) + ")\n";
      common(name, "RESOURCE_LOCK " + Bracket(lock) + " PROCESSORS 2 TIMEOUT " +
                       std::to_string(timeout) + " FIXTURES_SETUP " + Bracket(runs_fixture) +
                       (fresh ? " FIXTURES_REQUIRED " + Bracket(fresh_fixture) : ""));
    }
  }
  std::string name = d.name + ".summary";
  s += "add_test(" + Bracket(name) + " " + exe + " experiment status " + qfile + " --db " + qdb +
       " --require-complete)\n";
  common(name, "FIXTURES_REQUIRED " + Bracket(runs_fixture) + " RESOURCE_LOCK " + Bracket(lock));
  if (output.empty()) {
    std::fputs(s.c_str(), stdout);
    return 0;
  }
  try {
    WriteFileAtomic(output,
                    s);  // a unique hidden temporary, not OUTPUT.tmp, which may be the user's
  } catch (const FileError& e) {
    return Fail(e.what());
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
int ExperimentRun(int argc, char** argv) {
  std::vector<std::string> files;
  std::string db, platform, runs_dir, point, replication;
  bool rerun = false, dry = false, no_progress = false;
  Args args("invmw experiment run [options] FILE",
            "Runs a design: every point and replication in the design's randomized run order\n"
            "(or only --point K --replication R), each under `invmw run --trace` on the design's\n"
            "platform (or --platform), and records one row per run in the results database:\n"
            "factors, the response variables extracted from the trace with the inverse mapping,\n"
            "platform, host, start time, duration, exit status, status ok/failed with the error,\n"
            "the run directory (trace, profile, analysis.json, runner.log, command.txt) and\n"
            "run_order, the order in which runs actually finished.\n\n"
            "Resuming: runs already recorded as ok are skipped unless --rerun; failed ones run\n"
            "again. Ctrl-C stops the running command, records nothing for it, and leaves the\n"
            "database consistent; start the same command again to finish the design.\n"
            "On a terminal a progress bar with ETA is shown, otherwise one line per run.\n"
            "Exit status: 0 when every selected run is ok, 1 when one failed, 128+signal when\n"
            "interrupted, 2 for a bad design file or option.");
  args.Option("--db", "FILE", &db, kDbHelp)
      .Option(
          "--platform", "NAME", &platform,
          "run platform (local, a platforms/emulated name, or a platforms/slurm name: batch jobs, "
          "docs/slurm.md; default: the design's)")
      .Flag("--rerun", &rerun, "run again points that are already recorded as ok")
      .Option("--point", "K", &point, "run only design point K (0-based, standard order)")
      .Option("--replication", "R", &replication, "with --point: only replication R (default 0)")
      .Option("--runs-dir", "DIR", &runs_dir,
              "where run directories go (default: runs/ next to the database)")
      .Flag("--dry-run", &dry, "print the commands, run nothing, write nothing")
      .Flag("--no-progress", &no_progress, "plain lines even on a terminal")
      .Positional("FILE", &files, 1, 1)
      .Epilog(
          "examples:\n"
          "  invmw experiment run experiments/designs/smoke.toml\n"
          "  invmw experiment run experiments/designs/opal-full.toml --platform local --db my.db\n"
          "  invmw experiment run experiments/designs/smoke.toml --point 3 --replication 0\n"
          "As root, Open MPI needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.");
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  Design d;
  int rc = 0;
  if (!LoadOrFail(files[0], &d, &rc)) return rc;
  if (!PlatformOrFail(platform, &rc)) return rc;
  RunnerOptions o;
  o.db_path = db.empty() ? DefaultDb() : db;
  o.platform = platform;
  o.runs_dir = runs_dir;
  o.invmw = SelfExe();
  o.bin_dir = cli::ExecutableDir();
  o.rerun = rerun;
  o.dry_run = dry;
  o.tty = !no_progress && isatty(STDOUT_FILENO);
  int64_t v;
  if (!point.empty()) {
    if (!config::ParseInt(point, &v) || v < 0)
      return Fail("--point " + point + ": expected K >= 0");
    if (v >= d.NumPoints())
      return Fail("--point " + point + ": design '" + d.name + "' has points 0.." +
                  std::to_string(d.NumPoints() - 1));
    o.point = static_cast<int>(v);
  }
  if (!replication.empty()) {
    if (point.empty()) return Fail("--replication needs --point");
    if (!config::ParseInt(replication, &v) || v < 0)
      return Fail("--replication " + replication + ": expected R >= 0");
    if (v >= d.replications)
      return Fail("--replication " + replication + ": design '" + d.name +
                  "' has replications 0.." + std::to_string(d.replications - 1));
    o.replication = static_cast<int>(v);
  }
  RunSummary s;
  try {
    s = RunDesign(d, o, stdout);
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  if (dry) return 0;
  std::printf("%s: %d ok, %d failed, %d already done%s; database %s\n", d.name.c_str(), s.ok,
              s.failed, s.already_done, s.interrupted ? ", INTERRUPTED" : "", o.db_path.c_str());
  if (s.interrupted) return 128 + s.signal;
  return s.failed ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
int ExperimentStatus(int argc, char** argv) {
  std::vector<std::string> files;
  std::string db, platform;
  bool require = false;
  Args args("invmw experiment status [options] FILE",
            "Lists what the results database holds for a design: one line per recorded run\n"
            "(point, replication, run order, status, duration, responses or error), then the\n"
            "counts. With --require-complete the exit status is 1 unless every point and\n"
            "replication has an ok row whose every response is a number and whose run\n"
            "directory still holds its trace; CTest runs this after a design's tests.");
  args.Option("--db", "FILE", &db, kDbHelp)
      .Option("--platform", "NAME", &platform, "platform (default: the design's)")
      .Flag("--require-complete", &require, "fail unless the design is complete and sound")
      .Positional("FILE", &files, 1, 1);
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  Design d;
  int rc = 0;
  if (!LoadOrFail(files[0], &d, &rc)) return rc;
  if (!PlatformOrFail(platform, &rc)) return rc;
  if (platform.empty()) platform = d.platform;
  if (db.empty()) db = DefaultDb();
  std::vector<results::RunRecord> rows;
  try {
    // Read-only: a mistyped --db must not leave an empty database (and directories) behind.
    results::ResultsDb rdb(db, results::ResultsDb::kReadOnly);
    rows = rdb.Runs(d.name, platform);
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  std::printf("design %s on %s in %s\n", d.name.c_str(), platform.c_str(), db.c_str());
  std::printf("%5s %4s %5s %-7s %9s  %s\n", "point", "rep", "order", "status", "duration",
              "responses / error");
  std::set<std::pair<int, int>> good;
  std::vector<std::string> problems;
  int failed = 0;
  for (const results::RunRecord& r : rows) {
    std::string what = r.status == "ok" ? r.responses : r.error;
    std::printf("%5d %4d %5lld %-7s %8.3fs  %s\n", r.point, r.replication,
                static_cast<long long>(r.run_order), r.status.c_str(), r.duration, what.c_str());
    std::string id = "point " + std::to_string(r.point) + " rep " + std::to_string(r.replication);
    if (r.status != "ok") {
      ++failed;
      problems.push_back(id + " failed: " + r.error);
      continue;
    }
    nlohmann::json j =
        nlohmann::json::parse(r.responses.empty() ? "{}" : r.responses, nullptr, false);
    bool sound = true;
    for (const auto& name : d.responses) {
      if (j.is_discarded() || !j.contains(name) || !j[name].is_number()) {
        problems.push_back(id + ": response '" + name + "' missing");
        sound = false;
      }
    }
    if (!fs::exists(r.trace_dir + "/traces.otf2")) {
      problems.push_back(id + ": no trace at " + r.trace_dir + "/traces.otf2");
      sound = false;
    }
    if (r.point >= d.NumPoints() || r.replication >= d.replications) {
      problems.push_back(id + ": not a run of the design as it is now");
      sound = false;
    }
    if (sound) good.insert({r.point, r.replication});
  }
  int64_t not_run = d.NumRuns() - static_cast<int64_t>(rows.size());
  std::printf("%d of %lld runs ok and complete, %d failed, %lld not run\n",
              static_cast<int>(good.size()), static_cast<long long>(d.NumRuns()), failed,
              static_cast<long long>(not_run > 0 ? not_run : 0));
  if (!require) return 0;
  for (const auto& p : problems) std::printf("problem: %s\n", p.c_str());
  if (static_cast<int64_t>(good.size()) != d.NumRuns()) {
    std::fprintf(stderr, "invmw: error: design %s is not complete on %s\n", d.name.c_str(),
                 platform.c_str());
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
int ExperimentReset(int argc, char** argv) {
  std::vector<std::string> files;
  std::string db, platform, runs_dir;
  Args args("invmw experiment reset [options] FILE",
            "Forgets a design's runs on a platform: deletes its rows from the results database\n"
            "and its run directories, so that the next `invmw experiment run` measures every\n"
            "point again. Other designs and platforms are untouched. Only directories that\n"
            "`invmw experiment run` made (they hold a .invmw-runner-owned marker) are deleted,\n"
            "never through a symbolic link; anything else is kept and named on stderr. A\n"
            "missing database is not created.");
  args.Option("--db", "FILE", &db, kDbHelp)
      .Option("--platform", "NAME", &platform, "platform (default: the design's)")
      .Option("--runs-dir", "DIR", &runs_dir,
              "run directories (default: runs/ next to the database)")
      .Positional("FILE", &files, 1, 1);
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  Design d;
  int rc = 0;
  if (!LoadOrFail(files[0], &d, &rc)) return rc;
  if (!PlatformOrFail(platform, &rc)) return rc;
  if (platform.empty()) platform = d.platform;
  if (db.empty()) db = DefaultDb();
  int n = 0;
  std::error_code ec;
  bool have_db = fs::exists(db, ec);
  try {
    if (have_db) {  // a missing database has no rows to forget, and is not created
      results::ResultsDb rdb(db, results::ResultsDb::kExisting);
      n = rdb.Delete(d.name, platform);
    }
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  std::string runs =
      runs_dir.empty() ? (fs::absolute(db).parent_path() / "runs").string() : runs_dir;
  RemoveReport removed;
  try {
    // Only directories the runner made (ownership marker), never through a symbolic link.
    removed = RemoveRunDirs(runs, d.name, platform);
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  for (const auto& k : removed.kept) std::fprintf(stderr, "invmw: note: kept %s\n", k.c_str());
  std::printf("%s on %s: forgot %d run%s%s, removed %d run director%s\n", d.name.c_str(),
              platform.c_str(), n, n == 1 ? "" : "s", have_db ? "" : " (no database there)",
              removed.removed, removed.removed == 1 ? "y" : "ies");
  return 0;
}

}  // namespace

INVMW_VERB("design show", "list a design's points, confounding pattern and number of runs",
           DesignShow);
INVMW_VERB("design ctest", "write the CTest script of a design (one test per point)", DesignCtest);
INVMW_VERB("experiment run", "run a factorial design into the results database", ExperimentRun);
INVMW_VERB("experiment status", "show what the results database holds for a design",
           ExperimentStatus);
INVMW_VERB("experiment reset", "forget a design's runs (rows and run directories)",
           ExperimentReset);

}  // namespace invmw::experiment
