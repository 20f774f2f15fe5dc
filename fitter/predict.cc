#include "fitter/predict.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <tuple>

namespace invmw::fit {

namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

double ParseNumber(const std::string& s, const std::string& what) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    throw PredictError(what + ": '" + s + "' is not a number");
  return v;
}

}  // namespace

ResolvedParameters ResolveParameters(const Model& model, const PlatformTable& target,
                                     const PlatformTable* ref) {
  ResolvedParameters r;
  for (const Parameter& p : model.parameters()) {
    const TableValue* tv = target.Parameter(p.name);
    const TableValue* rv = ref ? ref->Parameter(p.name) : nullptr;
    if (!ref) {
      if (!tv) {
        throw PredictError("platform table " + target.path + " has no parameter '" + p.name +
                           "' needed by model " + model.name() +
                           " (give a calibrated --reference table to transfer from)");
      }
      r.values.push_back(tv->value);
      r.origins.push_back("table " + target.name);
      continue;
    }
    if (!rv) {
      if (!tv) {
        throw PredictError("neither the target table " + target.path + " nor the reference " +
                           ref->path + " has parameter '" + p.name + "'");
      }
      r.values.push_back(tv->value);
      r.origins.push_back("table " + target.name + " (reference lacks it)");
      continue;
    }
    if (p.transfer == "table" && tv) {
      r.values.push_back(tv->value);
      r.origins.push_back("table " + target.name);
    } else if (p.transfer == "compute") {
      // A searched model's coefficients name the kernel they scale with (scale_kernel).
      const std::string& kn = p.scale_kernel.empty() ? p.name : p.scale_kernel;
      const TableValue* tk = target.Kernel(kn);
      const TableValue* rk = ref->Kernel(kn);
      const TableValue* tp = p.scale_kernel.empty() ? nullptr : target.Parameter(kn);
      const TableValue* rp = p.scale_kernel.empty() ? nullptr : ref->Parameter(kn);
      const TableValue* tm = target.Measure("mflops_adjusted");
      const TableValue* rm = ref->Measure("mflops_adjusted");
      // Tables built in code bypass the loader's checks; a zero, negative or non-finite rate
      // or kernel time would silently zero (or blow up) the transferred value.
      for (const auto& [tab, field, v] :
           {std::tuple<const PlatformTable*, std::string, const TableValue*>{
                &target, "kernels." + p.name, tk},
            {ref, "kernels." + p.name, rk},
            {&target, "parameters." + kn, tp},
            {ref, "parameters." + kn, rp},
            {&target, "measures.mflops_adjusted", tm},
            {ref, "measures.mflops_adjusted", rm}}) {
        if (v && !(std::isfinite(v->value) && v->value > 0)) {
          throw PredictError("platform table " + tab->path + ": " + field + " = " + Num(v->value) +
                             ", expected a finite number > 0 to transfer " + p.name);
        }
      }
      if (tk && rk) {
        double f = tk->value / rk->value;
        r.values.push_back(rv->value * f);
        r.origins.push_back("reference " + ref->name + " x kernel time ratio " + Num(f));
      } else if (tp && rp) {
        double f = tp->value / rp->value;
        r.values.push_back(rv->value * f);
        r.origins.push_back("reference " + ref->name + " x " + kn + " ratio " + Num(f));
      } else if (tm && rm) {
        double f = rm->value / tm->value;
        r.values.push_back(rv->value * f);
        r.origins.push_back("reference " + ref->name + " x compute rate ratio " + Num(rm->value) +
                            "/" + Num(tm->value) + " MFlop/s adjusted");
      } else {
        r.values.push_back(rv->value);
        r.origins.push_back("reference " + ref->name + " (unscaled)");
        r.notes.push_back(p.name + " keeps the reference value " + Num(rv->value) + ": " +
                          target.name + " and " + ref->name +
                          " lack a common kernel time or mflops_adjusted to scale it");
      }
    } else {
      r.values.push_back(rv->value);
      r.origins.push_back("reference " + ref->name);
      if (p.transfer == "table") {
        r.notes.push_back(p.name + " keeps the reference value " + Num(rv->value) + ": " +
                          target.name + " does not give it");
      }
    }
  }
  return r;
}

std::pair<std::string, double> ParseSetting(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw PredictError("--set '" + text + "': expected FACTOR=VALUE");
  std::string name = text.substr(0, eq);
  return {name, ParseNumber(text.substr(eq + 1), "--set " + name)};
}

