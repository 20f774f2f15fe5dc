#include "platforms/emulate/session.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "platforms/emulate/netns.h"
#include "platforms/emulate/owner.h"

namespace invmw::emulate {

namespace {

// How long a command may take to end after a passed-on signal before it is killed.
constexpr auto kGrace = std::chrono::seconds(10);

sigset_t TerminationSignals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&s, sig);
  return s;
}

bool IsStale(const std::string& name, bool include_live) {
  if (include_live) return true;
  Owner o;
  // A name we cannot read is not ours to judge; `cleanup --all` removes it.
  return ParseResourceName(name, &o) && !OwnerAlive(o);
}

}  // namespace

std::vector<StaleResource> RemoveStale(bool include_live) {
  std::vector<StaleResource> out;
  // Namespaces first: killing what runs inside them also empties their ranks' CPU slots.
  for (const auto& n : ListNetns()) {
    if (!IsStale(n, include_live)) continue;
    StaleResource r{"netns", n, false, ""};
    r.removed = RemoveNetns(n, &r.error);
    out.push_back(r);
  }
  CpuHierarchy h;
  try {
    h = FindCpuHierarchy();
  } catch (const PlatformError&) {
    return out;  // no cpu controller: nothing of ours can exist there
  }
  for (const auto& n : ListRunGroups(h)) {
    if (!IsStale(n, include_live)) continue;
    StaleResource r{"cgroup", RunGroupDir(h, n), false, ""};
    r.removed = RemoveRunGroup(r.name, &r.error);
    out.push_back(r);
  }
  return out;
}

Session::Session(Platform platform, int ranks) : platform_(std::move(platform)), ranks_(ranks) {
  const Platform& p = platform_;
  if (ranks_ < 0) throw PlatformError("--ranks must be positive");
  if (p.nodes > 0) {
    if (ranks_ == 0) ranks_ = p.nodes;
    if (ranks_ > p.nodes)
      throw PlatformError("platform " + p.name + " has " + std::to_string(p.nodes) +
                          " virtual nodes; " + std::to_string(ranks_) +
                          " ranks would share them (use a platform with more nodes)");
  }
  name_ = ResourceName(SelfOwner());
  if (p.HasQuota()) {
    cpu_ = FindCpuHierarchy();
    if (access(cpu_.root.c_str(), W_OK) != 0)
      throw PlatformError("platform " + p.name + " puts every rank in a cgroup with a CPU quota, " +
                          "which needs root (no write access to " + cpu_.root +
                          "); use platform 'local' or run as root");
  }
  if (p.HasNamespace()) {
    try {
      CheckNetnsSupport();
    } catch (const PlatformError& e) {
      throw PlatformError("platform " + p.name + ": " + e.what());
    }
  }
}

Session::~Session() {
  std::string ignored;
  Teardown(&ignored);
}

std::string Session::GroupDir() const {
  return platform_.HasQuota() ? RunGroupDir(cpu_, name_) : std::string();
}

void Session::Setup() {
  const Platform& p = platform_;
  try {
    if (p.HasQuota()) {
      have_group_ = true;  // CreateRunGroup removes a half-made group itself; Teardown is benign
      std::vector<SlotLimit> limits;
      for (int r = 0; r < ranks_; ++r) limits.push_back({p.SlotQuotaUs(r), p.SlotPeriodUs(r)});
      CreateRunGroup(cpu_, name_, limits);
    }
    if (p.HasNamespace()) {
      have_netns_ = true;
      CreateNetns(name_, p);
    }
  } catch (...) {
    std::string ignored;
    Teardown(&ignored);
    throw;
  }
}

bool Session::Teardown(std::string* error) {
  bool ok = true;
  if (have_netns_) {
    std::string e;
    if (RemoveNetns(name_, &e)) {
      have_netns_ = false;
    } else {
      *error = e;
      ok = false;
    }
  }
  if (have_group_) {
    std::string e;
    if (RemoveRunGroup(GroupDir(), &e)) {
      have_group_ = false;
    } else {
      *error += (error->empty() ? "" : "; ") + e;
      ok = false;
    }
  }
  return ok;
}

