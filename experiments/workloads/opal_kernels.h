/* opal_kernels: the computation of opal-mini, without any message passing.
 *
 * opal-mini reproduces the structure of parallel Opal (../shared/seeds/004_*.txt, section 2):
 * servers own a pseudo-random share of the non-bonded atom pairs, rebuild their pair lists every
 * 1/u steps by checking the distance of every candidate pair they own, and evaluate Lennard-Jones
 * and Coulomb energies and gradients on the listed pairs; the client adds the bonded terms. The
 * kernels live here, in plain C with no MPI, so that the MPI program, a PVM variant and the
 * kernel probes (platforms/probes) run exactly the same arithmetic. Each kernel is one term of
 * the Opal model: opal_pairlist_update is a2 (time per candidate pair checked),
 * opal_pair_energy is a3 (time per listed pair), opal_bonded is a4 (time per mass center).
 *
 * The molecular system is generated from (n, g, seed) by an algorithm fixed here so that any
 * reader (the serial reference in the tests is one) can rebuild it bit for bit:
 *
 *   random numbers: splitmix64 seeded with `seed`; next():
 *       state += 0x9E3779B97F4A7C15; z = state;
 *       z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
 *       return z ^ (z >> 31);
 *     uniform() = (next() >> 11) * 2^-53.
 *   geometry: lattice spacing a = (1 / 0.0334)^(1/3) Angstrom (water's number density), m the
 *     smallest integer with m^3 >= n; center t sits on lattice site t in "snake" order
 *     (z = t / m^2, k = (t % m^2) / m, c = t % m; y = k, mirrored to m-1-k on odd z; x = c,
 *     mirrored to m-1-c when z m + k is odd), so consecutive centers are lattice neighbours, at
 *     ((x, y, z) + 0.5) * a plus a jitter of (uniform() - 0.5) * 0.3 * a per coordinate.
 *   composition: the first n - lround(g n) centers are solute atoms, the rest water mass centers.
 *     Per center five draws in this order: jitter x, y, z, a type draw (next() % 4 picks C, N,
 *     O or H from opal_atom_types) and a charge draw ((uniform() - 0.5) * 0.8 e). Water centers
 *     ignore the last two draws: a water molecule as one mass center is neutral.
 *   pair ownership: the candidate pairs (i, j > i) of row i are cut into blocks of
 *     OPAL_PAIR_BLOCK consecutive j; block b of row i belongs to server
 *     ((mix(seed ^ 0x6A09E667F3BCC909 ^ (i << 32 | b)) >> 32) * p) >> 32, mix being the
 *     splitmix64 finaliser. Every pair has exactly one owner for any p, so the energies do not
 *     depend on p beyond the order of floating-point additions.
 *
 * Units: Angstrom, kcal/mol, elementary charges, atomic mass units, femtoseconds. */
#ifndef INVMW_EXPERIMENTS_WORKLOADS_OPAL_KERNELS_H_
#define INVMW_EXPERIMENTS_WORKLOADS_OPAL_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number density of liquid water in mass centers per cubic Angstrom (one center per molecule). */
#define OPAL_WATER_DENSITY 0.0334
/* Candidate pairs of one row handed to a server together (see "pair ownership" above). */
#define OPAL_PAIR_BLOCK 16
/* Coulomb constant in kcal/mol * Angstrom / e^2. */
#define OPAL_COULOMB 332.0636
/* Bytes per mass center in a coordinate message (three doubles): the model's alpha. */
#define OPAL_ALPHA 24

/* The generated molecular system. Arrays have n (x: 3n) entries. */
typedef struct {
  int n;          /* mass centers */
  int n_solute;   /* centers 0 .. n_solute-1 are solute atoms, the rest water */
  double g;       /* water fraction asked for */
  double spacing; /* lattice spacing a in Angstrom */
  double* x;      /* coordinates, x[3i + d] */
  double* q;      /* charges */
  double* lj_a;   /* sqrt(4 eps sigma^12): pair repulsion A_ij = lj_a[i] lj_a[j] */
  double* lj_b;   /* sqrt(4 eps sigma^6): pair dispersion B_ij = lj_b[i] lj_b[j] */
  double* mass;
} opal_system;

/* Builds the system described above. Returns 0, or -1 when memory runs out. */
int opal_system_generate(opal_system* sys, int n, double g, uint64_t seed);
void opal_system_free(opal_system* sys);

/* The expected number of neighbours within rc at water density, (4/3) pi rc^3 density: the
 * model's n-tilde (about 140 at 10 Angstrom). */
double opal_neighbours_within(double rc);

/* The candidate pairs a server owns: blocks (row i, j in [j_begin, j_end)), rows ascending. */
typedef struct {
  uint32_t* row;
  uint32_t* j_begin;
  uint32_t* j_end;
  size_t blocks;
  size_t pairs; /* candidate pairs in all blocks */
} opal_candidates;

/* Collects the blocks owned by `server` (0 .. servers-1). Returns 0, or -1 without memory. */
int opal_candidates_build(opal_candidates* c, int n, uint64_t seed, int server, int servers);
void opal_candidates_free(opal_candidates* c);

/* A server's list of active pairs in compressed rows: partners of i are
 * j[row_start[i] .. row_start[i+1]). */
typedef struct {
  int n;
  size_t* row_start; /* n + 1 entries */
  uint32_t* j;
  size_t pairs;
  size_t capacity;
} opal_pair_list;

int opal_pair_list_init(opal_pair_list* list, int n);
void opal_pair_list_free(opal_pair_list* list);

/* Kernel a2: checks the distance of every owned candidate pair and lists those closer than rc
 * (all of them when rc <= 0, which means no cut-off). Returns the pairs listed, or -1 when the
 * list cannot grow. */
long opal_pairlist_update(const opal_candidates* c, const double* x, double rc,
                          opal_pair_list* list);

/* Kernel a3: Lennard-Jones (A/r^12 - B/r^6) and Coulomb (OPAL_COULOMB q_i q_j / r) energies of
 * the listed pairs; adds dE/dx to grad (3n, not cleared here). */
void opal_pair_energy(const opal_system* sys, const opal_pair_list* list, const double* x,
                      double* e_lj, double* e_coulomb, double* grad);

/* Kernel a4: the client's bonded work, the same three terms for every center i so that the work
 * per center is fixed: a bond (i, i+1), an angle (i-1, i, i+1) as K (cos theta + 1)^2 and a
 * Urey-Bradley distance (i-1, i+1). Force constants are weaker when water takes part. Returns
 * the energy; adds dE/dx to grad. */
double opal_bonded(const opal_system* sys, const double* x, double* grad);

/* One velocity-Verlet step of the client (time step dt fs): completes the velocity update with
 * the new gradient (unless first), stores the accelerations and advances x. acc and v have 3n
 * entries; v starts at zero. */
void opal_integrate(const opal_system* sys, double* x, double* v, double* acc, const double* grad,
                    double dt, int first);

#ifdef __cplusplus
}
#endif

#endif /* INVMW_EXPERIMENTS_WORKLOADS_OPAL_KERNELS_H_ */
