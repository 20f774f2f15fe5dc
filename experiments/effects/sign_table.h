// Two-level designs by the sign table (Jain ch. 17-19).
//
// Every effect of a 2^k design is a column of signs: factor columns are -1 at the first
// (low) level and +1 at the second, an interaction column is the product of its factors'
// columns. With n design points the effect is q = (1/n) * sum(column_i * mean_y_i) and it
// explains SS = n * r * q^2 of the variation (r replications).
//
// A 2^(k-p) fraction has only n = 2^(k-p) points, so the 2^k columns coincide in groups of
// 2^p, up to sign: the effects in one group are confounded (aliased) and only their signed sum
// can be estimated. The columns that are constant form the defining relation; the length of
// its shortest word is the resolution. Grouping the columns over the points actually present
// recovers all of this without knowing the generators of the design file, and tells a regular
// fraction from a full design with holes (a full design with missing points has no constant
// columns of the right count).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "experiments/effects/effects.h"
#include "experiments/effects/factorial_layout.h"

namespace invmw::effects {

// Columns of the 2^k effects that coincide over the given points.
struct AliasGroup {
  // (word, sign): column(word) = sign * column(members[0].first); members[0] names the group:
  // the lowest-order word, first in standard order.
  std::vector<std::pair<uint32_t, int>> members;
};

// Groups the 2^k - 1 effect columns of k two-level factors over the points `cells` (level
// indices 0/1). Returns false when the points are not a full 2^k design or a regular
// 2^(k-p) fraction. On success *groups holds the estimable effects (one group per non-identity
// column, in order of their naming word) and *fraction the defining relation (p = 0 for a full
// design). k is limited to 20.
bool GroupSignColumns(const std::vector<std::vector<int>>& cells, int k,
                      std::vector<AliasGroup>* groups, Fraction* fraction);

// The effects of one response of a two-level design. Requires layout.two_level.
ResponseEffects AnalyzeSignTable(const Layout& layout, const Observations& obs,
                                 const AnalysisOptions& options);

}  // namespace invmw::effects
