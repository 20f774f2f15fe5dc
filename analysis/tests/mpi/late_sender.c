/* Late sender: both ranks compute 50 ms, rank 1 another 200 ms, then sends 1 KB to rank 0,
 * which has been waiting in MPI_Recv. Repeated ITER times (default 2).
 * Known: rank 0 idle = 0.2 s x ITER; computation 0.05 x ITER (rank 0), 0.25 x ITER (rank 1);
 * the late rank is 1. */
#include <stdlib.h>

#include "busy.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int iter = argc > 1 ? atoi(argv[1]) : 2;
  char buf[1024] = {0};
  for (int i = 0; i < iter; ++i) {
    Busy(0.05);
    if (rank == 1) {
      Busy(0.2);
      MPI_Send(buf, sizeof buf, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
    } else if (rank == 0) {
      MPI_Recv(buf, sizeof buf, MPI_CHAR, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  MPI_Finalize();
  return 0;
}
