#include "experiments/effects/sign_table.h"

#include <algorithm>
#include <bitset>
#include <map>

namespace invmw::effects {
namespace {

int Order(uint32_t mask) {
  return static_cast<int>(std::bitset<32>(mask).count());
}

// Terms are listed by order, then in standard order within an order (A, B, C, AB, AC, BC...).
bool TermBefore(uint32_t a, uint32_t b) {
  if (Order(a) != Order(b)) return Order(a) < Order(b);
  // Lexicographic on the factor indices: the lowest differing factor decides.
  uint32_t diff = a ^ b;
  uint32_t low = diff & (~diff + 1);
  return (a & low) != 0;
}

int Sign(const std::vector<int>& cell, uint32_t mask) {
  int s = 1;
  for (size_t f = 0; f < cell.size(); ++f)
    if ((mask >> f) & 1u) s = cell[f] ? s : -s;
  return s;
}

}  // namespace

bool GroupSignColumns(const std::vector<std::vector<int>>& cells, int k,
                      std::vector<AliasGroup>* groups, Fraction* fraction) {
  groups->clear();
  *fraction = Fraction();
  const size_t n = cells.size();
  if (k < 1 || k > 20 || n < 2 || (n & (n - 1)) != 0) return false;
  const uint64_t words = uint64_t{1} << k;
  if (n > words || words * n > (uint64_t{1} << 26)) return false;
  // Columns that coincide up to sign share a key: the column scaled to start with +1.
  std::map<std::vector<int8_t>, std::vector<std::pair<uint32_t, int>>> by_column;
  for (uint32_t mask = 0; mask < words; ++mask) {
    std::vector<int8_t> col(n);
    for (size_t i = 0; i < n; ++i) col[i] = static_cast<int8_t>(Sign(cells[i], mask));
    const int sign = col[0];
    for (auto& c : col) c = static_cast<int8_t>(c * sign);
    by_column[col].emplace_back(mask, sign);
  }
  // A regular fraction: n distinct columns, each shared by 2^p words.
  const size_t per_group = words / n;
  if (by_column.size() != n) return false;
  for (const auto& [col, members] : by_column)
    if (members.size() != per_group) return false;
  for (auto& [col, members] : by_column) {
    std::sort(members.begin(), members.end(),
              [](const auto& a, const auto& b) { return TermBefore(a.first, b.first); });
    const int name_sign = members[0].second;
    if (members[0].first == 0) {  // the identity's group: the defining relation
      for (size_t i = 1; i < members.size(); ++i) {
        fraction->defining_relation.emplace_back(members[i].first, members[i].second);
        if (fraction->resolution == 0 || Order(members[i].first) < fraction->resolution)
          fraction->resolution = Order(members[i].first);
      }
      continue;
    }
    AliasGroup g;
    for (const auto& [mask, sign] : members) g.members.emplace_back(mask, sign * name_sign);
    groups->push_back(g);
  }
  std::sort(groups->begin(), groups->end(), [](const AliasGroup& a, const AliasGroup& b) {
    return TermBefore(a.members[0].first, b.members[0].first);
  });
  int p = 0;
  while ((size_t{1} << p) < per_group) ++p;
  fraction->p = p;
  return true;
}

ResponseEffects AnalyzeSignTable(const Layout& layout, const Observations& obs,
                                 const AnalysisOptions& options) {
  ResponseEffects r;
  r.response = obs.response;
  r.log10 = obs.log10;
  r.replications = obs.replications;
  const size_t n = layout.cells.size();
  const int reps = obs.replications;
  const double total = static_cast<double>(n) * reps;
  r.observations = static_cast<int>(total);

  std::vector<AliasGroup> groups;
  Fraction fraction;
  GroupSignColumns(layout.cells, static_cast<int>(layout.factors.size()), &groups, &fraction);

  std::vector<double> cell_mean(n);
  double grand = 0;
  for (size_t i = 0; i < n; ++i) {
    double s = 0;
    for (double y : obs.y[i]) s += y;
    cell_mean[i] = s / reps;
    grand += cell_mean[i];
  }
  grand /= n;
  for (size_t i = 0; i < n; ++i) {
    for (double y : obs.y[i]) {
      r.ssy += y * y;
      r.sst += (y - grand) * (y - grand);
      r.sse += (y - cell_mean[i]) * (y - cell_mean[i]);
    }
  }
  r.ss0 = total * grand * grand;
  r.dof_error = static_cast<int>(n) * (reps - 1);
  r.mean.value = grand;

  for (const AliasGroup& g : groups) {
    Term t;
    t.mask = g.members[0].first;
    t.name = TermName(layout, t.mask);
    t.order = Order(t.mask);
    double q = 0;
    for (size_t i = 0; i < n; ++i) q += Sign(layout.cells[i], t.mask) * cell_mean[i];
    q /= static_cast<double>(n);
    t.q.value = q;
    t.ss = total * q * q;
    t.dof = 1;
    for (size_t m = 1; m < g.members.size(); ++m)
      t.aliases.push_back((g.members[m].second > 0 ? "+" : "-") +
                          TermName(layout, g.members[m].first));
    r.terms.push_back(t);
  }
  FinishAllocation(options, &r);
  // Every q of a 2^(k-p) r design has the same variance s_e^2 / (2^(k-p) r) (Jain 18.5).
  r.mean = MakeEstimate(grand, 1 / total, r);
  for (Term& t : r.terms) t.q = MakeEstimate(t.q.value, 1 / total, r);
  return r;
}

}  // namespace invmw::effects
