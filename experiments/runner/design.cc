#include "experiments/runner/design.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "common/config.h"
#include "experiments/runner/run_dirs.h"
#include "expr/expr.h"

namespace invmw::experiment {

const std::vector<std::string> kBuiltinPlaceholders = {
    "run_dir", "point", "replication", "design", "seed", "bin_dir", "run_index", "design_dir"};

DesignError::DesignError(const std::string& file, int line, const std::string& field,
                         const std::string& msg)
    : std::runtime_error(file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " +
                         (field.empty() ? std::string() : "field '" + field + "': ") + msg),
      file(file),
      field(field),
      line(line) {}

std::string FormatNumber(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v);
    return b;
  }
  // The shortest text that reads back as the same double.
  char b[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(b, sizeof b, "%.*g", prec, v);
    if (std::strtod(b, nullptr) == v) break;
  }
  return b;
}

std::string Level::Text() const {
  return is_number ? FormatNumber(number) : name;
}

int64_t Design::NumPoints() const {
  if (fractional) {
    size_t base = factors.size() - generators.size();
    return base >= 63 ? INT64_MAX : int64_t(1) << base;
  }
  int64_t n = 1;
  for (const auto& f : factors) {
    int64_t l = static_cast<int64_t>(f.levels.size());
    if (l != 0 && n > INT64_MAX / l) return INT64_MAX;
    n *= l;
  }
  return n;
}

int64_t Design::NumRuns() const {
  int64_t p = NumPoints();
  if (replications > 0 && p > INT64_MAX / replications) return INT64_MAX;
  return p * replications;
}

namespace {

bool ValidName(const std::string& s) {
  bool ok = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
  for (char c : s) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  return ok;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Names inside {...} of a template string; "{{" and "}}" are literal braces. Returns false and
// sets *error on an unclosed or empty placeholder.
bool Placeholders(const std::string& text, std::vector<std::string>* names, std::string* error) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') {
      if (i + 1 < text.size() && text[i + 1] == '{') {
        ++i;
        continue;
      }
      size_t close = text.find('}', i);
      if (close == std::string::npos) {
        *error = "unclosed '{' in \"" + text + "\" (write {{ for a literal brace)";
        return false;
      }
      std::string name = text.substr(i + 1, close - i - 1);
      if (name.empty()) {
        *error = "empty placeholder {} in \"" + text + "\"";
        return false;
      }
      names->push_back(name);
      i = close;
    } else if (text[i] == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      ++i;
    }
  }
  return true;
}

// Derived expressions compiled against the numeric factors of a design, in file order; each
// may use the factors and the derived values before it.
class DerivedEvaluator {
 public:
  explicit DerivedEvaluator(const Design& d) : design_(d) {
    exprs_.reserve(d.derived.size());
    for (const Derived& dv : d.derived) {
      exprs_.push_back(
          expr::Expr::Parse(dv.expression, [&](const std::string& n) { return Resolve(n, dv); }));
      names_.push_back(dv.name);
    }
  }

  std::map<std::string, double> Evaluate(const std::vector<Level>& levels) const {
    std::vector<double> values;
    for (const Level& l : levels) values.push_back(l.is_number ? l.number : 0);
    std::map<std::string, double> out;
    for (size_t i = 0; i < exprs_.size(); ++i)
      out[names_[i]] = exprs_[i].Eval<double>(values.data(), nullptr);
    return out;
  }

 private:
  expr::Expr::Symbol Resolve(const std::string& n, const Derived& at) const {
    expr::Expr::Symbol s;
    for (size_t i = 0; i < design_.factors.size(); ++i) {
      if (design_.factors[i].name != n) continue;
      const Factor& f = design_.factors[i];
      if (!f.levels.empty() && !f.levels[0].is_number)
        throw DesignError(design_.file, at.line, "derived." + at.name,
                          "factor '" + n +
                              "' has named levels; an expression can only use "
                              "numeric factors");
      s.kind = 1;
      s.slot = static_cast<int>(i);
      return s;
    }
    for (size_t i = 0; i < exprs_.size(); ++i) {
      if (names_[i] == n) {
        s.kind = 3;
        s.inline_expr = &exprs_[i];
        return s;
      }
    }
    return s;  // unknown: the parser reports it with its position
  }

