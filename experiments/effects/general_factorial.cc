#include "experiments/effects/general_factorial.h"

#include <algorithm>
#include <bitset>
#include <map>

namespace invmw::effects {
namespace {

int Order(uint32_t mask) {
  return static_cast<int>(std::bitset<32>(mask).count());
}

// Mixed-radix indexing of the level combinations of a subset of factors (first factor of the
// subset fastest).
struct SubsetIndex {
  std::vector<int> factors;  // factor indices in the subset
  std::vector<int> radix;    // level counts
  size_t size = 1;

  SubsetIndex(uint32_t mask, const Layout& layout) {
    for (size_t f = 0; f < layout.factors.size(); ++f)
      if ((mask >> f) & 1u) {
        factors.push_back(static_cast<int>(f));
        radix.push_back(static_cast<int>(layout.factors[f].levels.size()));
        size *= layout.factors[f].levels.size();
      }
  }
  // Index of the subset's levels within a full cell.
  size_t Of(const std::vector<int>& cell) const {
    size_t idx = 0, mul = 1;
    for (size_t i = 0; i < factors.size(); ++i) {
      idx += cell[factors[i]] * mul;
      mul *= radix[i];
    }
    return idx;
  }
  std::vector<int> Levels(size_t idx) const {
    std::vector<int> lv(factors.size());
    for (size_t i = 0; i < factors.size(); ++i) {
      lv[i] = static_cast<int>(idx % radix[i]);
      idx /= radix[i];
    }
    return lv;
  }
};

// TermBefore of the sign table: by order, then standard order.
bool TermBefore(uint32_t a, uint32_t b) {
  if (Order(a) != Order(b)) return Order(a) < Order(b);
  uint32_t diff = a ^ b;
  return (a & diff & (~diff + 1)) != 0;
}

}  // namespace

ResponseEffects AnalyzeGeneral(const Layout& layout, const Observations& obs,
                               const AnalysisOptions& options) {
  ResponseEffects r;
  r.response = obs.response;
  r.log10 = obs.log10;
  r.replications = obs.replications;
  const size_t k = layout.factors.size();
  const size_t n = layout.cells.size();
  const int reps = obs.replications;
  const double total = static_cast<double>(n) * reps;
  r.observations = static_cast<int>(total);

  std::vector<double> cell_mean(n);
  double grand = 0;
  for (size_t i = 0; i < n; ++i) {
    double s = 0;
    for (double y : obs.y[i]) s += y;
    cell_mean[i] = s / reps;
    grand += cell_mean[i];
  }
  grand /= static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) {
    for (double y : obs.y[i]) {
      r.ssy += y * y;
      r.sst += (y - grand) * (y - grand);
      r.sse += (y - cell_mean[i]) * (y - cell_mean[i]);
    }
  }
  r.ss0 = total * grand * grand;
  r.dof_error = static_cast<int>(n) * (reps - 1);

  // Marginal means of every subset of factors over its level combinations (cells are equally
  // replicated, so the mean of cell means is the mean of the observations).
  const uint32_t subsets = 1u << k;
  std::vector<std::vector<double>> marginal(subsets);
  for (uint32_t mask = 0; mask < subsets; ++mask) {
    SubsetIndex index(mask, layout);
    std::vector<double> sum(index.size, 0.0);
    std::vector<int> count(index.size, 0);
    for (size_t i = 0; i < n; ++i) {
      size_t j = index.Of(layout.cells[i]);
      sum[j] += cell_mean[i];
      ++count[j];
    }
    for (size_t j = 0; j < index.size; ++j) sum[j] /= count[j];
    marginal[mask] = sum;
  }

  std::vector<uint32_t> masks;
  for (uint32_t mask = 1; mask < subsets; ++mask) masks.push_back(mask);
  std::sort(masks.begin(), masks.end(), TermBefore);
  std::map<uint32_t, std::vector<double>> effect_values;
  std::map<uint32_t, double> scale;
  for (uint32_t mask : masks) {
    SubsetIndex index(mask, layout);
    Term t;
    t.mask = mask;
    t.name = TermName(layout, mask);
    t.order = Order(mask);
    t.dof = 1;
    for (int a : index.radix) t.dof *= a - 1;
    std::vector<double> e(index.size, 0.0);
    for (size_t j = 0; j < index.size; ++j) {
      const std::vector<int> lv = index.Levels(j);
      // Inclusion-exclusion over the sub-subsets T of S, T = mask & sub.
      std::vector<int> cell(k, 0);
      for (size_t i = 0; i < index.factors.size(); ++i) cell[index.factors[i]] = lv[i];
      for (uint32_t sub = mask;; sub = (sub - 1) & mask) {
        SubsetIndex sub_index(sub, layout);
        const double m = marginal[sub][sub_index.Of(cell)];
        e[j] += ((Order(mask) - Order(sub)) % 2 ? -m : m);
        if (sub == 0) break;
      }
      t.ss += e[j] * e[j];
      t.cells.push_back({lv, Estimate{e[j], 0, 0, 0, false}});
    }
    t.ss *= total / static_cast<double>(index.size);
    // A 2-level term's effect at the high levels equals the sign table's q.
    if (t.dof == 1 && index.size == static_cast<size_t>(1) << t.order)
      t.q.value = e[index.size - 1];
    scale[mask] = t.dof / total;
    r.terms.push_back(t);
  }
  r.mean.value = grand;
  FinishAllocation(options, &r);
  r.mean = MakeEstimate(grand, 1 / total, r);
  for (Term& t : r.terms) {
    for (auto& c : t.cells) c.effect = MakeEstimate(c.effect.value, scale[t.mask], r);
    if (t.dof == 1 && t.cells.size() == static_cast<size_t>(1) << t.order)
      t.q = MakeEstimate(t.q.value, scale[t.mask], r);
  }
  return r;
}

}  // namespace invmw::effects
