// The registry of built-in sources. To add one: write its module (see counters_source.cc or
// proc_sources.cc), declare its factory in sources_builtin.h, declare its INVMW_SAMPLER_*
// options in common/config_vars.def, and add a line here.
#include "sampler/source.h"
#include "sampler/sources_builtin.h"

namespace invmw::sampler {

const std::vector<SourceSpec>& Sources() {
  static const std::vector<SourceSpec> table = {
      {"proc",
       "process CPU user/system time, RSS, page faults, I/O bytes (/proc/self)",
       Scope::kProcess,
       {},
       NewProcSource,
       /*deferred=*/false,
       Tier::kSlow,
       /*fast_part=*/true},  // CPU times, peak RSS and faults: getrusage, every tick
      {"cgroup",
       "CPU usage and throttling of the process's CPU-limited cgroup (v1 or v2)",
       Scope::kProcess,
       {},
       NewCgroupSource},
      {"counters",
       "hardware counters via PAPI, or the kernel's software events as fallback",
       Scope::kProcess,
       {"INVMW_SAMPLER_PAPI", "INVMW_SAMPLER_COUNTERS_BUDGET"},
       NewCountersSource,
       /*deferred=*/true,
       // One read of an event group, or PAPI_read: of a thread running on another CPU, a
       // cross-CPU call the reader waits for (15-20 us in this VM, 1-2 us on bare metal).
       Tier::kMeasured,
       /*fast_part=*/false,
       PrepareCountersSource},
      {"node_cpu", "CPU states of the node (/proc/stat)", Scope::kNode, {}, NewNodeCpuSource},
      {"net",
       "bytes and packets per network device (/proc/net/dev)",
       Scope::kNode,
       {"INVMW_SAMPLER_NET_DEVICES"},
       NewNetSource},
      {"disk",
       "reads, writes and bytes per disk (/proc/diskstats)",
       Scope::kNode,
       {"INVMW_SAMPLER_DISK_DEVICES"},
       NewDiskSource},
  };
  return table;
}

}  // namespace invmw::sampler
