// An experiment design: factors with levels, which combinations of levels are run (full factorial
// or a 2^(k-p) fraction), how often, in which order, with which command, on which platform, and
// which response variables are recorded for each run.
//
// Why a file and not a script: the same design drives CTest (one test per point), the runner
// (`invmw experiment run`), and the readers of the results database (effects, fitter), which all
// need to agree on what "point 17" means. Points are therefore numbered in standard order (Jain,
// "The Art of Computer Systems Performance Analysis", ch. 17 and 19): the first factor varies
// fastest. In a fractional design the points are the full factorial of the base factors (those
// no generator defines) in standard order, and each generated factor takes the level given by
// the product of the signs of its generator word (-1 = first level, +1 = second level).
//
// Contract: LoadDesign either returns a design whose every template placeholder, derived value,
// generator and response name has been checked (names that become path components, the design
// and its platform, are plain names; sizes are within kMaxPoints/kMaxRuns; every derived value is
// finite at every point and ranks a whole number 1..kMaxRanks), or throws DesignError naming the
// file, the line and the field (e.g. `command.args[3]`) and what was expected there. The file
// format is described in docs/experiments.md; experiments/designs/ holds the shipped designs.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/runner/fractional.h"

namespace invmw::experiment {

struct DesignError : std::runtime_error {
  DesignError(const std::string& file, int line, const std::string& field, const std::string& msg);
  std::string file, field;
  int line;  // 0 when the problem concerns the whole file
};

// One level of a factor: a number (4, 0.5) or a name ("openmpi").
struct Level {
  bool is_number = true;
  double number = 0;
  std::string name;
  std::string Text() const;  // how it appears in commands and the database ("0.5", "openmpi")
};

struct Factor {
  std::string name;
  char letter = 0;  // A, B, C... in file order: the generators' and the confounding's notation
  std::string description;
  std::vector<Level> levels;
  int line = 0;
};

// A value derived from the factors by an expression (expr/expr.h syntax), e.g. ranks = p + 1.
struct Derived {
  std::string name, expression;
  int line = 0;
};

// The command that runs one point. Strings may hold {name} placeholders: factors, derived
// values, and the run's own values (see kBuiltinPlaceholders).
struct CommandTemplate {
  std::vector<std::string> launcher;  // e.g. {"mpirun", "--oversubscribe", "-np", "{ranks}"}
  std::string program;                // a name in the invmw bin directory, on PATH, or a path
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // extra environment of the run
  std::string ranks = "1";                 // expression: ranks the platform must provide
};

// Placeholders every template may use besides factors and derived values.
extern const std::vector<std::string> kBuiltinPlaceholders;  // run_dir, point, replication, ...

struct Design {
  std::string file;  // as given to LoadDesign
  std::string name, description;
  bool fractional = false;
  std::vector<Factor> factors;
  std::vector<Generator> generators;  // fractional only
  std::vector<Derived> derived;       // in dependency order
  std::vector<std::string> recorded;  // derived values written with the factors in each row
  CommandTemplate command;
  std::string platform = "local";  // default run platform
  int replications = 1;
  uint64_t seed = 1;                   // of the randomized run order
  double timeout_s = 600;              // per run, wall clock
  std::vector<std::string> responses;  // names recorded per run (contract B or analysis JSON keys)

  // 64-bit and saturating (INT64_MAX), so that an oversized design is refused, not wrapped;
  // LoadDesign refuses more than kMaxPoints points or kMaxRuns runs.
  int64_t NumPoints() const;
  int64_t NumRuns() const;
};

// Limits LoadDesign enforces: every point is a CTest test and a row, so a design beyond them is
// a mistake (or an attack), not an experiment. Ranks are what the platform must start.
constexpr int64_t kMaxPoints = 100000;
constexpr int64_t kMaxRuns = 1000000;  // points x replications
constexpr int64_t kMaxRanks = 65536;

// The values of one design point (0-based index in standard order).
struct Point {
  int index = 0;
  std::vector<Level> levels;              // one per factor, in factor order
  std::map<std::string, double> derived;  // derived values
  // {"n": 64, "mpi": "openmpi"} as JSON text with factors in file order (the database's
  // `factors` column).
  std::string FactorsJson(const Design& d) const;
};

Design LoadDesign(const std::string& path);
Design ParseDesign(const std::string& text, const std::string& source_name);

// All points in standard order.
std::vector<Point> ExpandPoints(const Design& d);
Point PointAt(const Design& d, int index);

// The randomized run order: every (point, replication) pair exactly once, shuffled with a
// generator seeded by Design::seed (the same on every machine and compiler).
struct RunSlot {
  int point = 0, replication = 0;
};
std::vector<RunSlot> RunOrder(const Design& d);

// Alias structure of a fractional design (empty structure for a full one).
AliasStructure Aliases(const Design& d);

// Substitutes {name} placeholders. Throws std::runtime_error naming an unknown placeholder.
std::string Substitute(const std::string& text, const std::map<std::string, std::string>& values);
// Values for the placeholders of one run.
std::map<std::string, std::string> PlaceholderValues(const Design& d, const Point& p,
                                                     int replication, const std::string& run_dir,
                                                     const std::string& bin_dir);
// Number text as used in commands: integers without a decimal point, others in shortest form.
std::string FormatNumber(double v);

}  // namespace invmw::experiment
