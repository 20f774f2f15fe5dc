// The /proc and cgroup sources: process CPU, memory, faults and I/O; node CPU states; network
// devices; disks; the CPU controller of the process's cgroup. One class per source; each is
// registered in sources.cc.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "sampler/proc_file.h"
#include "sampler/proc_parse.h"
#include "sampler/sources_builtin.h"

namespace invmw::sampler {
namespace {

bool Wanted(const std::vector<std::string>& list, const std::string& name) {
  return list.empty() || std::find(list.begin(), list.end(), name) != list.end();
}

// ---- proc: this process --------------------------------------------------------------------
// getrusage gives CPU times (microseconds), peak RSS and faults in one system call, far cheaper
// than formatting /proc/self/stat and /proc/self/status; the current RSS comes from statm.
class ProcSource : public Source {
 public:
  bool Open(const SourceContext& ctx, std::vector<MetricDef>* m, std::string* why) override {
    const std::string self = ctx.proc_root + "/self/";
    if (!statm_.Open(self + "statm")) {
      *why = "cannot open " + self + "statm";
      return false;
    }
    has_io_ = io_.Open(self + "io");
    page_ = double(sysconf(_SC_PAGESIZE));
    m->push_back({"proc.cpu.user", "s", true, "CPU time of the process in user mode"});
    m->push_back({"proc.cpu.system", "s", true, "CPU time of the process in kernel mode"});
    m->push_back({"proc.rss", "bytes", false, "resident set size"});
    m->push_back({"proc.rss_peak", "bytes", false, "peak resident set size"});
    m->push_back({"proc.page_faults.minor", "count", true, "minor page faults"});
    m->push_back({"proc.page_faults.major", "count", true, "major page faults"});
    if (has_io_) {
      m->push_back({"proc.io.rchar", "bytes", true, "bytes read by read-like system calls"});
      m->push_back({"proc.io.wchar", "bytes", true, "bytes written by write-like system calls"});
      m->push_back({"proc.io.read_bytes", "bytes", true, "bytes fetched from storage"});
      m->push_back({"proc.io.write_bytes", "bytes", true, "bytes sent to storage"});
    }
    return true;
  }
  // The fast tier (sampler/tiers.h): one getrusage, every tick.
  void ReadFast(double* v) override {
    rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
      v[0] = double(ru.ru_utime.tv_sec) + double(ru.ru_utime.tv_usec) * 1e-6;
      v[1] = double(ru.ru_stime.tv_sec) + double(ru.ru_stime.tv_usec) * 1e-6;
      v[3] = double(ru.ru_maxrss) * 1024;
      v[4] = double(ru.ru_minflt);
      v[5] = double(ru.ru_majflt);
    }
  }
  void Read(double* v) override {
    std::string_view text;
    ReadFast(v);
    uint64_t pages;
    if (statm_.Read(&text) && parse::ProcStatmResident(text, &pages)) v[2] = double(pages) * page_;
    parse::ProcIo io;
    if (has_io_ && io_.Read(&text) && parse::ProcSelfIo(text, &io)) {
      v[6] = double(io.rchar);
      v[7] = double(io.wchar);
      v[8] = double(io.read_bytes);
      v[9] = double(io.write_bytes);
    }
  }

 private:
  ProcFile statm_, io_;
  bool has_io_ = false;
  double page_ = 4096;
};

// ---- node_cpu: the node's CPU states --------------------------------------------------------
class NodeCpuSource : public Source {
 public:
  bool Open(const SourceContext& ctx, std::vector<MetricDef>* m, std::string* why) override {
    if (!stat_.Open(ctx.proc_root + "/stat")) {
      *why = "cannot open " + ctx.proc_root + "/stat";
      return false;
    }
    hz_ = double(sysconf(_SC_CLK_TCK));
    if (hz_ <= 0) hz_ = 100;
    for (const char* s : parse::kCpuStateNames)
      m->push_back({std::string("node_cpu.") + s, "s", true,
                    std::string("CPU time of all the node's CPUs in state ") + s});
    return true;
  }
  void Read(double* v) override {
    std::string_view text;
    uint64_t st[parse::kCpuStates];
    if (stat_.Read(&text) && parse::ProcStatCpu(text, st))
      for (int i = 0; i < parse::kCpuStates; ++i) v[i] = double(st[i]) / hz_;
  }

