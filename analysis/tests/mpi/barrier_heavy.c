/* Barrier-heavy with unequal work: per iteration rank 0 computes 5 ms while the others compute
 * nothing, then everybody enters MPI_Barrier; ITER iterations (default 60). With 4 ranks the
 * others spend three times as long waiting in barriers as rank 0 computes.
 * Known: synchronization-bound; rank 0 is the one the others wait for. */
#include <stdlib.h>

#include "busy.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int iter = argc > 1 ? atoi(argv[1]) : 60;
  for (int i = 0; i < iter; ++i) {
    if (rank == 0) Busy(0.005);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
