// `invmw platform exec | slot | list | cleanup`: run commands on emulated clusters.
// (`platform show`, `compare` and `probe`, the fitter's parameter tables, are tables_cmd.cc and
// probe_cmd.cc.)
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/args.h"
#include "cli/verb.h"
#include "common/config.h"
#include "experiments/runner/slurm_platform.h"
#include "platforms/emulate/cpu_slots.h"
#include "platforms/emulate/platform.h"
#include "platforms/emulate/session.h"
#include "platforms/cli/simulated_exec.h"

namespace invmw::platforms::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;
using namespace invmw::emulate;

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

std::string Summary(const Platform& p, int ranks) {
  std::string s;
  if (p.simulated)
    return std::to_string(p.nodes) + " simulated host(s), SimGrid SMPI, table " + p.table +
           (p.computation == "host" ? ", host-timed computation" : ", declared computation");
  if (p.HasQuota()) {
    char buf[200];
    std::string spread;
    if (p.period_spread > 0 && ranks > 1) {
      int64_t longest = 0;
      for (int r = 0; r < ranks; ++r) longest = std::max(longest, p.SlotPeriodUs(r));
      spread = " to " + std::to_string(longest);
    }
    std::snprintf(buf, sizeof buf, "%d slot(s) x %.0f%% of a core (period %lld%s us)%s", ranks,
                  p.cpu_quota * 100, static_cast<long long>(p.period_us), spread.c_str(),
                  p.pin_cores ? ", each pinned to a core" : "");
    s = buf;
  } else if (p.nodes > 0) {
    s = std::to_string(p.nodes) + " node(s), no CPU quota";
  } else {
    s = "no CPU quota";
  }
  switch (p.network) {
    case Network::kHost:
      s += ", host network";
      break;
    case Network::kShm:
      s += ", shared memory";
      break;
    case Network::kTcp:
      s += ", TCP over a namespace loopback" +
           (p.rate_bps
                ? " limited to " + p.rate_text + " (burst " + std::to_string(p.burst_bytes) + " B)"
                : std::string(" (unlimited)")) +
           (p.mtu != kLoopbackMtu ? ", MTU " + std::to_string(p.mtu) : std::string());
      break;
  }
  return s;
}

int ReportStale(const std::vector<StaleResource>& stale) {
  int failed = 0;
  for (const auto& r : stale) {
    if (r.removed) {
      std::fprintf(stderr, "invmw: removed stale %s %s (its run is gone)\n", r.kind.c_str(),
                   r.name.c_str());
    } else {
      std::fprintf(stderr, "invmw: warning: could not remove stale %s %s: %s\n", r.kind.c_str(),
                   r.name.c_str(), r.error.c_str());
      ++failed;
    }
  }
  return failed;
}

// Sets up the platform for `ranks` slots (0: its nodes), runs cmd in it and removes it again;
// throws PlatformError when it cannot be set up here.
ExecResult ExecOnPlatform(const Platform& p, int ranks, bool verbose,
                          const std::vector<std::string>& cmd) {
  if (p.NeedsRoot() || geteuid() == 0) ReportStale(RemoveStale(false));
  Session session(p, ranks);
  unsigned cores = std::thread::hardware_concurrency();
  if (p.HasQuota() && cores && session.ranks() * p.cpu_quota > cores + 1e-9)
    std::fprintf(stderr,
                 "invmw: warning: %d ranks x %.0f%% exceed the %u cores here: the virtual "
                 "nodes time-share\n",
                 session.ranks(), p.cpu_quota * 100, cores);
  if (verbose)
    std::fprintf(stderr, "invmw: platform %s: %s%s%s\n", p.name.c_str(),
                 Summary(p, session.ranks()).c_str(), p.NeedsRoot() ? ", resources " : "",
                 p.NeedsRoot() ? session.name().c_str() : "");
  session.Setup();
  ExecResult result = session.Exec(cmd);
  if (p.HasQuota() && !session.slots_seen() && session.exec_seconds() > 1 && !result.interrupted)
    std::fprintf(stderr,
                 "invmw: warning: no process was seen in a CPU slot of %s: did the launcher "
                 "line put `invmw platform slot --` before the program?\n",
                 p.name.c_str());
  std::string err;
  if (!session.Teardown(&err)) std::fprintf(stderr, "invmw: warning: %s\n", err.c_str());
  if (verbose) std::fprintf(stderr, "invmw: platform %s removed\n", session.name().c_str());
  return result;
}

