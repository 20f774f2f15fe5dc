// Unit tests of opal-mini's kernels: the generated system has the promised density and no
// overlaps, every pair has exactly one owner for any number of servers, the pair list equals a
// brute-force search, and both energy kernels' gradients match finite differences.
#include "opal_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <utility>
#include <vector>

namespace invmw::workloads {
namespace {

struct System {
  opal_system sys{};
  System(int n, double g, uint64_t seed) { EXPECT_EQ(opal_system_generate(&sys, n, g, seed), 0); }
  ~System() { opal_system_free(&sys); }
};

double Distance(const double* x, int i, int j) {
  double s = 0;
  for (int d = 0; d < 3; ++d) s += (x[3 * j + d] - x[3 * i + d]) * (x[3 * j + d] - x[3 * i + d]);
  return std::sqrt(s);
}

TEST(OpalSystem, LatticeAtWaterDensityWithoutOverlaps) {
  System s(500, 0.4, 11);
  const opal_system& sys = s.sys;
  EXPECT_NEAR(sys.spacing, std::cbrt(1 / 0.0334), 1e-12);
  EXPECT_EQ(sys.n_solute, 300);
  double min_d = 1e9, max_bond = 0;
  for (int i = 0; i < sys.n; ++i) {
    for (int j = i + 1; j < sys.n; ++j) min_d = std::min(min_d, Distance(sys.x, i, j));
    if (i + 1 < sys.n) max_bond = std::max(max_bond, Distance(sys.x, i, i + 1));
  }
  // Jitter is at most 0.15 a per coordinate: neighbours stay 0.7 a apart, and consecutive
  // centers (snake order) are lattice neighbours.
  EXPECT_GE(min_d, 0.7 * sys.spacing - 1e-12);
  EXPECT_LE(max_bond, sys.spacing * (1 + 0.3 * std::sqrt(3.0)) + 1e-12);
  for (int i = sys.n_solute; i < sys.n; ++i) EXPECT_EQ(sys.q[i], 0.0) << "water is neutral";
  EXPECT_NEAR(opal_neighbours_within(10.0), 140.0, 0.5);  // the spec's n-tilde at 10 A
}

TEST(OpalSystem, SameSeedSameSystemOtherSeedOther) {
  System a(100, 0.0, 5), b(100, 0.0, 5), c(100, 0.0, 6);
  EXPECT_EQ(std::vector<double>(a.sys.x, a.sys.x + 300),
            std::vector<double>(b.sys.x, b.sys.x + 300));
  EXPECT_NE(std::vector<double>(a.sys.x, a.sys.x + 300),
            std::vector<double>(c.sys.x, c.sys.x + 300));
}

TEST(OpalCandidates, EveryPairHasExactlyOneOwner) {
  const int n = 203;  // not a multiple of the block length
  for (int servers : {1, 2, 3, 5}) {
    std::set<std::pair<int, int>> seen;
    size_t total = 0;
    for (int s = 0; s < servers; ++s) {
      opal_candidates c;
      ASSERT_EQ(opal_candidates_build(&c, n, 9, s, servers), 0);
      size_t pairs = 0;
      for (size_t b = 0; b < c.blocks; ++b) {
        if (b > 0) {
          EXPECT_LE(c.row[b - 1], c.row[b]) << "rows ascend";
        }
        for (uint32_t j = c.j_begin[b]; j < c.j_end[b]; ++j) {
          EXPECT_LT(c.row[b], j);
          EXPECT_TRUE(seen.insert({static_cast<int>(c.row[b]), static_cast<int>(j)}).second);
          ++pairs;
        }
      }
      EXPECT_EQ(pairs, c.pairs);
      // Pseudo-random blocks of 16 balance within a few percent at this size.
      EXPECT_NEAR(static_cast<double>(pairs), n * (n - 1) / 2.0 / servers,
                  0.15 * n * (n - 1) / 2.0 / servers);
      total += pairs;
      opal_candidates_free(&c);
    }
    EXPECT_EQ(total, static_cast<size_t>(n) * (n - 1) / 2) << servers << " servers";
  }
}

TEST(OpalPairList, EqualsBruteForceWithinCutoff) {
  System s(300, 0.0, 2);
  for (double rc : {0.0, 5.0, 8.0}) {
    std::set<std::pair<int, int>> listed;
    for (int server = 0; server < 3; ++server) {
      opal_candidates c;
      opal_pair_list list;
      ASSERT_EQ(opal_candidates_build(&c, 300, 2, server, 3), 0);
      ASSERT_EQ(opal_pair_list_init(&list, 300), 0);
      long got = opal_pairlist_update(&c, s.sys.x, rc, &list);
      EXPECT_EQ(got, static_cast<long>(list.pairs));
      for (int i = 0; i < 300; ++i)
        for (size_t k = list.row_start[i]; k < list.row_start[i + 1]; ++k)
          listed.insert({i, static_cast<int>(list.j[k])});
      opal_pair_list_free(&list);
      opal_candidates_free(&c);
    }
    std::set<std::pair<int, int>> want;
    for (int i = 0; i < 300; ++i)
      for (int j = i + 1; j < 300; ++j)
        if (rc <= 0 || Distance(s.sys.x, i, j) < rc) want.insert({i, j});
    EXPECT_EQ(listed, want) << "rc " << rc;
  }
}

// Central differences of an energy function against the analytic gradient it returns.
template <typename Energy>
void ExpectGradientMatches(const opal_system& sys, Energy energy) {
  std::vector<double> x(sys.x, sys.x + 3 * sys.n), grad(3 * sys.n, 0.0), scratch(3 * sys.n);
  energy(x.data(), grad.data());
  const double h = 1e-6;
  for (int k = 0; k < 3 * sys.n; k += 7) {  // a spread of coordinates
    std::vector<double> xp = x, xm = x;
    xp[k] += h;
    xm[k] -= h;
    double ep = energy(xp.data(), scratch.data());
    double em = energy(xm.data(), scratch.data());
    double numeric = (ep - em) / (2 * h);
    EXPECT_NEAR(grad[k], numeric, 1e-5 * std::max(1.0, std::fabs(numeric))) << "coordinate " << k;
  }
}

TEST(OpalPairEnergy, GradientMatchesFiniteDifferences) {
  System s(120, 0.25, 4);
  opal_candidates c;
  opal_pair_list list;
  ASSERT_EQ(opal_candidates_build(&c, 120, 4, 0, 1), 0);
  ASSERT_EQ(opal_pair_list_init(&list, 120), 0);
  ASSERT_GT(opal_pairlist_update(&c, s.sys.x, 9.0, &list), 0);
  ExpectGradientMatches(s.sys, [&](const double* x, double* grad) {
    std::fill(grad, grad + 3 * s.sys.n, 0.0);
    double lj, coulomb;
    opal_pair_energy(&s.sys, &list, x, &lj, &coulomb, grad);
    return lj + coulomb;
  });
  opal_pair_list_free(&list);
  opal_candidates_free(&c);
}

TEST(OpalBonded, GradientMatchesFiniteDifferences) {
  System s(90, 0.3, 8);
  ExpectGradientMatches(s.sys, [&](const double* x, double* grad) {
    std::fill(grad, grad + 3 * s.sys.n, 0.0);
    return opal_bonded(&s.sys, x, grad);
  });
}

TEST(OpalPairEnergy, TwoCentersClosedForm) {
  // Two solute centers at distance r: E = A/r^12 - B/r^6 + 332.0636 q1 q2 / r.
  System s(2, 0.0, 1);
  opal_candidates c;
  opal_pair_list list;
  ASSERT_EQ(opal_candidates_build(&c, 2, 1, 0, 1), 0);
  ASSERT_EQ(opal_pair_list_init(&list, 2), 0);
  ASSERT_EQ(opal_pairlist_update(&c, s.sys.x, 0.0, &list), 1);
  std::vector<double> grad(6, 0.0);
  double lj, coulomb;
  opal_pair_energy(&s.sys, &list, s.sys.x, &lj, &coulomb, grad.data());
  double r = Distance(s.sys.x, 0, 1);
  EXPECT_NEAR(lj,
              s.sys.lj_a[0] * s.sys.lj_a[1] / std::pow(r, 12) -
                  s.sys.lj_b[0] * s.sys.lj_b[1] / std::pow(r, 6),
              1e-12 * std::fabs(lj) + 1e-15);
  EXPECT_NEAR(coulomb, 332.0636 * s.sys.q[0] * s.sys.q[1] / r, 1e-12);
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(grad[d], -grad[3 + d], 1e-12) << "Newton's third law";
  opal_pair_list_free(&list);
  opal_candidates_free(&c);
}

}  // namespace
}  // namespace invmw::workloads
