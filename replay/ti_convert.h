// A trace read back (contract C) as SimGrid time-independent (TI) replay traces (issue 19 item
// 3): one action list per rank for `smpirun -replay`, computation bursts as amounts of work.
//
// Why a rewrite and not a copy: SimGrid 3.32's replay knows a fixed action set (send, isend,
// recv, irecv, wait by source/destination/tag, collectives on the world communicator, compute);
// the rules below map MPI's calls onto it and everything they cannot map is listed with its
// calls, time and share (Conversion::unexpressed), never dropped silently. The rules are
// documented in docs/fitter.md "Trace replay (`invmw predict --replay`)".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "otf2_reader/trace_reader.h"

namespace invmw::replay {

struct ConvertOptions {
  // A computation burst of d measured seconds becomes d x measured_speed flops; SimGrid runs
  // it at the target host's speed, so it takes d x measured_speed / target_speed there (the
  // compute-rate transfer of the analytic model). <= 0: the bursts are not scaled (written with
  // the target's speed, which the caller passes here too).
  double measured_speed_flops = 0;
};

struct Unexpressed {
  std::string function;  // the MPI call (with the reason, e.g. "MPI_Reduce_scatter")
  uint64_t calls = 0;
  double time_s = 0;  // measured, summed over ranks
  double share = 0;   // time_s / (ranks x measured wall)
};

struct Conversion {
  int ranks = 0;
  std::vector<std::vector<std::string>> actions;  // per rank, without the leading rank number
  std::vector<double> flops;                      // per rank, computation written
  std::vector<Unexpressed> unexpressed;           // by decreasing time
  double measured_wall_s = 0;  // first MPI_Init leave .. last MPI_Finalize enter over the ranks
  uint64_t events = 0;         // events read (for the bench)
};

// Throws std::runtime_error naming the trace and rank when a rank has no events or the ranks
// are not 0..N-1.
Conversion ConvertTrace(const otf2::Trace& trace, const ConvertOptions& options);

// Writes DIR/rank-R.txt per rank and DIR/index.txt (one file name per line, what smpirun
// -replay takes), each to a temporary name renamed into place. Returns the index path.
std::string WriteTiTraces(const Conversion& c, const std::string& dir);

}  // namespace invmw::replay
