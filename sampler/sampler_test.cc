// The sampler in this process: sample counts against the interval, monotone totals, CPU time
// of a busy loop, bytes of a known write, the software-event fallback, the control file, and
// the contract of Start/Stop.
#include "sampler/sampler.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "otf2_writer/raw_samples.h"
#include "sampler/source.h"

namespace invmw::sampler {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  const std::string d =
      fs::temp_directory_path() / ("invmw-sampler-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The calling thread's CPU time, s.
double ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Computes until this thread has had `cpu_s` of CPU time and `min_wall_s` have passed. Why CPU
// time and not a wall-clock span: on a loaded machine (tests in parallel, CI beside a build) a
// busy loop of 1 s wall gets 0.4-0.6 s of CPU, and the checks below compare what the sampler
// saw with what the loop really got. Returns the wall time taken, s.
double BurnCpu(double cpu_s, double min_wall_s) {
  const int64_t t0 = clock::MonotonicNs();
  const double c0 = ThreadCpu();
  volatile double sink = 0;
  while (ThreadCpu() - c0 < cpu_s || double(clock::MonotonicNs() - t0) * 1e-9 < min_wall_s)
    for (int i = 0; i < 1000; ++i) sink = sink + i;
  return double(clock::MonotonicNs() - t0) * 1e-9;
}

double Final(const otf2::RawSamples& s, const std::string& name) {
  const int k = s.Find(name);
  EXPECT_GE(k, 0) << name << " not sampled";
  return k < 0 || s.size() == 0 ? 0 : s.at(s.size() - 1, size_t(k));
}

struct Warnings {
  std::mutex mu;
  std::vector<std::string> all;
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mu);
      all.push_back(m);
    };
  }
};

TEST(Sampler, EveryOptionASourceReadsIsDeclared) {
  for (const auto& spec : Sources())
    for (const char* opt : spec.options) {
      bool found = false;
      for (const auto& v : config::Variables()) found = found || std::string(v.name) == opt;
      EXPECT_TRUE(found) << spec.name << " reads " << opt << ", not in common/config_vars.def";
    }
}

TEST(Sampler, BusyLoopAtFiveMilliseconds) {
  const std::string dir = TempDir("busy");
  config::Config cfg = config::Load();
  cfg.SAMPLER_INTERVAL = 0.005;
  cfg.SAMPLER_STREAM.clear();
  Warnings w;
  StartOptions o;
  o.run_dir = dir;
  o.config = &cfg;
  o.warn = w.Sink();
  std::string err;
  ASSERT_TRUE(Start(o, &err)) << err;
  const double cpu_burnt = 0.8;
  const double wall = BurnCpu(cpu_burnt, 1.0);
  Stop();

  otf2::RawSamples s;
  std::vector<std::string> problems;
  ASSERT_TRUE(otf2::LoadRawSamples(dir, 0, &s, &problems));
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_TRUE(s.has_end);
  const double expected = wall / 0.005;
  EXPECT_GT(double(s.size()), 0.75 * expected) << "samples: " << s.size();
  EXPECT_LT(double(s.size()), 1.25 * expected + 2) << "samples: " << s.size();
  std::printf("samples: %zu over %.3f s at 5 ms (expected %.0f)\n", s.size(), wall, expected);

  for (size_t k = 0; k < s.metrics.size(); ++k) {
    if (!s.metrics[k].accumulated) continue;
    for (size_t i = 1; i < s.size(); ++i)
      ASSERT_GE(s.at(i, k), s.at(i - 1, k)) << s.metrics[k].name << " decreases at sample " << i;
  }
  for (size_t i = 1; i < s.size(); ++i) ASSERT_GT(s.ticks[i], s.ticks[i - 1]);

  const double user = Final(s, "proc.cpu.user");
  EXPECT_GT(user, 0.8 * cpu_burnt) << "user CPU " << user << " s; the loop had " << cpu_burnt
                                   << " s of CPU over " << wall << " s";
  std::printf("user CPU %.3f s over %.3f s wall\n", user, wall);

  // Counters: hardware ones, or (on VMs without a PMU) the software fallback, said once.
  if (s.Find("counters.task_clock") >= 0) {
    const double task_s = Final(s, "counters.task_clock") * 1e-9;
    const double cpu = user + Final(s, "proc.cpu.system");
    EXPECT_NEAR(task_s, cpu, 0.2 * cpu + 0.03) << "task clock must follow the CPU time";
    std::printf("fallback: task clock %.3f s, /proc CPU %.3f s\n", task_s, cpu);
    size_t notes = 0;
    for (const auto& m : w.all) notes += m.find("software events") != std::string::npos;
    EXPECT_EQ(notes, 1u) << "the fallback must be announced exactly once";
  } else {
    bool any = false;
    for (const auto& m : s.metrics) any = any || m.source == "counters";
    EXPECT_TRUE(any) << "neither hardware counters nor the software fallback were sampled";
  }
  // Node-wide sources ran (this process is its node's leader).
  EXPECT_GE(s.Find("node_cpu.user"), 0);
  EXPECT_TRUE(fs::exists(dir + "/raw/resources-000000.json"));
  fs::remove_all(dir);
}

