// Test helper: a synthetic traced run (otf2_writer/tests) plus real sampler files for each of
// its ranks, stamped on each rank's synthetic trace clock, converted to OTF2. Writes
// DIR/expected-metrics.json with what the archive must contain, for check_trace_metrics.py.
//
//   sampler_trace_run DIR
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "otf2_writer/converter.h"
#include "otf2_writer/raw_samples.h"
#include "otf2_writer/tests/synthetic_run.h"
#include "sampler/sampler.h"

namespace {

// The synthetic run's clock of the rank being sampled: starts at the run's base ticks plus the
// rank's offset and advances at 1e9 ticks per second, like the synthetic events.
uint64_t g_base = 0, g_t0 = 0;
double g_scale = 1;
uint64_t SyntheticClock(uint64_t ticks) {
  return g_base + uint64_t(double(ticks - g_t0) * g_scale);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: %s DIR\n", argv[0]), 2;
  const std::string dir = argv[1];
  invmw::otf2::testing::SyntheticOptions so;
  invmw::otf2::testing::WriteSyntheticRun(dir, so);
  const double real_tps = invmw::clock::CalibrateTicksPerSecond(5000000);
  nlohmann::json expected = {{"ranks", nlohmann::json::array()}};
  for (int rank = 0; rank < 3; ++rank) {
    invmw::config::Config cfg = invmw::config::Load();
    cfg.SAMPLER_INTERVAL = 0.01;
    cfg.SAMPLER_STREAM.clear();
    g_base = so.base_ticks + uint64_t(int64_t(so.offsets[size_t(rank)]));
    g_t0 = invmw::clock::Ticks();
    g_scale = so.ticks_per_second / real_tps;
    invmw::sampler::StartOptions o;
    o.run_dir = dir;
    o.rank = rank;
    o.world_size = 3;
    o.node_leader = rank == 0;
    o.trace_time = SyntheticClock;
    o.ticks_per_second = so.ticks_per_second;
    o.config = &cfg;
    o.warn = [](const std::string&) {};
    std::string err;
    if (!invmw::sampler::Start(o, &err)) return std::fprintf(stderr, "%s\n", err.c_str()), 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    invmw::sampler::Stop();
    invmw::otf2::RawSamples s;
    if (!invmw::otf2::LoadRawSamples(dir, rank, &s, nullptr)) return 1;
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& m : s.metrics)
      metrics.push_back({{"name", m.name}, {"unit", m.unit}, {"accumulated", m.accumulated}});
    nlohmann::json last = nlohmann::json::array();
    for (size_t k = 0; k < s.metrics.size(); ++k) last.push_back(s.at(s.size() - 1, k));
    expected["ranks"].push_back({{"rank", rank},
                                 {"samples", s.size()},
                                 {"metrics", metrics},
                                 {"last_values", last},
                                 {"first_ticks", s.ticks.front()},
                                 {"last_ticks", s.ticks.back()}});
  }
  const auto r = invmw::otf2::ConvertToOtf2(dir);
  for (const auto& p : r.problems) std::fprintf(stderr, "problem: %s\n", p.c_str());
  expected["metric_events"] = r.metric_events;
  expected["archive"] = r.archive;
  std::ofstream(dir + "/expected-metrics.json") << expected.dump(2) << "\n";
  std::printf("converted: %llu events, %llu metric events\n", (unsigned long long)r.events_out,
              (unsigned long long)r.metric_events);
  return 0;
}
