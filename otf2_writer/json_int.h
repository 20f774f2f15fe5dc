// Checked numbers from JSON lines of the raw files (defs-R.jsonl, metrics-R.jsonl).
//
// Why: nlohmann's get<int32_t>() / get<uint64_t>() convert a floating-point value with a plain
// cast, which is undefined behaviour when the value does not fit (e.g. "ticks": 1e31 in a
// damaged line), and wrap integers that do not fit. Readers take integers through As<T> and
// get a std::runtime_error naming the value instead, which they report as an unusable line.
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace invmw::otf2 {

template <typename T>
T As(const nlohmann::json& v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using L = std::numeric_limits<T>;
    bool ok = true;
    if (v.is_number_float()) {
      const double d = v.get<double>();
      // [min, 2^digits): exact bounds, unlike double(L::max()), which rounds up.
      const double hi = std::ldexp(1.0, L::digits);
      ok = std::isfinite(d) && d == std::trunc(d) && d < hi && d >= (L::is_signed ? -hi : 0.0);
    } else if (v.is_number_unsigned()) {
      ok = v.get<uint64_t>() <= uint64_t(L::max());
    } else if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      ok = L::is_signed ? (i >= int64_t(L::min()) && (i <= 0 || uint64_t(i) <= uint64_t(L::max())))
                        : i >= 0;
    }
    if (!ok) throw std::runtime_error("number " + v.dump() + " out of range for the field");
    return v.get<T>();
  } else {
    return v.get<T>();
  }
}

template <typename T>
std::vector<T> AsVector(const nlohmann::json& v) {
  if (!v.is_array()) return v.get<std::vector<T>>();  // throws json's type_error
  std::vector<T> out;
  out.reserve(v.size());
  for (const auto& e : v) out.push_back(As<T>(e));
  return out;
}

}  // namespace invmw::otf2
