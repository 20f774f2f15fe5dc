#include "common/stats.h"

#include <cmath>
#include <limits>

namespace invmw::stats {
namespace {

// Continued fraction of I_x(a, b) (modified Lentz); converges fast for x < (a+1)/(a+b+2),
// the caller uses the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) otherwise.
double BetaContinuedFraction(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + num / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + num / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-16) break;
  }
  return h;
}

}  // namespace

double IncompleteBeta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

double StudentTCdf(double t, double dof) {
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double tail = 0.5 * IncompleteBeta(dof / 2, 0.5, dof / (dof + t * t));
  return t >= 0 ? 1 - tail : tail;
}

double StudentTQuantile(double p, double dof) {
  if (!(p > 0 && p < 1) || !(dof > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (p < 0.5) return -StudentTQuantile(1 - p, dof);
  // Widen the bracket until it holds the quantile (t[0.9995; 1] is about 637), then bisect to
  // the resolution of a double.
  double lo = 0, hi = 1;
  while (StudentTCdf(hi, dof) < p && hi < 1e300) {
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < 2000 && hi - lo > 4 * std::numeric_limits<double>::epsilon() * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (StudentTCdf(mid, dof) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

double FSurvival(double f, double dof1, double dof2) {
  if (std::isnan(f)) return f;
  if (f <= 0) return 1;
  if (std::isinf(f)) return 0;
  return IncompleteBeta(dof2 / 2, dof1 / 2, dof2 / (dof2 + dof1 * f));
}

}  // namespace invmw::stats