 private:
  ProcFile stat_;
  double hz_ = 100;
};

// ---- net: network devices of the node (of its network namespace) ---------------------------
class NetSource : public Source {
 public:
  bool Open(const SourceContext& ctx, std::vector<MetricDef>* m, std::string* why) override {
    std::string_view text;
    std::vector<parse::NetDev> devs;
    if (!file_.Open(ctx.proc_root + "/net/dev") || !file_.Read(&text) ||
        !parse::NetDevices(text, &devs)) {
      *why = "cannot read " + ctx.proc_root + "/net/dev";
      return false;
    }
    for (const auto& d : devs) {
      if (!Wanted(ctx.cfg->SAMPLER_NET_DEVICES, d.name)) continue;
      names_.push_back(d.name);
      const std::string p = "net." + d.name + ".";
      m->push_back({p + "rx_bytes", "bytes", true, "bytes received by " + d.name});
      m->push_back({p + "rx_packets", "count", true, "packets received by " + d.name});
      m->push_back({p + "tx_bytes", "bytes", true, "bytes sent by " + d.name});
      m->push_back({p + "tx_packets", "count", true, "packets sent by " + d.name});
    }
    if (names_.empty()) {
      *why = "no network device matches INVMW_SAMPLER_NET_DEVICES";
      return false;
    }
    return true;
  }
  void Read(double* v) override {
    std::string_view text;
    if (!file_.Read(&text) || !parse::NetDevices(text, &devs_)) return;
    for (size_t i = 0; i < names_.size(); ++i)
      for (const auto& d : devs_)
        if (d.name == names_[i]) {
          v[4 * i + 0] = double(d.rx_bytes);
          v[4 * i + 1] = double(d.rx_packets);
          v[4 * i + 2] = double(d.tx_bytes);
          v[4 * i + 3] = double(d.tx_packets);
        }
  }

 private:
  ProcFile file_;
  std::vector<std::string> names_;
  std::vector<parse::NetDev> devs_;
};

// ---- disk: whole disks of the node ----------------------------------------------------------
class DiskSource : public Source {
 public:
  bool Open(const SourceContext& ctx, std::vector<MetricDef>* m, std::string* why) override {
    std::string_view text;
    std::vector<parse::DiskStat> disks;
    if (!file_.Open(ctx.proc_root + "/diskstats") || !file_.Read(&text) ||
        !parse::DiskStats(text, &disks)) {
      *why = "cannot read " + ctx.proc_root + "/diskstats";
      return false;
    }
    const auto& want = ctx.cfg->SAMPLER_DISK_DEVICES;
    for (const auto& d : disks) {
      if (!want.empty()) {
        if (!Wanted(want, d.name)) continue;
      } else {
        // Partitions would count their disk's traffic twice; /sys/block lists whole disks.
        struct stat st;
        if (d.name.compare(0, 4, "loop") == 0 || d.name.compare(0, 3, "ram") == 0 ||
            stat((ctx.sys_root + "/block/" + d.name).c_str(), &st) != 0)
          continue;
      }
      names_.push_back(d.name);
      const std::string p = "disk." + d.name + ".";
      m->push_back({p + "reads", "count", true, "reads completed on " + d.name});
      m->push_back({p + "read_bytes", "bytes", true, "bytes read from " + d.name});
      m->push_back({p + "writes", "count", true, "writes completed on " + d.name});
      m->push_back({p + "write_bytes", "bytes", true, "bytes written to " + d.name});
    }
    if (names_.empty()) {
      *why = "";  // a diskless node (or container) is normal
      return false;
    }
    return true;
  }
  void Read(double* v) override {
    std::string_view text;
    if (!file_.Read(&text) || !parse::DiskStats(text, &disks_)) return;
    for (size_t i = 0; i < names_.size(); ++i)
      for (const auto& d : disks_)
        if (d.name == names_[i]) {
          v[4 * i + 0] = double(d.reads);
          v[4 * i + 1] = double(d.read_bytes);
          v[4 * i + 2] = double(d.writes);
          v[4 * i + 3] = double(d.write_bytes);
        }
  }

