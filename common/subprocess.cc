#include "common/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace invmw {

bool SubprocessResult::Succeeded() const {
  return started && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string SubprocessResult::Describe() const {
  if (!started) return error;
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

SubprocessResult RunCapture(const std::vector<std::string>& argv, size_t max_output) {
  SubprocessResult r;
  if (argv.empty() || argv[0].empty()) {
    r.error = "no program to run";
    return r;
  }
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    r.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return r;
  }
  // The exec status pipe: closed by a successful exec, or carries the child's errno.
  if (pipe2(err, O_CLOEXEC) != 0) {
    r.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    close(out[0]);
    close(out[1]);
    return r;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    r.error = std::string("cannot fork: ") + std::strerror(errno);
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return r;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0 && in != 0) {
      dup2(in, 0);
      close(in);
    }
    dup2(out[1], 1);
    dup2(out[1], 2);
    execvp(args[0], args.data());
    const int e = errno;
    ssize_t w = write(err[1], &e, sizeof e);
    (void)w;
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  char buf[4096];
  for (;;) {
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const size_t room = max_output > r.output.size() ? max_output - r.output.size() : 0;
    if (size_t(n) > room) r.truncated = true;
    r.output.append(buf, std::min(size_t(n), room));
  }
  close(out[0]);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(err[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      r.error = std::string("cannot wait for ") + argv[0] + ": " + std::strerror(errno);
      return r;
    }
  }
  if (got == sizeof exec_errno) {
    r.error = "cannot run " + argv[0] + ": " + std::strerror(exec_errno);
    return r;
  }
  r.started = true;
  r.status = status;
  return r;
}

}  // namespace invmw
