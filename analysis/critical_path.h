// The critical path: the chain of activities, across ranks, that determined when the run ended.
//
// Why: the sum of a category over ranks says where ranks spent time, not what the run waited
// for. Shortening an activity off the critical path does not shorten the run; the path's
// composition (computation on which rank, transfer, synchronisation) is what a model of the run
// time must explain, and what Opal's t_par_comp means by "the longest server computation".
//
// Method: start at the rank whose window ends last, at its end, and walk backwards through its
// segments. A wait segment (idle or sync_wait) means the rank waited for a partner, so the walk
// jumps to that partner at the moment the wait ended (when the partner sent, posted its receive
// or arrived at the collective) and continues there. Every other segment is on the path and is
// added to the composition. The walk stops at the start of a rank's window. The length is the
// time between the path's start and end; the composition adds up to it.
// Jumps that make no progress in time (inconsistent clocks) are limited: after 2 x ranks of them
// in a row the wait is treated as an ordinary segment.
#pragma once

#include <cstdint>
#include <map>

#include "analysis/categories.h"
#include "analysis/timeline.h"

namespace invmw::analysis {

struct CriticalPath {
  double start = 0, end = 0;
  double length = 0;
  Times composition{};               // by category
  std::map<int32_t, Times> by_rank;  // by rank and category
  uint64_t jumps = 0;                // partner changes along the path
  int32_t end_rank = -1, start_rank = -1;
};

// Walks RankTimeline::compact (the segments need not be kept).
CriticalPath FindCriticalPath(const Timelines& tl);

}  // namespace invmw::analysis
