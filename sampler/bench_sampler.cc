// Benchmark (not a test): CPU time of the sampling thread as a share of one core, with all
// sources on, at 1 ms, 10 ms and 100 ms. Target (SPEC "Measured targets"): under 0.5% of one
// core at 10 ms.
//
//   bench_sampler [SECONDS per interval, default 3]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "sampler/sampler.h"

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const std::string dir =
      std::filesystem::temp_directory_path() / ("invmw-bench-sampler-" + std::to_string(getpid()));
  std::printf("%-9s %7s %8s %12s %10s %13s %11s %12s\n", "interval", "metrics", "samples",
              "thread CPU s", "open ms", "per sample us", "core share", "steady share");
  for (double interval : {0.001, 0.010, 0.100}) {
    invmw::config::Config cfg = invmw::config::Load();
    cfg.SAMPLER_INTERVAL = interval;
    invmw::sampler::StartOptions o;
    o.run_dir = dir;
    o.config = &cfg;
    std::string err;
    if (!invmw::sampler::Start(o, &err)) {
      std::fprintf(stderr, "Start failed: %s\n", err.c_str());
      return 1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    invmw::sampler::Stop();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto st = invmw::sampler::LastStats();
    // Steady share: without the one-time cost of opening the sources (PAPI initialisation).
    const double steady = st.thread_cpu_s - st.open_cpu_s;
    std::printf("%-9s %7zu %8llu %12.4f %10.2f %13.1f %10.3f%% %11.3f%%\n",
                (std::to_string(int(interval * 1000)) + " ms").c_str(), st.num_metrics,
                (unsigned long long)st.samples, st.thread_cpu_s, st.open_cpu_s * 1e3,
                st.samples ? steady / double(st.samples) * 1e6 : 0.0,
                100.0 * st.thread_cpu_s / wall, 100.0 * steady / wall);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
