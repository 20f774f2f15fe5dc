// A performance model read from a TOML model file: factors, parameters and the response time as
// expressions over them, optionally split into components tied to measured response variables.
//
// Why a file and not code: the people who calibrate and compare platforms change models more
// often than they change invmw. A model file is parsed once into expression trees (expr.h) that
// the fitter differentiates exactly and the predictor evaluates. See docs/fitter.md for the
// schema. Contract: Load() either returns a fully resolved model or throws ModelError whose
// message starts with "FILE:LINE:COLUMN:" and names the unknown symbol or bad token.
#pragma once

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "expr/expr.h"

namespace invmw::fit {

// Models are written in the expression language (expr/); its types are used throughout the fitter.
using expr::Expr;
using expr::ExprError;

struct ModelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Factor {
  std::string name, description, unit;
  bool has_default = false;
  double default_value = 0;
};

struct Parameter {
  std::string name, description, unit;
  std::string kind = "platform";  // "platform" or "application"
  // How prediction moves the parameter to another platform: "table" (take the target's value),
  // "compute" (scale by the target's kernel time or compute rate), "keep" (reference value).
  std::string transfer = "table";
  // transfer "compute" only: the kernel (and platform parameter) whose ratio between the tables
  // scales this one; empty: the parameter's own name. Searched models' coefficients use "a3".
  std::string scale_kernel;
  double initial = 1;
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  bool HasBounds() const { return std::isfinite(lower) && std::isfinite(upper); }
};

// The total time or one of its components.
struct Response {
  std::string name;    // e.g. "t_comm"
  std::string column;  // measured variable it is fitted to, e.g. "t_comm"
  Expr expr;
  bool is_total = false;
};

class Model {
 public:
  static Model Load(const std::string& path);
  // text: the TOML document; source: the name used in error messages.
  static Model Parse(const std::string& text, const std::string& source);

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::string& source() const { return source_; }
  const std::vector<Factor>& factors() const { return factors_; }
  const std::vector<Parameter>& parameters() const { return parameters_; }
  // The total first, then the components in file order.
  const std::vector<Response>& responses() const { return responses_; }
  const Response& total() const { return responses_.front(); }

  int FactorIndex(const std::string& name) const;  // -1 if absent
  int ParamIndex(const std::string& name) const;

 private:
  std::string name_, description_, source_;
  std::vector<Factor> factors_;
  std::vector<Parameter> parameters_;
  std::vector<Response> responses_;
};

// Finds a model by name ("opal" -> <models dir>/opal.toml) or returns the argument if it names
// an existing file. Throws ModelError listing the built-in models when nothing matches.
std::string ResolveModelPath(const std::string& name_or_path);
// Names of the models shipped in fitter/models.
std::vector<std::string> BuiltinModels();

}  // namespace invmw::fit