TEST(Sampler, TaskClockGrowsWithCpuTime) {
  const std::string dir = TempDir("taskclock");
  config::Config cfg = config::Load();
  cfg.SAMPLER_INTERVAL = 0.01;
  cfg.SAMPLER_SOURCES = {"proc", "counters"};
  cfg.SAMPLER_PAPI = {"PAPI_TOT_INS"};
  cfg.SAMPLER_STREAM.clear();
  StartOptions o;
  o.run_dir = dir;
  o.config = &cfg;
  o.warn = [](const std::string&) {};
  std::string err;
  ASSERT_TRUE(Start(o, &err)) << err;
  // First idle, then busy: the task clock must rise in the busy part only. The idle part is
  // read at the sample whose tick is 250 ms after the first (ticks, not sample numbers: on a
  // loaded machine samples come late), the busy part is 0.3 s of this thread's CPU time.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  BurnCpu(0.3, 0.3);
  Stop();
  otf2::RawSamples s;
  ASSERT_TRUE(otf2::LoadRawSamples(dir, 0, &s, nullptr));
  const int k = s.Find("counters.task_clock");
  if (k < 0) GTEST_SKIP() << "hardware counters available: no fallback here";
  ASSERT_GT(s.size(), 20u);
  size_t asleep = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (double(s.ticks[i] - s.ticks[0]) / s.ticks_per_second <= 0.25) asleep = i;
  ASSERT_GT(asleep, 0u) << "no sample in the first 250 ms";
  const double idle = s.at(asleep, size_t(k)) * 1e-9;
  const double busy = (s.at(s.size() - 1, size_t(k)) - s.at(asleep, size_t(k))) * 1e-9;
  EXPECT_LT(idle, 0.05) << "task clock rose while the process slept";
  EXPECT_GT(busy, 0.25) << "task clock did not follow 0.3 s of CPU in the busy loop";
  fs::remove_all(dir);
}

