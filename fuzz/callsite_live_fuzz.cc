// Fuzz target: the live call-site file reader (callsites/callsite_file.cc, ParseLiveTables, the
// reader of DIR/callsites/live-*.bin in `invmw profile` and `invmw run` for ranks killed before
// they wrote their table).
// Contract checked: never throws or reads outside the input; what it accepts has a rank, a depth
// 1..8, 1..depth addresses per site, named functions, and unattributed rows that add up to its
// unattributed call count.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "callsites/callsite_file.h"

using namespace invmw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  callsites::LiveTables t;
  std::string error;
  const auto read = [data, size](void* buf, size_t n, uint64_t at) {
    if (at > size || n > size - at) return false;
    std::memcpy(buf, data + at, n);
    return true;
  };
  if (!callsites::ParseLiveTables(size, read, &t, &error)) {
    if (error.empty()) std::abort();
    return 0;
  }
  if (t.rank < 0 || t.depth < 1 || t.depth > callsites::kMaxDepth) std::abort();
  for (const auto& s : t.sites)
    if (s.pcs.empty() || s.pcs.size() > size_t(t.depth) || s.function.compare(0, 4, "MPI_") != 0 ||
        s.c.calls == 0)
      std::abort();
  uint64_t un = 0;
  for (const auto& u : t.unattributed) un += u.c.calls;
  if (un != t.unattributed_calls) std::abort();
  return 0;
}
