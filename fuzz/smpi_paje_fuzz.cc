// Fuzz target: SimGrid SMPI's Paje trace parser (otf2_writer/smpi_import.cc, ParsePaje), which
// reads the smpi.trace of every run on a simulated platform. Contract checked: it throws only
// SmpiTraceError; a parsed trace has calls in each rank that end no earlier than they begin,
// and every peer and arrival names a rank of the trace.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "otf2_writer/smpi_import.h"

using namespace invmw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  otf2::SmpiTrace t;
  try {
    t = otf2::ParsePaje(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const otf2::SmpiTraceError&) {
    return 0;
  }
  const int32_t n = static_cast<int32_t>(t.ranks.size());
  for (const auto& r : t.ranks)
    for (const auto& c : r.calls) {
      if (c.leave < c.enter) std::abort();
      if (c.peer >= n) std::abort();
      for (const auto& a : c.arrivals)
        if (a.src < 0 || a.src >= n) std::abort();
    }
  return 0;
}
