// `invmw run [options] -- <launcher> <program> ...`: run an unmodified MPI job under invmw.
//
// The preload must reach every rank but not the launcher itself, so it is passed the way each
// launcher forwards environment to its ranks (Open MPI `-x`, MPICH/Hydra `-genv`, Slurm
// `--export`); a program started without a launcher gets it in its environment. Afterwards the
// per-rank data is merged when the job ended before MPI_Finalize could write the profile, and
// the job's exit status is passed on unchanged.
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "common/config.h"
#include "common/elf_deps.h"
#include "common/run_dir.h"
#include "invmw_sanitize.h"
#include "otf2_writer/converter.h"
#include "recording/profile_report.h"
#include "pvm_wrap/merge.h"
#include "pvm_wrap/static_pvm.h"

namespace invmw::cli {
namespace {

enum class Launcher { kNone, kOpenMpi, kHydra, kSlurm };

std::string Basename(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string Which(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t c = p.find(':', pos);
    if (c == std::string::npos) c = p.size();
    std::string cand = p.substr(pos, c - pos) + "/" + name;
    if (access(cand.c_str(), X_OK) == 0) return cand;
    pos = c + 1;
  }
  return name;
}

Launcher DetectLauncher(const std::string& argv0) {
  std::string b = Basename(argv0);
  if (b == "srun") return Launcher::kSlurm;
  if (b.find("mpirun") == std::string::npos && b.find("mpiexec") == std::string::npos &&
      b != "orterun" && b != "prterun")
    return Launcher::kNone;
  // mpirun/mpiexec are alternatives symlinks: the real file says which MPI it belongs to.
  char real[PATH_MAX];
  std::string rb = b;
  if (realpath(Which(argv0).c_str(), real)) rb = Basename(real);
  if (rb.find("hydra") != std::string::npos || rb.find("mpich") != std::string::npos)
    return Launcher::kHydra;
  return Launcher::kOpenMpi;
}

std::vector<std::string> SplitPreload(const std::string& s) {
  // ld.so separates LD_PRELOAD entries by colons or spaces.
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t e = s.find_first_of(": ", pos);
    if (e == std::string::npos) e = s.size();
    if (e > pos) out.push_back(s.substr(pos, e - pos));
    pos = e + 1;
  }
  return out;
}

// LD_PRELOAD for the ranks: lib, then what the environment already preloads. In a sanitizer
// build (-DINVMW_SANITIZE) libinvmw.so needs its sanitizer runtime, and the runtime refuses to
// start unless it is the first library of the process, so the runtimes recorded at configure
// time go first (and are dropped from the old list, where they would come too late).
std::string RanksPreload(const std::string& lib, const char* old) {
  std::vector<std::string> first = SplitPreload(INVMW_SANITIZER_PRELOAD);
  std::string preload;
  for (const auto& r : first) preload += r + ":";
  preload += lib;
  auto same = [](const std::string& a, const std::string& b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    return a == b || (realpath(a.c_str(), ra) && realpath(b.c_str(), rb) && !strcmp(ra, rb));
  };
  if (old && *old) {
    if (first.empty()) return preload + ":" + old;
    for (const auto& o : SplitPreload(old)) {
      bool runtime = false;
      for (const auto& r : first) runtime |= same(o, r);
      if (!runtime) preload += ":" + o;
    }
  }
  return preload;
}

// Which MPI the program of a launcher-less run uses: its dynamic dependencies, read from the
// ELF file itself (common/elf_deps.h). Nothing is run: the program may be anything the user
// named, and its name is never shell syntax.
std::string ProgramFlavor(const std::string& prog) {
  const std::string path = Which(prog);
  std::string flavor = "openmpi";
  bool pvm = false, mpi = false;
  for (const auto& dep : elf::ResolveDependencies(path)) {
    // A compatibility name (a libmpi* link to libmpich) is told by the file it resolves to.
    std::string names = dep.name + " " + dep.path;
    char real[PATH_MAX];
    if (!dep.path.empty() && realpath(dep.path.c_str(), real)) names += " " + Basename(real);
    if (names.find("libmpich") != std::string::npos) flavor = "mpich";
    mpi |= names.find("libmpi") != std::string::npos;
    pvm |= names.find("libpvm3") != std::string::npos;
  }
  // A program with libpvm3 linked in statically needs no libpvm3, but only the PVM preload can
  // tell the user that its calls are not observed (docs/pvm.md).
  if (!pvm && !mpi) pvm = pvm::HasStaticPvm(path.c_str());
  // A PVM program gets the PVM companion library (pvm_wrap), unless it also uses MPI.
  if (pvm && !mpi) flavor = "pvm";
  return flavor;
}

std::string Absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return p;
  return std::string(cwd) + "/" + p;
}