  const Design& design_;
  std::vector<expr::Expr> exprs_;
  std::vector<std::string> names_;
};

class Loader {
 public:
  Loader(const std::string& source) : source_(source) {}

  Design Run(const std::string& text) {
    try {
      doc_ = toml::parse(text, source_);
    } catch (const toml::parse_error& e) {
      throw DesignError(source_, static_cast<int>(e.source().begin.line), "",
                        "TOML syntax error: " + std::string(e.description()));
    }
    static const std::set<std::string> kKeys = {
        "schema",   "name",    "description", "type",   "generators", "replications", "seed",
        "platform", "timeout", "responses",   "factor", "derived",    "command",      "recorded"};
    for (const auto& [k, v] : doc_) {
      if (!kKeys.count(std::string(k.str())))
        Fail(k.source(), std::string(k.str()),
             "unknown key (expected one of name, description, type, generators, replications, "
             "seed, platform, timeout, responses, recorded, [[factor]], [derived], [command])");
    }
    // value_exact: value<int64_t>() casts a float such as 22E22 to an integer, which is undefined.
    if (auto s = doc_["schema"].value_exact<int64_t>(); s && *s != 1)
      Fail(*doc_["schema"].node(), "schema",
           "schema " + std::to_string(*s) + " is not supported (expected 1)");
    d_.file = source_;
    d_.name = RequiredString("name");
    if (!ValidName(d_.name) && d_.name.find('-') == std::string::npos)
      Fail(*doc_["name"].node(), "name", "'" + d_.name + "' is not a valid design name");
    for (char c : d_.name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
        Fail(*doc_["name"].node(), "name",
             "'" + d_.name + "' is not a valid design name (letters, digits, '-', '_')");
    if (std::string why = CheckPathName(d_.name); !why.empty())  // it names directories
      Fail(*doc_["name"].node(), "name", "'" + d_.name + "': " + why);
    d_.description = OptionalString("description", "");
    std::string type = OptionalString("type", "full");
    if (type != "full" && type != "fractional")
      Fail(*doc_["type"].node(), "type", "'" + type + "': expected \"full\" or \"fractional\"");
    d_.fractional = type == "fractional";
    d_.platform = OptionalString("platform", "local");
    if (std::string why = CheckPathName(d_.platform); !why.empty())
      Fail(*doc_["platform"].node(), "platform",
           "'" + d_.platform + "' is not a platform name: " + why);
    d_.replications = static_cast<int>(OptionalInt("replications", 1, 1, 10000));
    d_.seed = static_cast<uint64_t>(OptionalInt("seed", 1, 0, INT64_MAX));
    LoadTimeout();
    LoadFactors();
    LoadGenerators();
    CheckSize();
    LoadCommand();
    LoadDerived();
    LoadRecorded();
    LoadResponses();
    CheckTemplates();
    CheckDerivedValues();
    return d_;
  }

 private:
  [[noreturn]] void Fail(const toml::source_region& at, const std::string& field,
                         const std::string& msg) const {
    throw DesignError(source_, static_cast<int>(at.begin.line), field, msg);
  }
  [[noreturn]] void Fail(const toml::node& at, const std::string& field,
                         const std::string& msg) const {
    Fail(at.source(), field, msg);
  }

  std::string RequiredString(const char* key) {
    const toml::node* n = doc_[key].node();
    if (!n) throw DesignError(source_, 0, key, "missing (a string)");
    if (!n->is_string()) Fail(*n, key, "expected a string");
    return **n->as_string();
  }
  std::string OptionalString(const char* key, const std::string& def) {
    const toml::node* n = doc_[key].node();
    if (!n) return def;
    if (!n->is_string()) Fail(*n, key, "expected a string");
    return **n->as_string();
  }
  int64_t OptionalInt(const char* key, int64_t def, int64_t lo, int64_t hi) {
    const toml::node* n = doc_[key].node();
    if (!n) return def;
    if (!n->is_integer()) Fail(*n, key, "expected an integer");
    int64_t v = **n->as_integer();
    if (v < lo || v > hi)
      Fail(*n, key,
           std::to_string(v) + " is out of range (expected " + std::to_string(lo) + " to " +
               std::to_string(hi) + ")");
    return v;
  }

  void LoadTimeout() {
    const toml::node* n = doc_["timeout"].node();
    if (!n) return;
    double s = 0;
    if (auto v = n->value<double>()) {
      s = *v;
    } else if (n->is_string()) {
      if (!config::ParseDuration(**n->as_string(), &s))
        Fail(*n, "timeout",
             "'" + **n->as_string() +
                 "': expected seconds or a duration like "
                 "\"90s\", \"10m\"");
    } else {
      Fail(*n, "timeout", "expected seconds (a number) or a duration string like \"10m\"");
    }
    if (!(s > 0)) Fail(*n, "timeout", "must be positive");
    if (s > 1e6) Fail(*n, "timeout", FormatNumber(s) + " s: at most 1000000 s (11.6 days)");
    d_.timeout_s = s;
  }

  void LoadFactors() {
    const toml::node* n = doc_["factor"].node();
    if (!n) throw DesignError(source_, 0, "factor", "missing: the design needs [[factor]] tables");
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables())
      Fail(*n, "factor", "expected [[factor]] tables (name = ..., levels = [...])");
    if (arr->empty()) Fail(*n, "factor", "no factors");
    if (arr->size() > 26) Fail(*n, "factor", "more than 26 factors");
    std::set<std::string> seen;
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::table& t = *(*arr)[i].as_table();
      std::string field = "factor[" + std::to_string(i) + "]";
      for (const auto& [k, v] : t) {
        std::string key(k.str());
        if (key != "name" && key != "levels" && key != "description")
          Fail(k.source(), field + "." + key, "unknown key (expected name, levels, description)");
      }
      Factor f;
      f.letter = static_cast<char>('A' + i);
      f.line = static_cast<int>(t.source().begin.line);
      const toml::node* name = t.get("name");
      if (!name || !name->is_string())
        Fail(name ? name->source() : t.source(), field + ".name", "expected the factor's name");
      f.name = **name->as_string();
      if (!ValidName(f.name))
        Fail(
            *name, field + ".name",
            "'" + f.name + "' is not a valid name (letters, digits, _; not starting with a digit)");
      if (!seen.insert(f.name).second)
        Fail(*name, field + ".name", "duplicate factor name '" + f.name + "'");
      for (const auto& b : kBuiltinPlaceholders)
        if (b == f.name || f.name == "ranks")
          Fail(*name, field + ".name", "'" + f.name + "' is reserved for the runner's own values");
      if (const toml::node* desc = t.get("description")) {
        if (!desc->is_string()) Fail(*desc, field + ".description", "expected a string");
        f.description = **desc->as_string();
      }
      const toml::node* lv = t.get("levels");
      if (!lv) Fail(t.source(), field + ".levels", "factor '" + f.name + "' has no levels");
      const toml::array* la = lv->as_array();
      if (!la) Fail(*lv, field + ".levels", "expected an array of numbers or of names");
      if (la->empty())
        Fail(*lv, field + ".levels",
             "factor '" + f.name + "' has zero levels (expected at least one)");
      std::set<std::string> level_texts;
      for (size_t j = 0; j < la->size(); ++j) {
        const toml::node& e = *la->get(j);
        std::string lf = field + ".levels[" + std::to_string(j) + "]";
        Level l;
        if (auto num = e.value<double>(); num && (e.is_integer() || e.is_floating_point())) {
          l.is_number = true;
          l.number = *num;
          if (!std::isfinite(l.number)) Fail(e, lf, "level must be finite");
        } else if (e.is_string()) {
          l.is_number = false;
          l.name = **e.as_string();
          if (l.name.empty()) Fail(e, lf, "empty level name");
        } else {
          Fail(e, lf, "expected a number or a name (string)");
        }
        if (!f.levels.empty() && f.levels[0].is_number != l.is_number)
          Fail(e, lf, "levels of one factor must all be numbers or all be names");
        if (!level_texts.insert(l.Text()).second)
          Fail(e, lf, "duplicate level " + l.Text() + " of factor '" + f.name + "'");
        f.levels.push_back(l);
      }
      d_.factors.push_back(f);
    }
  }

  // A factor named or lettered `token`, or -1.
  int FactorIndex(const std::string& token) const {
    for (size_t i = 0; i < d_.factors.size(); ++i)
      if (d_.factors[i].name == token) return static_cast<int>(i);
    if (token.size() == 1 && token[0] >= 'A' && token[0] < 'A' + int(d_.factors.size()))
      return token[0] - 'A';
    return -1;
  }

  std::string FactorLegend() const {
    std::string s;
    for (const auto& f : d_.factors)
      s += (s.empty() ? "" : ", ") + std::string(1, f.letter) + "=" + f.name;
    return s;
  }

  void LoadGenerators() {
    const toml::node* n = doc_["generators"].node();
    if (!d_.fractional) {
      if (n) Fail(*n, "generators", "generators need type = \"fractional\"");
      return;
    }
    if (n && !n->is_array())
      Fail(*n, "generators", "expected an array of strings like \"D = ABC\"");
    Effect generated = 0;
    if (n) {
      const toml::array& arr = *n->as_array();
      for (size_t i = 0; i < arr.size(); ++i) {
        const toml::node& e = *arr.get(i);
        std::string field = "generators[" + std::to_string(i) + "]";
        if (!e.is_string()) Fail(e, field, "expected a string like \"D = ABC\"");
        Generator g;
        g.text = **e.as_string();
        g.line = static_cast<int>(e.source().begin.line);
        ParseGenerator(g.text, &g, e, field);
        if (generated & (Effect(1) << g.factor))
          Fail(e, field, "factor '" + d_.factors[g.factor].name + "' is generated twice");
        generated |= Effect(1) << g.factor;
        d_.generators.push_back(g);
      }
    }
    for (const Generator& g : d_.generators) {
      if (g.word & generated) {
        int bad = __builtin_ctz(g.word & generated);
        throw DesignError(source_, g.line, "generators",
                          "'" + g.text + "': '" + d_.factors[bad].name +
                              "' is itself generated; a generator's word must use base factors "
                              "only");
      }
    }
    if (d_.generators.size() >= d_.factors.size())
      Fail(*n, "generators",
           "p = " + std::to_string(d_.generators.size()) +
               " generators leave no base factor (k = " + std::to_string(d_.factors.size()) + ")");
    for (size_t i = 0; i < d_.factors.size(); ++i) {
      if (d_.factors[i].levels.size() != 2)
        throw DesignError(source_, d_.factors[i].line, "factor[" + std::to_string(i) + "].levels",
                          "a 2^(k-p) design needs exactly 2 levels per factor; '" +
                              d_.factors[i].name + "' has " +
                              std::to_string(d_.factors[i].levels.size()));
    }
  }

  // Sizes in 64 bits against the stated maxima, before anything is expanded.
  void CheckSize() {
    int64_t points = d_.NumPoints();
    std::string why;
    if (d_.fractional) {
      why = "2^(" + std::to_string(d_.factors.size()) + "-" + std::to_string(d_.generators.size()) +
            ") fractional design";
    } else {
      for (const auto& f : d_.factors)
        why += (why.empty() ? "" : " x ") + f.name + ": " + std::to_string(f.levels.size());
      why = "levels " + why;
    }
    std::string count = points == INT64_MAX ? "more than 9.2e18" : std::to_string(points);
    if (points > kMaxPoints)
      throw DesignError(source_, 0, "factor",
                        "the design has " + count + " points (" + why + "); at most " +
                            std::to_string(kMaxPoints) +
                            " are supported: use fewer factors or levels, or a fractional "
                            "design");
    const toml::node* reps = doc_["replications"].node();
    if (d_.NumRuns() > kMaxRuns)
      throw DesignError(
          source_, reps ? static_cast<int>(reps->source().begin.line) : 0, "replications",
          std::to_string(points) + " points (" + why + ") x " + std::to_string(d_.replications) +
              " replications = " + std::to_string(d_.NumRuns()) + " runs; at most " +
              std::to_string(kMaxRuns) + " are supported");
  }

  // Every derived value at every point: finite, and ranks a whole number the platform can
  // start (an expression like "1/0" or "p - 8" would otherwise become `-np inf`).
  void CheckDerivedValues() {
    std::vector<Point> points = ExpandPoints(d_);
    for (const Point& p : points) {
      for (const Derived& dv : d_.derived) {
        double v = p.derived.at(dv.name);
        std::string field = dv.name == "ranks" ? "command.ranks" : "derived." + dv.name;
        std::string at = "at point " + std::to_string(p.index) + " " + p.FactorsJson(d_);
        if (!std::isfinite(v))
          throw DesignError(source_, dv.line, field,
                            "'" + dv.expression + "' is " + FormatNumber(v) + " " + at +
                                "; expected a finite number");
        if (dv.name == "ranks" && (v != std::floor(v) || v < 1 || v > kMaxRanks))
          throw DesignError(source_, dv.line, field,
                            "'" + dv.expression + "' is " + FormatNumber(v) + " " + at +
                                "; ranks must be a whole number from 1 to " +
                                std::to_string(kMaxRanks));
      }
    }
  }

  void ParseGenerator(const std::string& text, Generator* g, const toml::node& at,
                      const std::string& field) {
    size_t eq = text.find('=');
    if (eq == std::string::npos)
      Fail(at, field, "'" + text + "': expected FACTOR = WORD, e.g. \"D = ABC\" or \"s = n*rc*u\"");
    std::string lhs = Trim(text.substr(0, eq)), rhs = Trim(text.substr(eq + 1));
    g->factor = FactorIndex(lhs);
    if (g->factor < 0)
      Fail(at, field, "'" + text + "': '" + lhs + "' is not a factor (" + FactorLegend() + ")");
    if (!rhs.empty() && (rhs[0] == '-' || rhs[0] == '+')) {
      g->sign = rhs[0] == '-' ? -1 : 1;
      rhs = Trim(rhs.substr(1));
    }
    std::vector<std::string> tokens;
    if (rhs.find('*') != std::string::npos) {
      std::stringstream ss(rhs);
      for (std::string t; std::getline(ss, t, '*');) tokens.push_back(Trim(t));
    } else if (FactorIndex(rhs) >= 0) {
      tokens.push_back(rhs);
    } else {
      for (char c : rhs) tokens.push_back(std::string(1, c));  // letters: ABC
    }
    if (tokens.empty() || rhs.empty()) Fail(at, field, "'" + text + "': empty word after '='");
    for (const auto& t : tokens) {
      int f = FactorIndex(t);
      if (f < 0)
        Fail(at, field, "'" + text + "': '" + t + "' is not a factor (" + FactorLegend() + ")");
      if (g->word & (Effect(1) << f))
        Fail(at, field, "'" + text + "': factor '" + d_.factors[f].name + "' appears twice");
      g->word |= Effect(1) << f;
    }
    if (g->word & (Effect(1) << g->factor))
      Fail(at, field, "'" + text + "': a factor cannot generate itself");
  }

  std::vector<std::string> StringArray(const toml::node& n, const std::string& field) {
    const toml::array* a = n.as_array();
    if (!a) Fail(n, field, "expected an array of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      std::string f = field + "[" + std::to_string(i) + "]";
      if (auto s = e.value<std::string>(); s && e.is_string())
        out.push_back(*s);
      else if (e.is_integer() || e.is_floating_point())
        out.push_back(FormatNumber(*e.value<double>()));
      else
        Fail(e, f, "expected a string");
      template_nodes_.push_back({f, &e, out.back()});
    }
    return out;
  }

  void LoadCommand() {
    const toml::node* n = doc_["command"].node();
    if (!n || !n->is_table())
      throw DesignError(source_, n ? int(n->source().begin.line) : 0, "command",
                        "missing [command] table (launcher, program, args)");
    const toml::table& t = *n->as_table();
    for (const auto& [k, v] : t) {
      std::string key(k.str());
      if (key != "launcher" && key != "program" && key != "args" && key != "env" && key != "ranks")
        Fail(k.source(), "command." + key,
             "unknown key (expected launcher, program, args, env, ranks)");
    }
    if (const toml::node* l = t.get("launcher"))
      d_.command.launcher = StringArray(*l, "command.launcher");
    const toml::node* p = t.get("program");
    if (!p || !p->is_string())
      Fail(p ? p->source() : t.source(), "command.program",
           "expected the program to run (a name in invmw's bin directory, on PATH, or a path)");
    d_.command.program = **p->as_string();
    template_nodes_.push_back({"command.program", p, d_.command.program});
    if (const toml::node* a = t.get("args")) d_.command.args = StringArray(*a, "command.args");
    if (const toml::node* e = t.get("env")) {
      if (!e->is_table()) Fail(*e, "command.env", "expected a table NAME = \"value\"");
      for (const auto& [k, v] : *e->as_table()) {
        std::string f = "command.env." + std::string(k.str());
        if (!v.is_string()) Fail(v, f, "expected a string");
        d_.command.env[std::string(k.str())] = **v.as_string();
        template_nodes_.push_back({f, &v, **v.as_string()});
      }
    }
    if (const toml::node* r = t.get("ranks")) {
      if (r->is_integer())
        d_.command.ranks = std::to_string(**r->as_integer());
      else if (r->is_string())
        d_.command.ranks = **r->as_string();
      else
        Fail(*r, "command.ranks", "expected an integer or an expression like \"p + 1\"");
      ranks_line_ = static_cast<int>(r->source().begin.line);
    } else {
      ranks_line_ = static_cast<int>(t.source().begin.line);
    }
  }

  void LoadDerived() {
    std::set<std::string> names;
    for (const auto& f : d_.factors) names.insert(f.name);
    if (const toml::node* n = doc_["derived"].node()) {
      if (!n->is_table()) Fail(*n, "derived", "expected a table NAME = \"expression\"");
      // toml++ orders keys by name; the file order (by line) decides what may use what.
      std::vector<Derived> in;
      for (const auto& [k, v] : *n->as_table()) {
        std::string name(k.str()), field = "derived." + name;
        if (!ValidName(name)) Fail(k.source(), field, "'" + name + "' is not a valid name");
        if (names.count(name)) Fail(k.source(), field, "'" + name + "' is already a factor");
        if (name == "ranks")
          Fail(k.source(), field, "'ranks' is set by command.ranks (an expression)");
        for (const auto& b : kBuiltinPlaceholders)
          if (b == name) Fail(k.source(), field, "'" + name + "' is reserved for the runner");
        Derived dv;
        dv.name = name;
        dv.line = static_cast<int>(k.source().begin.line);
        if (v.is_string())
          dv.expression = **v.as_string();
        else if (auto num = v.value<double>())
          dv.expression = FormatNumber(*num);
        else
          Fail(v, field, "expected an expression string like \"p + 1\" or a number");
        in.push_back(dv);
      }
      std::sort(in.begin(), in.end(),
                [](const Derived& a, const Derived& b) { return a.line < b.line; });
      d_.derived = in;
    }
    d_.derived.push_back({"ranks", d_.command.ranks, ranks_line_});
    // Compile everything now so a bad expression fails here, with its line.
    for (size_t i = 0; i < d_.derived.size(); ++i) {
      Design partial = d_;
      partial.derived.resize(i + 1);
      const Derived& dv = d_.derived[i];
      std::string field = dv.name == "ranks" ? "command.ranks" : "derived." + dv.name;
      try {
        DerivedEvaluator ev(partial);
      } catch (const expr::ExprError& e) {
        throw DesignError(source_, dv.line, field,
                          "'" + dv.expression + "': " + e.what() +
                              " (an expression may use numeric factors and the derived values "
                              "defined above it)");
      }
    }
  }

  // Derived values a model needs as columns (e.g. steps scaled with the problem size): written
  // with the factors in each row. Opt-in, so rows of other designs keep their factors as they were.
  void LoadRecorded() {
    const toml::node* n = doc_["recorded"].node();
    if (!n) return;
    const toml::array* a = n->as_array();
    if (!a) Fail(*n, "recorded", "expected an array of derived value names, e.g. [\"s\"]");
    std::set<std::string> seen;
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      std::string f = "recorded[" + std::to_string(i) + "]";
      if (!e.is_string()) Fail(e, f, "expected the name of a derived value (string)");
      std::string r = **e.as_string();
      bool known = false;
      for (const Derived& dv : d_.derived) known = known || dv.name == r;
      if (!known) Fail(e, f, "'" + r + "' is not a derived value of this design ([derived])");
      if (!seen.insert(r).second) Fail(e, f, "duplicate name '" + r + "'");
      d_.recorded.push_back(r);
    }
  }

  void LoadResponses() {
    const toml::node* n = doc_["responses"].node();
    if (!n)
      throw DesignError(source_, 0, "responses",
                        "missing: list the response variables to record, e.g. [\"t_wall\", "
                        "\"t_comm\"]");
    const toml::array* a = n->as_array();
    if (!a || a->empty()) Fail(*n, "responses", "expected a non-empty array of response names");
    std::set<std::string> seen;
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      std::string f = "responses[" + std::to_string(i) + "]";
      if (!e.is_string()) Fail(e, f, "expected a response name (string)");
      std::string r = **e.as_string();
      bool ok = !r.empty();
      for (char c : r)
        ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
      if (!ok)
        Fail(e, f,
             "'" + r +
                 "' is not a response name (letters, digits, _, and . for a path "
                 "into the analysis JSON)");
      if (!seen.insert(r).second) Fail(e, f, "duplicate response '" + r + "'");
      d_.responses.push_back(r);
    }
  }

  void CheckTemplates() {
    std::set<std::string> known(kBuiltinPlaceholders.begin(), kBuiltinPlaceholders.end());
    for (const auto& f : d_.factors) known.insert(f.name);
    for (const auto& dv : d_.derived) known.insert(dv.name);
    std::string known_list;
    for (const auto& f : d_.factors) known_list += (known_list.empty() ? "" : ", ") + f.name;
    std::string derived_list;
    for (const auto& dv : d_.derived) derived_list += (derived_list.empty() ? "" : ", ") + dv.name;
    std::string builtin_list;
    for (const auto& b : kBuiltinPlaceholders)
      builtin_list += (builtin_list.empty() ? "" : ", ") + b;
    for (const auto& tn : template_nodes_) {
      std::vector<std::string> names;
      std::string err;
      if (!Placeholders(tn.text, &names, &err)) Fail(*tn.node, tn.field, err);
      for (const auto& name : names)
        if (!known.count(name))
          Fail(*tn.node, tn.field,
               "unknown factor {" + name + "} in the template; expected a factor (" + known_list +
                   "), a derived value (" + derived_list + ") or one of " + builtin_list);
    }
  }

  struct TemplateNode {
    std::string field;
    const toml::node* node;
    std::string text;
  };

  std::string source_;
  toml::table doc_;
  Design d_;
  std::vector<TemplateNode> template_nodes_;
  int ranks_line_ = 0;
};

}  // namespace

