// The general full factorial design with k factors and r replications (Jain ch. 20-23).
//
// Model: y = mu + sum of main effects + sum of interactions + e, with every effect summing to
// zero over each of its indices. For a balanced design the estimates are differences of
// marginal means: mu is the grand mean, a main effect is a level's mean minus mu, and an
// interaction is the mean of its level combination minus every lower-order effect it contains
// - by inclusion-exclusion, e_S = sum over T subset of S of (-1)^(|S|-|T|) * mean_T. The term S
// explains SS_S = (N / prod_{i in S} a_i) * sum e_S^2 with prod (a_i - 1) degrees of freedom,
// and an effect's standard deviation is s_e * sqrt(prod_{i in S}(a_i - 1) / N), N = r prod a_i
// (Jain Table 22.5 and ch. 23, generalised to any subset). The same method covers two-level
// designs, where it agrees with the sign table (alpha_high = q).
#pragma once

#include "experiments/effects/effects.h"
#include "experiments/effects/factorial_layout.h"

namespace invmw::effects {

// Requires layout.full (every combination of levels present).
ResponseEffects AnalyzeGeneral(const Layout& layout, const Observations& obs,
                               const AnalysisOptions& options);

}  // namespace invmw::effects
