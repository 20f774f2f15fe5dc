#include "analysis/critical_path.h"

#include <algorithm>
#include <cstdint>
#include <vector>
#include <unordered_map>

namespace invmw::analysis {

CriticalPath FindCriticalPath(const Timelines& tl) {
  CriticalPath p;
  if (tl.ranks.empty()) return p;
  std::unordered_map<int32_t, size_t> index;
  size_t r = 0;
  for (size_t i = 0; i < tl.ranks.size(); ++i) {
    index[tl.ranks[i].rank] = i;
    if (tl.ranks[i].end > tl.ranks[r].end) r = i;
  }
  double t = tl.ranks[r].end;
  p.end = t;
  p.end_rank = tl.ranks[r].rank;
  // Per rank: SIZE_MAX not yet seen, 0 its ends not in order, else 1 + its last lower bound.
  std::vector<size_t> hint(tl.ranks.size(), SIZE_MAX);
  const size_t max_stalls = 2 * tl.ranks.size();
  size_t stalls = 0;
  for (;;) {
    const RankTimeline& rk = tl.ranks[r];
    const CompactSegments& segs = rk.compact;
    if (t <= rk.start || segs.size() == 0) break;
    // The segment with start < t <= end: the lower bound of t in the ends. The walk goes back
    // a segment at a time, so on a rank whose ends are in order it is usually the one before
    // the rank's last (or that one): checked there first, searched only otherwise (the search
    // was most of the walk's time at 10^8 events, serially after everything else).
    const std::vector<double>& ends = segs.ends;
    size_t it = SIZE_MAX;
    if (hint[r] == SIZE_MAX) hint[r] = std::is_sorted(ends.begin(), ends.end()) ? ends.size() : 0;
    if (hint[r] > 0 && hint[r] != SIZE_MAX) {
      auto is_bound = [&](size_t i) {
        return (i == ends.size() || ends[i] >= t) && (i == 0 || ends[i - 1] < t);
      };
      const size_t h = hint[r] - 1;  // the last lower bound on this rank
      if (h > 0 && is_bound(h - 1))
        it = h - 1;
      else if (is_bound(h))
        it = h;
    }
    if (it == SIZE_MAX) it = size_t(std::lower_bound(ends.begin(), ends.end(), t) - ends.begin());
    if (hint[r] > 0) hint[r] = it + 1;
    if (it == segs.size()) it = segs.size() - 1;  // t beyond the last segment: clamp
    double start = segs.start(it, rk.start);
    if (start >= t) {
      if (it == 0) break;
      --it;
      start = segs.start(it, rk.start);
    }
    const double end = segs.ends[it];
    const Category cat = segs.cat(it);
    const int32_t jump_rank = segs.jump_rank(it);
    const bool wait = (cat == kIdle || cat == kSyncWait) && jump_rank >= 0;
    if (wait && stalls < max_stalls) {
      auto j = index.find(jump_rank);
      if (j != index.end()) {
        const double nt = std::min(t, end);
        ++stalls;
        r = j->second;
        t = nt;
        ++p.jumps;
        continue;
      }
    }
    const double a = std::max(start, rk.start);
    const double d = std::min(t, end) - a;
    if (d > 0) {
      p.composition[cat] += d;
      p.by_rank[rk.rank][cat] += d;
      stalls = 0;
    }
    t = a;
  }
  p.start = t;
  p.start_rank = tl.ranks[r].rank;
  p.length = p.end - p.start;
  return p;
}

}  // namespace invmw::analysis