int RunExec(int argc, char** argv) {
  bool done = false, print_launcher = false, verbose = false;
  std::string ranks_text, out_dir;
  std::vector<std::string> pos, cmd;
  Args args(
      "invmw platform exec [options] NAME|FILE -- COMMAND [ARGS...]\n"
      "       invmw platform exec --print-launcher NAME|FILE",
      "Runs COMMAND (normally an mpirun line) on a run platform and returns its exit\n"
      "status. An emulated platform is set up first: one cgroup per rank slot with the\n"
      "platform's CPU quota, and for network = \"tcp\" a network namespace whose loopback\n"
      "is rate-limited by a token bucket; COMMAND runs inside that namespace. Everything is\n"
      "removed afterwards, also when COMMAND fails or invmw gets SIGINT/SIGTERM/SIGHUP\n"
      "(passed on to COMMAND). Leftovers of killed runs (their owner process is gone) are\n"
      "removed at every start.\n\n"
      "Each rank must join its slot: put `invmw platform slot --` before the program in\n"
      "the launcher line. COMMAND gets the platform's MPI settings as OMPI_MCA_* variables\n"
      "too; --print-launcher prints them as mpirun options, for the record.\n\n"
      "A simulated platform (kind = \"simgrid\", platforms/simulated) runs COMMAND, an SMPI\n"
      "program (built with smpicc) and its arguments without launcher, under smpirun on the\n"
      "SimGrid export of the platform's table; with --out, SMPI's trace becomes DIR/raw and\n"
      "DIR/traces.otf2 (docs/platforms.md \"Simulated clusters\").");
  args.Option("--ranks", "N", &ranks_text, "rank slots to set up (default: the platform's nodes)")
      .Flag("--print-launcher", &print_launcher,
            "print the mpirun options the platform needs and exit (a simulated platform: "
            "smpirun, its launcher)")
      .Flag("--verbose", &verbose, "say what is set up and removed")
      .Option("--out", "DIR", &out_dir,
              "simulated platforms: write the platform files, SMPI's trace, raw/ and "
              "traces.otf2 into DIR (an existing directory)")
      .Positional("NAME|FILE", &pos, 1, 1)
      .Rest("COMMAND", &cmd, "the command to run on the platform")
      .Epilog(
          "examples:\n"
          "  invmw platform exec emu-4x50-100mbit -- mpirun -np 4 \\\n"
          "      $(invmw platform exec --print-launcher emu-4x50-100mbit) \\\n"
          "      invmw platform slot -- ./app\n"
          "  invmw platform exec emu-8x25-shm --ranks 8 -- invmw run --trace -- \\\n"
          "      mpirun -np 8 invmw platform slot -- ./app\n\n"
          "exit status: COMMAND's; 125 when the platform cannot be set up here. Killed by a\n"
          "signal, invmw ends by the same signal after the teardown.");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  Platform p;
  try {
    p = LoadPlatform(pos[0]);
  } catch (const PlatformError& e) {
    return Fail(e.what());
  }
  if (print_launcher) {
    if (!cmd.empty()) return Fail("--print-launcher takes no command");
    // A simulated platform replaces the launcher itself: the runner reads this to start
    // `platform exec NAME --out DIR -- <program>-smpi ARGS` instead of a launcher line.
    std::printf("%s\n", p.simulated ? "smpirun" : Join(LauncherOptions(p)).c_str());
    return 0;
  }
  if (cmd.empty()) return Fail("no command: put it after `--` (see --help)");
  int ranks = 0;
  const long max_ranks = p.simulated ? 1000000 : 1024;
  if (!ranks_text.empty()) {
    char* end = nullptr;
    long v = std::strtol(ranks_text.c_str(), &end, 10);
    if (!end || *end || v < 1 || v > max_ranks)
      return Fail("--ranks: expected an integer from 1 to " + std::to_string(max_ranks) +
                  ", got '" + ranks_text + "'");
    ranks = static_cast<int>(v);
  }
  // A simulated cluster: COMMAND is the SMPI program itself, smpirun the launcher.
  if (p.simulated) return ExecSimulated(p, ranks, out_dir, cmd);
  if (!out_dir.empty()) return Fail("--out applies to simulated platforms only");

  // Signals that arrive during set-up or teardown must not leave resources behind: hold them
  // until the command runs (Exec passes them on) and re-raise after the teardown.
  sigset_t term, old;
  sigemptyset(&term);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&term, s);
  sigprocmask(SIG_BLOCK, &term, &old);

  int status = 0;
  ExecResult result;
  try {
    result = ExecOnPlatform(p, ranks, verbose, cmd);
    status = result.wait_status;
  } catch (const PlatformError& e) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    std::fprintf(stderr, "invmw: error: %s\n", e.what());
    return 125;
  }
  int sig = result.interrupted ? result.interrupted : WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (sig) {
    // End the way the command (or our caller's signal) would have us end.
    signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    raise(sig);
    return 128 + sig;
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// Pins this process (and what it exec's) to the slot's CPU: slot r on the r-th CPU of the
// comma-separated list `platform exec` passed, modulo its length. A failure costs the pinning
// only, so it is a warning.
void PinToSlotCpu(const std::string& list, int slot) {
  std::vector<int> cpus;
  for (const std::string& item : config::ParseList(list)) {
    char* end = nullptr;
    const long c = std::strtol(item.c_str(), &end, 10);
    if (*end == '\0' && c >= 0 && c < CPU_SETSIZE) cpus.push_back(int(c));
  }
  if (cpus.empty()) {
    std::fprintf(stderr, "invmw: warning: %s=%s names no CPU; slot %d is not pinned\n", kEnvCpus,
                 list.c_str(), slot);
    return;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpu = cpus[size_t(slot) % cpus.size()];
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    std::fprintf(stderr, "invmw: warning: slot %d: cannot pin to CPU %d: %s\n", slot, cpu,
                 std::strerror(errno));
}

// The rank's slot number from the launcher's environment.
bool RankFromEnvironment(int* rank, std::string* source) {
  for (const char* var : {"INVMW_EMULATE_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* v = getenv(var);
    if (!v || !*v) continue;
    char* end = nullptr;
    long r = std::strtol(v, &end, 10);
    if (*end || r < 0) continue;
    *rank = static_cast<int>(r);
    *source = var;
    return true;
  }
  return false;
}

int RunSlot(int argc, char** argv) {
  bool done = false;
  std::vector<std::string> cmd;
  Args args("invmw platform slot -- PROGRAM [ARGS...]",
            "Rank wrapper for emulated platforms: moves this process into the CPU slot of its\n"
            "rank (cgroup with the platform's quota) and exec's PROGRAM, so the program and every\n"
            "thread it starts run inside the quota. The rank comes from INVMW_EMULATE_RANK,\n"
            "OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK; the slots from `invmw platform exec`\n"
            "(INVMW_EMULATE_GROUP). Outside an emulated platform it just runs PROGRAM.");
  args.Rest("PROGRAM", &cmd, "the rank's program and its arguments")
      .Epilog("example:\n  mpirun -np 4 invmw platform slot -- ./app input.dat");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (cmd.empty()) return Fail("no program: put it after `--` (see --help)");
  const char* group = getenv(kEnvGroup);
  if (group && *group) {
    int rank = 0;
    std::string source;
    if (!RankFromEnvironment(&rank, &source))
      return Fail(
          "cannot tell this process's rank: none of INVMW_EMULATE_RANK, OMPI_COMM_WORLD_RANK, "
          "PMIX_RANK, PMI_RANK is set (is the launcher an MPI launcher?)");
    const char* slots = getenv(kEnvSlots);
    if (slots && rank >= std::atoi(slots))
      return Fail("rank " + std::to_string(rank) + " (" + source +
                  ") has no CPU slot: `platform exec` set up " + slots + " (use --ranks)");
    try {
      JoinSlot(group, rank);
    } catch (const PlatformError& e) {
      return Fail(e.what());
    }
    if (const char* cpus = getenv(kEnvCpus); cpus && *cpus) PinToSlotCpu(cpus, rank);
  } else if (!getenv(kEnvPlatform)) {
    std::fprintf(stderr,
                 "invmw: warning: `platform slot` outside `invmw platform exec`: %s runs without "
                 "a CPU quota\n",
                 cmd[0].c_str());
  }
  std::vector<char*> cargv;
  for (auto& a : cmd) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  Fail("cannot run " + cmd[0] + ": " + std::strerror(errno));
  return 127;
}

int RunList(int argc, char** argv) {
  bool done = false, verbose = false;
  Args args("invmw platform list [--verbose]",
            "Lists the run platforms (platforms/emulated/*.toml, or $INVMW_EMULATE_DIR, the\n"
            "simulated clusters of platforms/simulated/*.toml beside it, and the Slurm\n"
            "platforms of platforms/slurm/*.toml or $INVMW_SLURM_PLATFORMS_DIR) with\n"
            "what each sets up. Not to be confused with `invmw platform show`, which prints\n"
            "the fitter's platform parameter tables.");
  args.Flag("--verbose", &verbose, "also print descriptions, caveats and mpirun options");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  std::printf("run platforms in %s and %s:\n", PlatformsDir().c_str(), SimulatedDir().c_str());
  int bad = 0;
  for (const auto& n : ListPlatforms()) {
    try {
      Platform p = LoadPlatform(n);
      std::printf("  %-18s %s\n", p.name.c_str(), Summary(p, p.nodes).c_str());
      if (verbose) {
        std::printf("  %-18s %s\n", "", p.description.c_str());
        if (!p.caveat.empty()) std::printf("  %-18s caveat: %s\n", "", p.caveat.c_str());
        auto o = LauncherOptions(p);
        if (!o.empty()) std::printf("  %-18s mpirun %s\n", "", Join(o).c_str());
      }
    } catch (const PlatformError& e) {
      std::printf("  %-18s INVALID: %s\n", n.c_str(), e.what());
      ++bad;
    }
  }
  // Slurm platforms (docs/slurm.md): `invmw experiment run --platform NAME` submits batch jobs.
  const auto slurm = invmw::experiment::ListSlurmPlatforms();
  if (!slurm.empty())
    std::printf("Slurm run platforms in %s:\n", invmw::experiment::SlurmPlatformsDir().c_str());
  for (const auto& n : slurm) {
    try {
      auto p = invmw::experiment::FindSlurmPlatform(n);
      if (!p) throw std::runtime_error(n + ".toml cannot be read");
      std::printf("  %-18s %s\n", p->name.c_str(),
                  invmw::experiment::SlurmPlatformSummary(*p).c_str());
      if (verbose) {
        std::printf("  %-18s %s\n", "", p->description.c_str());
        auto opts = invmw::experiment::SbatchPlatformOptions(*p);
        if (!opts.empty()) std::printf("  %-18s sbatch %s\n", "", Join(opts).c_str());
        if (!p->srun_options.empty())
          std::printf("  %-18s srun %s\n", "", Join(p->srun_options).c_str());
      }
    } catch (const std::exception& e) {
      std::printf("  %-18s INVALID: %s\n", n.c_str(), e.what());
      ++bad;
    }
  }
  return bad ? 1 : 0;
}

int RunCleanup(int argc, char** argv) {
  bool done = false, all = false;
  Args args("invmw platform cleanup [--all]",
            "Removes the cgroups and network namespaces named invmw-* that killed runs left\n"
            "behind (their owner process is gone), killing processes still inside them. Runs\n"
            "still going on keep theirs. `platform exec` does this at every start.");
  args.Flag("--all", &all,
            "remove every invmw-* cgroup and namespace, also those of live runs (only when no "
            "run is going on)");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (geteuid() != 0) return Fail("cleanup removes cgroups and network namespaces: run as root");
  auto stale = RemoveStale(all);
  int failed = ReportStale(stale);
  if (stale.empty()) std::fprintf(stderr, "invmw: nothing to clean\n");
  return failed ? 1 : 0;
}

}  // namespace

INVMW_VERB("platform exec", "run a command on a run platform (emulated cluster or local)", RunExec);
INVMW_VERB("platform slot", "rank wrapper: join the rank's CPU slot, then exec the program",
           RunSlot);
INVMW_VERB("platform list", "list the run platforms (emulated, simulated, Slurm)", RunList);
INVMW_VERB("platform cleanup", "remove cgroups/namespaces left by killed platform runs",
           RunCleanup);

}  // namespace invmw::platforms::cli