// The live-stream collector of --collect: `invmw collect` on a free loopback port, started in
// this process's network namespace. Ranks see the loopback of the namespace they run in, and a
// launcher started here (also inside `invmw platform exec`) starts its ranks in this one, so
// they reach it. Returns the collector's pid and sets *port, or -1 with *error.
pid_t StartCollector(const std::string& out, std::string* port, std::string* error) {
  std::string dir = out + "/collect", log = out + "/collect.log";
  mkdir(out.c_str(), 0755);
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f) dup2(fileno(stdout), 2);
    std::string self = ExecutableDir() + "/invmw";
    execl(self.c_str(), self.c_str(), "collect", "--listen", "127.0.0.1:0", "--out", dir.c_str(),
          "--quiet", static_cast<char*>(nullptr));
    std::fprintf(stderr, "invmw: cannot run %s: %s\n", self.c_str(), std::strerror(errno));
    _exit(127);
  }
  // The collector says where it listens once it is bound (port 0 picks a free one).
  const std::string tag = "listening on ";
  for (int i = 0; i < 200; ++i) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    std::string t = text.str();
    size_t at = t.find(tag);
    size_t nl = at == std::string::npos ? at : t.find('\n', at);
    if (nl != std::string::npos) {
      std::string addr = t.substr(at + tag.size(), nl - at - tag.size());
      *port = addr.substr(addr.rfind(':') + 1);
      return pid;
    }
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      *error = "the collector ended at once (see " + log + ")";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  *error = "the collector did not start within 5 s (see " + log + ")";
  return -1;
}

pid_t g_child = -1;
void Forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