 private:
  ProcFile file_;
  std::vector<std::string> names_;
  std::vector<parse::DiskStat> disks_;
};

// ---- cgroup: the CPU controller of the process's cgroup, when it limits the CPU -------------
class CgroupSource : public Source {
 public:
  bool Open(const SourceContext& ctx, std::vector<MetricDef>* m, std::string* why) override {
    std::string cg, path, mount;
    if (!ReadSmallFile(ctx.proc_root + "/self/cgroup", &cg)) return false;
    const std::string root = ctx.sys_root + "/fs/cgroup/";
    std::string s;
    // v1: a cpu hierarchy with a CFS quota.
    if (parse::CgroupPath(cg, "cpu", &path, &mount)) {
      for (const std::string& base : {root + mount, root + "cpu", root + "cpu,cpuacct"}) {
        const std::string dir = base + path;
        if (!ReadSmallFile(dir + "/cpu.cfs_quota_us", &s)) continue;
        const int64_t quota = std::strtoll(s.c_str(), nullptr, 10);
        if (!ReadSmallFile(dir + "/cpu.cfs_period_us", &s)) continue;
        const int64_t period = std::strtoll(s.c_str(), nullptr, 10);
        if (quota <= 0 || period <= 0) return false;  // not limited
        quota_cpus_ = double(quota) / double(period);
        if (!stat_.Open(dir + "/cpu.stat")) break;
        // Usage only from the same group: a cpuacct hierarchy mounted apart may place the
        // process elsewhere (often its root, which would count the whole machine).
        std::string acct;
        if (parse::CgroupPath(cg, "cpuacct", &acct, nullptr) && acct == path)
          for (const std::string& b : {root + "cpuacct", root + "cpu,cpuacct", base})
            if (usage_.Open(b + acct + "/cpuacct.usage")) break;
        has_usage_ = !usage_.path().empty();
        Declare(m);
        return true;
      }
    }
    // v2: cpu.max of the unified hierarchy (pure v2 or hybrid with cgroup2 at unified/).
    if (parse::CgroupPath(cg, "", &path, nullptr)) {
      for (const std::string& base : {root, root + "unified"}) {
        const std::string dir = base + path;
        int64_t quota, period;
        if (!ReadSmallFile(dir + "/cpu.max", &s) || !parse::CgroupCpuMax(s, &quota, &period))
          continue;
        if (quota < 0) return false;
        quota_cpus_ = double(quota) / double(period);
        if (!stat_.Open(dir + "/cpu.stat")) break;
        has_usage_ = true;  // v2 cpu.stat always has usage_usec
        Declare(m);
        return true;
      }
    }
    return false;  // not in a CPU-limited cgroup: nothing to say
  }
  void Read(double* v) override {
    std::string_view text;
    double* w = v;
    parse::CgroupCpuStat st;
    const bool ok = stat_.Read(&text) && parse::CgroupCpuStatText(text, &st);
    if (has_usage_) {
      if (ok && st.has_usage) w[0] = double(st.usage_ns) * 1e-9;
      if (usage_.Read(&text)) w[0] = double(std::strtoull(text.data(), nullptr, 10)) * 1e-9;
      ++w;
    }
    if (ok) {
      w[0] = double(st.nr_periods);
      w[1] = double(st.nr_throttled);
      w[2] = double(st.throttled_ns) * 1e-9;
    }
    w[3] = quota_cpus_;
  }

 private:
  void Declare(std::vector<MetricDef>* m) {
    if (has_usage_)
      m->push_back({"cgroup.cpu.usage", "s", true, "CPU time used by the process's cgroup"});
    m->push_back({"cgroup.cpu.periods", "count", true, "CFS enforcement periods elapsed"});
    m->push_back(
        {"cgroup.cpu.throttled_periods", "count", true, "periods the cgroup was throttled"});
    m->push_back({"cgroup.cpu.throttled", "s", true, "time the cgroup spent throttled"});
    m->push_back({"cgroup.cpu.quota", "cpus", false, "CPU quota (quota / period)"});
  }
  ProcFile stat_, usage_;
  bool has_usage_ = false;
  double quota_cpus_ = 0;
};

}  // namespace

std::unique_ptr<Source> NewProcSource() {
  return std::make_unique<ProcSource>();
}
std::unique_ptr<Source> NewNodeCpuSource() {
  return std::make_unique<NodeCpuSource>();
}
std::unique_ptr<Source> NewNetSource() {
  return std::make_unique<NetSource>();
}
std::unique_ptr<Source> NewDiskSource() {
  return std::make_unique<DiskSource>();
}
std::unique_ptr<Source> NewCgroupSource() {
  return std::make_unique<CgroupSource>();
}

}  // namespace invmw::sampler
