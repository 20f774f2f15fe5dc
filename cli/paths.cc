#include "cli/paths.h"

#include <limits.h>
#include <unistd.h>

#include <vector>

namespace invmw::cli {

std::string ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string p(buf);
  return p.substr(0, p.rfind('/'));
}

std::string FindPreloadLibrary(const std::string& flavor, std::string* error) {
  std::string name = "libinvmw.so";
  if (!flavor.empty() && flavor != INVMW_DEFAULT_MPI) name = "libinvmw-" + flavor + ".so";
  std::string bin = ExecutableDir();
  std::vector<std::string> candidates = {bin + "/../lib/" + name,
                                         bin + "/" + INVMW_BIN_TO_LIBDIR + "/" + name};
  for (const auto& c : candidates)
    if (access(c.c_str(), R_OK) == 0) return c;
  *error = name + " not found next to " + bin +
           " (looked in ../lib and " INVMW_BIN_TO_LIBDIR "); was invmw built with " +
           (flavor.empty() ? std::string("its default MPI") : flavor) + " support?";
  return "";
}

}  // namespace invmw::cli
