// Fuzz target: the model expression parser (expr/expr.cc, Expr::Parse) and evaluation.
// Names resolve the way a model's do: f0..f3 are factors, p0..p3 parameters, `sub` an inlined
// sub-expression, anything else unknown. Contract checked: Parse throws only ExprError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "expr/expr.h"

using namespace invmw::expr;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const Expr sub = Expr::Parse("2 * f1 + p1", [](const std::string& n) {
    Expr::Symbol s;
    if (n == "f1") s = {1, 1, nullptr};
    if (n == "p1") s = {2, 1, nullptr};
    return s;
  });
  const auto resolve = [](const std::string& n) {
    Expr::Symbol s;
    if (n.size() == 2 && (n[0] == 'f' || n[0] == 'p') && n[1] >= '0' && n[1] <= '3')
      s = {n[0] == 'f' ? 1 : 2, n[1] - '0', nullptr};
    else if (n == "sub")
      s = {3, -1, &sub};
    return s;
  };
  try {
    const Expr e = Expr::Parse(text, resolve);
    const double f[4] = {0, 1, -2.5, 1e300};
    const double p[4] = {3, 0.5, -1, 0};
    e.Eval<double>(f, p);
    e.FactorSlots();
    e.ParamSlots();
    e.DomainParamSlots();
  } catch (const ExprError&) {
  }
  return 0;
}
