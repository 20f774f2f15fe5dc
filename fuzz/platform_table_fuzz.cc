// Fuzz target: the platform-table loader (fitter/platform_table.cc, ParsePlatformTable).
// Contract checked: Parse throws only TableError, and a table it accepted survives
// FormatPlatformTable and a second parse (what `platform probe` writes must load again).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fitter/platform_table.h"

using namespace invmw::fit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  PlatformTable t;
  try {
    t = ParsePlatformTable(text, "fuzz.toml");
  } catch (const TableError&) {
    return 0;
  }
  t.Parameter("a1");
  t.Measure("latency");
  t.Kernel("k");
  const std::string again = FormatPlatformTable(t);
  try {
    ParsePlatformTable(again, "formatted.toml");
  } catch (const TableError& e) {
    std::fprintf(stderr, "formatted table does not load again: %s\n%s\n", e.what(), again.c_str());
    std::abort();
  }
  return 0;
}
