// Benchmark (not a test): the steps of `invmw analyze` on one OTF2 archive, timed apart, with a
// given number of threads, and the peak resident memory (VmHWM) of the process.
//
//   bench_large_trace ANCHOR.otf2 THREADS
// Prints one line: events, read s, analyze s, json s, total s, M events/s, VmHWM MiB.
// bench_large_trace.py runs it per thread count in fresh processes (VmHWM is per process).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

#include "analysis/analysis.h"

namespace {

double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

long VmHwmKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: bench_large_trace ANCHOR.otf2 THREADS [stream|memory]\n");
    return 2;
  }
  const int threads = std::atoi(argv[2]);
  // stream (default): what `invmw analyze` does, events read twice and not kept; memory: all
  // events in memory (ReadTrace's default, the design before streaming).
  const bool stream = argc < 4 || std::string(argv[3]) != "memory";
  using Clock = std::chrono::steady_clock;
  auto secs = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  try {
    const auto t0 = Clock::now();
    const double c0 = CpuSeconds();
    invmw::otf2::ReadOptions ro;
    ro.threads = threads;
    std::vector<double> reader_cpu;
    ro.thread_cpu_s = &reader_cpu;
    ro.keep_events = !stream;
    ro.sort_messages = !stream;  // as `invmw analyze` without --opal
    invmw::otf2::Trace trace = invmw::otf2::ReadTrace(argv[1], ro);
    const double read_s = secs(t0);
    const double read_cpu = CpuSeconds() - c0;
    const long read_hwm_kib = VmHwmKiB();  // the first pass's peak when streaming
    uint64_t events = 0;
    for (const auto& l : trace.locations) events += l.event_count;
    auto t1 = Clock::now();
    invmw::analysis::AnalyzeOptions o;
    o.threads = threads;
    // stream: as `invmw analyze` (only the figures kept, the messages freed when used).
    o.keep_details = !stream;
    const invmw::analysis::Analysis a =
        stream ? invmw::analysis::Analyze(std::move(trace), o) : invmw::analysis::Analyze(trace, o);
    const double analyze_s = secs(t1);
    const double analyze_cpu = CpuSeconds() - c0 - read_cpu;
    t1 = Clock::now();
    const std::string json = invmw::analysis::ToJson(a).dump(1);
    const double json_s = secs(t1);
    const double total = secs(t0);
    const double cpu = CpuSeconds() - c0;
    std::printf(
        "threads %d (%s): %llu events, wall: read %.3f s, analyze %.3f s, json %.3f s, total %.3f "
        "s "
        "= %.2f M events/s; CPU: read %.3f s, analyze %.3f s, total %.3f s = %.2f M events per "
        "CPU-s; VmHWM %.0f MiB (%.0f MiB after reading); critical path %.6f s\n",
        threads, stream ? "stream" : "memory", (unsigned long long)events, read_s, analyze_s,
        json_s, total, double(events) / total / 1e6, read_cpu, analyze_cpu, cpu,
        double(events) / cpu / 1e6, double(VmHwmKiB()) / 1024, double(read_hwm_kib) / 1024,
        a.critical_path.length);
    // On a machine whose other cores are busy, wall times say little: the reader threads' CPU
    // times say what the split costs and how evenly it divides the work.
    double sum = 0, max = 0;
    for (double c : reader_cpu) sum += c, max = std::max(max, c);
    std::printf("  reader threads' CPU:");
    for (double c : reader_cpu) std::printf(" %.3f s", c);
    std::printf(" (sum %.3f s, largest %.3f s: reading on idle cores would take %.2fx less)\n", sum,
                max, max > 0 ? sum / max : 0.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_large_trace: %s\n", e.what());
    return 1;
  }
  return 0;
}