int Run(int argc, char** argv) {
  std::string out, lib, mpi;
  std::vector<std::string> env, command;
  bool quiet = false, trace = false, collect = false, force = false;
  Args args("invmw run [options] -- <launcher> [launcher options] <program> [args]",
            "Runs an unmodified MPI job with the invmw library preloaded into every rank, and\n"
            "writes the run's profile (profile.txt, profile.json) into one experiment\n"
            "directory. The launcher is recognised by name: Open MPI's mpirun/mpiexec get\n"
            "-x VAR=VALUE, MPICH's (Hydra) get -genv VAR VALUE, srun gets --export=ALL,...;\n"
            "any other command (a program started directly, a script) gets the variables in\n"
            "its environment. If the job ends without MPI_Finalize (crash, MPI_Abort, signal),\n"
            "the per-rank data is merged into a profile marked incomplete. The exit status of\n"
            "the job is passed on unchanged.");
  args.Option("--out", "DIR", &out,
              "experiment directory (default: $INVMW_OUTPUT_DIR if set, else "
              "invmw-YYYYMMDD-HHMMSS-<id> here)")
      .Option("--mpi", "NAME", &mpi,
              "MPI of the program: openmpi, mpich or pvm (default: from the launcher or "
              "program; a program linked with libpvm3 gets libinvmw-pvm.so)")
      .Option("--lib", "PATH", &lib, "preload this library instead of the matching libinvmw")
      .Repeated("--env", "VAR=VALUE", &env,
                "set an INVMW_* variable for the ranks (see `invmw config list`)")
      .Flag("--trace", &trace,
            "also write an OTF2 trace (traces.otf2); same as --env INVMW_TRACE_ENABLE=1")
      .Flag("--collect", &collect,
            "receive the ranks' live sample stream with `invmw collect` during the run (logs in "
            "DIR/collect/, see docs/sampler.md)")
      .Flag("--force", &force,
            "replace an earlier run in the experiment directory: removes only invmw's own files "
            "there (meta.json, profile.*, raw/, the OTF2 archive); same as --env "
            "INVMW_OUTPUT_REPLACE=1")
      .Flag("--quiet", &quiet, "print nothing but errors")
      .Rest("COMMAND", &command, "the launcher (or program) and its arguments")
      .Epilog(
          "examples:\n"
          "  invmw run -- mpirun -np 4 ./app input.dat\n"
          "  invmw run --trace -- mpirun -np 2 ./app       (profile and OTF2 trace)\n"
          "  invmw run --out results/run1 --env INVMW_WRAP_EXCLUDE=MPI_Iprobe -- mpiexec -n 2 "
          "./app\n"
          "  invmw run -- mpirun.mpich -n 2 ./app      (uses libinvmw-mpich.so)\n"
          "A program linked with libpvm3 gets libinvmw-pvm.so and its tasks are merged after\n"
          "the run (docs/pvm.md). Plain LD_PRELOAD use: see README.md.");
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (command.empty()) return Fail("nothing to run: give the command after `--` (see --help)");

  for (const auto& e : env) {
    size_t eq = e.find('=');
    if (eq == std::string::npos || e.rfind("INVMW_", 0) != 0)
      return Fail("--env " + e + ": expected INVMW_NAME=VALUE");
    bool known = false;
    for (const auto& v : config::Variables()) known |= e.substr(0, eq) == v.name;
    if (!known) return Fail("--env " + e + ": unknown variable (see `invmw config list`)");
  }

  Launcher launcher = DetectLauncher(command[0]);
  if (mpi.empty()) {
    if (launcher == Launcher::kHydra)
      mpi = "mpich";
    else if (launcher == Launcher::kOpenMpi)
      mpi = "openmpi";
    else if (launcher == Launcher::kNone)
      mpi = ProgramFlavor(command[0]);
    else
      mpi = "";  // srun: the default library
  }
  if (!mpi.empty() && mpi != "openmpi" && mpi != "mpich" && mpi != "pvm")
    return Fail("--mpi " + mpi + ": expected openmpi, mpich or pvm");
  if (lib.empty()) {
    std::string err;
    lib = FindPreloadLibrary(mpi, &err);
    if (lib.empty()) return Fail(err);
  } else if (access(lib.c_str(), R_OK) != 0) {
    return Fail("--lib " + lib + ": no such file");
  }
  lib = Absolute(lib);

  // A variable as the ranks will see it: the last --env (*given set), else the environment.
  auto setting = [&](const std::string& name, bool* given = nullptr) {
    std::string v;
    if (const char* ev = std::getenv(name.c_str())) v = ev;
    for (const auto& e : env)
      if (e.rfind(name + "=", 0) == 0) {
        v = e.substr(name.size() + 1);
        if (given) *given = true;
      }
    return v;
  };
  // The experiment directory: --out, else INVMW_OUTPUT_DIR (the ranks must write where this
  // command looks), else a new name. --out wins over the environment, not over --env.
  bool dir_given = false;
  if (const std::string v = setting("INVMW_OUTPUT_DIR", &dir_given); !v.empty()) {
    if (out.empty())
      out = v;
    else if (dir_given && Absolute(out) != Absolute(v))
      return Fail("--out " + out + " and --env INVMW_OUTPUT_DIR=" + v +
                  " name different directories");
  }
  if (out.empty()) out = DefaultRunDirName();
  out = Absolute(out);
  // INVMW_PROFILE_ENABLE=0: the ranks write no profile on purpose, so none is built here.
  bool profile_enabled = true;
  if (bool b; config::ParseBool(setting("INVMW_PROFILE_ENABLE"), &b)) profile_enabled = b;
  struct stat st;
  // An earlier run's directory: refused before the job starts (the ranks would not write into
  // it either), unless the user asked to replace it.
  if (bool b; config::ParseBool(setting("INVMW_OUTPUT_REPLACE"), &b) && b) force = true;
  if (const auto found = EarlierRunEntries(out); !found.empty()) {
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
    if (!force)
      return Fail(out + " holds an earlier run (" + list +
                  "); choose another --out, or give --force to replace it (removes only "
                  "invmw's own files there)");
    std::string err;
    if (!RemoveEarlierRun(out, &err)) return Fail(err);
    if (!quiet) std::fprintf(stderr, "invmw: replaced the earlier run in %s\n", out.c_str());
  }
  {
    // Refused before the job starts: the ranks could not write there either.
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec || access(out.c_str(), W_OK) != 0)
      return Fail("cannot write the experiment directory " + out + ": " +
                  (ec ? ec.message() : std::string(std::strerror(errno))));
  }

  const std::string preload = RanksPreload(lib, std::getenv("LD_PRELOAD"));

  // Variables for the ranks.
  std::vector<std::pair<std::string, std::string>> vars = {{"LD_PRELOAD", preload},
                                                           {"INVMW_OUTPUT_DIR", out}};
  if (*INVMW_SANITIZE_KIND) {
    // The sanitizers' options reach ranks on other nodes too. Unset ones get what the MPI
    // libraries need (README "Sanitizer builds"): the build's suppression file for their own
    // leaks (races), whole allocation stacks (the frame-pointer unwinder stops in libmpi, before
    // the frames the suppressions match), and Open MPI's components kept loaded after
    // MPI_Finalize (a leak in an unloaded one cannot be attributed).
    for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
                             "OMPI_MCA_mca_base_component_disable_dlclose"})
      if (const char* v = std::getenv(name)) vars.emplace_back(name, v);
    const bool asan = std::string(INVMW_SANITIZE_KIND) == "address";
    auto fallback = [&](const char* name, const std::string& value) {
      if (!std::getenv(name)) vars.emplace_back(name, value);
    };
    if (*INVMW_SANITIZER_LSAN_SUPP && access(INVMW_SANITIZER_LSAN_SUPP, R_OK) == 0)
      fallback("LSAN_OPTIONS", std::string("suppressions=") + INVMW_SANITIZER_LSAN_SUPP);
    if (*INVMW_SANITIZER_TSAN_SUPP && access(INVMW_SANITIZER_TSAN_SUPP, R_OK) == 0)
      fallback("TSAN_OPTIONS", std::string("suppressions=") + INVMW_SANITIZER_TSAN_SUPP);
    if (asan) {
      fallback("ASAN_OPTIONS", "fast_unwind_on_malloc=0");
      fallback("OMPI_MCA_mca_base_component_disable_dlclose", "1");
    }
  }
  for (const auto& e : env) {
    size_t eq = e.find('=');
    if (e.substr(0, eq) != "INVMW_OUTPUT_DIR") vars.emplace_back(e.substr(0, eq), e.substr(eq + 1));
  }
  if (quiet) vars.emplace_back("INVMW_RUNTIME_QUIET", "1");
  pid_t collector = -1;
  if (collect) {
    for (const auto& kv : vars)
      if (kv.first == "INVMW_SAMPLER_STREAM")
        return Fail("--collect starts its own collector: do not also give INVMW_SAMPLER_STREAM");
    if (const char* s = std::getenv("INVMW_SAMPLER_STREAM"); s && *s)
      return Fail("--collect starts its own collector, but INVMW_SAMPLER_STREAM=" + std::string(s) +
                  " is set: unset it or drop --collect");
    std::string port, err;
    collector = StartCollector(out, &port, &err);
    if (collector < 0) return Fail("--collect: " + err);
    vars.emplace_back("INVMW_SAMPLER_STREAM", "127.0.0.1:" + port);
    if (!quiet)
      std::fprintf(stderr, "invmw: collecting the live sample stream on 127.0.0.1:%s\n",
                   port.c_str());
  }
  if (trace) vars.emplace_back("INVMW_TRACE_ENABLE", "1");
  for (const auto& v : config::Variables())
    if (const char* val = std::getenv(v.name); val && std::string(v.name) != "INVMW_OUTPUT_DIR") {
      bool given = false;
      for (const auto& kv : vars) given |= kv.first == v.name;
      if (!given) vars.emplace_back(v.name, val);
    }

  std::vector<std::string> full;
  full.push_back(command[0]);
  switch (launcher) {
    case Launcher::kOpenMpi:
      for (const auto& [k, v] : vars) full.insert(full.end(), {"-x", k + "=" + v});
      break;
    case Launcher::kHydra:
      for (const auto& [k, v] : vars) full.insert(full.end(), {"-genv", k, v});
      break;
    case Launcher::kSlurm: {
      std::string exp = "--export=ALL";
      for (const auto& [k, v] : vars) exp += "," + k + "=" + v;
      full.push_back(exp);
      break;
    }
    case Launcher::kNone:
      break;
  }
  full.insert(full.end(), command.begin() + 1, command.end());

  if (!quiet)
    std::fprintf(stderr, "invmw: running %s with %s, results in %s\n", command[0].c_str(),
                 Basename(lib).c_str(), out.c_str());
  std::fflush(nullptr);

  // The job runs in a process group of its own, so a signal meant for a group (Ctrl-C from the
  // terminal, `timeout`, a batch system) reaches the launcher once, from us: Open MPI's mpirun
  // takes a second SIGINT/SIGTERM as "abort now" and its ranks then die without saving their
  // data. When we own the terminal, the job's group gets it (Ctrl-C and Ctrl-Z go there).
  const bool tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  auto give_terminal = [&](pid_t group) {
    if (!tty) return;
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(STDIN_FILENO, group);
    sigprocmask(SIG_SETMASK, &old, nullptr);
  };
  struct sigaction sa {};
  sa.sa_handler = Forward;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(s, &sa, nullptr);

  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    if (collector > 0) kill(collector, SIGKILL);
    return Fail(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    // Out of our process group, the job would outlive a SIGKILL sent to it (test harnesses,
    // `timeout -s KILL`): it gets SIGTERM when we die.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);
    give_terminal(getpid());
    if (launcher == Launcher::kNone)
      for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
    else
      setenv("INVMW_OUTPUT_DIR", out.c_str(), 1);
    std::vector<char*> cargv;
    for (auto& s : full) cargv.push_back(const_cast<char*>(s.c_str()));
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "invmw: error: cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also here: whichever of the two runs first
  give_terminal(pid);
  g_child = pid;
  int status = 0;
  while (true) {
    if (waitpid(pid, &status, WUNTRACED) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (!WIFSTOPPED(status)) break;
    // Ctrl-Z stopped the job: stop with it, and continue it when we are continued (fg, bg).
    give_terminal(getpgrp());
    raise(SIGTSTP);
    give_terminal(pid);
    kill(-pid, SIGCONT);
  }
  give_terminal(getpgrp());
  if (collector > 0) {
    // Datagrams still in flight when the last rank exited arrive within a few milliseconds.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(collector, SIGINT);
    int cs = 0;
    while (waitpid(collector, &cs, 0) < 0 && errno == EINTR) {
    }
    if (!quiet) {
      if (WIFEXITED(cs) && WEXITSTATUS(cs) == 0)
        std::fprintf(stderr, "invmw: live stream: %s/collect/ (summary.json, merged.log)\n",
                     out.c_str());
      else
        std::fprintf(stderr, "invmw: the collector failed; see %s/collect.log\n", out.c_str());
    }
  }

  const bool ranks_wrote_profile = stat((out + "/profile.json").c_str(), &st) == 0;
  // A PVM run: every task wrote its own data; merge it now that the program has ended.
  if (pvm::HasPvmData(out)) {
    pvm::MergeOptions mo;
    mo.wait_s = config::Load().PVM_MERGE_WAIT;
    pvm::MergeResult r = pvm::Merge(out, mo);
    for (const auto& p : r.problems) std::fprintf(stderr, "invmw: pvm: %s\n", p.c_str());
    for (const auto& s : r.static_programs)
      std::fprintf(stderr, "invmw: pvm: %s has PVM linked in statically: not recorded\n",
                   s.c_str());
    if (r.ok && !quiet) std::fprintf(stderr, "invmw: merged %zu PVM task(s)\n", r.tasks.size());
  }
  bool has_profile = stat((out + "/profile.json").c_str(), &st) == 0;
  if (!has_profile && !profile_enabled) {
    if (!quiet) std::fprintf(stderr, "invmw: no profile (INVMW_PROFILE_ENABLE=0)\n");
  } else if (!has_profile) {
    std::string err;
    int n = 0;
    std::vector<std::string> problems;
    const bool merged = profile::MergeDirectory(out, &err, &n, &problems);
    if (!quiet)
      for (const auto& p : problems) std::fprintf(stderr, "invmw: warning: %s\n", p.c_str());
    if (merged) {
      if (!quiet)
        std::fprintf(stderr,
                     "invmw: the job ended before MPI_Finalize; built an incomplete profile from "
                     "%d rank(s)\n",
                     n);
      has_profile = true;
    } else if (!quiet) {
      std::string why;
      if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        why = " (the job exited with status " + std::to_string(WEXITSTATUS(status)) + ")";
      else if (WIFSIGNALED(status))
        why = " (the job was killed by signal " + std::to_string(WTERMSIG(status)) + ")";
      std::fprintf(stderr, "invmw: no profile: %s%s\n", err.c_str(), why.c_str());
    }
  }
  // (A profile the ranks wrote was announced by rank 0.)
  if (has_profile && !ranks_wrote_profile && !quiet)
    std::fprintf(stderr, "invmw: profile: %s/profile.txt (and profile.json)\n", out.c_str());
  // A traced job whose archive rank 0 did not build (the job died first, or the conversion
  // failed: the converter renames a complete archive into place, so an anchor older than this
  // run's defs is a previous run's): build it from what the ranks flushed (the same converter,
  // the crash path). invmw's own failures are errors on stderr; the exit status stays the job's.
  struct stat defs_st;
  const bool traced = stat((out + "/raw/defs-000000.jsonl").c_str(), &defs_st) == 0;
  const auto written_by_this_run = [&] {
    struct stat a;
    return stat((out + "/traces.otf2").c_str(), &a) == 0 && S_ISREG(a.st_mode) && a.st_size > 0 &&
           (a.st_mtim.tv_sec > defs_st.st_mtim.tv_sec ||
            (a.st_mtim.tv_sec == defs_st.st_mtim.tv_sec &&
             a.st_mtim.tv_nsec >= defs_st.st_mtim.tv_nsec));
  };
  if (traced && !written_by_this_run()) {
    try {
      otf2::ConvertResult r = otf2::ConvertToOtf2(out);
      if (!quiet) {
        for (const auto& p : r.problems) std::fprintf(stderr, "invmw: trace: %s\n", p.c_str());
        std::fprintf(stderr, "invmw: recovered the trace of the failed job: %s (%llu events%s)\n",
                     r.archive.c_str(), (unsigned long long)r.events_out,
                     r.partial ? ", partial" : "");
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "invmw: error: the trace was not written: %s (the raw trace stays in %s/raw; "
                   "retry with `invmw trace recover %s`)\n",
                   e.what(), out.c_str(), out.c_str());
    }
  } else if (traced && !quiet) {
    // Rank 0 of an MPI job announced the archive it wrote, unless the ranks were told to be
    // quiet; a PVM run's merge did not.
    bool ranks_quiet = false;
    for (const auto& [k, v] : vars)
      if (k == "INVMW_RUNTIME_QUIET") ranks_quiet = !v.empty() && v != "0" && v != "false";
    if (ranks_quiet || pvm::HasPvmData(out))
      std::fprintf(stderr, "invmw: trace: %s/traces.otf2\n", out.c_str());
  }

  if (WIFSIGNALED(status)) {
    // Die the same way, so the caller sees the job's real status.
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

INVMW_VERB("run", "run an MPI job with invmw preloaded; write its profile", Run);

}  // namespace invmw::cli
