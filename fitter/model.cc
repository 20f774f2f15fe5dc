#include "fitter/model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <toml++/toml.h>
#include <unistd.h>

#ifndef INVMW_FIT_MODELS_DIR
#define INVMW_FIT_MODELS_DIR "fitter/models"
#endif

namespace invmw::fit {

namespace {

std::string ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw ModelError(path + ": cannot open " + what);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Where(const std::string& source, const toml::source_region& r) {
  return source + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column) + ": ";
}

// Position of the first character of a string value's text in the file, so that expression
// errors can point into the file (exact for single-line strings without escapes).
struct TextOrigin {
  int line, column;
};

TextOrigin StringOrigin(const std::vector<std::string>& lines, const toml::node& n) {
  int line = static_cast<int>(n.source().begin.line);
  int col = static_cast<int>(n.source().begin.column);
  if (line >= 1 && line <= static_cast<int>(lines.size())) {
    const std::string& l = lines[line - 1];
    size_t at = static_cast<size_t>(col - 1);
    if (l.compare(at, 3, "\"\"\"") == 0 || l.compare(at, 3, "'''") == 0) {
      if (at + 3 >= l.size()) return {line + 1, 1};  // text starts on the next line
      return {line, col + 3};
    }
  }
  return {line, col + 1};
}

// The expression around an error position: a 30000-character expression must not be echoed
// whole into a message.
std::string Excerpt(const std::string& text, int line, int column) {
  constexpr size_t kMax = 80;
  if (text.size() <= kMax) return text;
  size_t at = 0;
  for (int l = 1; l < line && at < text.size(); ++l) {
    size_t nl = text.find('\n', at);
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  at = std::min(text.size(), at + static_cast<size_t>(std::max(column - 1, 0)));
  size_t from = at > kMax / 2 ? at - kMax / 2 : 0;
  size_t to = std::min(text.size(), from + kMax);
  return (from > 0 ? "..." : "") + text.substr(from, to - from) + (to < text.size() ? "..." : "");
}

class Loader {
 public:
  Loader(const std::string& text, const std::string& source) : source_(source) {
    std::stringstream ss(text);
    for (std::string l; std::getline(ss, l);) lines_.push_back(l);
  }

  void Run(const std::string& text, std::string* name, std::string* description,
           std::vector<Factor>* factors, std::vector<Parameter>* params,
           std::vector<Response>* responses) {
    try {
      doc_ = toml::parse(text, source_);
    } catch (const toml::parse_error& e) {
      throw ModelError(Where(source_, e.source()) +
                       "TOML syntax error: " + std::string(e.description()));
    }
    // value_exact: value<int64_t>() casts a float such as 22E22 to an integer, which is undefined.
    if (auto s = doc_["schema"].value_exact<int64_t>(); s && *s != 1) {
      throw ModelError(Where(source_, doc_["schema"].node()->source()) + "schema " +
                       std::to_string(*s) + " is not supported (expected 1)");
    }
    for (const auto& [k, v] : doc_) {
      static const std::set<std::string> kKeys = {"schema",     "name",       "description",
                                                  "factors",    "parameters", "definitions",
                                                  "components", "total",      "notes"};
      if (!kKeys.count(std::string(k.str()))) {
        throw ModelError(Where(source_, k.source()) + "unknown key '" + std::string(k.str()) +
                         "' (expected one of schema, name, description, notes, factors, "
                         "parameters, definitions, components, total)");
      }
    }
    *name = doc_["name"].value_or(std::string());
    if (name->empty()) throw ModelError(source_ + ": missing 'name' (a string)");
    *description = doc_["description"].value_or(std::string());
    LoadFactors(factors);
    LoadParameters(params);
    factors_ = factors;
    params_ = params;
    CollectDefinitions();
    LoadResponses(responses);
    // Definitions nobody references are still checked, so a typo never hides.
    for (auto& [n, p] : pending_) {
      if (!p.done) {
        p.expr = Compile(p.text, *p.node);
        p.done = true;
      }
    }
    CheckBounds(*params, *responses);
  }

 private:
  [[noreturn]] void Fail(const toml::node& n, const std::string& msg) {
    throw ModelError(Where(source_, n.source()) + msg);
  }

  void CheckName(const toml::key& k) {
    std::string s(k.str());
    bool ok = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
    for (char c : s) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) {
      throw ModelError(Where(source_, k.source()) + "'" + s +
                       "' is not a valid name (letters, digits, _; not starting with a digit)");
    }
    if (!names_.insert(s).second) {
      throw ModelError(Where(source_, k.source()) + "name '" + s + "' is defined twice");
    }
  }

  // TOML admits nan and inf; neither is a usable initial value, bound or default (leaving a
  // bound out already means "unbounded").
  double Number(const toml::node& n, const std::string& what) {
    if (auto v = n.value<double>()) {
      if (!std::isfinite(*v)) {
        Fail(n, what + " must be a finite number, not " +
                    (std::isnan(*v) ? "nan"
                     : *v > 0       ? "inf"
                                    : "-inf") +
                    " (leave a bound out for none)");
      }
      return *v;
    }
    Fail(n, what + " must be a number");
  }

  void LoadFactors(std::vector<Factor>* out) {
    const toml::table* t = doc_["factors"].as_table();
    if (!t) throw ModelError(source_ + ": missing [factors] table");
    for (const auto& [k, v] : *t) {
      CheckName(k);
      Factor f;
      f.name = std::string(k.str());
      if (auto s = v.value<std::string>()) {
        f.description = *s;
      } else if (const toml::table* ft = v.as_table()) {
        for (const auto& [fk, fv] : *ft) {
          std::string key(fk.str());
          if (key == "description") {
            f.description = fv.value_or(std::string());
          } else if (key == "unit") {
            f.unit = fv.value_or(std::string());
          } else if (key == "default") {
            f.has_default = true;
            f.default_value = Number(fv, "factor '" + f.name + "' default");
          } else {
            throw ModelError(Where(source_, fk.source()) + "unknown key '" + key + "' in factor '" +
                             f.name + "' (expected description, unit, default)");
          }
        }
      } else {
        Fail(v, "factor '" + f.name + "' must be a description string or a table");
      }
      out->push_back(f);
    }
  }

  void LoadParameters(std::vector<Parameter>* out) {
    const toml::table* t = doc_["parameters"].as_table();
    if (!t) throw ModelError(source_ + ": missing [parameters] table");
    for (const auto& [k, v] : *t) {
      CheckName(k);
      Parameter p;
      p.name = std::string(k.str());
      const toml::table* pt = v.as_table();
      if (!pt) Fail(v, "parameter '" + p.name + "' must be a table");
      bool has_initial = false;
      for (const auto& [pk, pv] : *pt) {
        std::string key(pk.str());
        std::string what = "parameter '" + p.name + "' " + key;
        if (key == "initial") {
          p.initial = Number(pv, what);
          has_initial = true;
        } else if (key == "lower") {
          p.lower = Number(pv, what);
        } else if (key == "upper") {
          p.upper = Number(pv, what);
        } else if (key == "unit") {
          p.unit = pv.value_or(std::string());
        } else if (key == "description") {
          p.description = pv.value_or(std::string());
        } else if (key == "kind") {
          p.kind = pv.value_or(std::string());
          if (p.kind != "platform" && p.kind != "application")
            Fail(pv, what + " must be \"platform\" or \"application\"");
        } else if (key == "transfer") {
          p.transfer = pv.value_or(std::string());
          if (p.transfer != "table" && p.transfer != "compute" && p.transfer != "keep")
            Fail(pv, what + " must be \"table\", \"compute\" or \"keep\"");
        } else if (key == "scale_kernel") {
          p.scale_kernel = pv.value_or(std::string());
          if (p.scale_kernel.empty()) Fail(pv, what + " must be a parameter name such as \"a3\"");
        } else {
          throw ModelError(Where(source_, pk.source()) + "unknown key '" + key +
                           "' in parameter '" + p.name +
                           "' (expected initial, lower, upper, unit, kind, transfer, scale_kernel, "
                           "description)");
        }
      }
      if (!has_initial) Fail(v, "parameter '" + p.name + "' lacks 'initial' (a number)");
      if (p.lower > p.upper) Fail(v, "parameter '" + p.name + "' has lower > upper");
      if (p.initial < p.lower || p.initial > p.upper)
        Fail(v, "parameter '" + p.name + "' initial value lies outside [lower, upper]");
      if (p.kind == "application" && !pt->contains("transfer")) p.transfer = "keep";
      if (!p.scale_kernel.empty() && p.transfer != "compute")
        Fail(v, "parameter '" + p.name + "' has scale_kernel but transfer is not \"compute\"");
      out->push_back(p);
    }
  }

  struct Pending {
    const toml::node* node = nullptr;  // the expression string
    std::string text;
    bool done = false, busy = false;
    Expr expr;
  };

  void AddPending(const toml::key& k, const toml::node& expr_node) {
    auto s = expr_node.value<std::string>();
    if (!s) Fail(expr_node, "'" + std::string(k.str()) + "' must be an expression string");
    Pending p;
    p.node = &expr_node;
    p.text = *s;
    pending_[std::string(k.str())] = p;
  }

  void CollectDefinitions() {
    if (const toml::table* t = doc_["definitions"].as_table()) {
      for (const auto& [k, v] : *t) {
        CheckName(k);
        AddPending(k, v);
      }
    }
  }

  Expr Compile(const std::string& text, const toml::node& at) {
    TextOrigin o = StringOrigin(lines_, at);
    auto resolver = [this](const std::string& name) -> Expr::Symbol {
      Expr::Symbol s;
      for (size_t i = 0; i < factors_->size(); ++i)
        if ((*factors_)[i].name == name) return {1, static_cast<int>(i), nullptr};
      for (size_t i = 0; i < params_->size(); ++i)
        if ((*params_)[i].name == name) return {2, static_cast<int>(i), nullptr};
      auto it = pending_.find(name);
      if (it != pending_.end()) {
        Pending& p = it->second;
        if (p.busy) {
          throw ExprError("'" + name + "' is defined in terms of itself", 0, 0, name);
        }
        if (!p.done) {
          // A chain of definitions each naming the next recurses once per link.
          if (chain_ >= Expr::kMaxNesting) {
            throw ExprError("definitions nest deeper than " + std::to_string(Expr::kMaxNesting) +
                                " (at '" + name + "')",
                            0, 0, name);
          }
          p.busy = true;
          ++chain_;
          try {
            p.expr = Compile(p.text, *p.node);
          } catch (...) {
            --chain_;
            throw;
          }
          --chain_;
          p.busy = false;
          p.done = true;
        }
        return {3, -1, &p.expr};
      }
      return s;
    };
    try {
      return Expr::Parse(text, resolver);
    } catch (const ExprError& e) {
      if (e.line == 0) throw ModelError(Where(source_, at.source()) + e.what());
      int line = o.line + e.line - 1;
      int col = e.line == 1 ? o.column + e.column - 1 : e.column;
      throw ModelError(source_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " +
                       e.what() + " in expression \"" + Excerpt(text, e.line, e.column) + "\"");
    }
  }

  void LoadResponses(std::vector<Response>* out) {
    struct Item {
      std::string name, column;
      const toml::node* expr;
      bool total;
    };
    std::vector<Item> items;
    const toml::table* total = doc_["total"].as_table();
    if (!total) throw ModelError(source_ + ": missing [total] table (name, column, expr)");
    auto read = [&](const std::string& name, const toml::table& t, bool is_total) {
      Item it{name, name, nullptr, is_total};
      for (const auto& [k, v] : t) {
        std::string key(k.str());
        if (key == "expr") {
          it.expr = &v;
        } else if (key == "column") {
          it.column = v.value_or(name);
        } else if (key == "name" && is_total) {
          it.name = v.value_or(std::string());
        } else if (key != "description") {
          throw ModelError(Where(source_, k.source()) + "unknown key '" + key + "' in " +
                           (is_total ? std::string("[total]") : "component '" + name + "'") +
                           " (expected " + (is_total ? "name, " : "") +
                           "expr, column, description)");
        }
      }
      if (!it.expr) {
        throw ModelError(Where(source_, t.source()) +
                         (is_total ? std::string("[total]") : "component '" + name + "'") +
                         " lacks 'expr'");
      }
      return it;
    };
    if (const toml::table* comps = doc_["components"].as_table()) {
      for (const auto& [k, v] : *comps) {
        CheckName(k);
        const toml::table* ct = v.as_table();
        if (!ct) Fail(v, "component '" + std::string(k.str()) + "' must be a table");
        items.push_back(read(std::string(k.str()), *ct, false));
        AddPending(k, *items.back().expr);
      }
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return a.expr->source().begin < b.expr->source().begin;
      });
    }
    Item t = read("total", *total, true);
    if (t.name.empty() || t.name == "total") t.name = "time";
    if (t.column == "total") t.column = "time";
    items.insert(items.begin(), t);
    std::set<std::string> columns;
    for (const Item& it : items) {
      if (!columns.insert(it.column).second) {
        throw ModelError(Where(source_, it.expr->source()) + "response column '" + it.column +
                         "' is used by two responses");
      }
      Response r;
      r.name = it.name;
      r.column = it.column;
      r.is_total = it.total;
      auto pit = pending_.find(it.name);
      if (!it.total && pit != pending_.end() && pit->second.done) {
        r.expr = pit->second.expr;
      } else {
        r.expr = Compile(*it.expr->value<std::string>(), *it.expr);
        if (!it.total) {
          pending_[it.name].expr = r.expr;
          pending_[it.name].done = true;
        }
      }
      out->push_back(r);
    }
  }

  // A parameter in a divisor, log or sqrt must not be allowed to reach zero or below.
  void CheckBounds(const std::vector<Parameter>& params, const std::vector<Response>& rs) {
    std::set<int> need;
    for (const Response& r : rs)
      for (int s : r.expr.DomainParamSlots()) need.insert(s);
    for (int s : need) {
      const Parameter& p = params[s];
      if (!std::isfinite(p.lower)) {
        const toml::node* n = doc_["parameters"][p.name].node();
        throw ModelError(Where(source_, n->source()) + "parameter '" + p.name +
                         "' appears in a divisor, log, sqrt or fractional power and needs a "
                         "'lower' bound (e.g. lower = 1e-12) so the fit cannot cross zero");
      }
    }
  }

  std::string source_;
  std::vector<std::string> lines_;
  toml::table doc_;
  std::set<std::string> names_;
  const std::vector<Factor>* factors_ = nullptr;
  const std::vector<Parameter>* params_ = nullptr;
  std::map<std::string, Pending> pending_;
  int chain_ = 0;  // definitions being compiled inside each other
};

}  // namespace

