// Fuzz target: the per-rank call-site file parser (callsites/callsite_file.cc, ParseRankFile,
// the reader of DIR/callsites/rank-*.txt in `invmw profile` and `invmw run`).
// Contract checked: never throws; what it accepts has a rank, a tick rate, 1..8 addresses per
// site, mappings with end above start and absolute paths.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "callsites/callsite_file.h"

using namespace invmw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  callsites::RankFile f;
  std::string error;
  if (!callsites::ParseRankFile(text, &f, &error)) {
    if (error.empty()) std::abort();
    return 0;
  }
  if (f.rank < 0 || f.ticks_per_second <= 0) std::abort();
  for (const auto& s : f.sites)
    if (s.pcs.empty() || s.pcs.size() > size_t(callsites::kMaxDepth)) std::abort();
  for (const auto& snap : f.snapshots)
    for (const auto& m : snap.maps)
      if (m.end <= m.start || m.path.empty() || m.path[0] != '/') std::abort();
  return 0;
}