Sweep ParseSweep(const std::string& text) {
  Sweep s;
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw PredictError("--sweep '" + text + "': expected FACTOR=A..B[:STEP] or FACTOR=V1,V2,...");
  s.factor = text.substr(0, eq);
  std::string rest = text.substr(eq + 1);
  size_t dots = rest.find("..");
  if (dots != std::string::npos) {
    std::string to = rest.substr(dots + 2);
    double step = 1;
    if (size_t colon = to.find(':'); colon != std::string::npos) {
      step = ParseNumber(to.substr(colon + 1), "--sweep step");
      to = to.substr(0, colon);
    }
    double a = ParseNumber(rest.substr(0, dots), "--sweep start");
    double b = ParseNumber(to, "--sweep end");
    if (!(step > 0) || b < a)
      throw PredictError("--sweep '" + text + "': need A <= B and STEP > 0");
    for (double v = a; v <= b + 1e-9 * std::fabs(b); v += step) s.values.push_back(v);
  } else {
    std::stringstream ss(rest);
    for (std::string item; std::getline(ss, item, ',');)
      s.values.push_back(ParseNumber(item, "--sweep value"));
  }
  if (s.values.empty()) throw PredictError("--sweep '" + text + "': no values");
  if (s.values.size() > 100000) throw PredictError("--sweep '" + text + "': too many values");
  return s;
}

Prediction Predict(const Model& model, const std::vector<double>& params,
                   const std::map<std::string, double>& settings, const Sweep& sweep) {
  const auto& factors = model.factors();
  int sweep_index = model.FactorIndex(sweep.factor);
  if (sweep_index < 0) {
    throw PredictError("model " + model.name() + " has no factor '" + sweep.factor + "' to sweep");
  }
  for (const auto& [name, v] : settings) {
    if (model.FactorIndex(name) < 0)
      throw PredictError("model " + model.name() + " has no factor '" + name + "'");
  }
  std::vector<double> f(factors.size());
  for (size_t i = 0; i < factors.size(); ++i) {
    if (static_cast<int>(i) == sweep_index) continue;
    auto it = settings.find(factors[i].name);
    if (it != settings.end()) {
      f[i] = it->second;
    } else if (factors[i].has_default) {
      f[i] = factors[i].default_value;
    } else {
      throw PredictError("factor '" + factors[i].name + "' of model " + model.name() +
                         " has no value: give --set " + factors[i].name + "=VALUE");
    }
  }
  Prediction pr;
  const auto& rs = model.responses();
  for (double x : sweep.values) {
    f[sweep_index] = x;
    PredictPoint pt;
    pt.x = x;
    pt.time = rs[0].expr.Eval<double>(f.data(), params.data());
    for (size_t k = 1; k < rs.size(); ++k)
      pt.components.push_back(rs[k].expr.Eval<double>(f.data(), params.data()));
    // A factor value outside the model's domain (p = 0 divides by zero) must not come out as
    // an inf or negative time in a table.
    bool bad = !std::isfinite(pt.time) || pt.time < 0;
    for (double c : pt.components) bad |= !std::isfinite(c);
    if (bad) {
      std::ostringstream os;
      os << "model " << model.name() << " at " << sweep.factor << "=" << x << " gives time "
         << pt.time << ": the factor value is outside the model's domain";
      throw PredictError(os.str());
    }
    pr.points.push_back(pt);
  }
  for (size_t i = 0; i < pr.points.size(); ++i) {
    pr.points[i].speedup = pr.points[0].time / pr.points[i].time;
    if (pr.points[i].time < pr.points[pr.best].time) pr.best = i;
  }
  // Bottleneck notes.
  auto dominant = [&](const PredictPoint& p) {
    size_t d = 0;
    for (size_t k = 1; k < p.components.size(); ++k)
      if (p.components[k] > p.components[d]) d = k;
    return d;
  };
  const std::string& fn = sweep.factor;
  if (!pr.points.back().components.empty()) {
    size_t d0 = dominant(pr.points.front());
    for (size_t i = 1; i < pr.points.size(); ++i) {
      size_t d = dominant(pr.points[i]);
      if (d != d0) {
        pr.notes.push_back("from " + fn + "=" + Num(pr.points[i].x) + " on, " + rs[d + 1].name +
                           " is the largest component (was " + rs[d0 + 1].name + ")");
        d0 = d;
      }
    }
  }
  if (pr.best + 1 < pr.points.size()) {
    const PredictPoint& last = pr.points.back();
    std::string note = "time is shortest at " + fn + "=" + Num(pr.points[pr.best].x) + " (" +
                       Num(pr.points[pr.best].time) + " s); beyond that it grows, to " +
                       Num(last.time) + " s at " + fn + "=" + Num(last.x);
    if (!last.components.empty()) {
      size_t d = dominant(last);
      note += " (" + rs[d + 1].name + " " + Num(100 * last.components[d] / last.time) +
              "% of the time)";
    }
    pr.notes.push_back(note);
  } else if (!pr.points.back().components.empty()) {
    const PredictPoint& last = pr.points.back();
    size_t d = dominant(last);
    pr.notes.push_back("time still falls at " + fn + "=" + Num(last.x) + "; " + rs[d + 1].name +
                       " is " + Num(100 * last.components[d] / last.time) + "% of it");
  }
  return pr;
}

}  // namespace invmw::fit
