// What the `effects` and `results export` verbs share: reading a design's rows from it with errors
// that say what to do next.
#pragma once

#include <string>
#include <vector>

#include "experiments/effects/results_db.h"

namespace invmw::effects {

// Loads the rows of `design`; fails when the database is missing or unreadable or the design
// has no rows there (naming the designs it does have).
bool LoadDesignRows(const std::string& db, const std::string& design, std::vector<Run>* rows,
                    std::string* error);

// Splits "a,b" and repeated options into names.
std::vector<std::string> SplitNames(const std::vector<std::string>& values);

}  // namespace invmw::effects
