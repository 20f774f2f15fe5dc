// The distribution functions against closed forms (Cauchy = t with 1 dof, t with 2 dof,
// F with 2 numerator dof, x^a) and against printed table values (Jain's Appendix tables).
#include "common/stats.h"

#include <cmath>

#include <gtest/gtest.h>

namespace invmw::stats {
namespace {

TEST(Distributions, IncompleteBetaClosedForms) {
  for (double x : {0.01, 0.2, 0.5, 0.77, 0.999}) {
    EXPECT_NEAR(IncompleteBeta(3.5, 1, x), std::pow(x, 3.5), 1e-13) << x;
    EXPECT_NEAR(IncompleteBeta(1, 4.25, x), 1 - std::pow(1 - x, 4.25), 1e-13) << x;
    EXPECT_NEAR(IncompleteBeta(2.5, 7, x) + IncompleteBeta(7, 2.5, 1 - x), 1, 1e-13) << x;
  }
  EXPECT_EQ(IncompleteBeta(2, 3, 0), 0);
  EXPECT_EQ(IncompleteBeta(2, 3, 1), 1);
  EXPECT_TRUE(std::isnan(IncompleteBeta(0, 3, 0.5)));
}

TEST(Distributions, StudentTQuantileClosedForms) {
  const double pi = std::acos(-1.0);
  for (double p : {0.6, 0.9, 0.95, 0.975, 0.995, 0.9995}) {
    EXPECT_NEAR(StudentTQuantile(p, 1), std::tan(pi * (p - 0.5)), 1e-9 * std::tan(pi * (p - 0.5)))
        << p;
    EXPECT_NEAR(StudentTQuantile(p, 2), (2 * p - 1) / std::sqrt(2 * p * (1 - p)), 1e-10) << p;
    EXPECT_NEAR(StudentTQuantile(1 - p, 7), -StudentTQuantile(p, 7), 1e-12) << p;
  }
}

TEST(Distributions, StudentTQuantileTableValues) {
  EXPECT_NEAR(StudentTQuantile(0.95, 8), 1.860, 5e-4);  // Jain Example 18.3
  EXPECT_NEAR(StudentTQuantile(0.975, 10), 2.228, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.995, 30), 2.750, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.95, 1e7), 1.6449, 1e-4);  // the normal limit
  EXPECT_NEAR(StudentTCdf(StudentTQuantile(0.9, 13.5), 13.5), 0.9, 1e-13);
  EXPECT_TRUE(std::isnan(StudentTQuantile(1.0, 5)));
  EXPECT_TRUE(std::isnan(StudentTQuantile(0.9, 0)));
}

TEST(Distributions, FSurvival) {
  for (double f : {0.1, 1.0, 3.7, 40.0})
    for (double d2 : {1.0, 5.0, 30.0})
      EXPECT_NEAR(FSurvival(f, 2, d2), std::pow(1 + 2 * f / d2, -d2 / 2), 1e-12) << f << " " << d2;
  // F(1, d) is the square of t(d).
  const double t = StudentTQuantile(0.975, 9);
  EXPECT_NEAR(FSurvival(t * t, 1, 9), 0.05, 1e-12);
  EXPECT_NEAR(FSurvival(3.708, 3, 10), 0.05, 2e-4);  // F[0.95; 3, 10] = 3.71 in the tables
  EXPECT_EQ(FSurvival(0, 3, 10), 1);
}

}  // namespace
}  // namespace invmw::stats
