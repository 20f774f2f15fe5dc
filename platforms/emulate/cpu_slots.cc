#include "platforms/emulate/cpu_slots.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "platforms/emulate/platform.h"

namespace invmw::emulate {

namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes a control file in one write(2): cgroup files take one value per write.
bool WriteFile(const std::string& path, const std::string& value, std::string* error) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  ssize_t n = write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    *error = "writing '" + value + "' to " + path + ": " + std::strerror(n < 0 ? err : EIO);
    return false;
  }
  return true;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  std::string x;
  while (in >> x) w.push_back(x);
  return w;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<long> Members(const std::string& dir) {
  std::vector<long> pids;
  if (auto procs = ReadFile(dir + "/cgroup.procs"))
    for (const auto& w : Words(*procs)) pids.push_back(std::atol(w.c_str()));
  return pids;
}

std::vector<std::string> SlotDirs(const std::string& group_dir) {
  std::vector<std::string> out;
  if (DIR* dp = opendir(group_dir.c_str())) {
    while (dirent* e = readdir(dp)) {
      std::string n = e->d_name;
      if (n.rfind("slot-", 0) == 0) out.push_back(group_dir + "/" + n);
    }
    closedir(dp);
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> LimitFiles(CgroupVersion v, int64_t quota_us,
                                                            int64_t period_us) {
  if (v == CgroupVersion::kV2)
    return {{"cpu.max", std::to_string(quota_us) + " " + std::to_string(period_us)}};
  // v1 checks quota against the current period, so the period goes first.
  return {{"cpu.cfs_period_us", std::to_string(period_us)},
          {"cpu.cfs_quota_us", std::to_string(quota_us)}};
}

std::pair<std::string, std::string> PriorityWeight(CgroupVersion v) {
  return v == CgroupVersion::kV2 ? std::make_pair("cpu.weight", "10000")
                                 : std::make_pair("cpu.shares", "262144");
}

bool FindCpuHierarchyIn(const std::string& mounts,
                        const std::function<std::optional<std::string>(const std::string&)>& read,
                        CpuHierarchy* out, std::string* why) {
  std::string v1_root, v2_root;
  std::istringstream in(mounts);
  std::string line;
  while (std::getline(in, line)) {
    auto f = Words(line);
    if (f.size() < 4) continue;
    if (f[2] == "cgroup2" && v2_root.empty()) {
      auto controllers = read(f[1] + "/cgroup.controllers");
      if (controllers) {
        for (const auto& c : Words(*controllers))
          if (c == "cpu") v2_root = f[1];
      }
    } else if (f[2] == "cgroup" && v1_root.empty()) {
      for (const auto& opt : Split(f[3], ','))
        if (opt == "cpu") v1_root = f[1];
    }
  }
  // A controller is bound to one version at a time, so at most one of the two is found.
  if (!v2_root.empty()) {
    if (!read(v2_root + "/cgroup.subtree_control")) {
      *why = v2_root + " has no cgroup.subtree_control";
      return false;
    }
    out->version = CgroupVersion::kV2;
    out->root = v2_root;
    return true;
  }
  if (!v1_root.empty()) {
    if (!read(v1_root + "/cpu.cfs_quota_us")) {
      *why = "the cgroup v1 cpu controller at " + v1_root +
             " has no cpu.cfs_quota_us: the kernel lacks CFS bandwidth control "
             "(CONFIG_CFS_BANDWIDTH)";
      return false;
    }
    out->version = CgroupVersion::kV1;
    out->root = v1_root;
    return true;
  }
  *why =
      "no cgroup hierarchy with the cpu controller is mounted (neither a cgroup v1 'cpu' "
      "mount nor a cgroup2 mount listing cpu in cgroup.controllers)";
  return false;
}

CpuHierarchy FindCpuHierarchy() {
  auto mounts = ReadFile("/proc/mounts");
  if (!mounts) throw PlatformError("cannot read /proc/mounts: is /proc mounted?");
  CpuHierarchy h;
  std::string why;
  if (!FindCpuHierarchyIn(*mounts, ReadFile, &h, &why))
    throw PlatformError("CPU quotas are not available: " + why);
  return h;
}

std::string RunGroupDir(const CpuHierarchy& h, const std::string& name) {
  return h.root + "/" + name;
}

void CreateRunGroup(const CpuHierarchy& h, const std::string& name,
                    const std::vector<SlotLimit>& limits) {
  std::string dir = RunGroupDir(h, name);
  std::string err;
  auto fail = [&](const std::string& what) {
    std::string ignored;
    RemoveRunGroup(dir, &ignored);
    throw PlatformError("cannot set up the CPU slots: " + what);
  };
  if (h.version == CgroupVersion::kV2) {
    // Slots can only carry cpu.max when the cpu controller is enabled for the children of
    // both the hierarchy root and the run group.
    auto sub = ReadFile(h.root + "/cgroup.subtree_control");
    bool enabled = false;
    if (sub)
      for (const auto& c : Words(*sub)) enabled |= c == "cpu";
    if (!enabled && !WriteFile(h.root + "/cgroup.subtree_control", "+cpu", &err))
      throw PlatformError("cannot enable the cpu controller in " + h.root + ": " + err +
                          " (cgroup v2 allows it only in a group without processes of its own)");
  }
  if (mkdir(dir.c_str(), 0755) != 0)
    throw PlatformError("cannot create cgroup " + dir + ": " + std::strerror(errno) +
                        (errno == EACCES || errno == EPERM ? " (run as root)" : ""));
  if (h.version == CgroupVersion::kV2 && !WriteFile(dir + "/cgroup.subtree_control", "+cpu", &err))
    fail(err);
  // The highest weight: other work on the machine must not take from the ranks what their
  // quota promises (the quota alone is only a ceiling). The slots' quotas bound what the group
  // can take, so this cannot starve the machine beyond the platform's nodes x quota.
  const auto& [weight_file, weight] = PriorityWeight(h.version);
  if (!WriteFile(dir + "/" + weight_file, weight, &err)) fail(err);
  for (size_t s = 0; s < limits.size(); ++s) {
    std::string slot = dir + "/slot-" + std::to_string(s);
    if (mkdir(slot.c_str(), 0755) != 0) fail(slot + ": " + std::strerror(errno));
    for (const auto& [file, value] : LimitFiles(h.version, limits[s].quota_us, limits[s].period_us))
      if (!WriteFile(slot + "/" + file, value, &err)) fail(err);
  }
}

void JoinSlot(const std::string& group_dir, int slot) {
  std::string dir = group_dir + "/slot-" + std::to_string(slot);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    throw PlatformError("no CPU slot " + std::to_string(slot) + " (" + dir +
                        "): more ranks than `platform exec --ranks` set up?");
  std::string err;
  if (!WriteFile(dir + "/cgroup.procs", std::to_string(getpid()), &err))
    throw PlatformError("cannot join CPU slot " + std::to_string(slot) + ": " + err);
}

bool RemoveRunGroup(const std::string& group_dir, std::string* error) {
  struct stat st;
  if (stat(group_dir.c_str(), &st) != 0) return true;
  auto slots = SlotDirs(group_dir);
  // Ranks that outlived their launcher (or a killed run) still sit in their slots; a cgroup
  // with members cannot be removed. Zombies leave their cgroup when they exit, so killing is
  // enough; wait until the kernel has emptied the slots.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    bool empty = true;
    for (const auto& s : slots) {
      for (long pid : Members(s)) {
        if (pid > 0) kill(static_cast<pid_t>(pid), SIGKILL);
        empty = false;
      }
    }
    if (empty || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  bool ok = true;
  for (const auto& s : slots) {
    if (rmdir(s.c_str()) != 0 && errno != ENOENT) {
      *error = "cannot remove cgroup " + s + ": " + std::strerror(errno);
      ok = false;
    }
  }
  if (ok && rmdir(group_dir.c_str()) != 0 && errno != ENOENT) {
    *error = "cannot remove cgroup " + group_dir + ": " + std::strerror(errno);
    ok = false;
  }
  return ok;
}

bool AnySlotOccupied(const std::string& group_dir) {
  for (const auto& s : SlotDirs(group_dir))
    if (!Members(s).empty()) return true;
  return false;
}

std::vector<std::string> ListRunGroups(const CpuHierarchy& h) {
  std::vector<std::string> out;
  if (DIR* dp = opendir(h.root.c_str())) {
    while (dirent* e = readdir(dp)) {
      std::string n = e->d_name;
      if (n.rfind("invmw-", 0) == 0 && e->d_type == DT_DIR) out.push_back(n);
    }
    closedir(dp);
  }
  return out;
}

}  // namespace invmw::emulate
