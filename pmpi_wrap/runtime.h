// Process-wide state of the preload runtime: what is recorded, where output goes, and the
// start-up / shut-down / abnormal-end paths that turn per-thread counters into a profile.
//
// Contract with the application: nothing here changes an MPI return code or the application's
// output; problems become counted errors and one warning printed by rank 0.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/raw_format.h"
#include "function_table.h"

namespace invmw::wrap {

struct Runtime {
  // Hot-path flags, read with relaxed loads.
  std::atomic<bool> recording{false};  // between MPI_Init and MPI_Finalize, and Pcontrol != 0
  bool enabled[kNumFuncs] = {};        // INVMW_WRAP_EXCLUDE applied
  // recording && enabled[f], per function: the one flag a wrapper reads on entry.
  std::atomic<bool> record[kNumFuncs] = {};
  std::atomic<uint64_t> type_epoch{1};  // bumped by MPI_Type_free
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> dropped_threads{0};
  std::atomic<uint64_t> dropped_requests{0};
  std::atomic<uint64_t> next_request_id{1};
  bool trace_on = false;            // INVMW_TRACE_ENABLE and a usable output directory
  bool trace_flush_on_full = true;  // INVMW_TRACE_ON_FULL=flush
  bool trace_coalesce = true;       // INVMW_TRACE_COALESCE_TESTS

  // Set at MPI_Init.
  bool initialized = false;
  bool finalized = false;
  int rank = -1;
  int world_size = 0;
  double ticks_per_second = 0;
  uint64_t init_ticks = 0;
  uint64_t init_enter_ticks = 0;
  int64_t init_realtime_ns = 0;
  config::Config cfg;
  std::string output_dir;
  // invmw's own communication (directory name, clock sync, profile gather, trace barrier): a
  // duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so the application's messages and
  // failed collectives on its communicators never meet invmw's, and invmw's failures never
  // abort the application. MPI_COMM_NULL when it could not be made (then nothing is gathered).
  MPI_Comm comm = MPI_COMM_NULL;
  char host[128] = {};
  char mpi_library[256] = {};
};

extern Runtime g;

// Preloaded into a program of another MPI: every wrapper passes through. A plain global, not a
// member of g, because it is set by a load-time constructor that may run before g's.
extern bool g_mpi_mismatch;

// Turns recording on or off for every enabled function (MPI_Pcontrol, init, finalize, ends).
void SetRecording(bool on);

// Called by the MPI_Init / MPI_Init_thread wrappers after PMPI_Init* succeeded.
void OnInit(uint64_t enter_ticks);
// Called by the MPI_Finalize wrapper before PMPI_Finalize: stops recording, writes the raw dump
// and (rank 0) the profile.
void OnFinalize();
// Called by the MPI_Abort wrapper before PMPI_Abort.
void OnAbort();

// Fills a raw dump of this rank into buf (preallocated at init) and returns its size. Only
// async-signal-safe operations: usable from a signal handler.
size_t FillRawDump(uint32_t end_reason, int end_signal, char* buf, size_t cap);

// The call thread slot ts is inside (ThreadState::open), with its peer as a world rank and its
// communicator as an id (raw::OpenCallFlags say which are known). False when it is in none.
// Async-signal-safe.
struct OpenCallInfo {
  uint16_t func;
  uint64_t t_enter;
  int32_t peer;
  int32_t tag;
  uint32_t comm;
  uint32_t flags;
};
struct ThreadState;
bool ResolveOpenCall(const ThreadState* ts, OpenCallInfo* out);

// An output file not written because an entry of its name existed (a link is never followed,
// an existing file never replaced): counted as an error and reported once at the end of the
// run. Allocation-free.
void OutputExists(const char* path);

// Writes "invmw: warning: ..." once per distinct call site (rank 0 only when ranks are known).
void WarnOnce(const std::string& msg);

// A rank's live file (recording/live_file.h: the counters' and the call-site tables'): a header
// of header_size bytes, the function names (written here), max_threads slots of slot_size
// bytes. Returns its mapping, or null when there is none, having said why: an entry of that
// name exists (OutputExists), it cannot be created (a warning "cannot create the live WHAT
// file PATH (error); LOSS" when warn_on_create, else counted as an error) or mapped (the same
// warning, "cannot map"). *fd: kept open to reserve the slots' blocks; *slots_off, *size: the
// layout.
void* OpenLiveFile(const std::string& path, uint64_t header_size, uint64_t slot_size,
                   int max_threads, const char* what, const char* loss, bool warn_on_create,
                   int* fd, uint64_t* slots_off, uint64_t* size);

// Writes "invmw: note: ..." the same way, unless INVMW_RUNTIME_QUIET: for a fallback invmw took
// (software events for missing hardware counters), which is no problem of the run.
void NoteOnce(const std::string& msg);

}  // namespace invmw::wrap
