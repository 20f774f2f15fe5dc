#include "fitter/cli_common.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace invmw::fit::cli {

std::string Fmt(double v, int width) {
  char buf[64];
  if (std::isnan(v)) {
    std::snprintf(buf, sizeof buf, "%*s", width, "-");
  } else {
    std::snprintf(buf, sizeof buf, "%*.5g", width, v);
  }
  return buf;
}

bool ParseAssignments(const std::vector<std::string>& items, const char* option,
                      std::map<std::string, double>* out, std::string* error) {
  for (const std::string& it : items) {
    size_t eq = it.find('=');
    char* end = nullptr;
    double v = eq == std::string::npos ? 0 : std::strtod(it.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || eq + 1 == it.size() || *end != '\0' ||
        !std::isfinite(v)) {
      *error = std::string(option) + " '" + it + "': expected NAME=NUMBER";
      return false;
    }
    (*out)[it.substr(0, eq)] = v;
  }
  return true;
}

bool ParseShare(const std::string& text, double* share) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end || !(v >= 0 && v < 1)) return false;
  *share = v;
  return true;
}

nlohmann::json Num(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace invmw::fit::cli
