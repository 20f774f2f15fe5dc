// Helpers shared by the fitter's verbs: loading a model or table with the error turned into the
// uniform CLI failure, and number formatting that keeps columns aligned.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace invmw::fit::cli {

// "%.5g" with a fixed width, "-" for NaN.
std::string Fmt(double v, int width = 11);
// Parses NAME=VALUE items (--fix, --set); returns false with *error set on a malformed item.
bool ParseAssignments(const std::vector<std::string>& items, const char* option,
                      std::map<std::string, double>* out, std::string* error);

// The results database to read: `given` (--db) if not empty, else $INVMW_EXPERIMENT_DB, else
// <build dir>/experiments/results.db when invmw runs from a build tree, else ./results.db (the
// default `invmw experiment` writes to; contract D).
std::string ResultsDbPath(const std::string& given);
// The --db help text of the verbs that read it.
inline constexpr const char* kResultsDbHelp =
    "results database (default: $INVMW_EXPERIMENT_DB, else <build>/experiments/results.db)";

}  // namespace invmw::fit::cli
