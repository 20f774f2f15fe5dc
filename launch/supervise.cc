#include "launch/supervise.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/paths.h"

namespace invmw::launch {
namespace {

pid_t g_child = -1;
void Forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// When we own the terminal, the job's group gets it (Ctrl-C and Ctrl-Z go there).
void GiveTerminal(bool tty, pid_t group) {
  if (!tty) return;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, group);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

// In the forked child: the job's own process group, then exec.
[[noreturn]] void ExecJob(const std::vector<std::string>& argv, Launcher launcher,
                          const RankVars& vars, const std::string& out, pid_t parent, bool tty) {
  setpgid(0, 0);
  // Out of our process group, the job would outlive a SIGKILL sent to it (test harnesses,
  // `timeout -s KILL`): it gets SIGTERM when we die.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(128 + SIGTERM);
  GiveTerminal(tty, getpid());
  if (launcher == Launcher::kNone) {
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  } else if (launcher == Launcher::kSlurm) {
    // srun: everything but the preload through its environment (launcher.cc, SlurmArgv).
    for (const auto& [k, v] : vars)
      if (k != "LD_PRELOAD") setenv(k.c_str(), v.c_str(), 1);
    unsetenv("LD_PRELOAD");
  } else {
    setenv("INVMW_OUTPUT_DIR", out.c_str(), 1);
  }
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  std::fprintf(stderr, "invmw: error: cannot run %s: %s\n", cargv[0], std::strerror(errno));
  _exit(127);
}

// Waits for the job to end; when Ctrl-Z stops it, stops with it, and continues it when we are
// continued (fg, bg).
int WaitForJob(pid_t pid, bool tty) {
  int status = 0;
  while (true) {
    if (waitpid(pid, &status, WUNTRACED) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (!WIFSTOPPED(status)) break;
    GiveTerminal(tty, getpgrp());
    raise(SIGTSTP);
    GiveTerminal(tty, pid);
    kill(-pid, SIGCONT);
  }
  GiveTerminal(tty, getpgrp());
  return status;
}

}  // namespace

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
    std::string self = cli::ExecutableDir() + "/invmw";
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

void StopCollector(pid_t collector, const std::string& out, bool quiet) {
  // Datagrams still in flight when the last rank exited arrive within a few milliseconds.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(collector, SIGINT);
  int cs = 0;
  while (waitpid(collector, &cs, 0) < 0 && errno == EINTR) {
  }
  if (quiet) return;
  if (WIFEXITED(cs) && WEXITSTATUS(cs) == 0)
    std::fprintf(stderr, "invmw: live stream: %s/collect/ (summary.json, merged.log)\n",
                 out.c_str());
  else
    std::fprintf(stderr, "invmw: the collector failed; see %s/collect.log\n", out.c_str());
}

bool RunJob(const std::vector<std::string>& argv, Launcher launcher, const RankVars& vars,
            const std::string& out, int* status, std::string* error) {
  // The job runs in a process group of its own, so a signal meant for a group (Ctrl-C from the
  // terminal, `timeout`, a batch system) reaches the launcher once, from us: Open MPI's mpirun
  // takes a second SIGINT/SIGTERM as "abort now" and its ranks then die without saving their
  // data.
  const bool tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  struct sigaction sa {};
  sa.sa_handler = Forward;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(s, &sa, nullptr);

  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) ExecJob(argv, launcher, vars, out, parent, tty);
  setpgid(pid, pid);  // also here: whichever of the two runs first
  GiveTerminal(tty, pid);
  g_child = pid;
  *status = WaitForJob(pid, tty);
  return true;
}

}  // namespace invmw::launch
