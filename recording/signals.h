// Saving a measurement when the process ends by a signal: one handler for both preloads.
//
// Why chaining matters: the application may handle a signal and carry on (a SIGTERM handler
// that sets a flag, a SIGSEGV handler of a garbage collector), so a handler it installed
// before ours decides, and the measurement goes on when it returns. Otherwise the data is saved
// and the signal is handed to whoever had it before (an MPI library's handler, or the default
// action), so the process ends exactly as it would have without invmw. Ignored signals stay
// ignored.
#pragma once

namespace invmw::recording {

// Called with the signal number, at most once per signal delivery, from the handler (on an
// alternate stack): it must be async-signal-safe and should save at most once itself.
using SignalSave = void (*)(int sig);

// Installs the handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT
// and SIGHUP (and an alternate stack, unless the application has one). Call once, from the
// recording thread, when everything save needs is prepared. Not async-signal-safe (dladdr).
void InstallSignalHandlers(SignalSave save);

}  // namespace invmw::recording
