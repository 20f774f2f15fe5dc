// The recording core's signal handling (signals.h), each case in a forked child so that the
// test process keeps its own handlers: the save runs and the signal ends the process as it
// would have without invmw; an application's earlier handler decides instead; ignored signals
// stay ignored.
#include "recording/signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace invmw::recording {
namespace {

int g_pipe = -1;
volatile sig_atomic_t g_app_calls = 0;

void Save(int sig) {
  const char c = char(sig);
  (void)!write(g_pipe, &c, 1);
}

void AppHandler(int) {
  g_app_calls = g_app_calls + 1;
}

// Runs body in a child with the handlers installed; returns the child's wait status and what
// Save wrote (the signal numbers it saw).
int InChild(void (*setup)(), std::string* saved) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    g_pipe = p[1];
    setup();
    _exit(g_app_calls == 1 ? 42 : 0);
  }
  close(p[1]);
  char buf[16];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0) saved->append(buf, size_t(n));
  close(p[0]);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

TEST(Signals, TerminatingSignalIsSavedThenEndsTheProcess) {
  std::string saved;
  const int st = InChild(
      [] {
        InstallSignalHandlers(Save);
        kill(getpid(), SIGTERM);
      },
      &saved);
  ASSERT_TRUE(WIFSIGNALED(st)) << "exit status " << WEXITSTATUS(st);
  EXPECT_EQ(WTERMSIG(st), SIGTERM);
  EXPECT_EQ(saved, std::string(1, char(SIGTERM)));
}

// A fault signal sent with kill() is not repeated by returning from the handler: it must be
// raised again, or the process would go on running where it would have died.
TEST(Signals, FaultSignalSentByKillStillEndsTheProcess) {
  std::string saved;
  const int st = InChild(
      [] {
        InstallSignalHandlers(Save);
        kill(getpid(), SIGSEGV);
      },
      &saved);
  ASSERT_TRUE(WIFSIGNALED(st)) << "exit status " << WEXITSTATUS(st);
  EXPECT_EQ(WTERMSIG(st), SIGSEGV);
  EXPECT_EQ(saved, std::string(1, char(SIGSEGV)));
}

// A real fault: the default action after the save (the instruction faults again).
TEST(Signals, RealFaultIsSavedThenEndsTheProcess) {
  std::string saved;
  const int st = InChild(
      [] {
        InstallSignalHandlers(Save);
        // A write to a page without access: a real fault that is not undefined behaviour
        // (UBSan would stop at a null store before the fault happens).
        void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) _exit(3);
        *static_cast<volatile int*>(page) = 1;
      },
      &saved);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGSEGV);
  EXPECT_EQ(saved, std::string(1, char(SIGSEGV)));
}

// The application handled SIGTERM itself before invmw: its handler runs, nothing is saved and
// the process goes on.
TEST(Signals, ApplicationHandlerDecides) {
  std::string saved;
  const int st = InChild(
      [] {
        signal(SIGTERM, AppHandler);
        InstallSignalHandlers(Save);
        kill(getpid(), SIGTERM);
      },
      &saved);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 42);  // the application's handler ran once
  EXPECT_EQ(saved, "");
}

TEST(Signals, IgnoredSignalStaysIgnored) {
  std::string saved;
  const int st = InChild(
      [] {
        signal(SIGHUP, SIG_IGN);
        InstallSignalHandlers(Save);
        kill(getpid(), SIGHUP);
      },
      &saved);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_EQ(saved, "");
}

}  // namespace
}  // namespace invmw::recording
