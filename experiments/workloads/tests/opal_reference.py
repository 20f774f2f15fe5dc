#!/usr/bin/env python3
"""Serial reference for opal-mini, written from the specification, not from the C code.

It rebuilds the molecular system from the generation rules stated in opal_kernels.h (splitmix64
stream, snake-ordered lattice at water density, five draws per center, water fraction), runs
the same simulation on one process with every pair in one list (no servers, no pair ownership)
and prints the last step's energies as opal-mini does: `energy <total> <lj> <coulomb> <bonded>`.

The physics, restated:
  pair list   pairs i < j with |x_j - x_i| < rc at the last update step (all pairs if rc = 0);
              updates at steps 0, k, 2k, ... with k = 1/u
  non-bonded  A_ij / r^12 - B_ij / r^6 with A_ij = f_i f_j, f = sqrt(4 eps sigma^12), and
              B_ij = h_i h_j, h = sqrt(4 eps sigma^6) (geometric combination); Coulomb
              332.0636 q_i q_j / r
  bonded      for each i: bond (i, i+1) K_b (r - a)^2; angle (i-1, i, i+1) K_a (cos + 1)^2;
              Urey-Bradley (i-1, i+1) K_ub (r - 2a)^2; constants (10, 5, 2) when the highest
              index in the term is a solute center, (1, 0.5, 0.2) otherwise
  dynamics    velocity Verlet, dt = 1 fs, a = -grad / m * 4.184e-4, v(0) = 0, energies reported
              at the positions of the last step
"""
import argparse
import math

MASK = (1 << 64) - 1
TYPES = [(3.40, 0.086, 12.011), (3.25, 0.170, 14.007), (2.96, 0.210, 15.999),
         (1.07, 0.016, 1.008)]
WATER = (3.1506, 0.1521, 18.015)
COULOMB = 332.0636
ACCEL = 4.184e-4


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53


def c_lround(v):
    """C's lround: halves away from zero (Python's round goes to even)."""
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


def generate(n, g, seed):
    a = (1.0 / 0.0334) ** (1.0 / 3.0)
    m = 1
    while m ** 3 < n:
        m += 1
    n_solute = n - c_lround(g * n)
    rng = SplitMix64(seed)
    pos, charge, rep, disp, mass = [], [], [], [], []
    for t in range(n):
        layer, k, c = t // (m * m), (t % (m * m)) // m, t % m
        y = m - 1 - k if layer % 2 else k
        x = m - 1 - c if (layer * m + k) % 2 else c
        p = [(s + 0.5) * a for s in (x, y, layer)]
        for d in range(3):
            p[d] += (rng.uniform() - 0.5) * 0.3 * a
        kind = TYPES[rng.next() % 4]
        q = (rng.uniform() - 0.5) * 0.8
        if t >= n_solute:
            kind, q = WATER, 0.0
        sigma, eps, mss = kind
        rep.append(math.sqrt(4 * eps * sigma ** 12))
        disp.append(math.sqrt(4 * eps * sigma ** 6))
        pos.append(p)
        charge.append(q)
        mass.append(mss)
    return a, n_solute, pos, charge, rep, disp, mass


def dist(p, q):
    return math.sqrt(sum((q[d] - p[d]) ** 2 for d in range(3)))


def nonbonded(pairs, pos, charge, rep, disp, grad):
    lj = coul = 0.0
    for i, j in pairs:
        d = [pos[j][k] - pos[i][k] for k in range(3)]
        r = math.sqrt(d[0] ** 2 + d[1] ** 2 + d[2] ** 2)
        e_rep = rep[i] * rep[j] / r ** 12
        e_disp = disp[i] * disp[j] / r ** 6
        e_coul = COULOMB * charge[i] * charge[j] / r
        lj += e_rep - e_disp
        coul += e_coul
        de_dr = (-12 * e_rep + 6 * e_disp - e_coul) / r
        for k in range(3):
            grad[j][k] += de_dr * d[k] / r
            grad[i][k] -= de_dr * d[k] / r
    return lj, coul


def harmonic(kf, r0, i, j, pos, grad):
    d = [pos[j][k] - pos[i][k] for k in range(3)]
    r = math.sqrt(sum(c * c for c in d))
    for k in range(3):
        grad[j][k] += 2 * kf * (r - r0) * d[k] / r
        grad[i][k] -= 2 * kf * (r - r0) * d[k] / r
    return kf * (r - r0) ** 2


def bonded(a, n_solute, pos, grad):
    n = len(pos)
    e = 0.0
    for i in range(n):
        kb, ka, kub = (10.0, 5.0, 2.0) if i + 1 < n_solute else (1.0, 0.5, 0.2)
        if i + 1 < n:
            e += harmonic(kb, a, i, i + 1, pos, grad)
        if 0 < i < n - 1:
            u = [pos[i - 1][k] - pos[i][k] for k in range(3)]
            v = [pos[i + 1][k] - pos[i][k] for k in range(3)]
            nu = math.sqrt(sum(c * c for c in u))
            nv = math.sqrt(sum(c * c for c in v))
            cos = sum(u[k] * v[k] for k in range(3)) / (nu * nv)
            e += ka * (cos + 1) ** 2
            de = 2 * ka * (cos + 1)
            for k in range(3):
                gu = de * (v[k] / (nu * nv) - cos * u[k] / nu ** 2)
                gv = de * (u[k] / (nu * nv) - cos * v[k] / nv ** 2)
                grad[i - 1][k] += gu
                grad[i + 1][k] += gv
                grad[i][k] -= gu + gv
            e += harmonic(kub, 2 * a, i - 1, i + 1, pos, grad)
    return e


def simulate(n, g, rc, u, steps, seed):
    a, n_solute, pos, charge, rep, disp, mass = generate(n, g, seed)
    interval = int(round(1.0 / u))
    vel = [[0.0] * 3 for _ in range(n)]
    acc = [[0.0] * 3 for _ in range(n)]
    pairs = []
    for step in range(steps):
        if step % interval == 0:
            pairs = [(i, j) for i in range(n) for j in range(i + 1, n)
                     if rc <= 0 or dist(pos[i], pos[j]) < rc]
        grad = [[0.0] * 3 for _ in range(n)]
        lj, coul = nonbonded(pairs, pos, charge, rep, disp, grad)
        eb = bonded(a, n_solute, pos, grad)
        for i in range(n):
            for k in range(3):
                a_new = -ACCEL / mass[i] * grad[i][k]
                if step > 0:
                    vel[i][k] += 0.5 * (acc[i][k] + a_new)
                acc[i][k] = a_new
                pos[i][k] += vel[i][k] + 0.5 * a_new
    return lj + coul + eb, lj, coul, eb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, required=True)
    ap.add_argument('--g', type=float, default=0.0)
    ap.add_argument('--rc', type=float, default=0.0)
    ap.add_argument('--u', type=float, default=1.0)
    ap.add_argument('--s', type=int, default=10)
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    e = simulate(a.n, a.g, a.rc, a.u, a.s, a.seed)
    print('energy ' + ' '.join(repr(v) for v in e))


if __name__ == '__main__':
    main()
