// After a PVM run: from per-task data (raw/pvm/task-<tid>.*) to the per-rank raw files of an
// MPI run, then the profile and the OTF2 trace by the MPI code paths.
//
// Why after the run: PVM tasks come and go (spawned by the first task, or by its children),
// none of them knows when the last one ends, and there is no collective to agree on ranks or
// definitions. So each task writes its own data under its task id, and this merge, run by
// `invmw run` when the program has ended (or by `invmw pvm merge DIR`), does what MPI_Finalize
// does for MPI: it is the same path as the crash recovery of an MPI run.
//
// Rank order (deterministic for a given program): the first task (no recorded parent; several
// by start time) is rank 0; then tasks in breadth-first spawn order, each parent's children in
// the order its pvm_spawn calls returned them; tasks nobody recorded spawning come last, by
// start time. Peers in the trace become ranks; messages to tasks that were not recorded (the
// group server, uninstrumented programs) keep no peer.
//
// Clock offsets: a task's offset to its parent (clock_sync.h) plus the parent's offset to rank
// 0, along the spawn chain.
//
// Contract: Merge never throws. It waits up to wait_s for tasks that started but have not yet
// written their dump (they may still be inside pvm_exit when the first task returns), then
// merges what is there; every task left out or doubtful is named in problems.
#pragma once

#include <string>
#include <vector>

namespace invmw::pvm {

struct MergeOptions {
  double wait_s = 10;       // INVMW_PVM_MERGE_WAIT
  bool build_trace = true;  // convert to traces.otf2 when the tasks traced
};

struct TaskSummary {
  int rank = -1;
  int tid = 0;
  int parent = 0;
  std::string program, host;
  bool has_dump = false;
};

struct MergeResult {
  bool ok = false;                           // a profile was written
  std::vector<TaskSummary> tasks;            // in rank order
  std::vector<std::string> static_programs;  // seen with PVM linked in statically
  bool traced = false;
  std::string archive;  // traces.otf2 when built
  std::vector<std::string> problems;
};

// True when dir holds per-task PVM data (raw/pvm/).
bool HasPvmData(const std::string& dir);

MergeResult Merge(const std::string& dir, const MergeOptions& options = {});

}  // namespace invmw::pvm
