// Fuzz target: the sampler's raw file reader (otf2_writer/raw_samples.cc, LoadRawSamples:
// raw/metrics-R.jsonl and raw/samples-R.bin). Part 0 of the input (fuzz_util.h) is the metrics
// file, part 1 the samples file (left out when empty). Contract checked: never throws, and what
// it returns is consistent (one value per metric and sample).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "otf2_writer/raw_samples.h"

using namespace invmw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir;
  static bool made = (dir.MakeSubdir("raw"), true);
  (void)made;
  const auto parts = fuzz::SplitParts(data, size, 2);
  dir.Write("raw/metrics-000000.jsonl", parts[0]);
  if (parts.size() > 1 && !parts[1].empty())
    dir.Write("raw/samples-000000.bin", parts[1]);
  else
    dir.Remove("raw/samples-000000.bin");
  otf2::RawSamples s;
  std::vector<std::string> problems;
  if (!otf2::LoadRawSamples(dir.path(), 0, &s, &problems)) return 0;
  if (s.sample.size() != s.size() || s.values.size() != s.size() * s.metrics.size()) std::abort();
  double sum = 0;
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t k = 0; k < s.metrics.size(); ++k) sum += s.at(i, k);
  for (const auto& m : s.metrics) s.Find(m.name);
  return sum == 12345.678 ? 1 : 0;
}
