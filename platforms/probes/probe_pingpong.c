/* probe-pingpong: half round-trip time between ranks 0 and 1 over message sizes (contract F).
 *
 * The time of a message of B bytes, t = b1 + B / a1, gives the Opal model's a1 (rate) and b1
 * (per-message overhead) when fitted over sizes. Each measurement is the mean over --reps round
 * trips (means, not medians: on a throttled platform the stalls are part of what an application
 * sees), after two untimed round trips; --replications repeats the whole sweep. --max-time caps
 * the time per measurement on slow networks: rank 0 estimates a round trip from the warm-up and
 * lowers R (to 3 at least) so that R round trips fit the budget. Ranks beyond 1
 * only wait at the final barrier. Output, rank 0, one JSON line per size and replication:
 *   {"probe":"pingpong","bytes":B,"reps":R,"replication":k,"mean_s":half_round_trip_mean} */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "workload_args.h"

#define MAX_SIZES 64

static void usage(FILE* out) {
  fputs(
      "usage: mpirun -np 2 probe-pingpong [--sizes B1,B2,...] [--reps R] [--replications K]\n"
      "\n"
      "Ping-pong between ranks 0 and 1: for each size, R round trips timed together after two\n"
      "untimed ones; prints one JSON line per size and replication with the mean half round-trip\n"
      "time in seconds: "
      "{\"probe\":\"pingpong\",\"bytes\":B,\"reps\":R,\"replication\":k,\"mean_s\":t}\n"
      "\n"
      "  --sizes LIST       message sizes in bytes (default 0,8,64,512,1024,4096,16384,65536,\n"
      "                     262144,1048576,4194304)\n"
      "  --reps R           round trips per measurement (default 100)\n"
      "  --max-time S       at most about S seconds per measurement: fewer round trips (3 at\n"
      "                     least) where the warm-up shows that R would take longer; the JSON\n"
      "                     line's reps says how many were timed (default 0: no limit)\n"
      "  --replications K   sweeps (default 1)\n",
      out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long sizes[MAX_SIZES] = {0, 8, 64, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304};
  int n_sizes = 11;
  long reps = 100, replications = 1;
  double max_time = 0;
  char err[512] = "";
  int status = 0; /* 0 run, 1 help, 2 error */
  for (int i = 1; i < argc && status == 0; ++i) {
    const char* v = NULL;
    int r;
    if (wl_flag(argv, i, "--help") || wl_flag(argv, i, "-h")) {
      status = 1;
    } else if ((r = wl_option(argc, argv, &i, "--sizes", &v, err, sizeof err)) != 0) {
      if (r < 0 || (n_sizes = wl_long_list("--sizes", v, sizes, MAX_SIZES, err, sizeof err)) < 0)
        status = 2;
    } else if ((r = wl_option(argc, argv, &i, "--reps", &v, err, sizeof err)) != 0) {
      if (r < 0 || wl_long("--reps", v, 1, 100000000, &reps, err, sizeof err) != 0) status = 2;
    } else if ((r = wl_option(argc, argv, &i, "--max-time", &v, err, sizeof err)) != 0) {
      if (r < 0 || wl_double("--max-time", v, 0.0, 1e6, &max_time, err, sizeof err) != 0)
        status = 2;
    } else if ((r = wl_option(argc, argv, &i, "--replications", &v, err, sizeof err)) != 0) {
      if (r < 0 || wl_long("--replications", v, 1, 1000000, &replications, err, sizeof err) != 0)
        status = 2;
    } else {
      snprintf(err, sizeof err, "unknown option '%s'", argv[i]);
      status = 2;
    }
  }
  if (status == 0 && size < 2) {
    snprintf(err, sizeof err, "needs 2 ranks (ranks 0 and 1 exchange the messages); got %d", size);
    status = 2;
  }
  long largest = 0;
  for (int k = 0; k < n_sizes && status == 0; ++k) {
    if (sizes[k] > (1L << 30)) {
      snprintf(err, sizeof err, "--sizes: %ld bytes is above the 1 GiB limit", sizes[k]);
      status = 2;
    }
    if (sizes[k] > largest) largest = sizes[k];
  }
  if (status != 0) {
    if (rank == 0) {
      if (status == 1)
        usage(stdout);
      else
        fprintf(stderr, "probe-pingpong: %s\n(probe-pingpong --help explains the options)\n", err);
    }
    /* Output written after MPI_Finalize can be lost by the launcher's forwarding. */
    fflush(stdout);
    MPI_Finalize();
    return status == 1 ? 0 : 2;
  }

  char* buf = calloc((size_t)largest + 1, 1);
  if (!buf) {
    fprintf(stderr, "probe-pingpong: out of memory for %ld bytes\n", largest);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (rank <= 1) {
    const int peer = 1 - rank;
    for (long k = 0; k < replications; ++k) {
      for (int s = 0; s < n_sizes; ++s) {
        const int bytes = (int)sizes[s];
        double t0 = 0, warm = MPI_Wtime();
        long n = reps;
        for (long r = -2; r < n; ++r) { /* r < 0: untimed warm-up round trips */
          if (r == 0) {
            if (max_time > 0) { /* rank 0 decides from the warm-up; rank 1 is told */
              if (rank == 0) {
                double per_trip = (MPI_Wtime() - warm) / 2.0;
                if (per_trip * (double)n > max_time) n = (long)(max_time / per_trip);
                if (n < 3) n = 3;
                if (n > reps) n = reps;
                MPI_Send(&n, 1, MPI_LONG, peer, 1, MPI_COMM_WORLD);
              } else {
                MPI_Recv(&n, 1, MPI_LONG, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
              }
            }
            t0 = MPI_Wtime();
          }
          if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          } else {
            MPI_Recv(buf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
          }
        }
        double mean = (MPI_Wtime() - t0) / (2.0 * (double)n);
        if (rank == 0) {
          printf(
              "{\"probe\":\"pingpong\",\"bytes\":%d,\"reps\":%ld,\"replication\":%ld,"
              "\"mean_s\":%.9g}\n",
              bytes, n, k, mean);
          fflush(stdout);
        }
      }
    }
  }
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
