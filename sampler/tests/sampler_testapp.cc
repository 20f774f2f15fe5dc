// Test helper: a process that runs the sampler as the runtime would (Start after "init", Stop
// before "finalize") around a known workload, configured by INVMW_SAMPLER_* variables.
//
//   sampler_testapp DIR RANK WORLD LEADER SECONDS WORK [BYTES]
//     WORK: busy (spin on the CPU), sleep, or write (write BYTES to DIR/written-RANK.dat in
//     64 KiB pieces, then sleep out the rest)
// Prints one JSON line: samples taken, sampler thread CPU seconds, wall seconds, whether PAPI
// was initialised when Start returned, and the clock ticks then.
#include <fcntl.h>
#include <papi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "sampler/sampler.h"

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s DIR RANK WORLD LEADER SECONDS busy|sleep|write [BYTES]\n",
                 argv[0]);
    return 2;
  }
  invmw::sampler::StartOptions o;
  o.run_dir = argv[1];
  o.rank = std::atoi(argv[2]);
  o.world_size = std::atoi(argv[3]);
  o.node_leader = std::atoi(argv[4]) != 0;
  const double seconds = std::atof(argv[5]);
  const std::string work = argv[6];
  const long long bytes = argc > 7 ? std::atoll(argv[7]) : 0;
  std::string err;
  if (!invmw::sampler::Start(o, &err)) {
    std::fprintf(stderr, "Start failed: %s\n", err.c_str());
    return 1;
  }
  // Read at once: PAPI's own start-up runs inside Start, the counters source's event sets open
  // on the sampler thread after Start has returned.
  const int papi_at_start = PAPI_is_initialized();
  const uint64_t ticks_at_start = invmw::clock::Ticks();
  const int64_t t0 = invmw::clock::MonotonicNs();
  auto elapsed = [&] { return double(invmw::clock::MonotonicNs() - t0) * 1e-9; };
  volatile double sink = 0;
  if (work == "busy") {
    while (elapsed() < seconds)
      for (int i = 0; i < 10000; ++i) sink = sink + i * 0.5;
  } else if (work == "write") {
    const std::string path = o.run_dir + "/written-" + std::to_string(o.rank) + ".dat";
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char> block(65536, 'x');
    long long left = bytes;
    while (fd >= 0 && left > 0) {
      const ssize_t w = write(fd, block.data(), size_t(std::min<long long>(left, 65536)));
      if (w <= 0) break;
      left -= w;
    }
    if (fd >= 0) close(fd);
  }
  while (elapsed() < seconds) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double wall = elapsed();
  invmw::sampler::Stop();
  const auto st = invmw::sampler::LastStats();
  std::printf(
      "{\"samples\": %llu, \"thread_cpu_s\": %.6f, \"wall_s\": %.6f, \"sent\": %llu, "
      "\"dropped\": %llu, \"papi_initialized_at_start\": %d, \"ticks_at_start\": %llu, "
      "\"papi_initialized_at_end\": %d}\n",
      (unsigned long long)st.samples, st.thread_cpu_s, wall, (unsigned long long)st.datagrams_sent,
      (unsigned long long)st.datagrams_dropped, papi_at_start, (unsigned long long)ticks_at_start,
      PAPI_is_initialized());
  return 0;
}
