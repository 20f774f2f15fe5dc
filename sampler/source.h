// A sampler source: one self-contained module that measures one kind of resource.
//
// Why a plug-in shape (as Caliper's services): the sampler thread knows nothing about /proc,
// PAPI or cgroups; it asks every enabled source for its metrics once, then for their values
// at every tick. Adding a source means writing one file with a SourceSpec and one line in
// sources.cc's table; its options are INVMW_SAMPLER_* variables declared in
// common/config_vars.def and named in the spec, so `invmw config list` documents them and a
// unit test checks that every option a source reads is declared.
//
// Contract of a Source:
//   Open(ctx, metrics, why_not): called once on the sampler thread before its first reading
//     (before Start returns, or just after it for a deferred source, see SourceSpec).
//     Appends its metric definitions to *metrics and returns true, or returns false with a
//     one-line reason (the source is then skipped; a source that simply does not apply, e.g.
//     the cgroup source outside a CPU-limited cgroup, returns false with an empty reason).
//     May append user-facing notes (fallbacks) to ctx.notes.
//   Read(values): fills exactly as many doubles as Open declared, in the same order, with
//     the current values. Accumulated metrics report totals (not deltas); the sampler
//     subtracts the values of the first sample. Must not block, allocate per call where it can
//     be avoided, or call MPI. A value it cannot read this time is left unchanged.
//   ReadFast(values): for a slow-tier source with a cheap part (SourceSpec::fast_part): fills
//     only the values that one cheap system call gives; called on the ticks Read is not
//     (sampler/tiers.h).
//   The destructor releases whatever Open acquired (file descriptors, event sets).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/config.h"

namespace invmw::sampler {

struct MetricDef {
  std::string name;  // dotted, source first: "proc.cpu.user", "net.eth0.rx_bytes"
  std::string unit;  // "s", "bytes", "count", "ns", "jiffies"
  bool accumulated = true;
  std::string description;
};

enum class Scope {
  kProcess,  // every process samples it (its own CPU time, RSS, counters)
  kNode,     // one process per node samples it (node CPU states, network, disks)
};

struct SourceContext {
  const config::Config* cfg = nullptr;
  pid_t main_tid = 0;     // the application's main thread (the one that called Start)
  std::string proc_root;  // "/proc" (tests point it at fixture trees)
  std::string sys_root;   // "/sys"
  std::vector<std::string>* notes = nullptr;  // fallbacks worth telling the user once
};

class Source {
 public:
  virtual ~Source() = default;
  virtual bool Open(const SourceContext& ctx, std::vector<MetricDef>* metrics,
                    std::string* why_not) = 0;
  virtual void Read(double* values) = 0;
  virtual void ReadFast(double* /*values*/) {}
};

// sampler/tiers.h: a kFast source is read every tick; a kSlow one (it parses /proc or cgroup
// text) every N-th tick, N from its measured cost and INVMW_SAMPLER_SLOW_BUDGET; a kMeasured one
// every tick while its measured cost fits a budget of its own (INVMW_SAMPLER_COUNTERS_BUDGET),
// else every N-th tick (the counters: cheap on bare metal, a cross-CPU call in some VMs).
enum class Tier { kFast, kSlow, kMeasured };

struct SourceSpec {
  const char* name;         // used in INVMW_SAMPLER_SOURCES and as metric prefix
  const char* description;  // one line
  Scope scope;
  std::vector<const char*> options;  // INVMW_SAMPLER_* variables it reads
  std::unique_ptr<Source> (*create)();
  // Opened after Start has returned, on the sampler thread, while the application runs: for
  // sources whose Open costs milliseconds (PAPI's event sets; the kernel's first per-task
  // perf event waits for an RCU grace period), which would otherwise lengthen MPI_Init. Their
  // metrics count from their first reading, whose time the metric definitions record.
  bool deferred = false;
  Tier tier = Tier::kSlow;
  bool fast_part = false;  // a kSlow source whose ReadFast fills some values every tick
  // Deferred sources only: start-up that must not overlap the application, run on the caller's
  // thread in Start (counters: PAPI's initialisation, which reads /proc/self/maps unsafely
  // while the application maps libraries; see counters_source.cc).
  void (*prepare)(const SourceContext& ctx) = nullptr;
};

// Every built-in source, in sampling order.
const std::vector<SourceSpec>& Sources();

}  // namespace invmw::sampler
