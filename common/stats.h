// Student-t and F distributions: confidence intervals of fitted parameters (fitter) and of
// effects, and F-tests (effects analysis).
//
// Why our own: the project may not pull in a statistics library for two distribution functions,
// and both reduce to the regularized incomplete beta function, which a modified-Lentz continued
// fraction evaluates to near machine precision. Quantiles are found by bisection on the
// monotone CDF: slower than a series inversion but unconditionally convergent, and an analysis
// needs a handful of them.
#pragma once

namespace invmw::stats {

// Regularized incomplete beta I_x(a, b) for a, b > 0 and 0 <= x <= 1.
double IncompleteBeta(double a, double b, double x);

// P(T <= t) for Student's t with dof > 0 degrees of freedom.
double StudentTCdf(double t, double dof);

// The t with P(T <= t) = p, 0 < p < 1 (Jain's t[p; dof]).
double StudentTQuantile(double p, double dof);

// P(F > f) for the F distribution with (dof1, dof2) degrees of freedom: the p-value of an
// F-test.
double FSurvival(double f, double dof1, double dof2);

}  // namespace invmw::stats
