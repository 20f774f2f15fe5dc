// Fuzz target: the model loader (fitter/model.cc, Model::Parse) and the evaluation of the
// expressions of a model it accepted, at the factors' defaults and the parameters' initial
// values. Contract checked: Parse throws only ModelError.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fitter/model.h"

using namespace invmw::fit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Model m = [&] {
    try {
      return Model::Parse(text, "fuzz.toml");
    } catch (const ModelError&) {
      return Model();
    }
  }();
  if (m.responses().empty()) return 0;
  std::vector<double> f, p;
  for (const auto& x : m.factors()) f.push_back(x.has_default ? x.default_value : 1.0);
  for (const auto& x : m.parameters()) p.push_back(x.initial);
  // Never read: keeps a zero-length vector's data() a valid pointer.
  f.push_back(0);
  p.push_back(0);
  for (const auto& r : m.responses()) {
    r.expr.Eval<double>(f.data(), p.data());
    r.expr.FactorSlots();
    r.expr.ParamSlots();
    r.expr.DomainParamSlots();
  }
  m.FactorIndex("p");
  m.ParamIndex("a1");
  return 0;
}