std::vector<std::pair<std::string, std::string>> Session::Environment() const {
  std::vector<std::pair<std::string, std::string>> env;
  env.emplace_back(kEnvPlatform, platform_.name);
  if (platform_.HasQuota()) {
    env.emplace_back(kEnvGroup, GroupDir());
    env.emplace_back(kEnvSlots, std::to_string(ranks_));
    // The CPUs this process may use now: the launcher may bind its children more narrowly.
    cpu_set_t set;
    if (platform_.pin_cores && sched_getaffinity(0, sizeof set, &set) == 0) {
      std::string cpus;
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
      if (!cpus.empty()) env.emplace_back(kEnvCpus, cpus);
    }
  }
  if (platform_.HasNamespace()) env.emplace_back(kEnvNetns, name_);
  for (auto& kv : LauncherEnvironment(platform_)) env.push_back(kv);
  return env;
}

ExecResult Session::Exec(const std::vector<std::string>& argv) {
  if (argv.empty()) throw PlatformError("no command to run");
  ExecResult result;
  sigset_t term = TerminationSignals(), watched = term, old;
  sigaddset(&watched, SIGCHLD);
  sigprocmask(SIG_BLOCK, &watched, &old);
  auto restore = [&] { sigprocmask(SIG_SETMASK, &old, nullptr); };

  // A signal that arrived during set-up means the run is not wanted any more.
  sigset_t pending;
  sigpending(&pending);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    if (sigismember(&pending, sig)) {
      siginfo_t info;
      timespec zero{0, 0};
      sigtimedwait(&term, &info, &zero);
      result.interrupted = sig;
      result.wait_status = sig;  // as if the command had died of it
      restore();
      return result;
    }
  }

  auto env = Environment();
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    restore();
    throw PlatformError(std::string("cannot start the command: fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    // If the supervisor dies (even of SIGKILL), the launcher is told to stop, and it stops its
    // ranks; the next start then only has names to clean.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);
    std::string err;
    if (platform_.HasNamespace() && !EnterNetns(name_, &err)) {
      std::fprintf(stderr, "invmw: error: %s\n", err.c_str());
      _exit(126);
    }
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    // The caller may hold termination signals itself (platform exec does, around set-up and
    // teardown): the command must get them, or a parent-death SIGTERM would never arrive.
    sigprocmask(SIG_SETMASK, &old, nullptr);
    sigprocmask(SIG_UNBLOCK, &watched, nullptr);
    execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "invmw: error: cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }

  auto start = std::chrono::steady_clock::now();
  slots_seen_ = false;
  int signals = 0;
  bool deadline_set = false;
  auto deadline = std::chrono::steady_clock::now();
  for (;;) {
    siginfo_t info;
    timespec tick{0, 50 * 1000 * 1000};
    int sig = sigtimedwait(&watched, &info, &tick);
    if (sig > 0 && sig != SIGCHLD) {
      if (!result.interrupted) result.interrupted = sig;
      ++signals;
      // A terminal's Ctrl-C already reached the command (same process group); a signal sent to
      // us alone (kill, a runner's timeout) is passed on. A second one kills.
      if (signals >= 2) {
        kill(pid, SIGKILL);
      } else if (info.si_code != SI_KERNEL) {
        kill(pid, sig);
      }
      if (!deadline_set) {
        deadline = std::chrono::steady_clock::now() + kGrace;
        deadline_set = true;
      }
    }
    if (have_group_ && !slots_seen_) slots_seen_ = AnySlotOccupied(GroupDir());
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      result.wait_status = st;
      break;
    }
    if (r < 0 && errno != EINTR) {
      result.wait_status = 1 << 8;
      break;
    }
    if (deadline_set && std::chrono::steady_clock::now() > deadline) kill(pid, SIGKILL);
  }
  exec_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  restore();
  return result;
}

}  // namespace invmw::emulate
