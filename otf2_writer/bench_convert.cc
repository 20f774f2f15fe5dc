// Converter throughput: raw records and OTF2 events per second, and bytes per event on disk,
// for a synthetic run of about five million OTF2 events. A benchmark, not a test: it prints.
//
// usage: bench_convert [DIR] [ITERATIONS]   (default: a temporary directory, 40000 iterations)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "otf2_writer/converter.h"
#include "otf2_writer/tests/synthetic_run.h"

namespace fs = std::filesystem;

static uint64_t DirBytes(const fs::path& p) {
  uint64_t n = 0;
  if (fs::is_regular_file(p)) return fs::file_size(p);
  for (const auto& e : fs::recursive_directory_iterator(p))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

int main(int argc, char** argv) {
  const std::string dir =
      argc > 1 ? argv[1]
               : (fs::temp_directory_path() / ("invmw-bench-convert-" + std::to_string(getpid())))
                     .string();
  invmw::otf2::testing::SyntheticOptions o;
  o.iterations = argc > 2 ? std::atoi(argv[2]) : 40000;
  invmw::otf2::testing::Expected e = invmw::otf2::testing::WriteSyntheticRun(dir, o);
  uint64_t expected_events = 0;
  for (const auto& [type, n] : e.by_type) expected_events += n;

  const auto t0 = std::chrono::steady_clock::now();
  invmw::otf2::ConvertResult r = invmw::otf2::ConvertToOtf2(dir);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const uint64_t raw_bytes = DirBytes(fs::path(dir) / "raw");
  const uint64_t otf2_bytes = DirBytes(fs::path(dir) / "traces") +
                              DirBytes(fs::path(dir) / "traces.def") +
                              DirBytes(fs::path(dir) / "traces.otf2");
  std::printf("synthetic run: 3 ranks, %d iterations, %llu raw records (%.1f MB)\n", o.iterations,
              (unsigned long long)r.records_in, raw_bytes / 1e6);
  std::printf("OTF2 events written: %llu (expected %llu)\n", (unsigned long long)r.events_out,
              (unsigned long long)expected_events);
  std::printf("conversion time: %.3f s\n", s);
  std::printf("throughput: %.2f M raw records/s, %.2f M OTF2 events/s\n", r.records_in / s / 1e6,
              r.events_out / s / 1e6);
  std::printf("archive size: %.1f MB, %.2f bytes per OTF2 event (raw: %.1f bytes per record)\n",
              otf2_bytes / 1e6, double(otf2_bytes) / double(r.events_out),
              double(raw_bytes) / double(r.records_in));
  if (argc <= 1) fs::remove_all(dir);
  return r.events_out == expected_events ? 0 : 1;
}
