/* opal_kernels: see opal_kernels.h for the system's definition and what each kernel models. */
#include "opal_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Under SimGrid's SMPI (built with smpicc -DINVMW_SMPI) each kernel computes as always and then
 * declares its work, so the simulated time is the declared flops over the host speed of the
 * platform and not the time this machine took (run with smpi/simulate-computation:no, which
 * makes the simulation deterministic). The counts are the platform tables' conventions
 * (platforms/tables/README.md): 10 flops per candidate pair checked (a2), 100 per pair energy
 * (a3), 100 per mass center of bonded work (a4), which also covers the integration step. */
#ifdef INVMW_SMPI
#include <smpi/smpi.h>
#define OPAL_DECLARE_FLOPS(f) smpi_execute_flops((double)(f))
#else
#define OPAL_DECLARE_FLOPS(f) ((void)0)
#endif

/* Lennard-Jones parameters (sigma in Angstrom, epsilon in kcal/mol) and masses of the solute
 * atom types (CHARMM-like values) and of a water mass center (TIP3P oxygen). */
typedef struct {
  double sigma, epsilon, mass;
} opal_atom_type;

static const opal_atom_type opal_atom_types[4] = {
    {3.40, 0.086, 12.011}, /* C */
    {3.25, 0.170, 14.007}, /* N */
    {2.96, 0.210, 15.999}, /* O */
    {1.07, 0.016, 1.008},  /* H */
};
static const opal_atom_type opal_water = {3.1506, 0.1521, 18.015};

/* kcal/mol/Angstrom/amu -> Angstrom/fs^2 */
static const double kAccel = 4.184e-4;

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static uint64_t next64(uint64_t* state) {
  *state += 0x9E3779B97F4A7C15ULL;
  return mix64(*state);
}

static double uniform(uint64_t* state) {
  return (double)(next64(state) >> 11) * 0x1.0p-53;
}

int opal_system_generate(opal_system* sys, int n, double g, uint64_t seed) {
  memset(sys, 0, sizeof *sys);
  sys->n = n;
  sys->g = g;
  sys->n_solute = n - (int)lround(g * n);
  sys->spacing = cbrt(1.0 / OPAL_WATER_DENSITY);
  sys->x = malloc(sizeof(double) * 3 * (size_t)n);
  sys->q = malloc(sizeof(double) * (size_t)n);
  sys->lj_a = malloc(sizeof(double) * (size_t)n);
  sys->lj_b = malloc(sizeof(double) * (size_t)n);
  sys->mass = malloc(sizeof(double) * (size_t)n);
  if (!sys->x || !sys->q || !sys->lj_a || !sys->lj_b || !sys->mass) {
    opal_system_free(sys);
    return -1;
  }
  int m = 1;
  while ((long)m * m * m < n) ++m;
  const double a = sys->spacing;
  uint64_t state = seed;
  for (int t = 0; t < n; ++t) {
    int z = t / (m * m);
    int k = (t % (m * m)) / m;
    int c = t % m;
    int y = (z % 2) ? m - 1 - k : k;
    int x = ((z * m + k) % 2) ? m - 1 - c : c;
    int site[3] = {x, y, z};
    for (int d = 0; d < 3; ++d) sys->x[3 * t + d] = (site[d] + 0.5) * a;
    for (int d = 0; d < 3; ++d) sys->x[3 * t + d] += (uniform(&state) - 0.5) * 0.3 * a;
    const opal_atom_type* type = &opal_atom_types[next64(&state) % 4];
    double charge = (uniform(&state) - 0.5) * 0.8;
    if (t >= sys->n_solute) {
      type = &opal_water;
      charge = 0.0;
    }
    double s6 = pow(type->sigma, 6);
    sys->lj_a[t] = sqrt(4.0 * type->epsilon * s6 * s6);
    sys->lj_b[t] = sqrt(4.0 * type->epsilon * s6);
    sys->q[t] = charge;
    sys->mass[t] = type->mass;
  }
  return 0;
}

void opal_system_free(opal_system* sys) {
  free(sys->x);
  free(sys->q);
  free(sys->lj_a);
  free(sys->lj_b);
  free(sys->mass);
  memset(sys, 0, sizeof *sys);
}

double opal_neighbours_within(double rc) {
  return 4.0 / 3.0 * M_PI * rc * rc * rc * OPAL_WATER_DENSITY;
}

static int block_owner(uint64_t seed, uint32_t i, uint32_t b, int servers) {
  uint64_t h = mix64(seed ^ 0x6A09E667F3BCC909ULL ^ (((uint64_t)i << 32) | b));
  return (int)(((h >> 32) * (uint64_t)servers) >> 32);
}