Design ParseDesign(const std::string& text, const std::string& source_name) {
  return Loader(source_name).Run(text);
}

Design LoadDesign(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw DesignError(path, 0, "", "cannot open the design file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseDesign(ss.str(), path);
}

namespace {

Point MakePoint(const Design& d, int index, const DerivedEvaluator& ev) {
  Point p;
  p.index = index;
  if (d.fractional) {
    Effect generated = 0;
    for (const auto& g : d.generators) generated |= Effect(1) << g.factor;
    std::vector<int> sign(d.factors.size(), -1);
    int bit = 0;
    for (size_t i = 0; i < d.factors.size(); ++i)
      if (!(generated & (Effect(1) << i))) sign[i] = (index >> bit++) & 1 ? 1 : -1;
    for (const auto& g : d.generators) {
      int s = g.sign;
      for (size_t i = 0; i < d.factors.size(); ++i)
        if (g.word & (Effect(1) << i)) s *= sign[i];
      sign[g.factor] = s;
    }
    for (size_t i = 0; i < d.factors.size(); ++i)
      p.levels.push_back(d.factors[i].levels[sign[i] > 0 ? 1 : 0]);
  } else {
    int rest = index;
    for (const auto& f : d.factors) {
      int n = static_cast<int>(f.levels.size());
      p.levels.push_back(f.levels[rest % n]);
      rest /= n;
    }
  }
  p.derived = ev.Evaluate(p.levels);
  return p;
}

}  // namespace

Point PointAt(const Design& d, int index) {
  return MakePoint(d, index, DerivedEvaluator(d));
}

std::vector<Point> ExpandPoints(const Design& d) {
  std::vector<Point> out;
  DerivedEvaluator ev(d);
  for (int i = 0; i < d.NumPoints(); ++i) out.push_back(MakePoint(d, i, ev));
  return out;
}

std::string Point::FactorsJson(const Design& d) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t i = 0; i < d.factors.size(); ++i) {
    if (levels[i].is_number)
      j[d.factors[i].name] = levels[i].number;
    else
      j[d.factors[i].name] = levels[i].name;
  }
  for (const std::string& r : d.recorded) {
    auto it = derived.find(r);
    if (it != derived.end()) j[r] = it->second;
  }
  return j.dump();
}

