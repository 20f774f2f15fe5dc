// The kernel-file parsers on fixed text, including the awkward cases.
#include "sampler/proc_parse.h"

#include <gtest/gtest.h>

namespace invmw::sampler::parse {
namespace {

TEST(ProcParse, StatWithSpacesAndParensInTheName) {
  const std::string t =
      "4242 (my (odd) app) R 1 4242 4242 0 -1 4194304 1234 0 7 0 250 31 0 0 20 0 3 0 100 "
      "1000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  ProcStat p;
  ASSERT_TRUE(ProcSelfStat(t, &p));
  EXPECT_EQ(p.minflt, 1234u);
  EXPECT_EQ(p.majflt, 7u);
  EXPECT_EQ(p.utime, 250u);
  EXPECT_EQ(p.stime, 31u);
  EXPECT_FALSE(ProcSelfStat("garbage", &p));
  EXPECT_FALSE(ProcSelfStat("1 (x) R 1 2", &p));
}

TEST(ProcParse, StatusAndIo) {
  uint64_t pages;
  ASSERT_TRUE(ProcStatmResident("1000 250 100 10 0 300 0\n", &pages));
  EXPECT_EQ(pages, 250u);
  EXPECT_FALSE(ProcStatmResident("1000\n", &pages));
  uint64_t rss, hwm;
  ASSERT_TRUE(ProcStatusMemory("Name:\tx\nVmHWM:\t   2048 kB\nVmRSS:\t    1024 kB\n", &rss, &hwm));
  EXPECT_EQ(rss, 1024u * 1024);
  EXPECT_EQ(hwm, 2048u * 1024);
  EXPECT_FALSE(ProcStatusMemory("Name:\tkthread\n", &rss, &hwm));
  ProcIo io;
  ASSERT_TRUE(
      ProcSelfIo("rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\n"
                 "write_bytes: 0\ncancelled_write_bytes: 0\n",
                 &io));
  EXPECT_EQ(io.rchar, 10u);
  EXPECT_EQ(io.wchar, 20u);
  EXPECT_EQ(io.read_bytes, 4096u);
  EXPECT_EQ(io.write_bytes, 0u);
}

TEST(ProcParse, CpuLine) {
  uint64_t s[kCpuStates];
  ASSERT_TRUE(ProcStatCpu("cpu  10 1 5 100 2 0 3 4 0 0\ncpu0 5 0 2 50 1 0 1 2 0 0\n", s));
  EXPECT_EQ(s[0], 10u);
  EXPECT_EQ(s[3], 100u);
  EXPECT_EQ(s[7], 4u);
  EXPECT_FALSE(ProcStatCpu("intr 1 2 3\n", s));
}

TEST(ProcParse, NetDev) {
  const std::string t =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
      "drop fifo colls carrier compressed\n"
      "    lo:  123456     100    0    0    0     0          0         0   123456     100    0  "
      "  0    0     0       0          0\n"
      "  eth0: 999 9 0 0 0 0 0 0 555 5 0 0 0 0 0 0\n";
  std::vector<NetDev> d;
  ASSERT_TRUE(NetDevices(t, &d));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name, "lo");
  EXPECT_EQ(d[0].rx_bytes, 123456u);
  EXPECT_EQ(d[1].name, "eth0");
  EXPECT_EQ(d[1].rx_packets, 9u);
  EXPECT_EQ(d[1].tx_bytes, 555u);
  EXPECT_EQ(d[1].tx_packets, 5u);
  EXPECT_FALSE(NetDevices("eth0: 1 2\n", &d));
}

TEST(ProcParse, DiskStats) {
  const std::string t =
      " 254       0 vda 1000 10 20000 300 500 5 8000 100 0 400 400 0 0 0 0\n"
      " 254       1 vda1 900 10 19000 300 400 5 7000 100 0 400 400 0 0 0 0\n";
  std::vector<DiskStat> d;
  ASSERT_TRUE(DiskStats(t, &d));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].reads, 1000u);
  EXPECT_EQ(d[0].read_bytes, 20000u * 512);
  EXPECT_EQ(d[0].writes, 500u);
  EXPECT_EQ(d[0].write_bytes, 8000u * 512);
}

TEST(ProcParse, Cgroups) {
  CgroupCpuStat s;
  ASSERT_TRUE(CgroupCpuStatText("nr_periods 10\nnr_throttled 3\nthrottled_time 5000000\n", &s));
  EXPECT_EQ(s.nr_periods, 10u);
  EXPECT_EQ(s.nr_throttled, 3u);
  EXPECT_EQ(s.throttled_ns, 5000000u);
  EXPECT_FALSE(s.has_usage);
  ASSERT_TRUE(
      CgroupCpuStatText("usage_usec 2000\nuser_usec 1500\nsystem_usec 500\nnr_periods 4\n"
                        "nr_throttled 1\nthrottled_usec 70\n",
                        &s));
  EXPECT_TRUE(s.has_usage);
  EXPECT_EQ(s.usage_ns, 2000000u);
  EXPECT_EQ(s.throttled_ns, 70000u);
  EXPECT_FALSE(CgroupCpuStatText("", &s));
  EXPECT_FALSE(CgroupCpuStatText("usage_usec\nnr_periods x\n", &s));
  ASSERT_TRUE(CgroupCpuStatText("nr_periods 5", &s));  // no final newline
  EXPECT_EQ(s.nr_periods, 5u);
  int64_t q, p;
  ASSERT_TRUE(CgroupCpuMax("max 100000\n", &q, &p));
  EXPECT_LT(q, 0);
  ASSERT_TRUE(CgroupCpuMax("25000 100000\n", &q, &p));
  EXPECT_EQ(q, 25000);
  EXPECT_EQ(p, 100000);
  EXPECT_FALSE(CgroupCpuMax("", &q, &p));
  std::string path, mount;
  const std::string cg = "4:memory:/m\n2:cpu,cpuacct:/job/rank3\n0::/unified/x\n";
  ASSERT_TRUE(CgroupPath(cg, "cpu", &path, &mount));
  EXPECT_EQ(path, "/job/rank3");
  EXPECT_EQ(mount, "cpu,cpuacct");
  ASSERT_TRUE(CgroupPath(cg, "", &path, nullptr));
  EXPECT_EQ(path, "/unified/x");
  EXPECT_FALSE(CgroupPath("0::/\n", "cpu", &path, nullptr));
}

}  // namespace
}  // namespace invmw::sampler::parse
