// Small statistical helpers the fit report needs: Student-t quantiles for confidence intervals.
//
// Why here and not a dependency: only the t distribution is needed, and it follows from the
// regularized incomplete beta function in a few dozen lines.
#pragma once

namespace invmw::fit {

// Regularized incomplete beta I_x(a, b), 0 <= x <= 1.
double IncompleteBeta(double a, double b, double x);
// P(T <= t) for Student's t with dof degrees of freedom (dof > 0).
double StudentTCdf(double t, double dof);
// The t with P(T <= t) = p, 0 < p < 1.
double StudentTQuantile(double p, double dof);

}  // namespace invmw::fit