std::vector<RunSlot> RunOrder(const Design& d) {
  std::vector<RunSlot> slots;
  for (int r = 0; r < d.replications; ++r)
    for (int p = 0; p < d.NumPoints(); ++p) slots.push_back({p, r});
  // splitmix64 and an explicit Fisher-Yates: std::shuffle's result differs between standard
  // libraries, and the order must be reproducible from the seed alone.
  uint64_t state = d.seed;
  auto next = [&state]() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (size_t i = slots.size(); i > 1; --i) std::swap(slots[i - 1], slots[next() % i]);
  return slots;
}

AliasStructure Aliases(const Design& d) {
  if (!d.fractional) return AliasStructure{};
  return ComputeAliases(static_cast<int>(d.factors.size()), d.generators);
}

std::string Substitute(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      size_t close = text.find('}', i);
      if (close == std::string::npos) throw std::runtime_error("unclosed '{' in " + text);
      std::string name = text.substr(i + 1, close - i - 1);
      auto it = values.find(name);
      if (it == values.end()) throw std::runtime_error("unknown placeholder {" + name + "}");
      out += it->second;
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

std::map<std::string, std::string> PlaceholderValues(const Design& d, const Point& p,
                                                     int replication, const std::string& run_dir,
                                                     const std::string& bin_dir) {
  std::map<std::string, std::string> v;
  for (size_t i = 0; i < d.factors.size(); ++i) v[d.factors[i].name] = p.levels[i].Text();
  for (const auto& [k, x] : p.derived) v[k] = FormatNumber(x);
  v["run_dir"] = run_dir;
  v["point"] = std::to_string(p.index);
  v["replication"] = std::to_string(replication);
  v["design"] = d.name;
  v["seed"] = std::to_string(d.seed);
  v["bin_dir"] = bin_dir;
  v["run_index"] = std::to_string(replication * d.NumPoints() + p.index);
  // Inputs next to the design (experiments/workloads/lammps/in.melt): runs work in run_dir.
  std::filesystem::path dir = std::filesystem::path(d.file).parent_path();
  v["design_dir"] = (dir.empty() ? std::filesystem::current_path()
                                 : std::filesystem::absolute(dir).lexically_normal())
                        .string();
  return v;
}

}  // namespace invmw::experiment
