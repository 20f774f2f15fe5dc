/* A barrier after unequal work: rank 0 computes 100 ms, rank 1 300 ms, then MPI_Barrier;
 * repeated ITER times (default 2).
 * Known: rank 0 sync_wait = 0.2 s x ITER; computation 0.1 x ITER (rank 0), 0.3 x ITER (rank 1);
 * the late rank is 1. */
#include <stdlib.h>

#include "busy.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int iter = argc > 1 ? atoi(argv[1]) : 2;
  for (int i = 0; i < iter; ++i) {
    Busy(rank == 1 ? 0.3 : 0.1);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
