// Platform descriptions, owner names and cgroup hierarchy detection: everything that can be
// checked without root (the kernel-side behaviour is tested by tests/emulate_test.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>

#include "platforms/emulate/cpu_slots.h"
#include "platforms/emulate/netns.h"
#include "platforms/emulate/owner.h"
#include "platforms/emulate/platform.h"

namespace invmw::emulate {
namespace {

std::string ErrorOf(const std::string& text) {
  try {
    ParsePlatform(text, "p.toml");
  } catch (const PlatformError& e) {
    return e.what();
  }
  return "";
}

const char* kHeader = "name = \"x\"\ndescription = \"d\"\n";

TEST(Platform, ParsesAFullTcpPlatform) {
  Platform p = ParsePlatform(std::string(kHeader) +
                                 "nodes = 4\ncpu_quota = 0.5\nnetwork = \"tcp\"\n"
                                 "rate = \"100mbit\"\nburst = \"80kb\"\nqueue = \"20ms\"\n"
                                 "caveat = \"shared\"\n",
                             "p.toml");
  EXPECT_EQ(p.nodes, 4);
  EXPECT_EQ(p.period_us, kDefaultPeriodUs);
  EXPECT_EQ(p.QuotaUs(), 5000);
  EXPECT_EQ(p.rate_bps, 100000000);
  EXPECT_EQ(p.burst_bytes, 80 * 1024);
  EXPECT_EQ(p.queue_us, 20000);
  EXPECT_TRUE(p.HasNamespace());
  EXPECT_TRUE(p.NeedsRoot());
  EXPECT_DOUBLE_EQ(p.TotalCores(), 2.0);
}

TEST(Platform, DefaultPeriodIsTenMillisecondsOrWhatTheQuotaNeeds) {
  auto period = [](const char* q) {
    return ParsePlatform(std::string(kHeader) + "nodes = 2\ncpu_quota = " + q + "\n", "p.toml")
        .period_us;
  };
  EXPECT_EQ(period("0.25"), 10000);
  EXPECT_EQ(period("1.0"), 10000);
  EXPECT_EQ(period("0.05"), 20000);  // 1 ms, the kernel's minimum quota
  EXPECT_EQ(period("0.03"), 33334);
}

TEST(Platform, SlotPeriodsSpreadAboveThePeriodEachWithItsShare) {
  Platform p = ParsePlatform(std::string(kHeader) + "nodes = 8\ncpu_quota = 0.25\n", "p.toml");
  EXPECT_DOUBLE_EQ(p.period_spread, kDefaultPeriodSpread);
  EXPECT_EQ(p.SlotPeriodUs(0), 10000);
  EXPECT_EQ(p.QuotaUs(), 2500);
  std::set<int64_t> seen;
  for (int r = 0; r < 64; ++r) {
    int64_t t = p.SlotPeriodUs(r);
    EXPECT_GE(t, 10000) << r;
    EXPECT_LT(t, 10500) << r;
    EXPECT_NEAR(p.SlotQuotaUs(r), 0.25 * t, 0.5) << r;
    if (r < 8) seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 8u);  // no two of the 8 slots share a period
  // Slot 1 lies 0.618 x 5% above, slot 2 0.236 x 5%: the golden ratio's fractional parts.
  EXPECT_EQ(p.SlotPeriodUs(1), 10309);
  EXPECT_EQ(p.SlotPeriodUs(2), 10118);

  Platform same = ParsePlatform(
      std::string(kHeader) + "nodes = 4\ncpu_quota = 0.5\nperiod_spread = 0\n", "p.toml");
  for (int r = 0; r < 4; ++r) EXPECT_EQ(same.SlotPeriodUs(r), 10000) << r;
  Platform wide = ParsePlatform(
      std::string(kHeader) + "nodes = 4\ncpu_quota = 0.5\nperiod_spread = 0.5\n", "p.toml");
  EXPECT_EQ(wide.SlotPeriodUs(1), 13090);
  EXPECT_EQ(wide.SlotQuotaUs(1), 6545);
  // A tiny quota's long period leaves the default spread only the room up to the kernel's 1 s.
  Platform tiny =
      ParsePlatform(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.00125\n", "p.toml");
  EXPECT_EQ(tiny.period_us, 800000);
  EXPECT_DOUBLE_EQ(tiny.period_spread, 0.05);
  tiny = ParsePlatform(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.001\n", "p.toml");
  EXPECT_EQ(tiny.period_us, 1000000);
  EXPECT_DOUBLE_EQ(tiny.period_spread, 0);
  tiny = ParsePlatform(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.00101\n", "p.toml");
  EXPECT_LE(tiny.SlotPeriodUs(1), kMaxCfsPeriodUs);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.0009999\n")
                .find("p.toml:4: cpu_quota 0.0009999 is under the smallest share"),
            std::string::npos);
  // No quota, no periods.
  EXPECT_DOUBLE_EQ(ParsePlatform(std::string(kHeader) + "nodes = 2\n", "p.toml").period_spread, 0);
}

TEST(Platform, RejectsABadPeriodSpreadNamingTheField) {
  std::string e =
      ErrorOf(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.5\nperiod_spread = 0.6\n");
  EXPECT_NE(e.find("p.toml:5: 'period_spread' must be a number from 0 to 0.5"), std::string::npos)
      << e;
  e = ErrorOf(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.5\nperiod_spread = -0.1\n");
  EXPECT_NE(e.find("p.toml:5: 'period_spread'"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.5\nperiod_spread = \"5%\"\n");
  EXPECT_NE(e.find("p.toml:5: 'period_spread'"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) + "nodes = 2\nperiod_spread = 0.05\n");
  EXPECT_NE(e.find("'period_spread' without a 'cpu_quota'"), std::string::npos) << e;
  e = ErrorOf(std::string(kHeader) +
              "nodes = 2\ncpu_quota = 0.5\nperiod_us = 990000\nperiod_spread = 0.05\n");
  EXPECT_NE(e.find("over the kernel's longest period"), std::string::npos) << e;
}

TEST(Platform, RejectsQuotaUnderTheKernelMinimumNamingTheFix) {
  std::string e = ErrorOf(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.25\nperiod_us = 2000\n");
  EXPECT_NE(e.find("p.toml:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("= 500 us"), std::string::npos) << e;
  EXPECT_NE(e.find("period_us >= 4000"), std::string::npos) << e;
}

TEST(Platform, ErrorsNameFileLineAndField) {
  EXPECT_NE(ErrorOf(std::string(kHeader) + "nodes = 0\n").find("p.toml:3: 'nodes'"),
            std::string::npos);
  // A float where an integer belongs is refused, not cast (1e24 overflowed the cast: a fuzzer
  // found it under UBSan; fuzz/regressions/emulated_platform/float-nodes-1e24.toml).
  for (const char* v : {"1e24", "4.0", "-1e300"})
    EXPECT_NE(ErrorOf(std::string(kHeader) + "nodes = " + v + "\n")
                  .find("p.toml:3: 'nodes' must be an integer from 1 to 1024"),
              std::string::npos)
        << v;
  EXPECT_NE(ErrorOf(std::string(kHeader) + "nodes = 2\ncpu_quota = 0.5\nperiod_us = 1e24\n")
                .find("p.toml:5: 'period_us' must be an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "cpu_quota = 1.5\nnodes = 2\n").find("p.toml:3:"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "network = \"ib\"\n").find("expected \"shm\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "netwrk = \"tcp\"\n").find("unknown key 'netwrk'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("description = \"d\"\n").find("missing 'name'"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "cpu_quota = 0.5\n").find("needs 'nodes'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "network = \"shm\"\nrate = \"1gbit\"\n")
                .find("p.toml:4: 'rate' applies only to network = \"tcp\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "network = \"tcp\"\nrate = \"fast\"\ncaveat = \"c\"\n")
                .find("'rate' is 'fast'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("name = \"x\"\ndescription = \"d\"\nnodes = [\n").find("p.toml:"),
            std::string::npos);
}

TEST(Platform, BurstMustExceedTheLoopbackMtu) {
  std::string base =
      std::string(kHeader) + "network = \"tcp\"\nrate = \"10mbit\"\ncaveat = \"c\"\n";
  EXPECT_NE(ErrorOf(base + "burst = \"64kb\"\n").find("does not exceed the loopback MTU"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(base + "burst = \"65537\"\n"), "");
  // A lower MTU allows a shallow bucket; the burst must still exceed it.
  EXPECT_EQ(ErrorOf(base + "mtu = 1500\nburst = \"16kb\"\n"), "");
  EXPECT_EQ(ParsePlatform(base + "mtu = 1500\nburst = \"16kb\"\n", "p.toml").mtu, 1500);
  EXPECT_NE(ErrorOf(base + "mtu = 1500\nburst = \"1400\"\n").find("loopback MTU (1500"),
            std::string::npos);
  EXPECT_NE(ErrorOf(base + "mtu = 100\n").find("'mtu' must be"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "network = \"shm\"\nmtu = 1500\n")
                .find("applies only to network"),
            std::string::npos);
}

TEST(Platform, RateLimitedLoopbackNeedsTheSharedMediumCaveat) {
  EXPECT_NE(ErrorOf(std::string(kHeader) + "network = \"tcp\"\nrate = \"10mbit\"\n")
                .find("shared by all virtual nodes"),
            std::string::npos);
  // Unlimited loopback: no bucket, no caveat required.
  EXPECT_EQ(ErrorOf(std::string(kHeader) + "network = \"tcp\"\n"), "");
}

TEST(Platform, SlotsArePinnedUnlessThePlatformSaysNot) {
  const std::string base = std::string(kHeader) + "nodes = 2\ncpu_quota = 0.5\n";
  EXPECT_TRUE(ParsePlatform(base, "p.toml").pin_cores);
  EXPECT_FALSE(ParsePlatform(base + "pin_cores = false\n", "p.toml").pin_cores);
  const std::string e = ErrorOf(base + "pin_cores = \"yes\"\n");
  EXPECT_NE(e.find("p.toml"), std::string::npos) << e;
  EXPECT_NE(e.find("'pin_cores' must be true/false"), std::string::npos) << e;
}

TEST(Platform, ParsesRatesAndSizes) {
  int64_t v = 0;
  EXPECT_TRUE(ParseRate("100mbit", &v));
  EXPECT_EQ(v, 100000000);
  EXPECT_TRUE(ParseRate("1.5Gbit", &v));
  EXPECT_EQ(v, 1500000000);
  EXPECT_TRUE(ParseRate("500kbit", &v));
  EXPECT_EQ(v, 500000);
  EXPECT_FALSE(ParseRate("100mb", &v));  // megabytes? say bits
  EXPECT_FALSE(ParseRate("0mbit", &v));
  EXPECT_FALSE(ParseRate("mbit", &v));
  EXPECT_TRUE(ParseBytes("80kb", &v));
  EXPECT_EQ(v, 81920);
  EXPECT_TRUE(ParseBytes("70000", &v));
  EXPECT_EQ(v, 70000);
  EXPECT_FALSE(ParseBytes("80 parsecs", &v));
}

TEST(Platform, LauncherOptionsAndEnvironmentAgree) {
  Platform p = ParsePlatform(
      std::string(kHeader) + "nodes = 4\ncpu_quota = 0.5\nnetwork = \"tcp\"\n", "p.toml");
  auto opts = LauncherOptions(p);
  std::string line;
  for (const auto& o : opts) line += o + " ";
  EXPECT_NE(line.find("--mca btl tcp,self --mca btl_tcp_if_include lo"), std::string::npos);
  EXPECT_NE(line.find("--bind-to none"), std::string::npos);
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : LauncherEnvironment(p)) env[k] = v;
  EXPECT_EQ(env["OMPI_MCA_btl"], "tcp,self");
  EXPECT_EQ(env["OMPI_MCA_btl_tcp_if_include"], "lo");
  // Every --mca option has its environment twin.
  for (size_t i = 0; i + 2 < opts.size(); ++i) {
    if (opts[i] == "--mca") {
      EXPECT_EQ(env["OMPI_MCA_" + opts[i + 1]], opts[i + 2]) << opts[i + 1];
    }
  }
}

TEST(Platform, LocalNeedsNothing) {
  Platform p = LoadPlatform("local");
  EXPECT_FALSE(p.NeedsRoot());
  EXPECT_TRUE(LauncherOptions(p).empty());
}

TEST(Platform, ShippedPlatformsLoadAndNeverExceedTwoCores) {
  auto names = ListPlatforms();
  EXPECT_GE(names.size(), 8u);
  for (const auto& n : names) {
    Platform p = LoadPlatform(n);  // throws on a bad file
    EXPECT_EQ(p.name, n);
    EXPECT_LE(p.TotalCores(), 2.0 + 1e-9) << n;
    if (p.rate_bps) {
      EXPECT_NE(p.description.find("shared"), std::string::npos) << n;
      EXPECT_FALSE(p.caveat.empty()) << n;
    }
  }
}

TEST(Platform, UnknownNameListsTheAvailableOnes) {
  try {
    LoadPlatform("emu-nonesuch");
    FAIL();
  } catch (const PlatformError& e) {
    EXPECT_NE(std::string(e.what()).find("available: emu-"), std::string::npos) << e.what();
  }
}

TEST(Platform, SimulatedClusterKeysAndErrors) {
  const std::string base = std::string(kHeader) + "kind = \"simgrid\"\ntable = \"fast-cops\"\n";
  Platform p =
      ParsePlatform(base + "nodes = 16\ncfg = [\"smpi/async-small-thresh:65536\"]\n", "p.toml");
  EXPECT_TRUE(p.simulated);
  EXPECT_EQ(p.nodes, 16);
  EXPECT_EQ(p.table, "fast-cops");
  ASSERT_EQ(p.cfg.size(), 1u);
  EXPECT_EQ(p.computation, "declared");
  EXPECT_FALSE(p.NeedsRoot());
  EXPECT_TRUE(LauncherOptions(p).empty());
  EXPECT_TRUE(LauncherEnvironment(p).empty());
  EXPECT_NE(ErrorOf(base).find("missing 'nodes'"), std::string::npos);
  EXPECT_NE(ErrorOf(base + "nodes = 1\n").find("p.toml:5: 'nodes' must be"), std::string::npos);
  EXPECT_NE(ErrorOf(base + "nodes = 4\ncpu_quota = 0.5\n").find("unknown key 'cpu_quota'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(base + "nodes = 4\ncfg = [\"x y\"]\n").find("NAME:VALUE"), std::string::npos);
  EXPECT_NE(ErrorOf(base + "nodes = 4\ncomputation = \"fast\"\n").find("\"declared\""),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(std::string(kHeader) + "kind = \"simgrid\"\nnodes = 4\n").find("missing 'table'"),
      std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHeader) + "kind = \"slurm2\"\n").find("'kind' must be"),
            std::string::npos);
  // The shipped ones load by name from platforms/simulated beside platforms/emulated.
  Platform s = LoadPlatform("sim-16-fast-cops");
  EXPECT_TRUE(s.simulated);
  EXPECT_NE(s.path.find("/simulated/"), std::string::npos) << s.path;
}

TEST(Owner, NamesRoundTripAndDeadOwnersAreStale) {
  Owner self = SelfOwner();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_GT(self.start, 0u);
  Owner parsed;
  ASSERT_TRUE(ParseResourceName(ResourceName(self), &parsed));
  EXPECT_EQ(parsed.pid, self.pid);
  EXPECT_EQ(parsed.start, self.start);
  EXPECT_TRUE(OwnerAlive(self));
  Owner reused = self;
  reused.start += 1;  // same pid, another process: the owner is gone
  EXPECT_FALSE(OwnerAlive(reused));
  EXPECT_FALSE(ParseResourceName("invmw-12", &parsed));
  EXPECT_FALSE(ParseResourceName("invmw-12-34x", &parsed));
  EXPECT_FALSE(ParseResourceName("other-12-34", &parsed));
}

TEST(CpuHierarchy, FindsV1V2OrExplains) {
  std::map<std::string, std::string> files;
  auto read = [&](const std::string& p) -> std::optional<std::string> {
    auto it = files.find(p);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  CpuHierarchy h;
  std::string why;
  // cgroup v1 with cpu and cpuacct co-mounted; the v2 mount has no cpu controller.
  std::string hybrid =
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0\n";
  files["/sys/fs/cgroup/unified/cgroup.controllers"] = "\n";
  files["/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"] = "-1\n";
  ASSERT_TRUE(FindCpuHierarchyIn(hybrid, read, &h, &why)) << why;
  EXPECT_EQ(h.version, CgroupVersion::kV1);
  EXPECT_EQ(h.root, "/sys/fs/cgroup/cpu,cpuacct");
  // Pure v2.
  files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io memory pids\n";
  files["/sys/fs/cgroup/cgroup.subtree_control"] = "memory\n";
  ASSERT_TRUE(FindCpuHierarchyIn("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", read, &h, &why));
  EXPECT_EQ(h.version, CgroupVersion::kV2);
  EXPECT_EQ(h.root, "/sys/fs/cgroup");
  // v1 cpu without CFS bandwidth control.
  files.erase("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us");
  EXPECT_FALSE(FindCpuHierarchyIn(hybrid, read, &h, &why));
  EXPECT_NE(why.find("CONFIG_CFS_BANDWIDTH"), std::string::npos) << why;
  // Nothing.
  EXPECT_FALSE(FindCpuHierarchyIn("proc /proc proc rw 0 0\n", read, &h, &why));
  EXPECT_NE(why.find("no cgroup hierarchy with the cpu controller"), std::string::npos);
}

TEST(CpuHierarchy, LimitFilesPerVersion) {
  auto v1 = LimitFiles(CgroupVersion::kV1, 1000, 4000);
  ASSERT_EQ(v1.size(), 2u);
  EXPECT_EQ(v1[0], std::make_pair(std::string("cpu.cfs_period_us"), std::string("4000")));
  EXPECT_EQ(v1[1], std::make_pair(std::string("cpu.cfs_quota_us"), std::string("1000")));
  auto v2 = LimitFiles(CgroupVersion::kV2, 1000, 4000);
  ASSERT_EQ(v2.size(), 1u);
  EXPECT_EQ(v2[0], std::make_pair(std::string("cpu.max"), std::string("1000 4000")));
}

TEST(Netns, TbfCommandCarriesRateBurstAndQueue) {
  Platform p = ParsePlatform(std::string(kHeader) +
                                 "network = \"tcp\"\nrate = \"10mbit\"\nburst = \"80kb\"\n"
                                 "caveat = \"c\"\n",
                             "p.toml");
  auto tc = TbfCommand("invmw-1-2", p);
  std::string line;
  for (const auto& a : tc) line += a + " ";
  EXPECT_EQ(line,
            "tc -n invmw-1-2 qdisc add dev lo root tbf rate 10000000bit burst 81920 latency "
            "2000000us ");
  p.rate_bps = 0;
  EXPECT_TRUE(TbfCommand("invmw-1-2", p).empty());
}

}  // namespace
}  // namespace invmw::emulate
