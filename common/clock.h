// The cycle clock every invmw record is stamped with.
//
// Why the TSC: reading it costs about 12 ns here against 28 ns for clock_gettime, and these
// CPUs report constant_tsc and nonstop_tsc, so ticks advance at a fixed rate across cores and
// frequency changes. Ticks are converted to seconds with a rate calibrated against
// CLOCK_MONOTONIC over the whole run (start and end pairs), which also absorbs any slow drift.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace invmw::clock {

inline uint64_t Ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
#endif
}

inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000ll + ts.tv_nsec;
}

inline int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000ll + ts.tv_nsec;
}

// A (ticks, monotonic ns) pair taken as close together as possible; two of them give the rate.
struct Anchor {
  uint64_t ticks = 0;
  int64_t mono_ns = 0;
};

// Takes the pair with the smallest gap out of a few tries, so an interrupt between the two
// reads does not skew the rate.
inline Anchor TakeAnchor() {
  Anchor best;
  int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t t0 = Ticks();
    int64_t ns = MonotonicNs();
    uint64_t t1 = Ticks();
    if (int64_t(t1 - t0) < best_gap) {
      best_gap = int64_t(t1 - t0);
      best.ticks = t0 + (t1 - t0) / 2;
      best.mono_ns = ns;
    }
  }
  return best;
}

// Ticks per second between two anchors; falls back to a short busy calibration when they are
// too close together to be meaningful (under 1 ms).
inline double TicksPerSecond(const Anchor& a, const Anchor& b) {
  int64_t dns = b.mono_ns - a.mono_ns;
  if (dns < 1000000) return 0;
  return double(b.ticks - a.ticks) * 1e9 / double(dns);
}

inline double CalibrateTicksPerSecond(int64_t window_ns = 2000000) {
  Anchor a = TakeAnchor();
  while (MonotonicNs() - a.mono_ns < window_ns) {
  }
  return TicksPerSecond(a, TakeAnchor());
}

}  // namespace invmw::clock
