// Fuzz target: the emulated run platform definition (platforms/emulate/platform.cc,
// ParsePlatform). Contract checked: Parse throws only PlatformError, and a platform it accepted
// gives every rank slot a CFS limit the kernel takes (period 1 ms..1 s, quota at least 1 ms and
// at most the slot's period times the quota fraction), so `platform exec` cannot fail on a
// definition the parser let through.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "platforms/emulate/platform.h"

using namespace invmw::emulate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Platform p;
  try {
    p = ParsePlatform(text, "fuzz.toml");
  } catch (const PlatformError&) {
    return 0;
  }
  LauncherOptions(p);
  if (!p.HasQuota()) return 0;
  for (int r = 0; r < p.nodes; ++r) {
    const int64_t period = p.SlotPeriodUs(r), quota = p.SlotQuotaUs(r);
    const bool ok = period >= kMinCfsUs && period <= kMaxCfsPeriodUs && quota >= kMinCfsUs &&
                    quota <= period && std::fabs(quota - p.cpu_quota * period) <= 0.5 + 1e-9;
    if (!ok) {
      std::fprintf(stderr, "slot %d: quota %lld us per period %lld us, accepted from:\n%s\n", r,
                   static_cast<long long>(quota), static_cast<long long>(period), text.c_str());
      std::abort();
    }
  }
  return 0;
}