Model Model::Parse(const std::string& text, const std::string& source) {
  Model m;
  m.source_ = source;
  Loader loader(text, source);
  loader.Run(text, &m.name_, &m.description_, &m.factors_, &m.parameters_, &m.responses_);
  return m;
}

Model Model::Load(const std::string& path) {
  return Parse(ReadFile(path, "model file"), path);
}

int Model::FactorIndex(const std::string& name) const {
  for (size_t i = 0; i < factors_.size(); ++i)
    if (factors_[i].name == name) return static_cast<int>(i);
  return -1;
}

int Model::ParamIndex(const std::string& name) const {
  for (size_t i = 0; i < parameters_.size(); ++i)
    if (parameters_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> BuiltinModels() {
  return {"opal",       "opal_ranks", "opal_burst",    "opal_quota", "opal_refill",
          "opal_stall", "dyana",      "master_worker", "pingpong",   "pingpong_eager"};
}

std::string ResolveModelPath(const std::string& name_or_path) {
  if (access(name_or_path.c_str(), R_OK) == 0) return name_or_path;
  std::string builtin = std::string(INVMW_FIT_MODELS_DIR) + "/" + name_or_path + ".toml";
  if (name_or_path.find('/') == std::string::npos && access(builtin.c_str(), R_OK) == 0)
    return builtin;
  std::string list;
  for (const auto& m : BuiltinModels()) list += (list.empty() ? "" : ", ") + m;
  throw ModelError("model '" + name_or_path +
                   "' is neither a readable file nor a built-in model (" + list + ")");
}

}  // namespace invmw::fit
