// Running a command on a platform: set up, run, tear down, whatever happens in between.
//
// `platform exec` and the experiment runner use this. A Session owns the kernel resources of
// one run (the CPU slots' cgroups, the network namespace), all named after the owning process
// (owner.h) so that leftovers of a killed owner can be recognised and removed at the next start
// (RemoveStale) while concurrent runs keep theirs. Exec() supervises the command: SIGINT,
// SIGTERM, SIGHUP and SIGQUIT are passed on to it and the resources are removed after it ends;
// the command gets PR_SET_PDEATHSIG, so even a SIGKILL of the supervisor stops the launcher and
// leaves only names behind for the next start to clean.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "platforms/emulate/cpu_slots.h"
#include "platforms/emulate/platform.h"

namespace invmw::emulate {

// Environment variables through which `platform exec` tells `platform slot` where to go.
constexpr const char* kEnvGroup = "INVMW_EMULATE_GROUP";        // run group directory
constexpr const char* kEnvSlots = "INVMW_EMULATE_SLOTS";        // number of slots
constexpr const char* kEnvPlatform = "INVMW_EMULATE_PLATFORM";  // platform name
constexpr const char* kEnvNetns = "INVMW_EMULATE_NETNS";        // namespace name (tcp platforms)
constexpr const char* kEnvCpus = "INVMW_EMULATE_CPUS";  // CPUs the slots are pinned to, in order

// A resource removed (or that failed to be removed) by RemoveStale.
struct StaleResource {
  std::string kind;  // "cgroup" or "netns"
  std::string name;
  bool removed = false;
  std::string error;
};

// Removes invmw-* cgroups and network namespaces whose owner process is gone (all of them when
// `include_live`, for an administrator who knows no run is going on). Kills processes still in
// them. Resources whose kind is unavailable here are skipped silently.
std::vector<StaleResource> RemoveStale(bool include_live);

struct ExecResult {
  int wait_status = 0;  // as from waitpid
  int interrupted = 0;  // the terminating signal Exec received and passed on, or 0
};

class Session {
 public:
  // Checks that the platform can run here and that `ranks` slots fit (0: one per node).
  // Throws PlatformError with what is missing (root, cgroup cpu controller, netns).
  Session(Platform platform, int ranks);
  ~Session();  // Teardown()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Creates the slots and the namespace. Throws PlatformError; nothing is left on failure.
  void Setup();
  // Removes them (idempotent). Returns false and sets *error when something stayed behind.
  bool Teardown(std::string* error);

  // Runs argv on the platform and waits for it. Terminating signals received meanwhile are
  // passed on to the command (the signal mask is restored afterwards). Throws PlatformError
  // when the command cannot be started.
  ExecResult Exec(const std::vector<std::string>& argv);

  // Variables the command gets (slot location, MPI settings).
  std::vector<std::pair<std::string, std::string>> Environment() const;

  const Platform& platform() const { return platform_; }
  int ranks() const { return ranks_; }
  const std::string& name() const { return name_; }
  std::string GroupDir() const;
  // Whether a process was seen in a CPU slot while the last Exec ran (checked every 50 ms):
  // false after a run of some length means the launcher line lacks `invmw platform slot`.
  bool slots_seen() const { return slots_seen_; }
  // Seconds the last Exec took.
  double exec_seconds() const { return exec_seconds_; }

 private:
  Platform platform_;
  int ranks_ = 0;
  std::string name_;
  CpuHierarchy cpu_;
  bool have_group_ = false;
  bool have_netns_ = false;
  bool slots_seen_ = false;
  double exec_seconds_ = 0;
};

}  // namespace invmw::emulate
