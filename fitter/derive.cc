#include "fitter/derive.h"

#include <cmath>

#include "expr/expr.h"

namespace invmw::fit {

using expr::Expr;
using expr::ExprError;

void AddDerivedColumns(DataTable* t, const std::vector<std::string>& items) {
  for (const auto& item : items) {
    size_t eq = item.find('=');
    std::string name = eq == std::string::npos ? "" : item.substr(0, eq);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (eq == std::string::npos || name.empty())
      throw DataError("--derive '" + item + "': expected NAME=EXPRESSION");
    if (t->Column(name) >= 0)
      throw DataError("--derive " + name + ": " + t->source + " already has a column '" + name +
                      "'; deriving it would hide the recorded values");
    Expr e;
    try {
      e = Expr::Parse(item.substr(eq + 1), [&](const std::string& n) {
        Expr::Symbol s;
        int c = t->Column(n);
        if (c >= 0) {
          s.kind = 1;
          s.slot = c;
        }
        return s;
      });
    } catch (const ExprError& err) {
      throw DataError("--derive " + name + ": column " + std::to_string(err.column) + " ('" +
                      err.token + "'): " + err.what() + " (the names it may use are the columns " +
                      "of " + t->source + ")");
    }
    for (size_t r = 0; r < t->rows.size(); ++r) {
      double v = e.Eval<double>(t->rows[r].data(), nullptr);
      if (!std::isfinite(v))
        throw DataError(t->RowOrigin(r) + ": --derive " + name + " gives " + std::to_string(v) +
                        ", expected a finite number");
      t->rows[r].push_back(v);
    }
    t->columns.push_back(name);
  }
}

}  // namespace invmw::fit