int opal_candidates_build(opal_candidates* c, int n, uint64_t seed, int server, int servers) {
  memset(c, 0, sizeof *c);
  /* Two passes (count, then fill) keep the arrays exact: at n = 6289 and one server they hold
   * over a million blocks. */
  for (int pass = 0; pass < 2; ++pass) {
    size_t blocks = 0, pairs = 0;
    for (uint32_t i = 0; i + 1 < (uint32_t)n; ++i) {
      uint32_t b = 0;
      for (uint32_t j0 = i + 1; j0 < (uint32_t)n; j0 += OPAL_PAIR_BLOCK, ++b) {
        if (block_owner(seed, i, b, servers) != server) continue;
        uint32_t j1 = j0 + OPAL_PAIR_BLOCK < (uint32_t)n ? j0 + OPAL_PAIR_BLOCK : (uint32_t)n;
        if (pass == 1) {
          c->row[blocks] = i;
          c->j_begin[blocks] = j0;
          c->j_end[blocks] = j1;
        }
        ++blocks;
        pairs += j1 - j0;
      }
    }
    if (pass == 0) {
      c->row = malloc(sizeof(uint32_t) * (blocks ? blocks : 1));
      c->j_begin = malloc(sizeof(uint32_t) * (blocks ? blocks : 1));
      c->j_end = malloc(sizeof(uint32_t) * (blocks ? blocks : 1));
      if (!c->row || !c->j_begin || !c->j_end) {
        opal_candidates_free(c);
        return -1;
      }
    }
    c->blocks = blocks;
    c->pairs = pairs;
  }
  return 0;
}

void opal_candidates_free(opal_candidates* c) {
  free(c->row);
  free(c->j_begin);
  free(c->j_end);
  memset(c, 0, sizeof *c);
}

int opal_pair_list_init(opal_pair_list* list, int n) {
  memset(list, 0, sizeof *list);
  list->n = n;
  list->row_start = calloc((size_t)n + 1, sizeof(size_t));
  return list->row_start ? 0 : -1;
}

void opal_pair_list_free(opal_pair_list* list) {
  free(list->row_start);
  free(list->j);
  memset(list, 0, sizeof *list);
}

long opal_pairlist_update(const opal_candidates* c, const double* x, double rc,
                          opal_pair_list* list) {
  /* The list never holds more than the owned candidates: size it once, not per update. */
  if (list->capacity < c->pairs) {
    uint32_t* j = realloc(list->j, sizeof(uint32_t) * (c->pairs ? c->pairs : 1));
    if (!j) return -1;
    list->j = j;
    list->capacity = c->pairs;
  }
  const double rc2 = rc > 0 ? rc * rc : INFINITY;
  size_t count = 0;
  int next_row = 0; /* rows below this have their row_start set */
  for (size_t b = 0; b < c->blocks; ++b) {
    const uint32_t i = c->row[b];
    while (next_row <= (int)i) list->row_start[next_row++] = count;
    const double xi = x[3 * i], yi = x[3 * i + 1], zi = x[3 * i + 2];
    for (uint32_t j = c->j_begin[b]; j < c->j_end[b]; ++j) {
      const double dx = x[3 * j] - xi, dy = x[3 * j + 1] - yi, dz = x[3 * j + 2] - zi;
      const double r2 = dx * dx + dy * dy + dz * dz;
      /* Branch-free append: the slot is always written, the count moves only on a hit. */
      list->j[count] = j;
      count += r2 < rc2;
    }
  }
  while (next_row <= list->n) list->row_start[next_row++] = count;
  list->pairs = count;
  OPAL_DECLARE_FLOPS(10.0 * (double)c->pairs);
  return (long)count;
}

