// The default name of an experiment directory, shared by the runtime (plain LD_PRELOAD runs,
// where rank 0 chooses it) and `invmw run`.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "common/clock.h"

namespace invmw {

// invmw-YYYYMMDD-HHMMSS-<id>, UTC; the id tells apart runs started in the same second.
inline std::string DefaultRunDirName() {
  time_t now = time(nullptr);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
  unsigned id = unsigned(clock::Ticks() ^ (uint64_t(getpid()) << 16)) & 0xffffff;
  char out[64];
  std::snprintf(out, sizeof out, "invmw-%s-%06x", stamp, id);
  return out;
}

}  // namespace invmw
