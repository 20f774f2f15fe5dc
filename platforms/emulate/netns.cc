#include "platforms/emulate/netns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "platforms/emulate/tool.h"

namespace invmw::emulate {

namespace {

constexpr const char* kNetnsDir = "/run/netns";

// Processes whose network namespace is the one bound at `path` (what `ip netns pids` does).
std::vector<pid_t> PidsIn(const std::string& path) {
  std::vector<pid_t> out;
  struct stat ns;
  if (stat(path.c_str(), &ns) != 0) return out;
  if (DIR* dp = opendir("/proc")) {
    while (dirent* e = readdir(dp)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end) continue;
      struct stat st;
      std::string link = std::string("/proc/") + e->d_name + "/ns/net";
      if (stat(link.c_str(), &st) == 0 && st.st_dev == ns.st_dev && st.st_ino == ns.st_ino)
        out.push_back(static_cast<pid_t>(pid));
    }
    closedir(dp);
  }
  return out;
}

}  // namespace

void CheckNetnsSupport() {
  struct stat st;
  if (stat("/proc/self/ns/net", &st) != 0)
    throw PlatformError(
        "network namespaces are not available: the kernel has no /proc/self/ns/net");
  if (geteuid() != 0)
    throw PlatformError("a tcp platform creates a network namespace, which needs root");
  ToolResult r = RunTool({"ip", "-V"});
  if (r.status != 0)
    throw PlatformError("a tcp platform needs the `ip` tool of iproute2: " + r.output);
}

std::vector<std::string> TbfCommand(const std::string& name, const Platform& p) {
  if (!p.rate_bps) return {};
  return {"tc",
          "-n",
          name,
          "qdisc",
          "add",
          "dev",
          "lo",
          "root",
          "tbf",
          "rate",
          std::to_string(p.rate_bps) + "bit",
          "burst",
          std::to_string(p.burst_bytes),
          "latency",
          std::to_string(p.queue_us) + "us"};
}

void CreateNetns(const std::string& name, const Platform& p) {
  RunToolOrThrow({"ip", "netns", "add", name}, "cannot create network namespace " + name);
  try {
    if (p.mtu != kLoopbackMtu)
      RunToolOrThrow({"ip", "-n", name, "link", "set", "lo", "mtu", std::to_string(p.mtu)},
                     "cannot set the MTU of the loopback of " + name);
    RunToolOrThrow({"ip", "-n", name, "link", "set", "lo", "up"},
                   "cannot bring up the loopback of " + name);
    if (auto tc = TbfCommand(name, p); !tc.empty())
      RunToolOrThrow(tc, "cannot limit the loopback of " + name +
                             " (does the kernel have the tbf qdisc, sch_tbf?)");
  } catch (...) {
    std::string ignored;
    RemoveNetns(name, &ignored);
    throw;
  }
}

bool EnterNetns(const std::string& name, std::string* error) {
  std::string path = std::string(kNetnsDir) + "/" + name;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open network namespace " + path + ": " + std::strerror(errno);
    return false;
  }
  int rc = setns(fd, CLONE_NEWNET);
  int err = errno;
  close(fd);
  if (rc != 0) {
    *error = "cannot enter network namespace " + name + ": " + std::strerror(err);
    return false;
  }
  return true;
}

bool RemoveNetns(const std::string& name, std::string* error) {
  std::string path = std::string(kNetnsDir) + "/" + name;
  struct stat st;
  if (stat(path.c_str(), &st) != 0 && errno == ENOENT) return true;
  // Processes left inside (ranks of a killed run) keep the namespace alive after its name is
  // gone, invisible to `ip netns`; kill them first.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto pids = PidsIn(path);
    if (pids.empty() || std::chrono::steady_clock::now() > deadline) break;
    for (pid_t p : pids) kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ToolResult r = RunTool({"ip", "netns", "delete", name});
  if (r.status != 0) {
    *error = "cannot delete network namespace " + name + ": " + r.output;
    return false;
  }
  return true;
}

std::vector<std::string> ListNetns() {
  std::vector<std::string> out;
  if (DIR* dp = opendir(kNetnsDir)) {
    while (dirent* e = readdir(dp)) {
      std::string n = e->d_name;
      if (n.rfind("invmw-", 0) == 0) out.push_back(n);
    }
    closedir(dp);
  }
  return out;
}

}  // namespace invmw::emulate
