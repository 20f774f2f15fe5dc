// Pooling validations (`invmw validate summary`): the figures issue 20's benchmark judges, per
// validation and over all of them, each next to what an exact model would show.
//
// Why a pool: a target platform has 8 points, and the benchmark judges the components "larger
// than 10% of the total" and the 90% intervals' coverage over every target (and over several
// pipeline runs), which no single validation shows. Everything is recomputed from the points of
// `invmw validate --json` files (old files without the newer summary keys work too), except a
// validation's own floors and coverage, which are taken from its summary where it has them so
// that the two reports agree; pooled floors are redrawn from the points' floors (seeded).
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace invmw::fit {

struct PooledFigures {
  int points = 0;  // points with an error
  double median_abs_pct = NAN, worst_abs_pct = NAN;
  // An exact model's median and worst |error| over the same points (each point's statistic
  // noise, from its noise floor).
  double noise_floor_median_abs_pct = NAN, noise_floor_worst_abs_pct = NAN;
  int in90 = 0, with90 = 0;  // points inside their 90% interval / points that have one
};

struct ValidationFigures {
  std::string file, label;
  PooledFigures total;
  // Per component (model order), over the points where it is more than the share of the total.
  std::map<std::string, PooledFigures> components;
};

struct ValidationPool {
  std::string total;                    // the total's response name (t_opal, ...)
  std::vector<std::string> components;  // every component of the files, in name order
  double significant_share = 0.1;
  std::vector<ValidationFigures> validations;
  PooledFigures all_total;
  std::map<std::string, PooledFigures> all_components;
};

// Reads `invmw validate --json` files and pools them. significant_share in [0, 1). Throws
// DataError naming the file and the key that is missing or malformed, or files whose totals
// differ (validations of different models).
ValidationPool PoolValidations(const std::vector<std::string>& paths, double significant_share,
                               int draws = 400, unsigned seed = 20);

// An exact model's median and worst |error| in percent over points with these noise floors
// (NoiseFloorPct each; NaN counts as 0): per seeded draw each point's |error| is its
// statistic's noise, |expm1(sd z)| with sd recovered from the floor; medians over the draws.
void ExactModelErrors(const std::vector<double>& floors_pct, int draws, unsigned seed,
                      double* median_pct, double* worst_pct);

}  // namespace invmw::fit
