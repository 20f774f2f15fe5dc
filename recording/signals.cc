#include "recording/signals.h"

#include <dlfcn.h>
#include <signal.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

namespace invmw::recording {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE,  SIGILL, SIGABRT,
                            SIGTERM, SIGINT, SIGQUIT, SIGHUP};
constexpr size_t kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);
struct sigaction g_old_actions[kNumSignals];
// Per entry of kSignals: the handler before ours is the application's own (not an MPI or PVM
// library's, not a default).
bool g_old_is_app[kNumSignals];
SignalSave g_save = nullptr;

// Decided at install time (dladdr is not async-signal-safe): a handler in an MPI library or
// its runtime ends the process (Open MPI prints a backtrace and re-raises).
bool IsApplicationHandler(const struct sigaction& a) {
  void* fn = (a.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(a.sa_sigaction)
                                       : reinterpret_cast<void*>(a.sa_handler);
  if (!fn || fn == reinterpret_cast<void*>(SIG_DFL) || fn == reinterpret_cast<void*>(SIG_IGN))
    return false;
  Dl_info di{};
  if (!dladdr(fn, &di) || !di.dli_fname) return true;
  for (const char* lib : {"libmpi", "libopen-pal", "libopen-rte", "libpmix", "libprrte", "libmpich",
                          "libpmi", "libucs", "libfabric", "libpsm", "libpvm3", "libgpvm3"})
    if (std::strstr(di.dli_fname, lib)) return false;
  return true;
}

void OnSignal(int sig, siginfo_t* info, void* ctx) {
  int saved_errno = errno;
  for (size_t i = 0; i < kNumSignals; ++i) {
    if (kSignals[i] != sig || !g_old_is_app[i]) continue;
    // The application's handler decides; if it returns, the run goes on and so does the
    // measurement (an exit() from it is saved by the exit path, an abort() by SIGABRT's).
    const struct sigaction& old = g_old_actions[i];
    if (old.sa_flags & SA_SIGINFO)
      old.sa_sigaction(sig, info, ctx);
    else
      old.sa_handler(sig);
    errno = saved_errno;
    return;
  }
  if (g_save) g_save(sig);
  for (size_t i = 0; i < kNumSignals; ++i) {
    if (kSignals[i] != sig) continue;
    struct sigaction& old = g_old_actions[i];
    sigaction(sig, &old, nullptr);
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
      old.sa_sigaction(sig, info, ctx);
    } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler) {
      old.sa_handler(sig);
    } else if (old.sa_handler == SIG_DFL) {
      // Synchronous faults re-fault on return with the default action; others re-raise, as
      // does a fault signal sent by kill (si_code <= 0), which no instruction repeats.
      const bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
      if (!fault || (info && info->si_code <= 0)) raise(sig);
    }
    break;
  }
  errno = saved_errno;
}

}  // namespace

void InstallSignalHandlers(SignalSave save) {
  g_save = save;
  // An alternate stack for a crash by stack overflow, unless the application has its own.
  static char altstack[64 * 1024];
  stack_t cur{};
  if (sigaltstack(nullptr, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
    stack_t ss{};
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    sigaltstack(&ss, nullptr);
  }
  for (size_t i = 0; i < kNumSignals; ++i) {
    struct sigaction sa {};
    sa.sa_sigaction = OnSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(kSignals[i], &sa, &g_old_actions[i]);
    g_old_is_app[i] = IsApplicationHandler(g_old_actions[i]);
    // An ignored signal stays ignored: we must not make it fatal.
    if (!(g_old_actions[i].sa_flags & SA_SIGINFO) && g_old_actions[i].sa_handler == SIG_IGN)
      sigaction(kSignals[i], &g_old_actions[i], nullptr);
  }
}

}  // namespace invmw::recording
