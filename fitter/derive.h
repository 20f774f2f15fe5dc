// Derived columns: model factors computed from the columns a data table has.
//
// Why: a design records what it varies, which is not always what a model speaks of. The Opal
// design varies the cut-off radius rc, the model needs ñ, the neighbours within it; constant
// factors (s = 10) often live in the command, not in the rows. `invmw fit --derive
// "nt=if(rc > 0, 4/3*3.14159*rc^3*0.0334, 1e9)" --derive s=10` adds them, in the model
// language (expr/expr.h), row by row. A derived name that is already a column is an error:
// it would hide a recorded value.
#pragma once

#include <string>
#include <vector>

#include "fitter/data_table.h"

namespace invmw::fit {

// items: "NAME=EXPRESSION", applied in order (later ones may use earlier ones). Throws
// DataError naming the item, and for a bad expression its column and token.
void AddDerivedColumns(DataTable* table, const std::vector<std::string>& items);

}  // namespace invmw::fit
