// The median of a sample: what the fitter, the probes and the validation take where one round
// or one run caught in a quota stall would move a mean.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace invmw::fit {

// The middle value (the mean of the two middle ones of an even count); NaN if empty.
inline double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace invmw::fit
