#include "platforms/emulate/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "platforms/emulate/platform.h"

namespace invmw::emulate {

ToolResult RunTool(const std::vector<std::string>& argv) {
  ToolResult r;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.output = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    r.output = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    // The caller may block signals while it supervises a run; a tool must not inherit that.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvp(cargv[0], cargv.data());
    dprintf(2, "cannot run %s: %s", cargv[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      r.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' '))
    r.output.pop_back();
  return r;
}

std::string RunToolOrThrow(const std::vector<std::string>& argv, const std::string& what) {
  ToolResult r = RunTool(argv);
  if (r.status != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    throw PlatformError(what + ": `" + cmd + "` failed" +
                        (r.output.empty() ? std::string() : ": " + r.output));
  }
  return r.output;
}

}  // namespace invmw::emulate
