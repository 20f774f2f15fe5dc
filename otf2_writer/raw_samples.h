// A rank's sampler files (raw/metrics-R.jsonl + raw/samples-R.bin, see
// common/sample_format.h) loaded into memory, for the converter, the tests and other readers.
//
// Contract: LoadRawSamples returns false when the rank has no sampler files (sampling was off);
// damaged input (bad lines, a cut last record, a header that does not match the definitions)
// loads what can be used and appends one problem per finding ("raw/samples-000001.bin: ...").
// Never throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace invmw::otf2 {

struct RawMetric {
  std::string name, unit, source, description;
  bool accumulated = true;
};

struct RawSamples {
  int32_t rank = -1;
  std::string host;
  bool node_leader = false;
  double ticks_per_second = 0;
  double interval_s = 0;
  bool has_end = false;  // the sampler stopped cleanly
  std::vector<RawMetric> metrics;
  std::vector<uint64_t> ticks, sample;  // per sample
  std::vector<double> values;           // row-major: sample i, metric k at i*metrics.size()+k
  size_t size() const { return ticks.size(); }
  double at(size_t i, size_t k) const { return values[i * metrics.size() + k]; }
  int Find(const std::string& metric) const;  // index or -1
};

bool LoadRawSamples(const std::string& run_dir, int32_t rank, RawSamples* out,
                    std::vector<std::string>* problems);

}  // namespace invmw::otf2
