/* probe-kernels: opal-mini's three kernels in isolation, on one core, without MPI (contract F).
 *
 * They give the Opal model's compute parameters for this machine: a2, time per candidate pair
 * generated and checked (opal_pairlist_update over all n(n-1)/2 pairs), a3, time per pair
 * energy (opal_pair_energy over the pairs within --rc), and a4, bonded work per mass center
 * (opal_bonded). The arithmetic is the one opal-mini runs (experiments/workloads/
 * opal_kernels.c), on the system opal-mini generates for the same n and seed. Each measurement
 * is the mean over --reps calls, after one untimed call, or over more calls until --min-time has
 * passed: under a CPU quota a measurement must span many quota periods, or it sees either the
 * unthrottled speed or a throttled stall, not the mean an application gets. Output, one JSON line
 * per kernel and replication:
 *   {"probe":"kernel","kernel":"pair_check"|"pair_energy"|"bonded","per_unit_s":t,"units":N,
 *    "reps":R,"replication":k,"n":n,"rc":rc}
 * where units is the number of pairs checked, pairs listed or centers per call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal_kernels.h"
#include "workload_args.h"

static void usage(FILE* out) {
  fputs(
      "usage: probe-kernels [--n N] [--rc RC] [--reps R] [--replications K] [--seed S]\n"
      "\n"
      "Times opal-mini's kernels on one core and prints one JSON line per kernel and\n"
      "replication: {\"probe\":\"kernel\",\"kernel\":K,\"per_unit_s\":t,\"units\":N,...}\n"
      "  pair_check   pair generation + distance check, per candidate pair (a2)\n"
      "  pair_energy  Lennard-Jones + Coulomb energy and gradient, per listed pair (a3)\n"
      "  bonded       the client's bonded terms, per mass center (a4)\n"
      "\n"
      "  --n N              mass centers (default 4289, the paper's medium size)\n"
      "  --rc RC            cut-off for the pair list, Angstrom, 0 = none (default 10)\n"
      "  --reps R           timed calls per measurement (default 10)\n"
      "  --min-time S       go on calling until S seconds have passed (default 0); the JSON\n"
      "                     line's reps says how many calls were timed\n"
      "  --replications K   measurements (default 1)\n"
      "  --seed S           seed of the generated system (default 1)\n",
      out);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print(const char* kernel, double per_unit, size_t units, long reps, long k, int n,
                  double rc) {
  printf(
      "{\"probe\":\"kernel\",\"kernel\":\"%s\",\"per_unit_s\":%.9g,\"units\":%zu,"
      "\"reps\":%ld,\"replication\":%ld,\"n\":%d,\"rc\":%g}\n",
      kernel, per_unit, units, reps, k, n, rc);
  fflush(stdout);
}

int main(int argc, char** argv) {
  long n = 4289, reps = 10, replications = 1, seed = 1;
  double rc = 10.0, min_time = 0.0;
  char err[512] = "";
  for (int i = 1; i < argc; ++i) {
    const char* v = NULL;
    int r = 0, bad = 0;
    if (wl_flag(argv, i, "--help") || wl_flag(argv, i, "-h")) {
      usage(stdout);
      return 0;
    } else if ((r = wl_option(argc, argv, &i, "--n", &v, err, sizeof err)) != 0) {
      bad = r < 0 || wl_long("--n", v, 2, 1000000, &n, err, sizeof err) != 0;
    } else if ((r = wl_option(argc, argv, &i, "--rc", &v, err, sizeof err)) != 0) {
      bad = r < 0 || wl_double("--rc", v, 0.0, 1e6, &rc, err, sizeof err) != 0;
    } else if ((r = wl_option(argc, argv, &i, "--reps", &v, err, sizeof err)) != 0) {
      bad = r < 0 || wl_long("--reps", v, 1, 100000000, &reps, err, sizeof err) != 0;
    } else if ((r = wl_option(argc, argv, &i, "--min-time", &v, err, sizeof err)) != 0) {
      bad = r < 0 || wl_double("--min-time", v, 0.0, 1e5, &min_time, err, sizeof err) != 0;
    } else if ((r = wl_option(argc, argv, &i, "--replications", &v, err, sizeof err)) != 0) {
      bad = r < 0 || wl_long("--replications", v, 1, 1000000, &replications, err, sizeof err) != 0;
    } else if ((r = wl_option(argc, argv, &i, "--seed", &v, err, sizeof err)) != 0) {
      bad = r < 0 || wl_long("--seed", v, 0, 0x7fffffffL, &seed, err, sizeof err) != 0;
    } else {
      snprintf(err, sizeof err, "unknown option '%s'", argv[i]);
      bad = 1;
    }
    if (bad) {
      fprintf(stderr, "probe-kernels: %s\n(probe-kernels --help explains the options)\n", err);
      return 2;
    }
  }

  opal_system sys;
  opal_candidates cand;
  opal_pair_list list;
  double* grad = calloc(3 * (size_t)n, sizeof(double));
  if (opal_system_generate(&sys, (int)n, 0.0, (uint64_t)seed) != 0 ||
      opal_candidates_build(&cand, (int)n, (uint64_t)seed, 0, 1) != 0 ||
      opal_pair_list_init(&list, (int)n) != 0 || !grad) {
    fprintf(stderr, "probe-kernels: out of memory for n = %ld\n", n);
    return 3;
  }
  if (opal_pairlist_update(&cand, sys.x, rc, &list) <= 0) {
    fprintf(stderr,
            "probe-kernels: no pair of the %ld centers lies within --rc %g Angstrom, so there is "
            "no pair energy to time; use a larger --rc or 0 (no cut-off)\n",
            n, rc);
    return 2;
  }
  double sink = 0.0; /* keeps the results alive so no call is optimised away */
  for (long k = 0; k < replications; ++k) {
    double t0 = now(), dt = 0;
    long calls = 0;
    do {
      sink += (double)opal_pairlist_update(&cand, sys.x, rc, &list);
    } while (++calls < reps || (dt = now() - t0) < min_time);
    dt = now() - t0;
    print("pair_check", dt / ((double)calls * (double)cand.pairs), cand.pairs, calls, k, (int)n,
          rc);

    double lj, coulomb;
    opal_pair_energy(&sys, &list, sys.x, &lj, &coulomb, grad);
    t0 = now();
    calls = 0;
    do {
      opal_pair_energy(&sys, &list, sys.x, &lj, &coulomb, grad);
      sink += lj + coulomb;
    } while (++calls < reps || (dt = now() - t0) < min_time);
    dt = now() - t0;
    print("pair_energy", dt / ((double)calls * (double)list.pairs), list.pairs, calls, k, (int)n,
          rc);

    sink += opal_bonded(&sys, sys.x, grad);
    t0 = now();
    calls = 0;
    do {
      sink += opal_bonded(&sys, sys.x, grad);
    } while (++calls < reps || (dt = now() - t0) < min_time);
    dt = now() - t0;
    print("bonded", dt / ((double)calls * (double)n), (size_t)n, calls, k, (int)n, rc);
  }
  if (sink == 1.2345e300) fprintf(stderr, "%g\n", sink);
  free(grad);
  opal_pair_list_free(&list);
  opal_candidates_free(&cand);
  opal_system_free(&sys);
  return 0;
}
