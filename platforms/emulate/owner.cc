#include "platforms/emulate/owner.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace invmw::emulate {

bool ProcessStartTime(long pid, unsigned long long* start) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  // The command name (field 2) may contain spaces and parentheses: fields resume after the last
  // ')'. Field 3 is the state, field 22 the start time.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return false;
  }
  char* end = nullptr;
  *start = std::strtoull(field.c_str(), &end, 10);
  return end && *end == '\0';
}

Owner SelfOwner() {
  Owner o;
  o.pid = static_cast<long>(getpid());
  ProcessStartTime(o.pid, &o.start);
  return o;
}

std::string ResourceName(const Owner& o) {
  return "invmw-" + std::to_string(o.pid) + "-" + std::to_string(o.start);
}

bool ParseResourceName(const std::string& name, Owner* o) {
  long pid = 0;
  unsigned long long start = 0;
  int used = 0;
  if (std::sscanf(name.c_str(), "invmw-%ld-%llu%n", &pid, &start, &used) != 2) return false;
  if (static_cast<size_t>(used) != name.size() || pid <= 0) return false;
  o->pid = pid;
  o->start = start;
  return true;
}

bool OwnerAlive(const Owner& o) {
  unsigned long long start = 0;
  return ProcessStartTime(o.pid, &start) && start == o.start;
}

}  // namespace invmw::emulate
