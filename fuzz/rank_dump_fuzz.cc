// Fuzz target: the per-rank raw profile parser (recording/profile_report.cc, ParseDump, the
// reader of raw/rank-*.bin in `invmw profile merge`) and the profile built from what it
// accepted. The input is up to four dumps back to back, as ranks of one run.
// Contract checked: ParseDump never throws; WriteProfile (profile.json and profile.txt, as
// `invmw profile merge` writes them) succeeds on whatever it accepted.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "recording/profile_report.h"

using namespace invmw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir;
  std::vector<profile::RankData> ranks;
  size_t at = 0;
  while (ranks.size() < 4 && at < size) {
    profile::RankData r;
    std::string error;
    if (!profile::ParseDump(data + at, size - at, &r, &error)) break;
    at += sizeof(raw::RankHeader) + size_t(r.header.num_funcs) * sizeof(raw::FuncRecord);
    ranks.push_back(std::move(r));
  }
  if (ranks.empty()) return 0;
  // The profile lists every rank without data: a damaged but plausible world size of 2^31
  // makes that list gigabytes long (known, not fixed here), which would only test the memory.
  for (const auto& r : ranks)
    if (r.header.world_size > 4096) return 0;
  profile::RunMeta meta;
  meta.world_size = ranks.front().header.world_size;
  meta.command = "fuzz";
  const nlohmann::json p = profile::BuildProfile(ranks, meta, true);
  std::string error;
  if (!profile::WriteProfile(dir.path(), p, &error)) {
    std::fprintf(stderr, "WriteProfile: %s\n", error.c_str());
    std::abort();
  }
  profile::DroppedNote(p);
  return 0;
}
