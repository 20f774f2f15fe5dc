// Fuzz target: the raw trace loader (otf2_writer/raw_run.cc, LoadRawRun: raw/defs-R.jsonl and
// raw/events-R-T.bin). The input's parts (fuzz_util.h) become, in order, the files of kFiles;
// an empty part leaves its file out. Contract checked: LoadRawRun throws only
// std::runtime_error, and only when no rank is usable; every loaded rank names its functions.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "fuzz/fuzz_util.h"
#include "otf2_writer/raw_run.h"

using namespace invmw;

namespace {
const char* const kFiles[] = {"raw/defs-000000.jsonl", "raw/events-000000-000.bin",
                              "raw/events-000000-001.bin", "raw/defs-000001.jsonl",
                              "raw/events-000001-000.bin"};
constexpr size_t kNumFiles = sizeof kFiles / sizeof kFiles[0];
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir;
  static bool made = (dir.MakeSubdir("raw"), true);
  (void)made;
  const auto parts = fuzz::SplitParts(data, size, kNumFiles);
  for (size_t i = 0; i < kNumFiles; ++i) {
    if (i < parts.size() && !parts[i].empty())
      dir.Write(kFiles[i], parts[i]);
    else
      dir.Remove(kFiles[i]);
  }
  otf2::RawRun run;
  try {
    run = otf2::LoadRawRun(dir.path());
  } catch (const std::runtime_error&) {
    return 0;
  }
  if (run.ranks.empty()) std::abort();
  for (const auto& r : run.ranks) {
    if (r.func_names.empty()) std::abort();
    if (r.func_kinds.size() != r.func_names.size()) std::abort();
  }
  run.NumRecords();
  return 0;
}
