// Fuzz target: the experiment design loader (experiments/runner/design.cc, ParseDesign), and
// what the runner derives from a design it accepted (points, run order, aliases, commands).
// Contract checked: ParseDesign throws only DesignError; an accepted design expands without
// throwing (its placeholders and expressions were checked at load time).
#include <cstddef>
#include <cstdint>
#include <string>

#include "experiments/runner/design.h"

using namespace invmw::experiment;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Design d;
  try {
    d = ParseDesign(text, "fuzz.toml");
  } catch (const DesignError&) {
    return 0;
  }
  // Large designs are valid but would only measure the machine's memory.
  const int64_t points = d.NumPoints();
  if (points < 1 || points * d.replications > 512) return 0;
  const auto all = ExpandPoints(d);
  RunOrder(d);
  if (d.fractional) Aliases(d);
  const Point p = PointAt(d, int(points - 1));
  p.FactorsJson(d);
  const auto values = PlaceholderValues(d, p, d.replications - 1, "/run", "/bin");
  for (const auto& a : d.command.launcher) Substitute(a, values);
  Substitute(d.command.program, values);
  for (const auto& a : d.command.args) Substitute(a, values);
  for (const auto& [k, v] : d.command.env) Substitute(v, values);
  return 0;
}
