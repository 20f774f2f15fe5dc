#include "experiments/runner/fractional.h"

#include <algorithm>

namespace invmw::experiment {

int EffectOrder(Effect e) {
  return __builtin_popcount(e);
}

std::string EffectName(Effect e, int sign) {
  std::string s = sign < 0 ? "-" : "";
  if (e == 0) return s + "I";
  for (int i = 0; i < 32; ++i)
    if (e & (Effect(1) << i)) s += static_cast<char>('A' + i);
  return s;
}

std::string RomanResolution(int r) {
  static const char* kRoman[] = {"", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X"};
  if (r >= 0 && r <= 10) return kRoman[r];
  return std::to_string(r);
}

namespace {

// Shorter words first, then alphabetical by letters (A < AB < AC < B ...), as the book lists them.
bool BookOrder(const SignedEffect& a, const SignedEffect& b) {
  int oa = EffectOrder(a.effect), ob = EffectOrder(b.effect);
  if (oa != ob) return oa < ob;
  return EffectName(a.effect) < EffectName(b.effect);
}

}  // namespace

AliasStructure ComputeAliases(int num_factors, const std::vector<Generator>& generators) {
  AliasStructure out;
  // The defining relation: every product of a subset of the generator words.
  std::vector<SignedEffect> words;
  for (const Generator& g : generators) words.push_back({g.word | (Effect(1) << g.factor), g.sign});
  size_t p = words.size();
  for (size_t subset = 0; subset < (size_t(1) << p); ++subset) {
    SignedEffect w{0, 1};
    for (size_t j = 0; j < p; ++j) {
      if (subset & (size_t(1) << j)) {
        w.effect ^= words[j].effect;
        w.sign *= words[j].sign;
      }
    }
    out.defining_relation.push_back(w);
  }
  std::sort(out.defining_relation.begin(), out.defining_relation.end(), BookOrder);
  for (const auto& w : out.defining_relation)
    if (w.effect != 0 && (out.resolution == 0 || EffectOrder(w.effect) < out.resolution))
      out.resolution = EffectOrder(w.effect);
  if (generators.empty()) return out;

  Effect generated = 0;
  for (const Generator& g : generators) generated |= Effect(1) << g.factor;
  std::vector<int> base;
  for (int i = 0; i < num_factors; ++i)
    if (!(generated & (Effect(1) << i))) base.push_back(i);
  // Estimable effects: all subsets of the base factors, in standard order (A, B, AB, C, ...).
  for (size_t m = 0; m < (size_t(1) << base.size()); ++m) {
    Effect e = 0;
    for (size_t j = 0; j < base.size(); ++j)
      if (m & (size_t(1) << j)) e |= Effect(1) << base[j];
    std::vector<SignedEffect> set;
    for (const auto& w : out.defining_relation) set.push_back({e ^ w.effect, w.sign});
    // In book order, so the line is named by its shortest effect (D = AB = ..., as Jain
    // names the sign table's columns).
    std::sort(set.begin(), set.end(), BookOrder);
    out.alias_sets.push_back(std::move(set));
  }
  return out;
}

}  // namespace invmw::experiment