TEST(Sampler, KnownWriteShowsInWchar) {
  const std::string dir = TempDir("write");
  config::Config cfg = config::Load();
  cfg.SAMPLER_INTERVAL = 0.01;
  cfg.SAMPLER_SOURCES = {"proc"};
  cfg.SAMPLER_STREAM.clear();
  StartOptions o;
  o.run_dir = dir;
  o.config = &cfg;
  std::string err;
  ASSERT_TRUE(Start(o, &err)) << err;
  // /dev/shm is tmpfs: the bytes are written (wchar) but never reach storage (write_bytes).
  struct statfs sf;
  const bool tmpfs = statfs("/dev/shm", &sf) == 0 && sf.f_type == 0x01021994;
  const std::string file =
      (tmpfs ? std::string("/dev/shm") : dir) + "/invmw-write-" + std::to_string(getpid());
  const size_t bytes = 8 << 20;
  {
    const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    std::vector<char> block(1 << 16, 'x');
    for (size_t done = 0; done < bytes; done += block.size())
      ASSERT_EQ(write(fd, block.data(), block.size()), ssize_t(block.size()));
    close(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Stop();
  unlink(file.c_str());
  otf2::RawSamples s;
  ASSERT_TRUE(otf2::LoadRawSamples(dir, 0, &s, nullptr));
  const double wchar = Final(s, "proc.io.wchar");
  EXPECT_GE(wchar, double(bytes));
  EXPECT_LT(wchar, double(bytes) + (1 << 20)) << "far more written than the test wrote";
  if (tmpfs) {
    EXPECT_EQ(Final(s, "proc.io.write_bytes"), 0.0) << "tmpfs writes must not reach storage";
  }
  fs::remove_all(dir);
}

TEST(Sampler, ControlFileChangesTheInterval) {
  const std::string dir = TempDir("control");
  config::Config cfg = config::Load();
  cfg.SAMPLER_INTERVAL = 0.05;
  cfg.SAMPLER_SOURCES = {"proc"};
  cfg.SAMPLER_STREAM.clear();
  StartOptions o;
  o.run_dir = dir;
  o.config = &cfg;
  std::string err;
  ASSERT_TRUE(Start(o, &err)) << err;
  std::ofstream(dir + "/control") << "interval=5ms\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  Stop();
  otf2::RawSamples s;
  ASSERT_TRUE(otf2::LoadRawSamples(dir, 0, &s, nullptr));
  std::ifstream defs(dir + "/raw/metrics-000000.jsonl");
  std::string text((std::istreambuf_iterator<char>(defs)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"type\":\"interval\""), std::string::npos);
  // At 50 ms for ~1 s and 5 ms for ~1.2 s: far more than the 44 samples of 50 ms throughout.
  EXPECT_GT(s.size(), 150u);
  EXPECT_EQ(LastStats().interval_s, 0.005);
  fs::remove_all(dir);
}

// Issue 17: Start runs inside MPI_Init, and opening the counters (PAPI's start-up, the kernel's
// first per-task perf event) took 2-15 ms there. They open on the sampler thread after Start
// has returned, in a process of its own here (this one may have initialised PAPI already), and
// count from their own first reading: a sample at the time their definitions record. PAPI's
// own start-up (PAPI_library_init) is the exception: it runs inside Start, because it reads
// /proc/self/maps unsafely while the application maps libraries (counters_source.cc).
TEST(Sampler, CountersOpenAfterStartAndCountFromTheirFirstReading) {
  const std::string dir = TempDir("deferred");
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    setenv("INVMW_SAMPLER_SOURCES", "proc,counters", 1);
    setenv("INVMW_SAMPLER_INTERVAL", "10ms", 1);
    unsetenv("INVMW_SAMPLER_STREAM");
    const std::string app = INVMW_SAMPLER_TESTAPP;
    execl(app.c_str(), app.c_str(), dir.c_str(), "0", "1", "1", "0.3", "busy", nullptr);
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  const auto app = nlohmann::json::parse(text);

  otf2::RawSamples s;
  ASSERT_TRUE(otf2::LoadRawSamples(dir, 0, &s, nullptr));
  std::vector<size_t> counters;
  for (size_t k = 0; k < s.metrics.size(); ++k)
    if (s.metrics[k].source == "counters") counters.push_back(k);
  if (counters.empty()) GTEST_SKIP() << "no counters and no kernel software events here";
  // The metric lines: the counters' start_ticks, after the sampler's start.
  uint64_t sampler_start = 0;
  std::vector<uint64_t> starts;
  std::ifstream defs(dir + "/raw/metrics-000000.jsonl");
  for (std::string line; std::getline(defs, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["type"] == "sampler") sampler_start = j["start_ticks"];
    if (j["type"] == "metric" && j["source"] == "counters") {
      ASSERT_TRUE(j.contains("start_ticks")) << "counters count from the sampler's start: " << line;
      starts.push_back(j["start_ticks"]);
    }
  }
  ASSERT_EQ(starts.size(), counters.size());
  const uint64_t start = starts[0];
  for (uint64_t t : starts) EXPECT_EQ(t, start) << "one first reading for the whole source";
  EXPECT_GT(start, sampler_start);
  // PAPI, when it could start at all, started inside Start, not on the sampler thread.
  if (app["papi_initialized_at_end"].get<int>() != 0) {
    EXPECT_NE(app["papi_initialized_at_start"].get<int>(), 0)
        << "PAPI_library_init ran on the sampler thread, while the application runs";
  }
  // Zero until their first reading (a sample of its own at `start`), counts after it.
  size_t first = s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s.ticks[i] == start) first = i;
  ASSERT_LT(first, s.size()) << "no sample at the counters' first reading";
  ASSERT_GT(first, 0u);
  for (size_t k : counters) {
    for (size_t i = 0; i <= first; ++i) EXPECT_EQ(s.at(i, k), 0.0) << s.metrics[k].name;
  }
  double any = 0;
  for (size_t k : counters) any += s.at(s.size() - 1, k);
  EXPECT_GT(any, 0) << "counter values arrive";
  std::ifstream res(dir + "/raw/resources-000000.json");
  const auto r = nlohmann::json::parse(res);
  EXPECT_NEAR(r["counters_start_s"].get<double>(), double(start - s.ticks[0]) / s.ticks_per_second,
              1e-6);
  EXPECT_GT(r["counters_start_s"].get<double>(), 0);
  fs::remove_all(dir);
}

TEST(Sampler, StartContract) {
  std::string err;
  StartOptions bad;
  EXPECT_FALSE(Start(bad, &err));
  EXPECT_NE(err.find("run_dir"), std::string::npos) << err;
  bad.run_dir = "/tmp";
  bad.rank = 3;
  bad.world_size = 2;
  EXPECT_FALSE(Start(bad, &err));
  EXPECT_NE(err.find("rank"), std::string::npos) << err;
  Stop();  // without a running sampler: harmless
  Stop();
  StartOptions unwritable;
  unwritable.run_dir = "/proc/invmw-cannot-exist";
  EXPECT_FALSE(Start(unwritable, &err));
  EXPECT_NE(err.find("cannot create"), std::string::npos) << err;

  const std::string dir = TempDir("twice");
  config::Config cfg = config::Load();
  cfg.SAMPLER_SOURCES = {"proc"};
  StartOptions o;
  o.run_dir = dir;
  o.config = &cfg;
  ASSERT_TRUE(Start(o, &err)) << err;
  EXPECT_FALSE(Start(o, &err));
  EXPECT_NE(err.find("already running"), std::string::npos);
  Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace invmw::sampler

// The profile side: resources-R.json of two ranks attached to a profile and rendered.
#include "recording/profile_report.h"

namespace invmw::sampler {
namespace {

TEST(Sampler, ResourcesAttachToTheProfile) {
  const std::string dir = TempDir("resources");
  config::Config cfg = config::Load();
  cfg.SAMPLER_INTERVAL = 0.01;
  cfg.SAMPLER_STREAM.clear();
  for (int rank = 0; rank < 2; ++rank) {
    StartOptions o;
    o.run_dir = dir;
    o.rank = rank;
    o.world_size = 2;
    o.node_leader = rank == 0;
    o.config = &cfg;
    o.warn = [](const std::string&) {};
    std::string err;
    ASSERT_TRUE(Start(o, &err)) << err;
    BurnCpu(0.1, 0.1);
    Stop();
  }
  profile::RankData r0{}, r1{};
  r0.header.rank = 0, r1.header.rank = 1;
  r0.header.world_size = r1.header.world_size = 2;
  r0.header.wall_s = r1.header.wall_s = 0.1;
  r0.header.ticks_per_second = r1.header.ticks_per_second = 1e9;
  nlohmann::json p = profile::BuildProfile({r0, r1}, profile::RunMeta{}, false);
  ASSERT_EQ(profile::AttachResources(&p, dir), 2);
  const auto& res = p["resources"];
  ASSERT_EQ(res["ranks"].size(), 2u);
  double user = 0;
  for (const auto& r : res["ranks"]) {
    // Each rank computed 0.1 s of CPU time; on a loaded machine the sampler's first reading may
    // come late in it, so only a clear part of it is asked for.
    EXPECT_GT(r["cpu_user_s"].get<double>(), 0.01) << r.dump();
    EXPECT_GT(r["rss_peak_bytes"].get<double>(), 0);
    EXPECT_GT(r["samples"].get<int>(), 5);
    user += r["cpu_user_s"].get<double>();
  }
  EXPECT_DOUBLE_EQ(res["totals"]["cpu_user_s"].get<double>(), user);
  EXPECT_TRUE(res["ranks"][0]["node_net_rx_bytes"].is_number()) << "node leader samples net";
  EXPECT_TRUE(res["ranks"][1]["node_net_rx_bytes"].is_null()) << "only the node leader does";
  const std::string text = profile::RenderText(p);
  EXPECT_NE(text.find("Resources per rank"), std::string::npos) << text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace invmw::sampler
