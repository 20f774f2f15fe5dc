// How one rank's ticks map onto rank 0's timeline.
//
// Why: every rank stamps events with its own cycle counter; clocks of different nodes start at
// different values and run at slightly different rates. The runtime measures, at MPI_Init and
// at MPI_Finalize, this rank's clock minus rank 0's (ping-pong, minimum round trip). Between
// the two points the offset is interpolated linearly (drift), outside them extrapolated; with
// only the init point it is constant.
//
// Contract: the mapping is exactly the one the OTF2 reader library applies to the ClockOffset
// definitions the converter writes (global = local + offset0 + rint(slope * (local - t0)),
// where offset = -(offset_ticks)), so our own timestamps (global offset, trace length) and
// what every OTF2 reader shows agree to the tick. The event files hold the rank's own ticks;
// correcting them is left to the reader, which prevents double correction.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "otf2_writer/raw_run.h"

namespace invmw::otf2 {

struct ClockModel {
  // OTF2's convention: the offset is what is added to local time to obtain global time.
  uint64_t t0 = 0;
  int64_t offset0 = 0;
  bool has_second = false;
  uint64_t t1 = 0;
  int64_t offset1 = 0;
  double stddev0 = 0, stddev1 = 0;
  double slope = 0;

  // Builds the model of one rank. A finalize point whose slope is implausible (|slope| >=
  // 1e-2: the clocks would disagree by more than 1% in rate) or that is not after the init
  // point is ignored and a warning is returned in *warning.
  static ClockModel For(const RawRank& r, std::string* warning) {
    ClockModel m;
    if (!r.has_init_clock) {
      if (r.rank != 0 && warning)
        *warning = "rank " + std::to_string(r.rank) +
                   ": no \"clock\" init line; its clock is taken as equal to rank 0's";
      return m;
    }
    m.t0 = r.init_clock.ticks;
    m.offset0 = -r.init_clock.offset_ticks;
    m.stddev0 = double(r.init_clock.uncertainty_ticks);
    if (r.has_finalize_clock) {
      const ClockSample& f = r.finalize_clock;
      const double slope =
          f.ticks > m.t0 ? double(-f.offset_ticks - m.offset0) / double(f.ticks - m.t0) : 1e9;
      if (std::fabs(slope) < 1e-2) {
        m.has_second = true;
        m.t1 = f.ticks;
        m.offset1 = -f.offset_ticks;
        m.stddev1 = double(f.uncertainty_ticks);
        m.slope = slope;
      } else if (warning) {
        *warning = "rank " + std::to_string(r.rank) +
                   ": finalize clock offset ignored (not after init, or drift over 1%); "
                   "constant offset used";
      }
    }
    return m;
  }

  uint64_t ToGlobal(uint64_t local) const {
    const double diff = local >= t0 ? double(local - t0) : -double(t0 - local);
    return local + uint64_t(offset0 + int64_t(std::rint(slope * diff)));
  }
};

}  // namespace invmw::otf2
