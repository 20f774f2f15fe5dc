#include "cli/paths.h"

#include <limits.h>
#include <unistd.h>

namespace invmw::cli {

std::string ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string p(buf);
  return p.substr(0, p.rfind('/'));
}

}  // namespace invmw::cli
