/* The cost of MPI_Finalize as each rank sees it, after a fixed amount of traced work per rank
 * (bench/finalize_time.py; not a test). argv[1] rounds (default 20000) of an MPI_Sendrecv with
 * the rank itself (4 trace events each, no waiting for other ranks, so every rank's trace is
 * the same size at any world size), an MPI_Allreduce every 1000 rounds. Prints one line per
 * rank: "finalize RANK SIZE CPU_S WALL_S", the process CPU time and the wall time spent inside
 * MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "finalize_timing.h"

int main(int argc, char** argv) {
  int rank, size;
  long i, rounds = argc > 1 ? atol(argv[1]) : 20000;
  double x = 1, y = 0, sum = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (i = 0; i < rounds; ++i) {
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, rank, 1, &y, 1, MPI_DOUBLE, rank, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (i % 1000 == 0) MPI_Allreduce(&y, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  timed_finalize(rank, size);
  return 0;
}
