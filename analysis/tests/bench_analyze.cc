// Analysis speed: events per second of Analyze() on a large trace, timed apart from reading the
// archive (ReadTrace) and from writing it. A benchmark, not a test: it prints its figures.
//
// The trace is otf2_writer's synthetic run (3 ranks, rank 0 with two threads; p2p blocking and
// nonblocking, collectives on two communicators, a pause, persistent requests), converted to
// OTF2 first.
//
// usage: bench_analyze [DIR] [ITERATIONS] [REPEATS]
//   default: a temporary directory (removed afterwards), 40000 iterations (~5 M events), 5 repeats
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "analysis/analysis.h"
#include "otf2_writer/converter.h"
#include "otf2_writer/tests/synthetic_run.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const bool own_dir = argc <= 1;
  const std::string dir =
      !own_dir ? argv[1]
               : (fs::temp_directory_path() / ("invmw-bench-analyze-" + std::to_string(getpid())))
                     .string();
  invmw::otf2::testing::SyntheticOptions o;
  o.iterations = argc > 2 ? std::atoi(argv[2]) : 40000;
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  using Clock = std::chrono::steady_clock;
  auto secs = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };

  invmw::otf2::testing::WriteSyntheticRun(dir, o);
  invmw::otf2::ConvertToOtf2(dir);

  auto t0 = Clock::now();
  const invmw::otf2::Trace trace = invmw::otf2::ReadTrace(dir + "/traces.otf2");
  const double read_s = secs(t0);
  uint64_t events = 0;
  for (const auto& l : trace.locations) events += l.events.size();

  double best = 1e300, sum = 0;
  invmw::analysis::Analysis a;
  for (int i = 0; i < repeats; ++i) {
    t0 = Clock::now();
    a = invmw::analysis::Analyze(trace);
    const double s = secs(t0);
    best = std::min(best, s);
    sum += s;
  }
  t0 = Clock::now();
  const std::string json = invmw::analysis::ToJson(a).dump(1);
  const double json_s = secs(t0);

  std::printf("trace: %d ranks, %llu events (%llu analysed on main threads), %zu messages\n",
              int(a.ranks.size()), (unsigned long long)events, (unsigned long long)a.events,
              trace.messages.size());
  std::printf("ReadTrace: %.3f s (%.2f M events/s)\n", read_s, events / read_s / 1e6);
  std::printf(
      "Analyze:   best %.3f s, mean %.3f s over %d runs -> %.2f M events/s (best), "
      "%.2f M events/s (mean)\n",
      best, sum / repeats, repeats, events / best / 1e6, events / (sum / repeats) / 1e6);
  std::printf("ToJson:    %.4f s (%zu bytes)\n", json_s, json.size());
  std::printf("critical path %.6f s, classification %s\n", a.critical_path.length,
              a.classification.label.c_str());
  if (own_dir) fs::remove_all(dir);
  return 0;
}
