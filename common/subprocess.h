// Running a helper program and capturing what it prints, without a shell.
//
// Why not popen()/system(): they hand one string to /bin/sh, so any user-derived part of it (a
// path, a platform name, a design file's program) is shell syntax; quoting it right everywhere
// is fragile. Here the arguments go to execvp as they are: no word splitting, no expansion.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace invmw {

struct SubprocessResult {
  bool started = false;  // false: fork, pipe or exec failed; `error` says why
  std::string error;
  int status = 0;          // wait status (WIFEXITED, ...), valid when started
  std::string output;      // standard output and standard error, interleaved as written
  bool truncated = false;  // output exceeded max_output; the rest was read and dropped

  bool Succeeded() const;  // started and exited with status 0
  // "exit status 3", "signal 9", or the start error.
  std::string Describe() const;
};

// Runs argv[0] (searched on PATH when it has no '/') with argv as its arguments, stdin from
// /dev/null, standard output and error into one pipe, and waits for it. The child starts with
// no blocked signals and SIGPIPE at its default, whatever the caller has set. Never throws for
// a program that cannot be run: that is a result with started == false.
SubprocessResult RunCapture(const std::vector<std::string>& argv, size_t max_output = size_t(64)
                                                                                      << 20);

}  // namespace invmw
