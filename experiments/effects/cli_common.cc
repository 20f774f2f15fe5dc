#include "experiments/effects/cli_common.h"

#include <sys/stat.h>

namespace invmw::effects {

bool LoadDesignRows(const std::string& db, const std::string& design, std::vector<Run>* rows,
                    std::string* error) {
  struct stat st;
  if (stat(db.c_str(), &st) != 0) {
    *error = db +
             ": no results database there (run a design first, or give --db FILE or "
             "INVMW_EXPERIMENT_DB)";
    return false;
  }
  if (!LoadRuns(db, design, rows, error)) return false;
  if (rows->empty()) {
    std::string names;
    for (const auto& n : DesignNames(db)) names += (names.empty() ? "" : ", ") + n;
    *error = db + ": no runs of design '" + design + "'" +
             (names.empty() ? " (the database holds no runs)" : "; designs there: " + names);
    return false;
  }
  return true;
}

std::vector<std::string> SplitNames(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      if (comma == std::string::npos) comma = v.size();
      if (comma > start) out.push_back(v.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace invmw::effects
