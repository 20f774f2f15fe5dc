// Parsers for the kernel's text files the sampler reads (/proc and cgroup files).
//
// Why separate from the sources: the formats have quirks (a process name with spaces and
// parentheses in /proc/self/stat, header lines in /proc/net/dev, partitions in diskstats, v1 and
// v2 cgroup spellings) that deserve unit tests on fixed text, without the live kernel.
//
// Contract: each parser takes the whole file content and returns false when the text does not
// have the expected shape (the caller keeps its previous values); it never throws. The parsers
// the sampler calls at every sample take a string_view and do not allocate once their output
// vectors have reached the file's number of entries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace invmw::sampler::parse {

// /proc/self/stat: utime, stime (clock ticks), minflt, majflt.
struct ProcStat {
  uint64_t utime = 0, stime = 0, minflt = 0, majflt = 0;
};
bool ProcSelfStat(const std::string& text, ProcStat* out);

// /proc/self/statm: resident pages (second field).
bool ProcStatmResident(std::string_view text, uint64_t* pages);

// /proc/self/status: VmRSS and VmHWM in bytes.
bool ProcStatusMemory(std::string_view text, uint64_t* rss_bytes, uint64_t* hwm_bytes);

// /proc/self/io.
struct ProcIo {
  uint64_t rchar = 0, wchar = 0, read_bytes = 0, write_bytes = 0;
};
bool ProcSelfIo(std::string_view text, ProcIo* out);

// The aggregate "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal.
constexpr int kCpuStates = 8;
extern const char* const kCpuStateNames[kCpuStates];
bool ProcStatCpu(std::string_view text, uint64_t states[kCpuStates]);

// /proc/net/dev: one entry per device.
struct NetDev {
  std::string name;
  uint64_t rx_bytes = 0, rx_packets = 0, tx_bytes = 0, tx_packets = 0;
};
bool NetDevices(std::string_view text, std::vector<NetDev>* out);

// /proc/diskstats: one entry per block device (sectors are 512 bytes there, always).
struct DiskStat {
  std::string name;
  uint64_t reads = 0, read_bytes = 0, writes = 0, write_bytes = 0;
};
bool DiskStats(std::string_view text, std::vector<DiskStat>* out);

// cpu.stat of a cgroup, v1 (nr_periods, nr_throttled, throttled_time in ns) or v2
// (usage_usec, user_usec, system_usec, nr_periods, nr_throttled, throttled_usec). Missing keys
// stay 0; usage/throttled are converted to nanoseconds.
struct CgroupCpuStat {
  uint64_t usage_ns = 0, user_ns = 0, system_ns = 0;
  uint64_t nr_periods = 0, nr_throttled = 0, throttled_ns = 0;
  bool has_usage = false;
};
bool CgroupCpuStatText(std::string_view text, CgroupCpuStat* out);

// v2 cpu.max ("max 100000" or "25000 100000"): quota < 0 means unlimited.
bool CgroupCpuMax(const std::string& text, int64_t* quota_us, int64_t* period_us);

// /proc/self/cgroup: the path of the v1 hierarchy whose controllers include `controller`
// ("cpu"), or of the v2 unified hierarchy ("0::/path") when controller is empty.
bool CgroupPath(const std::string& text, const std::string& controller, std::string* path,
                std::string* v1_mount_name);

}  // namespace invmw::sampler::parse