void opal_pair_energy(const opal_system* sys, const opal_pair_list* list, const double* x,
                      double* e_lj, double* e_coulomb, double* grad) {
  double lj = 0.0, coulomb = 0.0;
  for (int i = 0; i < list->n; ++i) {
    const size_t begin = list->row_start[i], end = list->row_start[i + 1];
    if (begin == end) continue;
    const double xi = x[3 * i], yi = x[3 * i + 1], zi = x[3 * i + 2];
    const double ai = sys->lj_a[i], bi = sys->lj_b[i], qi = OPAL_COULOMB * sys->q[i];
    double gx = 0.0, gy = 0.0, gz = 0.0;
    for (size_t k = begin; k < end; ++k) {
      const uint32_t j = list->j[k];
      const double dx = x[3 * j] - xi, dy = x[3 * j + 1] - yi, dz = x[3 * j + 2] - zi;
      const double r2 = dx * dx + dy * dy + dz * dz;
      const double inv2 = 1.0 / r2;
      const double inv6 = inv2 * inv2 * inv2;
      const double inv1 = sqrt(inv2);
      const double rep = ai * sys->lj_a[j] * inv6 * inv6;
      const double disp = bi * sys->lj_b[j] * inv6;
      const double coul = qi * sys->q[j] * inv1;
      lj += rep - disp;
      coulomb += coul;
      /* dE/dr / r, so that dE/dx_j = f * (x_j - x_i). */
      const double f = (-12.0 * rep + 6.0 * disp - coul) * inv2;
      gx += f * dx;
      gy += f * dy;
      gz += f * dz;
      grad[3 * j] += f * dx;
      grad[3 * j + 1] += f * dy;
      grad[3 * j + 2] += f * dz;
    }
    grad[3 * i] -= gx;
    grad[3 * i + 1] -= gy;
    grad[3 * i + 2] -= gz;
  }
  *e_lj = lj;
  *e_coulomb = coulomb;
  OPAL_DECLARE_FLOPS(100.0 * (double)list->pairs);
}

/* Force constants of the bonded terms: solute chain, or any water center taking part. */
typedef struct {
  double bond, angle, urey_bradley;
} opal_bonded_constants;

static const opal_bonded_constants kSolute = {10.0, 5.0, 2.0};
static const opal_bonded_constants kWater = {1.0, 0.5, 0.2};

double opal_bonded(const opal_system* sys, const double* x, double* grad) {
  const int n = sys->n;
  const double b0 = sys->spacing, d0 = 2.0 * sys->spacing;
  double energy = 0.0;
  for (int i = 0; i < n; ++i) {
    const double* xi = &x[3 * i];
    if (i + 1 < n) { /* bond i, i+1 */
      const opal_bonded_constants* k = (i + 1 < sys->n_solute) ? &kSolute : &kWater;
      const double* xj = &x[3 * (i + 1)];
      double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
      double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      energy += k->bond * (r - b0) * (r - b0);
      double f = 2.0 * k->bond * (r - b0) / r;
      for (int c = 0; c < 3; ++c) {
        grad[3 * (i + 1) + c] += f * d[c];
        grad[3 * i + c] -= f * d[c];
      }
    }
    if (i > 0 && i + 1 < n) { /* angle i-1, i, i+1 and Urey-Bradley i-1, i+1 */
      const opal_bonded_constants* k = (i + 1 < sys->n_solute) ? &kSolute : &kWater;
      const double* xa = &x[3 * (i - 1)];
      const double* xb = &x[3 * (i + 1)];
      double u[3] = {xa[0] - xi[0], xa[1] - xi[1], xa[2] - xi[2]};
      double v[3] = {xb[0] - xi[0], xb[1] - xi[1], xb[2] - xi[2]};
      double uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
      double vv = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
      double uv = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
      double nu = sqrt(uu), nv = sqrt(vv);
      double cosine = uv / (nu * nv);
      energy += k->angle * (cosine + 1.0) * (cosine + 1.0);
      double de = 2.0 * k->angle * (cosine + 1.0);
      for (int c = 0; c < 3; ++c) {
        double du = (v[c] / (nu * nv) - cosine * u[c] / uu) * de;
        double dv = (u[c] / (nu * nv) - cosine * v[c] / vv) * de;
        grad[3 * (i - 1) + c] += du;
        grad[3 * (i + 1) + c] += dv;
        grad[3 * i + c] -= du + dv;
      }
      double w[3] = {xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]};
      double r = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
      energy += k->urey_bradley * (r - d0) * (r - d0);
      double f = 2.0 * k->urey_bradley * (r - d0) / r;
      for (int c = 0; c < 3; ++c) {
        grad[3 * (i + 1) + c] += f * w[c];
        grad[3 * (i - 1) + c] -= f * w[c];
      }
    }
  }
  OPAL_DECLARE_FLOPS(100.0 * (double)n);
  return energy;
}

void opal_integrate(const opal_system* sys, double* x, double* v, double* acc, const double* grad,
                    double dt, int first) {
  for (int i = 0; i < sys->n; ++i) {
    const double scale = -kAccel / sys->mass[i];
    for (int c = 0; c < 3; ++c) {
      const int k = 3 * i + c;
      const double a_new = scale * grad[k];
      if (!first) v[k] += 0.5 * (acc[k] + a_new) * dt;
      acc[k] = a_new;
      x[k] += v[k] * dt + 0.5 * a_new * dt * dt;
    }
  }
}
