// Process-wide recording state of one PVM task under the preload.
//
// Why one state per process and not per thread as for MPI: libpvm3 is not thread-safe, so a
// PVM program makes its PVM calls from one thread. The thread that enrols the task owns the
// state; calls from any other thread run unrecorded (and are counted as dropped), which keeps
// the hot path free of atomics and locks.
//
// Why per task and not per rank: PVM has no world and no collective start-up, so a task does
// not know its rank. It records under its task id (tid) into raw/pvm/task-<tid>.*; after the
// run `invmw` orders the tasks (pvm_wrap/merge.h), maps tids to ranks and writes the same raw
// per-rank files an MPI run leaves, so profile and trace are built by the MPI code paths.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/event_format.h"
#include "common/raw_format.h"
#include "function_table.h"

namespace invmw::pvm {

struct FuncStats {
  uint64_t calls, ticks, bytes_sent, bytes_recv, max_ticks;
  uint64_t hist[raw::kHistBins];
};

// One message exchanged inside a multicast or a group call (nested in its trace record).
struct Part {
  uint64_t t;
  uint64_t bytes;
  int32_t peer;  // tid
  int32_t tag;
  bool send;
};

enum class State : int { kUnset, kActive, kPassive, kEnded };

struct TaskState {
  State state = State::kUnset;
  int tid = 0;
  int parent = 0;  // tid of the parent, or 0 without one
  int pvmgs_tid = 0;
  bool pvmgs_looked_up = false;
  uint64_t init_ticks = 0;
  int64_t init_realtime_ns = 0;
  int64_t init_mono_ns = 0;
  double ticks_per_second = 0;
  config::Config cfg;
  std::string dir;     // the experiment directory
  std::string prefix;  // <dir>/raw/pvm/task-<tid>
  char host[128] = {};

  FuncStats stats[kNumFuncs] = {};
  FuncStats pvmgs = {};  // the group library's traffic with the group server
  uint64_t dropped_threads = 0;
  std::atomic<uint64_t> errors{0};  // also counted by the trace writer thread

  // Parts of the outer call in progress (bounded; beyond the bound only bytes are counted).
  static constexpr int kMaxParts = 256;
  Part parts[kMaxParts];
  int nparts = 0;
  uint64_t part_bytes_sent = 0, part_bytes_recv = 0;
  uint64_t dropped_parts = 0;
  bool collects[kNumFuncs] = {};  // group calls: their inner messages are parts
  bool collecting = false;        // the outer call in progress collects parts
  int sync_context = -1;          // message context of the pvm_spawn in progress

  // Trace: events go to a ring of the recording core (recording/trace_buffer.h), drained by
  // its writer thread; the raw dump is prepared at enrolment (recording/raw_file.h).
  bool trace_on = false;
};

extern TaskState g;

#define INVMW_PVM_TLS __attribute__((tls_model("initial-exec"))) thread_local
// Depth of recorded calls on this thread. PVM calls made at depth 1 come from inside a
// recorded call (libpvm3 calls its own pvm_recv/pvm_send/pvm_mytid through the PLT, libgpvm3
// calls them to talk to other tasks and pvmgs): only those made directly inside a group call
// are looked at (as its parts); deeper ones pass straight through. Set high while invmw itself
// talks PVM (clock synchronisation, look-ups).
extern INVMW_PVM_TLS int tls_depth;
// True on the thread that enrolled the task.
extern INVMW_PVM_TLS bool tls_owner;

// The real function of a wrapper, found through the dynamic linker on first use; null when no
// PVM library is loaded (the wrappers then cannot have been called by a PVM program).
void* Real(FuncId f);
// Same for PVM functions invmw calls but does not interpose (pvm_parent, pvm_bufinfo, ...).
void* RealByName(const char* name);

// Enrols the runtime on the first recorded call: reads the configuration, decides whether
// this program is observed, writes the task's description and synchronises its clock with the
// parent. Returns true when the task records.
bool Activate();

// Stops recording and writes the raw dump, the trace tail and the "end" line. reason is one
// of raw::EndReason. Async-signal-safe enough for the fatal-signal path (the recording core's
// signal-safe drain and writes on preallocated memory, plus snprintf into a stack buffer).
void FinishTask(uint32_t reason, int signal);

// Appends one line to the task's description file (raw/pvm/task-<tid>.jsonl).
void AppendDefs(const std::string& line);

// Appends one trace record (trace on) to the task's ring.
void PushEvent(const trace::EventRecord& r);

// Tid of the group server, looked up once through pvm_tasks when a group call first needs it.
int PvmgsTid();

void WarnOnce(const std::string& msg);

}  // namespace invmw::pvm
