#include "analysis/critical_path.h"

#include <algorithm>
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
  const size_t max_stalls = 2 * tl.ranks.size();
  size_t stalls = 0;
  for (;;) {
    const RankTimeline& rk = tl.ranks[r];
    const auto& segs = rk.segments;
    if (t <= rk.start || segs.empty()) break;
    // The segment with start < t <= end.
    auto it = std::lower_bound(segs.begin(), segs.end(), t,
                               [](const Segment& s, double v) { return s.end < v; });
    if (it == segs.end()) it = segs.end() - 1;  // t beyond the last segment: clamp
    if (it->start >= t) {
      if (it == segs.begin()) break;
      --it;
    }
    const Segment& s = *it;
    const bool wait = (s.cat == kIdle || s.cat == kSyncWait) && s.jump_rank >= 0;
    if (wait && stalls < max_stalls) {
      auto j = index.find(s.jump_rank);
      if (j != index.end()) {
        const double nt = std::min(t, s.end);
        ++stalls;
        r = j->second;
        t = nt;
        ++p.jumps;
        continue;
      }
    }
    const double a = std::max(s.start, rk.start);
    const double d = std::min(t, s.end) - a;
    if (d > 0) {
      p.composition[s.cat] += d;
      p.by_rank[rk.rank][s.cat] += d;
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
