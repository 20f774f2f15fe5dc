// The factorial structure hidden in a design's database rows: which factors vary, their levels
// in analysis order, which design points exist, and whether they form a full factorial or a
// regular two-level fraction.
//
// The database stores each run's factor values, not the design file, so the structure is
// recovered from the rows themselves. That has a price and a benefit: the analysis works on
// any database that follows contract D (also one written by hand or by another runner), and a
// point that is absent or only failed is found by comparing the rows with the full cross
// product of the levels, which lets the error name the missing point by its factor values.
//
// Level order: numeric levels ascending (so "-1" of a two-level sign table is the low level,
// as in Jain), string levels in the order they first appear in design-point order (the
// runner numbers points in the design file's standard order, so this is the file's order).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "experiments/effects/results_db.h"

namespace invmw::effects {

struct Factor {
  std::string name;
  std::vector<std::string> levels;  // labels in analysis order
  bool numeric = false;
  std::vector<double> values;  // level values of a numeric factor, ascending
};

// A regular 2^(k-p) fraction: the design points are exactly those satisfying the defining
// relation I = sign * word for every word of the defining contrast subgroup.
struct Fraction {
  int p = 0;
  // Words (bit i = factor i) with their sign, the identity excluded, by order then mask.
  std::vector<std::pair<uint32_t, int>> defining_relation;
  int resolution = 0;  // length of the shortest word; 0 for a full design
};

struct Layout {
  std::string platform;                       // "" when the runs span several (a factor then)
  std::vector<Factor> factors;                // the factors that vary, in the rows' order
  std::vector<std::string> constant_factors;  // "name=value" of factors with one level
  // Design points present, in standard order (first factor varies fastest), as level indices.
  std::vector<std::vector<int>> cells;
  std::vector<std::vector<size_t>> cell_runs;  // indices into runs of the ok runs of each cell
  std::vector<Run> runs;                       // the ok runs used
  bool full = true;                            // every combination of levels is present
  Fraction fraction;                           // when !full
  bool two_level = false;
  std::vector<std::string> notes;  // what the reader should know (factors left out, ...)
};

// Builds the layout from all rows of a design. `platform` selects rows of one platform ("":
// all; when the same point was run on several platforms, one must be chosen). Fails with a
// message naming the first missing design point (by factor values), a point that has only
// failed runs (with its error), or rows that disagree on the factors.
bool BuildLayout(const std::vector<Run>& rows, const std::string& platform, Layout* layout,
                 std::string* error);

// "memory=4, cache=1" for cell i.
std::string DescribeCell(const Layout& layout, size_t cell);
// "memory*cache" for a set of factors (bit i = factor i).
std::string TermName(const Layout& layout, uint32_t mask);
// The canonical label of a factor value: shortest round-trip form of a number, or the string.
std::string LevelLabel(const nlohmann::ordered_json& value);

// The observations of one response: per cell, the values of its replications.
struct Observations {
  std::string response;
  std::vector<std::vector<double>> y;  // y[cell][replication]
  int replications = 0;
  bool log10 = false;  // values are log10 of the measured response (multiplicative model)
};

struct CollectOptions {
  int replications = 0;  // use the first N replications of each point; 0: all, must be equal
  bool log10 = false;    // analyze log10(y) (Jain 18.8: multiplicative effects)
};

// Fails naming the point where the response is absent, not positive (with log10), or where the
// number of replications differs from the others.
bool CollectResponse(const Layout& layout, const std::string& response,
                     const CollectOptions& options, Observations* obs, std::string* error);

// Response names present in the ok runs, in the order first written.
std::vector<std::string> ResponseNames(const Layout& layout);

}  // namespace invmw::effects
