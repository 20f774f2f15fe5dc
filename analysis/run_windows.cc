#include "analysis/run_windows.h"

#include <filesystem>

#include "otf2_writer/clock_model.h"
#include "otf2_writer/raw_run.h"

namespace invmw::analysis {

std::map<int32_t, std::pair<double, double>> RankWindowsFromRun(const std::string& run_dir,
                                                                const invmw::otf2::Trace& trace) {
  std::map<int32_t, std::pair<double, double>> out;
  if (!std::filesystem::is_directory(std::filesystem::path(run_dir) / "raw") ||
      trace.timer_resolution == 0)
    return out;
  invmw::otf2::LoadOptions lo;
  lo.events = false;
  const invmw::otf2::RawRun run = invmw::otf2::LoadRawRun(run_dir, lo);
  auto seconds = [&](uint64_t global) {
    return double(int64_t(global - trace.global_offset)) / double(trace.timer_resolution);
  };
  for (const auto& r : run.ranks) {
    if (r.init_ticks == 0) continue;
    const invmw::otf2::ClockModel clock = invmw::otf2::ClockModel::For(r, nullptr);
    const double start = seconds(clock.ToGlobal(r.init_ticks));
    const double end =
        r.has_end && r.end_ticks > r.init_ticks ? seconds(clock.ToGlobal(r.end_ticks)) : -1;
    out[r.rank] = {start, end};
  }
  return out;
}

}  // namespace invmw::analysis
