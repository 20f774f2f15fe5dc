// The MPI functions whose wrappers cannot be generated: start-up, shut-down, abort and
// MPI_Pcontrol (C and Fortran entry points).
#include <mpi.h>

#include <cstdarg>

#include "pmpi_wrap/call.h"
#include "pmpi_wrap/fortran.h"
#include "pmpi_wrap/runtime.h"

namespace invmw::wrap {
namespace {

// MPI_Init and MPI_Finalize in the trace: the application's run lies between the return of
// the one and the entry of the other, which is what the inverse mapping needs to bound each
// rank's computation (invmw's own start-up and shut-down work stays inside these regions).
void TraceSpecial(ThreadState* ts, FuncId f, uint64_t t_enter, uint64_t t_leave) {
  if (!ts->trace) return;
  FlushPendingFail(ts);
  trace::EventRecord e{};
  e.t_enter = TraceTime(t_enter);
  e.t_leave = TraceTime(t_leave);
  e.peer = e.peer2 = kPeerNone;
  e.tag = e.tag2 = -1;
  e.func = uint16_t(f);
  e.type = trace::kCall;
  ts->trace->Push(e);
}

// MPI_Init itself is counted after the fact: recording starts only once MPI is up. The call
// lasts as the application sees it, t0 .. now, in the profile as in the trace; its part after
// g.init_ticks (PMPI_Init returned) is invmw's own start-up: the trace nests an invmw:init
// region there, and the profile reports it as ranks[i].invmw_init_s (profile_report.cc).
void CountInit(FuncId f, uint64_t t0) {
  if (!g.recording.load()) return;
  ThreadState* ts = CurrentThread();  // the main thread's trace ring is made here: start-up too
  if (!ts) return;
  const uint64_t t1 = clock::Ticks();
  FuncStats& s = ts->stats[f];
  uint64_t dt = t1 - t0;
  s.calls++;
  s.ticks += dt;
  s.max_ticks = dt;
  s.hist[0]++;
  if (ts->trace) {
    trace::EventRecord e{};
    e.t_enter = TraceTime(g.init_ticks);
    e.t_leave = TraceTime(t1);
    e.peer = e.peer2 = kPeerNone;
    e.tag = e.tag2 = -1;
    e.func = uint16_t(f);
    e.type = trace::kInit;
    FlushPendingFail(ts);
    ts->trace->Push(e);
  }
  TraceSpecial(ts, f, t0, t1);
}

void CountFinalize(uint64_t t0) {
  ThreadState* ts = tls_state;
  if (!ts) return;
  FuncStats& s = ts->stats[F_MPI_Finalize];
  s.calls++;
  s.hist[0]++;
  const uint64_t t1 = clock::Ticks();
  s.ticks += t1 - t0;
  TraceSpecial(ts, F_MPI_Finalize, t0, t1);
}

// Fortran MPI_Init / MPI_Finalize go to the MPI library's own Fortran entry points (Open MPI's
// do not pass through the C MPI_Init), with our bookkeeping around them.
FortranSymbol f_init("pmpi_init");
FortranSymbol f_init_thread("pmpi_init_thread");
FortranSymbol f_finalize("pmpi_finalize");
FortranSymbol f_abort("pmpi_abort");

void FortranInit(MPI_Fint* ierr) {
  uint64_t t0 = clock::Ticks();
  tls_in_call = true;  // MPICH's Fortran layer calls the C MPI_Init
  reinterpret_cast<void (*)(MPI_Fint*)>(f_init.get())(ierr);
  tls_in_call = false;
  if (*ierr == MPI_SUCCESS) {
    OnInit(t0);
    CountInit(F_MPI_Init, t0);
  }
}

void FortranInitThread(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  uint64_t t0 = clock::Ticks();
  tls_in_call = true;
  reinterpret_cast<void (*)(MPI_Fint*, MPI_Fint*, MPI_Fint*)>(f_init_thread.get())(required,
                                                                                   provided, ierr);
  tls_in_call = false;
  if (*ierr == MPI_SUCCESS) {
    OnInit(t0);
    CountInit(F_MPI_Init_thread, t0);
  }
}

void FortranFinalize(MPI_Fint* ierr) {
  uint64_t t0 = clock::Ticks();
  if (g.recording.load()) CountFinalize(t0);
  OnFinalize();
  tls_in_call = true;
  reinterpret_cast<void (*)(MPI_Fint*)>(f_finalize.get())(ierr);
  tls_in_call = false;
}

void FortranAbort(MPI_Fint* comm, MPI_Fint* code, MPI_Fint* ierr) {
  OnAbort();
  tls_in_call = true;
  reinterpret_cast<void (*)(MPI_Fint*, MPI_Fint*, MPI_Fint*)>(f_abort.get())(comm, code, ierr);
  tls_in_call = false;
}

}  // namespace
}  // namespace invmw::wrap

using namespace invmw::wrap;

