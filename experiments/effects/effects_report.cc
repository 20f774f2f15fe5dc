#include "experiments/effects/effects_report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace invmw::effects {
namespace {

std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string Num(double v) {
  if (std::isnan(v)) return "-";
  return Printf("%.6g", v);
}

std::string Pct(double v) {
  if (std::isnan(v)) return "-";
  return Printf("%.2f %%", v);
}

std::string PValue(double p) {
  if (std::isnan(p)) return "-";
  if (p < 0.001) return "<0.001";
  return Printf("%.3f", p);
}

std::string Interval(const Estimate& e) {
  if (std::isnan(e.ci_low)) return "";
  return "[" + Num(e.ci_low) + ", " + Num(e.ci_high) + "]";
}

std::string Word(const Layout& layout, uint32_t mask, int sign) {
  return (sign > 0 ? "" : "-") + TermName(layout, mask);
}

std::string FractionText(const EffectsReport& report) {
  const Layout& l = report.layout;
  const Fraction& fr = l.fraction;
  static const char* roman[] = {"", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X"};
  std::string s = Printf("2^(%zu-%d) fraction, resolution ", l.factors.size(), fr.p);
  s += fr.resolution <= 10 ? roman[fr.resolution] : std::to_string(fr.resolution);
  s += "; defining relation I";
  for (const auto& [mask, sign] : fr.defining_relation) s += " = " + Word(l, mask, sign);
  return s;
}

nlohmann::ordered_json Num(double v, bool) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

nlohmann::ordered_json EstimateJson(const Estimate& e) {
  nlohmann::ordered_json j;
  j["value"] = Num(e.value, true);
  j["std_error"] = Num(e.std_error, true);
  if (std::isnan(e.ci_low)) {
    j["ci"] = nullptr;
    j["significant"] = nullptr;
  } else {
    j["ci"] = {e.ci_low, e.ci_high};
    j["significant"] = e.significant;
  }
  return j;
}

std::string CellName(const Layout& layout, const Term& t, const Term::Cell& c) {
  std::string s;
  size_t i = 0;
  for (size_t f = 0; f < layout.factors.size(); ++f) {
    if (!((t.mask >> f) & 1u)) continue;
    s += (i ? ", " : "") + layout.factors[f].name + "=" + layout.factors[f].levels[c.levels[i]];
    ++i;
  }
  return s;
}

// Columns sized to their widest cell; the first column left-aligned, numbers right-aligned,
// interval columns left-aligned; no trailing blanks.
class Table {
 public:
  explicit Table(std::vector<bool> left) : left_(std::move(left)) {}
  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  // A line printed as it is between rows (notes under a row).
  void Line(std::string text) { rows_.push_back({"\n" + text}); }
  std::string Render(const std::string& indent) const {
    std::vector<size_t> w(left_.size(), 0);
    for (const auto& r : rows_)
      if (!(r.size() == 1 && r[0][0] == '\n'))
        for (size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
    std::string out;
    for (const auto& r : rows_) {
      std::string line = indent;
      if (r.size() == 1 && r[0][0] == '\n') {
        line += r[0].substr(1);
      } else {
        for (size_t c = 0; c < r.size(); ++c) {
          std::string pad(w[c] - r[c].size(), ' ');
          line += (c ? "  " : "") + (left_[c] ? r[c] + pad : pad + r[c]);
        }
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<bool> left_;
  std::vector<std::vector<std::string>> rows_;
};

// Breaks text into lines of at most `width` characters after `indent`.
std::string Wrap(const std::string& text, const std::string& indent, size_t width = 96) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t sp = text.find(' ', pos);
    if (sp == std::string::npos) sp = text.size();
    std::string word = text.substr(pos, sp - pos);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = sp + 1;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

void ResponseText(const EffectsReport& report, const ResponseEffects& r, const TextOptions& options,
                  std::string* out) {
  const Layout& l = report.layout;
  const bool sign = report.method == Method::kSignTable;
  const bool err = r.has_error;
  const int conf = static_cast<int>(std::lround(report.options.confidence * 100));
  // Effects that are zero up to rounding print as 0, not as 1e-16.
  const double tiny = 1e-12 * (std::fabs(r.mean.value) + std::sqrt(std::max(r.sst, 0.0)));
  auto value = [&](double v) { return Num(std::fabs(v) < tiny ? 0.0 : v); };
  auto interval = [&](const Estimate& e) {
    std::string ci = Interval(e);
    return ci.empty() || !e.significant ? ci : ci + " *";
  };

  *out += "\nResponse " + r.response + (r.log10 ? " (analysed as log10)" : "") + ": mean " +
          Num(r.mean.value) + ", total variation SST " + Num(r.sst) + ", " +
          std::to_string(r.observations) + " observations\n";
  if (!(r.sst > 0)) *out += "  The response does not vary: there is no variation to allocate.\n";

  if (sign) {
    Table t(err ? std::vector<bool>{true, false, true, false, false, false}
                : std::vector<bool>{true, false, false});
    if (err) {
      t.Row({"term", "effect q", Printf("%d%% CI", conf), "variation", "F", "p"});
      t.Row({"mean (q0)", value(r.mean.value), interval(r.mean), "", "", ""});
    } else {
      t.Row({"term", "effect q", "variation"});
      t.Row({"mean (q0)", value(r.mean.value), ""});
    }
    for (const Term& term : r.terms) {
      if (err) {
        t.Row({term.name, value(term.q.value), interval(term.q), Pct(term.variation), Num(term.f),
               PValue(term.p)});
      } else {
        t.Row({term.name, value(term.q.value), Pct(term.variation)});
      }
      if (!term.aliases.empty()) {
        // Two-factor aliases matter in practice; higher ones are counted (all are in JSON).
        std::string a = "  estimates " + term.name;
        size_t higher = 0;
        for (const auto& s : term.aliases) {
          if (std::count(s.begin(), s.end(), '*') < 2) {
            a += " " + s;
          } else {
            ++higher;
          }
        }
        if (higher) a += " (and " + std::to_string(higher) + " of three or more factors)";
        t.Line(a);
      }
    }
    if (err) t.Row({"error", "", "", Pct(r.error_variation), "", ""});
    *out += t.Render("  ");
  } else {
    *out += "  Allocation of variation\n";
    Table t(err ? std::vector<bool>{true, false, false, false, false, false}
                : std::vector<bool>{true, false, false, false});
    if (err) {
      t.Row({"term", "SS", "dof", "variation", "F", "p"});
    } else {
      t.Row({"term", "SS", "dof", "variation"});
    }
    for (const Term& term : r.terms) {
      if (err) {
        t.Row({term.name, Num(term.ss), std::to_string(term.dof), Pct(term.variation), Num(term.f),
               PValue(term.p)});
      } else {
        t.Row({term.name, Num(term.ss), std::to_string(term.dof), Pct(term.variation)});
      }
    }
    if (err)
      t.Row({"error", Num(r.sse), std::to_string(r.dof_error), Pct(r.error_variation), "", ""});
    *out += t.Render("  ");
  }
  if (err)
    *out += "  Standard deviation of errors s_e = " + Num(r.s_e) + " (" +
            std::to_string(r.dof_error) + " dof), t = " + Num(r.t) + "\n";
  if (!r.pooled.empty()) {
    std::string p;
    for (const auto& s : r.pooled) p += (p.empty() ? "" : ", ") + s;
    *out += Wrap("Pooled into the error (assumed negligible, --max-order " +
                     std::to_string(report.options.max_order) + "): " + p,
                 "  ");
  }
  if (!err) {
    *out += Wrap("No error term: " + std::to_string(r.replications) +
                     " replication per point and no interaction pooled, so there are no "
                     "confidence intervals or F-tests and the effects explain all variation. "
                     "Replicate the design, or pool the highest interactions into the error "
                     "with --max-order N.",
                 "  ");
  } else if (sign) {
    *out += "  * = the interval excludes zero\n";
  }

  if (!sign) {
    *out +=
        "  Effects" + (err ? Printf(" (%d%% CI; * = interval excludes zero)", conf) : "") + "\n";
    Table t({true, false, true});
    t.Row({"mean", value(r.mean.value), Interval(r.mean)});
    bool left_out = false;
    for (const Term& term : r.terms) {
      if (term.order > 1 && !options.all_effects) {
        left_out = true;
        continue;
      }
      for (const auto& c : term.cells)
        t.Row({CellName(l, term, c), value(c.effect.value), interval(c.effect)});
    }
    *out += t.Render("  ");
    if (left_out)
      *out += "  (interaction effects: --all-effects, or every value in the --json output)\n";
  }
}

}  // namespace

std::string FormatText(const EffectsReport& report, const TextOptions& options) {
  const Layout& l = report.layout;
  std::string out = "Effects of design '" + report.design + "'";
  if (!l.platform.empty()) out += " on platform '" + l.platform + "'";
  out += " (" + report.db + ")\n";
  out += "Factors:";
  for (size_t f = 0; f < l.factors.size(); ++f) {
    out += std::string(f ? "," : "") + " " + l.factors[f].name + " {";
    for (size_t i = 0; i < l.factors[f].levels.size(); ++i)
      out += (i ? ", " : "") + l.factors[f].levels[i];
    out += "}";
  }
  out += "\nPoints: " + std::to_string(l.cells.size()) + " (";
  if (l.full) {
    std::string sizes;
    for (size_t f = 0; f < l.factors.size(); ++f)
      sizes += (f ? "x" : "") + std::to_string(l.factors[f].levels.size());
    out += "full factorial " + sizes + ")";
  } else {
    const std::string fraction = FractionText(report);
    out += fraction.substr(0, fraction.find(';')) + ")";
  }
  if (!report.responses.empty()) {
    const int reps = report.responses.front().replications;
    out += ", " + std::to_string(reps) + " replication" + (reps == 1 ? "" : "s") + " each";
  }
  out += "\n";
  out += Wrap(report.method == Method::kSignTable
                  ? "Method: sign table (Jain ch. 17-19); q is half the change from the first "
                    "level (-1) to the second (+1)"
                  : "Method: general full factorial (Jain ch. 20-23); an effect is the deviation "
                    "of a level's mean from the mean",
              "", 96);
  if (!l.full) {
    const std::string fraction = FractionText(report);
    out += Wrap("Confounding: " + fraction.substr(fraction.find(';') + 2), "", 96);
  }
  for (const auto& n : report.notes) out += Wrap("Note: " + n, "", 96);
  for (const auto& r : report.responses) ResponseText(report, r, options, &out);
  return out;
}

nlohmann::ordered_json ToJson(const EffectsReport& report) {
  const Layout& l = report.layout;
  nlohmann::ordered_json j;
  j["schema"] = 1;
  j["design"] = report.design;
  j["db"] = report.db;
  j["platform"] =
      l.platform.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(l.platform);
  j["method"] = report.method == Method::kSignTable ? "sign_table" : "general";
  j["confidence"] = report.options.confidence;
  j["max_order"] = report.options.max_order;
  auto& factors = j["factors"] = nlohmann::ordered_json::array();
  for (const Factor& f : l.factors) {
    nlohmann::ordered_json fj;
    fj["name"] = f.name;
    fj["levels"] = f.levels;
    fj["numeric"] = f.numeric;
    if (f.numeric) fj["values"] = f.values;
    factors.push_back(fj);
  }
  j["constant_factors"] = l.constant_factors;
  j["design_points"] = l.cells.size();
  j["full"] = l.full;
  if (l.full) {
    j["fraction"] = nullptr;
  } else {
    nlohmann::ordered_json fr;
    fr["k"] = l.factors.size();
    fr["p"] = l.fraction.p;
    fr["resolution"] = l.fraction.resolution;
    auto& words = fr["defining_relation"] = nlohmann::ordered_json::array();
    for (const auto& [mask, sign] : l.fraction.defining_relation)
      words.push_back((sign > 0 ? "+" : "-") + TermName(l, mask));
    j["fraction"] = fr;
  }
  j["notes"] = report.notes;
  auto& responses = j["responses"] = nlohmann::ordered_json::array();
  for (const ResponseEffects& r : report.responses) {
    nlohmann::ordered_json rj;
    rj["name"] = r.response;
    rj["log10"] = r.log10;
    rj["replications"] = r.replications;
    rj["observations"] = r.observations;
    rj["mean"] = EstimateJson(r.mean);
    rj["ssy"] = r.ssy;
    rj["ss0"] = r.ss0;
    rj["sst"] = r.sst;
    auto& terms = rj["terms"] = nlohmann::ordered_json::array();
    for (const Term& t : r.terms) {
      nlohmann::ordered_json tj;
      tj["name"] = t.name;
      auto& tf = tj["factors"] = nlohmann::ordered_json::array();
      for (size_t f = 0; f < l.factors.size(); ++f)
        if ((t.mask >> f) & 1u) tf.push_back(l.factors[f].name);
      tj["order"] = t.order;
      tj["ss"] = t.ss;
      tj["dof"] = t.dof;
      tj["variation_pct"] = Num(t.variation, true);
      tj["f"] = Num(t.f, true);
      tj["p"] = Num(t.p, true);
      if (report.method == Method::kSignTable || (l.two_level && t.dof == 1))
        tj["q"] = EstimateJson(t.q);
      if (report.method == Method::kSignTable) tj["aliases"] = t.aliases;
      if (!t.cells.empty()) {
        auto& cells = tj["effects"] = nlohmann::ordered_json::array();
        for (const auto& c : t.cells) {
          nlohmann::ordered_json cj;
          nlohmann::ordered_json levels;
          size_t i = 0;
          for (size_t f = 0; f < l.factors.size(); ++f)
            if ((t.mask >> f) & 1u) levels[l.factors[f].name] = l.factors[f].levels[c.levels[i++]];
          cj["levels"] = levels;
          const nlohmann::ordered_json estimate = EstimateJson(c.effect);
          for (auto it = estimate.begin(); it != estimate.end(); ++it) cj[it.key()] = it.value();
          cells.push_back(cj);
        }
      }
      terms.push_back(tj);
    }
    if (r.has_error) {
      nlohmann::ordered_json ej;
      ej["ss"] = r.sse;
      ej["dof"] = r.dof_error;
      ej["variation_pct"] = Num(r.error_variation, true);
      ej["s_e"] = r.s_e;
      ej["t"] = r.t;
      rj["error"] = ej;
    } else {
      rj["error"] = nullptr;
    }
    rj["pooled"] = r.pooled;
    responses.push_back(rj);
  }
  return j;
}

}  // namespace invmw::effects
