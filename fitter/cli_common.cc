#include "fitter/cli_common.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "cli/paths.h"
#include "common/config.h"

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

std::string ResultsDbPath(const std::string& given) {
  if (!given.empty()) return given;
  std::string env = invmw::config::Load().EXPERIMENT_DB;  // INVMW_EXPERIMENT_DB (contract D)
  if (!env.empty()) return env;
  // The same default as `invmw experiment` writes to.
  std::string build = invmw::cli::ExecutableDir() + "/..";
  if (access((build + "/CMakeCache.txt").c_str(), F_OK) == 0)
    return build + "/experiments/results.db";
  return "results.db";
}

}  // namespace invmw::fit::cli