extern "C" {

// Set at load time when this library finds itself in a program of another MPI; the exported
// entry stubs (generated, see gen_wrappers.py) then jump straight to PMPI_*.
__attribute__((visibility("hidden"))) char invmw_mpi_mismatch = 0;

__attribute__((visibility("hidden"))) int invmw_c_MPI_Init(int* argc, char*** argv) {
  uint64_t t0 = invmw::clock::Ticks();
  bool nested = tls_in_call;
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS && !nested) {
    OnInit(t0);
    CountInit(F_MPI_Init, t0);
  }
  return rc;
}

__attribute__((visibility("hidden"))) int invmw_c_MPI_Init_thread(int* argc, char*** argv,
                                                                  int required, int* provided) {
  uint64_t t0 = invmw::clock::Ticks();
  bool nested = tls_in_call;
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && !nested) {
    OnInit(t0);
    CountInit(F_MPI_Init_thread, t0);
  }
  return rc;
}

__attribute__((visibility("hidden"))) int invmw_c_MPI_Finalize(void) {
  if (!tls_in_call) {
    uint64_t t0 = invmw::clock::Ticks();
    if (g.recording.load()) CountFinalize(t0);
    OnFinalize();
  }
  return PMPI_Finalize();
}

__attribute__((visibility("hidden"))) int invmw_c_MPI_Abort(MPI_Comm comm, int errorcode) {
  if (!tls_in_call) {
    Call c(F_MPI_Abort, false, __builtin_return_address(0));
    if (c.on()) c.Leave();
  }
  OnAbort();
  return PMPI_Abort(comm, errorcode);
}

// MPI_Pcontrol(0) stops recording, any other level resumes it (MPI leaves the meaning to
// tools). The call itself is counted.
__attribute__((visibility("hidden"))) int invmw_c_MPI_Pcontrol(const int level, ...) {
  if (g.initialized && !g.finalized && !tls_in_call) {
    // The call that pauses is recorded before recording stops, the one that resumes after it
    // restarts, so both appear in the profile and the trace.
    if (level == 0) {
      {
        Call c(F_MPI_Pcontrol, false, __builtin_return_address(0));
        if (c.on()) c.Leave();
      }
      SetRecording(false);
    } else {
      SetRecording(true);
      Call c(F_MPI_Pcontrol, false, __builtin_return_address(0));
      if (c.on()) c.Leave();
    }
  }
  return PMPI_Pcontrol(level);
}

#define INVMW_EXPORT __attribute__((visibility("default")))
#define INVMW_FORTRAN_ALIASES(lower, upper, params, args) \
  INVMW_EXPORT void lower##_ params {                     \
    lower##_impl args;                                    \
  }                                                       \
  INVMW_EXPORT void lower##__ params {                    \
    lower##_impl args;                                    \
  }                                                       \
  INVMW_EXPORT void lower params {                        \
    lower##_impl args;                                    \
  }                                                       \
  INVMW_EXPORT void upper params {                        \
    lower##_impl args;                                    \
  }

static void mpi_init_impl(MPI_Fint* ierr) {
  FortranInit(ierr);
}
static void mpi_init_thread_impl(MPI_Fint* r, MPI_Fint* p, MPI_Fint* ierr) {
  FortranInitThread(r, p, ierr);
}
static void mpi_finalize_impl(MPI_Fint* ierr) {
  FortranFinalize(ierr);
}
static void mpi_abort_impl(MPI_Fint* c, MPI_Fint* e, MPI_Fint* ierr) {
  FortranAbort(c, e, ierr);
}
static void mpi_pcontrol_impl(MPI_Fint* level, MPI_Fint* ierr) {
  *ierr = invmw_c_MPI_Pcontrol(int(*level));
}

INVMW_FORTRAN_ALIASES(mpi_init, MPI_INIT, (MPI_Fint * ierr), (ierr))
INVMW_FORTRAN_ALIASES(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint * r, MPI_Fint* p, MPI_Fint* ierr),
                      (r, p, ierr))
INVMW_FORTRAN_ALIASES(mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr), (ierr))
INVMW_FORTRAN_ALIASES(mpi_abort, MPI_ABORT, (MPI_Fint * c, MPI_Fint* e, MPI_Fint* ierr),
                      (c, e, ierr))
INVMW_FORTRAN_ALIASES(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint * level, MPI_Fint* ierr), (level, ierr))

// mpi_f08 entry points of the same five.
INVMW_EXPORT void mpi_init_f08_(MPI_Fint* ierr) {
  MPI_Fint e = 0;
  FortranInit(&e);
  if (ierr) *ierr = e;
}
INVMW_EXPORT void mpi_init_thread_f08_(MPI_Fint* r, MPI_Fint* p, MPI_Fint* ierr) {
  MPI_Fint e = 0;
  FortranInitThread(r, p, &e);
  if (ierr) *ierr = e;
}
INVMW_EXPORT void mpi_finalize_f08_(MPI_Fint* ierr) {
  MPI_Fint e = 0;
  FortranFinalize(&e);
  if (ierr) *ierr = e;
}
INVMW_EXPORT void mpi_abort_f08_(MPI_Fint* c, MPI_Fint* code, MPI_Fint* ierr) {
  MPI_Fint e = 0;
  FortranAbort(c, code, &e);
  if (ierr) *ierr = e;
}

}  // extern "C"
