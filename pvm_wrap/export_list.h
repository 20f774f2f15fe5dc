// PVM_EXPORT is a colon-separated list of variable names the daemon passes to spawned tasks.
#pragma once

#include <string>

namespace invmw::pvm {

// current with the names of add (colon-separated) appended, each name at most once.
inline std::string MergeExportList(const std::string& current, const std::string& add) {
  std::string out = current;
  size_t pos = 0;
  while (pos <= add.size()) {
    size_t c = add.find(':', pos);
    if (c == std::string::npos) c = add.size();
    std::string name = add.substr(pos, c - pos);
    pos = c + 1;
    if (name.empty()) continue;
    bool present = false;
    size_t p = 0;
    while (p <= out.size() && !present) {
      size_t e = out.find(':', p);
      if (e == std::string::npos) e = out.size();
      present = out.compare(p, e - p, name) == 0 && e - p == name.size();
      p = e + 1;
    }
    if (!present) out += (out.empty() ? "" : ":") + name;
  }
  return out;
}

}  // namespace invmw::pvm
