#include "common/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace invmw {
namespace {

std::string Dir() {
  std::string d = ::testing::TempDir() + "/subprocess-" + std::to_string(getpid());
  mkdir(d.c_str(), 0755);
  return d;
}

TEST(Subprocess, ArgumentsAreNotShellSyntax) {
  const std::string dir = Dir();
  const std::string marker = dir + "/X";
  unlink(marker.c_str());
  const std::string arg =
      "a'$(touch " + marker + ")'b; touch " + marker + " `touch " + marker + "`";
  SubprocessResult r = RunCapture({"printf", "%s|", arg, "two words", ""});
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_EQ(r.output, arg + "|two words||");
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "an argument ran as a command";
  unlink(marker.c_str());
  rmdir(dir.c_str());
}

TEST(Subprocess, CapturesStdoutAndStderrAndTheStatus) {
  SubprocessResult r = RunCapture({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.started);
  EXPECT_FALSE(r.Succeeded());
  EXPECT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 3);
  EXPECT_EQ(r.Describe(), "exit status 3");
  EXPECT_EQ(r.output, "out\nerr\n");
}

TEST(Subprocess, SignalsAndStdin) {
  SubprocessResult r = RunCapture({"sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(r.started);
  EXPECT_TRUE(WIFSIGNALED(r.status));
  EXPECT_EQ(r.Describe(), "signal 9");
  // stdin is /dev/null: a child that reads it ends at once.
  r = RunCapture({"cat"});
  EXPECT_TRUE(r.Succeeded());
  EXPECT_EQ(r.output, "");
  // Signals the caller blocks are not blocked in the child.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &old);
  r = RunCapture({"sh", "-c", "kill -TERM $$; sleep 5"});
  sigprocmask(SIG_SETMASK, &old, nullptr);
  EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGTERM) << r.Describe();
}

TEST(Subprocess, ProgramThatCannotRun) {
  SubprocessResult r = RunCapture({"/nonexistent/program", "x"});
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("/nonexistent/program"), std::string::npos);
  EXPECT_NE(r.error.find("No such file"), std::string::npos) << r.error;
  r = RunCapture({"invmw-no-such-program-on-path"});
  EXPECT_FALSE(r.started);
  EXPECT_FALSE(RunCapture({}).started);
}

TEST(Subprocess, OutputBeyondTheLimitIsDropped) {
  SubprocessResult r = RunCapture({"head", "-c", "100000", "/dev/zero"}, 1000);
  EXPECT_TRUE(r.Succeeded());
  EXPECT_EQ(r.output.size(), 1000u);
  EXPECT_TRUE(r.truncated);
}

}  // namespace
}  // namespace invmw
