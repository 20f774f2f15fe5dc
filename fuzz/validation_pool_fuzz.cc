// Fuzz target: pooling validations (fitter/validate_summary.cc, PoolValidations), the reader of
// `invmw validate --json` files behind `invmw validate summary`. Parts 0 and 1 of the input
// (fuzz_util.h) are two validation files. Contract checked: it throws only DataError, and what
// it returns is consistent (the pool's points are the files' sum, no point is inside more
// intervals than have one, no figure is negative).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fitter/data_table.h"
#include "fitter/validate_summary.h"
#include "fuzz/fuzz_util.h"

using namespace invmw;

namespace {

void Check(const fit::PooledFigures& f) {
  if (f.points < 0 || f.in90 < 0 || f.in90 > f.with90) std::abort();
  for (double v : {f.median_abs_pct, f.worst_abs_pct, f.noise_floor_median_abs_pct,
                   f.noise_floor_worst_abs_pct})
    if (v < 0) std::abort();  // NaN (nothing to summarise) compares false
  if (f.points > 0 && f.median_abs_pct > f.worst_abs_pct) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir;
  const auto parts = fuzz::SplitParts(data, size, 2);
  dir.Write("a.json", parts[0]);
  std::vector<std::string> files = {dir.path() + "/a.json"};
  if (parts.size() > 1) {
    dir.Write("b.json", parts[1]);
    files.push_back(dir.path() + "/b.json");
  }
  fit::ValidationPool p;
  try {
    p = fit::PoolValidations(files, 0.1, 20);
  } catch (const fit::DataError&) {
    return 0;
  }
  int points = 0;
  for (const auto& v : p.validations) {
    Check(v.total);
    points += v.total.points;
    for (const auto& [name, f] : v.components) Check(f);
  }
  Check(p.all_total);
  if (points != p.all_total.points) std::abort();
  for (const auto& [name, f] : p.all_components) Check(f);
  return 0;
}
