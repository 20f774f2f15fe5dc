/* probe-barrier: mean time of one MPI_Barrier over all ranks (contract F), the Opal model's b5.
 *
 * Each measurement times --reps consecutive barriers after two untimed ones and reports rank
 * 0's mean per barrier (rank 0 leaves the last barrier no earlier than the last rank entered
 * it, so the mean covers the whole operation). Output, rank 0, one JSON line per replication:
 *   {"probe":"barrier","ranks":P,"reps":R,"replication":k,"mean_s":per_barrier_mean}
 *
 * With --compute-us MEAN (issue 20) each replication then runs --rounds synchronizations as
 * opal-mini does them: every rank but 0 computes for a seeded random CPU time, uniform in
 * [0.5, 1.5] x MEAN, and enters the barrier, while rank 0 waits in it, polling. The figure is
 * rank 0's exit minus the last rank's entry, so it holds what a synchronization costs after
 * the work is done, including the stall of a rank 0 that polled away its CPU quota and is
 * throttled when the last rank arrives (emulated platforms); without a quota it is about the
 * barrier's own latency. Entry times are MPI_Wtime on each rank, gathered after the rounds: a
 * clock shared by the ranks of one host. The record then also has
 *   "compute_us":MEAN,"rounds":N,"stall_mean_s":mean,"stall_max_s":max */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "workload_args.h"

static void usage(FILE* out) {
  fputs(
      "usage: mpirun -np P probe-barrier [--reps R] [--replications K]\n"
      "\n"
      "Times R consecutive MPI_Barrier calls over all P ranks after two untimed ones; prints one\n"
      "JSON line per replication with the mean time per barrier in seconds:\n"
      "{\"probe\":\"barrier\",\"ranks\":P,\"reps\":R,\"replication\":k,\"mean_s\":t}\n"
      "\n"
      "  --reps R           barriers per measurement (default 1000)\n"
      "  --replications K   measurements (default 1)\n"
      "  --compute-us MEAN  also time --rounds synchronizations after a random compute phase\n"
      "                     (uniform in [0.5, 1.5] x MEAN microseconds of CPU time) of every\n"
      "                     rank but 0, from the last rank's entry to rank 0's exit; adds\n"
      "                     \"compute_us\", \"rounds\", \"stall_mean_s\" and \"stall_max_s\"\n"
      "                     (default 0: off)\n"
      "  --rounds N         synchronizations per measurement with --compute-us (default 200)\n"
      "  --seed S           seed of the compute durations (default 1)\n",
      out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long reps = 1000, replications = 1, compute_us = 0, rounds = 200, seed = 1;
  char err[512] = "";
  int status = 0;
  for (int i = 1; i < argc && status == 0; ++i) {
    const char* v = NULL;
    int r;
    if (wl_flag(argv, i, "--help") || wl_flag(argv, i, "-h")) {
      status = 1;
    } else if ((r = wl_option(argc, argv, &i, "--reps", &v, err, sizeof err)) != 0) {
      if (r < 0 || wl_long("--reps", v, 1, 100000000, &reps, err, sizeof err) != 0) status = 2;
    } else if ((r = wl_option(argc, argv, &i, "--replications", &v, err, sizeof err)) != 0) {
      if (r < 0 || wl_long("--replications", v, 1, 1000000, &replications, err, sizeof err) != 0)
        status = 2;
    } else if ((r = wl_option(argc, argv, &i, "--compute-us", &v, err, sizeof err)) != 0) {
      if (r < 0 || wl_long("--compute-us", v, 0, 10000000, &compute_us, err, sizeof err) != 0)
        status = 2;
    } else if ((r = wl_option(argc, argv, &i, "--rounds", &v, err, sizeof err)) != 0) {
      if (r < 0 || wl_long("--rounds", v, 1, 10000000, &rounds, err, sizeof err) != 0) status = 2;
    } else if ((r = wl_option(argc, argv, &i, "--seed", &v, err, sizeof err)) != 0) {
      if (r < 0 || wl_long("--seed", v, 0, 2147483647L, &seed, err, sizeof err) != 0) status = 2;
    } else {
      snprintf(err, sizeof err, "unknown option '%s'", argv[i]);
      status = 2;
    }
  }
  if (status != 0) {
    if (rank == 0) {
      if (status == 1)
        usage(stdout);
      else
        fprintf(stderr, "probe-barrier: %s\n(probe-barrier --help explains the options)\n", err);
    }
    /* Output written after MPI_Finalize can be lost by the launcher's forwarding. */
    fflush(stdout);
    MPI_Finalize();
    return status == 1 ? 0 : 2;
  }
  double *enter = NULL, *last = NULL, *leave = NULL;
  if (compute_us > 0) {
    enter = malloc(sizeof(double) * (size_t)rounds);
    last = malloc(sizeof(double) * (size_t)rounds);
    leave = malloc(sizeof(double) * (size_t)rounds);
    if (!enter || !last || !leave) {
      fprintf(stderr, "probe-barrier: out of memory for %ld rounds\n", rounds);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  /* Per rank, so that the computing ranks arrive in a random order as opal-mini's servers do. */
  unsigned long long rng = 0x9E3779B97F4A7C15ULL * (unsigned long long)(seed + 1) + (unsigned)rank;
  for (long k = 0; k < replications; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long r = 0; r < reps; ++r) MPI_Barrier(MPI_COMM_WORLD);
    double mean = (MPI_Wtime() - t0) / (double)reps;
    double stall_sum = 0, stall_max = 0;
    if (compute_us > 0) {
      MPI_Barrier(MPI_COMM_WORLD);
      for (long r = 0; r < rounds; ++r) {
        if (rank != 0) {
          rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
          double u = 0.5 + (double)(rng >> 11) / 9007199254740992.0; /* [0.5, 1.5) */
          /* CPU time, not wall time: a fixed amount of work that a throttled rank takes longer
           * to do, as opal-mini's kernels do. */
          struct timespec a, b;
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
          double want = u * (double)compute_us * 1e-6;
          do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
          while ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec) < want);
        }
        enter[r] = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        leave[r] = MPI_Wtime();
      }
      MPI_Reduce(enter, last, (int)rounds, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      for (long r = 0; rank == 0 && r < rounds; ++r) {
        double d = leave[r] - last[r];
        /* Rank 0 cannot leave before the last rank entered: a negative difference (microseconds,
         * seen on a machine without quotas) is the offset between the processes' MPI_Wtime
         * clocks, not a time. */
        if (d < 0) d = 0;
        stall_sum += d;
        if (d > stall_max) stall_max = d;
      }
    }
    if (rank == 0) {
      printf(
          "{\"probe\":\"barrier\",\"ranks\":%d,\"reps\":%ld,\"replication\":%ld,"
          "\"mean_s\":%.9g",
          size, reps, k, mean);
      if (compute_us > 0)
        printf(",\"compute_us\":%ld,\"rounds\":%ld,\"stall_mean_s\":%.9g,\"stall_max_s\":%.9g",
               compute_us, rounds, stall_sum / (double)rounds, stall_max);
      printf("}\n");
      fflush(stdout);
    }
  }
  free(enter);
  free(last);
  free(leave);
  MPI_Finalize();
  return 0;
}
