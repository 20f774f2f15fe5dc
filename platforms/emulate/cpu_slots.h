// CPU slots: one cgroup per rank, each limited to a fraction of one core by the CFS bandwidth
// controller.
//
// Layout (v1: under the cpu controller's mount; v2: under the cgroup2 mount):
//   <root>/invmw-<pid>-<start>/slot-<r>    quota per period for rank r
// The run group itself holds no process and carries no limit, only the highest scheduling
// weight (so that other work on the machine cannot take what the quotas promise): cgroup v2 forbids
// processes in a group whose controllers are delegated to children, and the launcher (mpirun) must
// not be throttled. A rank joins its slot itself (`invmw platform slot`), before it exec's the
// program, so every thread the MPI library starts later is inside the quota.
//
// cgroup v1 takes cpu.cfs_period_us and cpu.cfs_quota_us; v2 takes cpu.max = "<quota> <period>".
// Both reject values under 1000 us.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace invmw::emulate {

enum class CgroupVersion { kV1, kV2 };

struct CpuHierarchy {
  CgroupVersion version = CgroupVersion::kV1;
  std::string root;  // mount point of the hierarchy that has the cpu controller
};

// Finds the hierarchy with the cpu controller. Throws PlatformError explaining what is missing.
CpuHierarchy FindCpuHierarchy();
// The same from given /proc/mounts text, with `read(path)` returning a file's contents or
// nullopt when it does not exist (tests pass a fake file system). Returns false and sets *why
// when no hierarchy fits.
bool FindCpuHierarchyIn(const std::string& mounts,
                        const std::function<std::optional<std::string>(const std::string&)>& read,
                        CpuHierarchy* out, std::string* why);

// The directory of a run group.
std::string RunGroupDir(const CpuHierarchy& h, const std::string& name);

// A slot's CPU limit: quota_us of CPU per period_us.
struct SlotLimit {
  int64_t quota_us;
  int64_t period_us;
};

// Creates the run group with one slot per limit (slot r gets limits[r]). On failure removes
// what it made and throws PlatformError.
void CreateRunGroup(const CpuHierarchy& h, const std::string& name,
                    const std::vector<SlotLimit>& limits);

// Moves the calling process into slot `slot` of the run group at `group_dir`. Throws
// PlatformError.
void JoinSlot(const std::string& group_dir, int slot);

// Kills every process left in the run group's slots, then removes the slots and the group.
// Returns false and sets *error when something could not be removed.
bool RemoveRunGroup(const std::string& group_dir, std::string* error);

// True when some slot of the run group has a process in it right now.
bool AnySlotOccupied(const std::string& group_dir);

// Names of the run groups (invmw-*) that exist under the hierarchy.
std::vector<std::string> ListRunGroups(const CpuHierarchy& h);

// The run group's scheduling weight, the highest there is: {file, value}.
std::pair<std::string, std::string> PriorityWeight(CgroupVersion v);

// The file contents that set a slot's limit: {file, value} pairs, in the order to write them.
std::vector<std::pair<std::string, std::string>> LimitFiles(CgroupVersion v, int64_t quota_us,
                                                            int64_t period_us);

}  // namespace invmw::emulate
