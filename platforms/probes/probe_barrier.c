/* probe-barrier: mean time of one MPI_Barrier over all ranks (contract F), the Opal model's b5.
 *
 * Each measurement times --reps consecutive barriers after two untimed ones and reports rank
 * 0's mean per barrier (rank 0 leaves the last barrier no earlier than the last rank entered
 * it, so the mean covers the whole operation). Output, rank 0, one JSON line per replication:
 *   {"probe":"barrier","ranks":P,"reps":R,"replication":k,"mean_s":per_barrier_mean} */
#include <mpi.h>
#include <stdio.h>

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
      "  --replications K   measurements (default 1)\n",
      out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long reps = 1000, replications = 1;
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
  for (long k = 0; k < replications; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long r = 0; r < reps; ++r) MPI_Barrier(MPI_COMM_WORLD);
    double mean = (MPI_Wtime() - t0) / (double)reps;
    if (rank == 0) {
      printf(
          "{\"probe\":\"barrier\",\"ranks\":%d,\"reps\":%ld,\"replication\":%ld,"
          "\"mean_s\":%.9g}\n",
          size, reps, k, mean);
      fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
