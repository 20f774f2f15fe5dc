// `invmw run [options] -- <launcher> <program> ...`: run an unmodified MPI job under invmw.
//
// The verb checks its options and prepares the experiment directory; the three stages of the
// run are the part's files: the launcher's command line with the preload for every rank
// (launcher.h), the job supervised in its own process group (supervise.h), and the results
// finished after it (finish.h). The job's exit status is passed on unchanged.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/verb.h"
#include "common/config.h"
#include "common/run_dir.h"
#include "launch/finish.h"
#include "launch/launcher.h"
#include "launch/supervise.h"

namespace invmw::launch {
namespace {

using cli::Args;
using cli::Fail;

struct RunOptions {
  std::string out, lib, mpi;
  std::vector<std::string> env, command;
  bool quiet = false, trace = false, collect = false, force = false;
};

Args RunArgs(RunOptions* o) {
  Args args("invmw run [options] -- <launcher> [launcher options] <program> [args]",
            "Runs an unmodified MPI job with the invmw library preloaded into every rank, and\n"
            "writes the run's profile (profile.txt, profile.json) into one experiment\n"
            "directory. The launcher is recognised by name: Open MPI's mpirun/mpiexec get\n"
            "-x VAR=VALUE, MPICH's (Hydra) get -genv VAR VALUE, srun gets LD_PRELOAD in\n"
            "--export (merged into yours) and the other variables in its environment;\n"
            "any other command (a program started directly, a script) gets the variables in\n"
            "its environment. If the job ends without MPI_Finalize (crash, MPI_Abort, signal),\n"
            "the per-rank data is merged into a profile marked incomplete. The exit status of\n"
            "the job is passed on unchanged.");
  args.Option("--out", "DIR", &o->out,
              "experiment directory (default: $INVMW_OUTPUT_DIR if set, else "
              "invmw-YYYYMMDD-HHMMSS-<id> here)")
      .Option("--mpi", "NAME", &o->mpi,
              "MPI of the program: openmpi, mpich or pvm (default: from the launcher or "
              "program; a program linked with libpvm3 gets libinvmw-pvm.so)")
      .Option("--lib", "PATH", &o->lib, "preload this library instead of the matching libinvmw")
      .Repeated("--env", "VAR=VALUE", &o->env,
                "set an INVMW_* variable for the ranks (see `invmw config list`)")
      .Flag("--trace", &o->trace,
            "also write an OTF2 trace (traces.otf2); same as --env INVMW_TRACE_ENABLE=1")
      .Flag("--collect", &o->collect,
            "receive the ranks' live sample stream with `invmw collect` during the run (logs in "
            "DIR/collect/, see docs/sampler.md)")
      .Flag("--force", &o->force,
            "replace an earlier run in the experiment directory: removes only invmw's own files "
            "there (meta.json, profile.*, raw/, the OTF2 archive); same as --env "
            "INVMW_OUTPUT_REPLACE=1")
      .Flag("--quiet", &o->quiet, "print nothing but errors")
      .Rest("COMMAND", &o->command, "the launcher (or program) and its arguments")
      .Epilog(
          "examples:\n"
          "  invmw run -- mpirun -np 4 ./app input.dat\n"
          "  invmw run --trace -- mpirun -np 2 ./app       (profile and OTF2 trace)\n"
          "  invmw run --out results/run1 --env INVMW_WRAP_EXCLUDE=MPI_Iprobe -- mpiexec -n 2 "
          "./app\n"
          "  invmw run -- mpirun.mpich -n 2 ./app      (uses libinvmw-mpich.so)\n"
          "A program linked with libpvm3 gets libinvmw-pvm.so and its tasks are merged after\n"
          "the run (docs/pvm.md). Plain LD_PRELOAD use: see README.md.");
  return args;
}

// Every --env item is INVMW_NAME=VALUE of a known variable.
bool CheckEnv(const std::vector<std::string>& env, std::string* error) {
  for (const auto& e : env) {
    size_t eq = e.find('=');
    if (eq == std::string::npos || e.rfind("INVMW_", 0) != 0) {
      *error = "--env " + e + ": expected INVMW_NAME=VALUE";
      return false;
    }
    bool known = false;
    for (const auto& v : config::Variables()) known |= e.substr(0, eq) == v.name;
    if (!known) {
      *error = "--env " + e + ": unknown variable (see `invmw config list`)";
      return false;
    }
  }
  return true;
}

// The library to preload (o->lib, made absolute): --lib, else the one of the job's MPI.
bool ChoosePreload(Launcher launcher, RunOptions* o, std::string* error) {
  if (o->mpi.empty()) o->mpi = DefaultFlavor(launcher, o->command[0]);
  if (!o->mpi.empty() && o->mpi != "openmpi" && o->mpi != "mpich" && o->mpi != "pvm") {
    *error = "--mpi " + o->mpi + ": expected openmpi, mpich or pvm";
    return false;
  }
  if (o->lib.empty()) {
    o->lib = FindPreloadLibrary(o->mpi, error);
    if (o->lib.empty()) return false;
  } else if (access(o->lib.c_str(), R_OK) != 0) {
    *error = "--lib " + o->lib + ": no such file";
    return false;
  }
  o->lib = Absolute(o->lib);
  return true;
}

// A variable as the ranks will see it: the last --env (*given set), else the environment.
std::string Setting(const std::vector<std::string>& env, const std::string& name,
                    bool* given = nullptr) {
  std::string v;
  if (const char* ev = std::getenv(name.c_str())) v = ev;
  for (const auto& e : env)
    if (e.rfind(name + "=", 0) == 0) {
      v = e.substr(name.size() + 1);
      if (given) *given = true;
    }
  return v;
}

// The experiment directory (o->out, absolute), created, with an earlier run in it replaced
// only when asked; refused before the job starts, since the ranks could not write there either.
bool PrepareExperimentDir(RunOptions* o, std::string* error) {
  std::string& out = o->out;
  // --out, else INVMW_OUTPUT_DIR (the ranks must write where this command looks), else a new
  // name. --out wins over the environment, not over --env.
  bool dir_given = false;
  if (const std::string v = Setting(o->env, "INVMW_OUTPUT_DIR", &dir_given); !v.empty()) {
    if (out.empty()) {
      out = v;
    } else if (dir_given && Absolute(out) != Absolute(v)) {
      *error = "--out " + out + " and --env INVMW_OUTPUT_DIR=" + v + " name different directories";
      return false;
    }
  }
  if (out.empty()) out = DefaultRunDirName();
  out = Absolute(out);
  if (bool b; config::ParseBool(Setting(o->env, "INVMW_OUTPUT_REPLACE"), &b) && b) o->force = true;
  if (const auto found = EarlierRunEntries(out); !found.empty()) {
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
    if (!o->force) {
      *error = out + " holds an earlier run (" + list +
               "); choose another --out, or give --force to replace it (removes only invmw's own "
               "files there)";
      return false;
    }
    if (!RemoveEarlierRun(out, error)) return false;
    if (!o->quiet) std::fprintf(stderr, "invmw: replaced the earlier run in %s\n", out.c_str());
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec || access(out.c_str(), W_OK) != 0) {
    *error = "cannot write the experiment directory " + out + ": " +
             (ec ? ec.message() : std::string(std::strerror(errno)));
    return false;
  }
  return true;
}

// --collect: the collector started and its address given to the ranks.
bool AddCollector(const RunOptions& o, RankVars* vars, pid_t* collector, std::string* error) {
  for (const auto& kv : *vars)
    if (kv.first == "INVMW_SAMPLER_STREAM") {
      *error = "--collect starts its own collector: do not also give INVMW_SAMPLER_STREAM";
      return false;
    }
  if (const char* s = std::getenv("INVMW_SAMPLER_STREAM"); s && *s) {
    *error = "--collect starts its own collector, but INVMW_SAMPLER_STREAM=" + std::string(s) +
             " is set: unset it or drop --collect";
    return false;
  }
  std::string port, err;
  *collector = StartCollector(o.out, &port, &err);
  if (*collector < 0) {
    *error = "--collect: " + err;
    return false;
  }
  vars->emplace_back("INVMW_SAMPLER_STREAM", "127.0.0.1:" + port);
  if (!o.quiet)
    std::fprintf(stderr, "invmw: collecting the live sample stream on 127.0.0.1:%s\n",
                 port.c_str());
  return true;
}

int Run(int argc, char** argv) {
  RunOptions o;
  Args args = RunArgs(&o);
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (o.command.empty()) return Fail("nothing to run: give the command after `--` (see --help)");
  std::string err;
  if (!CheckEnv(o.env, &err)) return Fail(err);
  const Launcher launcher = DetectLauncher(o.command[0]);
  if (!ChoosePreload(launcher, &o, &err)) return Fail(err);
  FinishOptions finish;
  // INVMW_PROFILE_ENABLE=0: the ranks write no profile on purpose, so none is built here.
  if (bool b; config::ParseBool(Setting(o.env, "INVMW_PROFILE_ENABLE"), &b))
    finish.profile_enabled = b;
  if (!PrepareExperimentDir(&o, &err)) return Fail(err);

  RankVars vars = BaseRankVars(o.lib, o.out, o.env, o.quiet);
  pid_t collector = -1;
  if (o.collect && !AddCollector(o, &vars, &collector, &err)) return Fail(err);
  if (o.trace) vars.emplace_back("INVMW_TRACE_ENABLE", "1");
  AddInheritedConfig(&vars);
  if (launcher == Launcher::kSlurm)
    if (std::string why = SlurmExportProblem(vars); !why.empty()) return Fail(why);
  const std::vector<std::string> full = LauncherArgv(launcher, o.command, vars);

  if (!o.quiet)
    std::fprintf(stderr, "invmw: running %s with %s, results in %s\n", o.command[0].c_str(),
                 Basename(o.lib).c_str(), o.out.c_str());
  std::fflush(nullptr);
  int status = 0;
  if (!RunJob(full, launcher, vars, o.out, &status, &err)) {
    if (collector > 0) kill(collector, SIGKILL);
    return Fail(err);
  }
  if (collector > 0) StopCollector(collector, o.out, o.quiet);

  finish.out = o.out;
  finish.ranks_quiet = RanksQuiet(vars);
  finish.quiet = o.quiet;
  FinishRun(finish, status);
  return PassOnStatus(status);
}

}  // namespace

INVMW_VERB("run", "run an MPI job with invmw preloaded; write its profile", Run);

}  // namespace invmw::launch
