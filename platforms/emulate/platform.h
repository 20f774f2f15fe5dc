// A run platform: where the ranks of a design point actually run.
//
// These machines have 2 cores, so a run with more ranks than cores measures time-sharing, not
// parallelism. An emulated platform turns the machine into N virtual nodes instead: every rank
// gets its own CPU quota (a fraction of one core, enforced by a cgroup), and the ranks talk
// either over shared memory or over TCP on the loopback of a private network namespace whose
// rate is limited by a token bucket. The platform `local` runs the command as it is.
//
// A platform is described by a TOML file in platforms/emulated/ (see docs/platforms.md):
//
//   name = "emu-4x50-100mbit"
//   description = "..."
//   nodes = 4               # virtual nodes = rank slots
//   cpu_quota = 0.5         # fraction of a core per rank; absent or 0: no quota
//   period_us = 10000       # CFS period; default 10 ms (measured best, docs/platforms.md)
//   period_spread = 0.05    # slot r's period is period_us x (1 + spread x frac(r x 0.618...));
//                           # default 0.05: the slots' periods must not stay in phase
//   network = "tcp"         # "shm", "tcp" or "host" (local: the machine's own)
//   rate = "100mbit"        # tcp only; absent: unlimited loopback
//   burst = "80kb"          # token bucket depth, must exceed the loopback MTU
//   queue = "2s"            # longest a packet may wait in the bucket's queue (no drops
//                           # while less than rate x 2 s is in flight)
//   caveat = "..."          # required with a rate: the shared-medium caveat
//   yield_when_idle = false # MPI yields while polling (default false: measured worse)
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace invmw::emulate {

// Any problem with a platform description or its use; the message names the file, the line and
// the field where there is one.
class PlatformError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Network { kHost, kShm, kTcp };

// The kernel rejects CFS quotas and periods below 1 ms (cgroup v1 and v2 alike).
constexpr int64_t kMinCfsUs = 1000;
constexpr int64_t kMaxCfsPeriodUs = 1000000;
// The period a platform gets unless it names one (see platform.cc and docs/platforms.md).
constexpr int64_t kDefaultPeriodUs = 10000;
// How far apart the slots' periods lie unless a platform says otherwise (see Platform::
// period_spread and docs/platforms.md "Period spread").
constexpr double kDefaultPeriodSpread = 0.05;
constexpr double kMaxPeriodSpread = 0.5;
// The loopback's default MTU. A token bucket shallower than one packet never lets a packet
// through, so the burst must exceed the MTU; a platform may lower the MTU (key `mtu`) to allow a
// shallow bucket, whose burst short messages cannot use to beat the rate.
constexpr int64_t kLoopbackMtu = 65536;
constexpr int64_t kMinMtu = 1280;  // IPv6's minimum: the loopback carries both families

struct Platform {
  std::string name;
  std::string description;
  std::string caveat;
  std::string path;      // the file it came from ("" for a built-in)
  int nodes = 0;         // rank slots; 0 = unbounded (local)
  double cpu_quota = 0;  // fraction of one core per rank; 0 = no quota
  int64_t period_us = 0;
  // Slot r's CFS period is period_us (1 + period_spread frac(r g)), g the golden ratio's
  // fractional part, and its quota cpu_quota times that: every slot keeps its share of a core,
  // but no two slots' periods are equal. With equal periods the ranks' throttling locks into
  // one relative phase for a whole run, a different one each run, and the run's split between
  // computation, communication and synchronization (not its total) becomes a lottery: opal-mini's
  // t_sync varied by sd(log) 0.9-1.1 between runs of one point, 0.17-0.30 with a spread of
  // 0.01-0.1 (docs/platforms.md "Period spread"). 0 gives every slot period_us.
  double period_spread = 0;
  Network network = Network::kHost;
  int64_t rate_bps = 0;   // bits per second; 0 = unlimited
  std::string rate_text;  // as written, for messages
  int64_t burst_bytes = 0;
  int64_t queue_us = 0;
  int64_t mtu = kLoopbackMtu;  // of the namespace's loopback (tcp platforms)
  // Ask the MPI to yield the CPU while it polls for messages (Open MPI mpi_yield_when_idle).
  // Polling ranks burn their quota and are then throttled, but yielding measured worse than
  // polling here (docs/platforms.md), so it is off unless a platform asks for it.
  bool yield_when_idle = false;
  // Pin each CPU slot to one core (slot r on the r-th usable CPU, modulo their number), so a
  // virtual node is a fixed share of a fixed core: unpinned, the scheduler moves ranks between
  // cores and their quotas interleave differently from run to run (measured: opal-mini's run
  // time varied 12-13% between runs unpinned, 5% pinned, on emu-4x50-shm).
  bool pin_cores = true;

  // kind = "simgrid" (platforms/simulated/*.toml, issue 19): a cluster SimGrid's SMPI
  // simulates, exported from a platform table. None of the emulation fields apply to it.
  bool simulated = false;
  std::string table;             // platform table: a name in platforms/tables, or a path
  std::vector<std::string> cfg;  // extra smpirun --cfg=... settings, as written
  // "declared": the SMPI builds' smpi_execute_flops alone make computation time
  // (smpi/simulate-computation:no, deterministic); "host": SMPI also times the host's code.
  std::string computation = "declared";

  bool HasQuota() const { return cpu_quota > 0; }
  bool HasNamespace() const { return network == Network::kTcp; }
  bool NeedsRoot() const { return HasQuota() || HasNamespace(); }
  // Quota in microseconds of CPU per period of slot 0, whose period is period_us.
  int64_t QuotaUs() const;
  // Slot `slot`'s CFS period and quota (period_spread above).
  int64_t SlotPeriodUs(int slot) const;
  int64_t SlotQuotaUs(int slot) const;
  // Cores the platform uses when every slot is busy (nodes x quota).
  double TotalCores() const { return nodes * cpu_quota; }
};

// Directory of the shipped platform files: $INVMW_EMULATE_DIR, else the installed
// share/invmw/emulated next to the executable, else the source tree's platforms/emulated.
std::string PlatformsDir();

// Loads a platform by name (a file NAME.toml in PlatformsDir(), or the built-in "local") or by
// path (anything with a '/' or ending in .toml). Throws PlatformError.
Platform LoadPlatform(const std::string& name_or_path);

// Parses a platform description; `source` names it in messages. Throws PlatformError.
Platform ParsePlatform(const std::string& text, const std::string& source);

// Directory of the simulated run platforms: the directory "simulated" beside PlatformsDir()
// (platforms/simulated in the source tree, share/invmw/simulated installed).
std::string SimulatedDir();

// Names of the platforms in PlatformsDir() and SimulatedDir() (plus "local" when no file
// shadows it), sorted.
std::vector<std::string> ListPlatforms();

// "100mbit", "1gbit", "10mbit", "500kbit", "1.5gbit", "12500000bit" -> bits per second.
bool ParseRate(const std::string& s, int64_t* bps);
// "80kb", "65537", "1mb", "96k" -> bytes (k = 1024, as tc reads it).
bool ParseBytes(const std::string& s, int64_t* bytes);

// Open MPI mpirun options the platform needs, in order (what --print-launcher prints).
std::vector<std::string> LauncherOptions(const Platform& p);
// The same settings as environment variables that `platform exec` exports to the command, so a
// launcher started without the options still runs on the platform (name, value).
std::vector<std::pair<std::string, std::string>> LauncherEnvironment(const Platform& p);

}  // namespace invmw::emulate
