/* A chain of three ranks passing a token: rank 0 computes 100 ms and sends the token to rank 1,
 * which computes 150 ms and sends it to rank 2, which computes 200 ms. Only one rank computes
 * at any time (the others wait in MPI_Recv), so three ranks fit on two cores.
 * Known: the critical path is 0.1 + 0.15 + 0.2 = 0.45 s of computation on ranks 0, 1, 2 in turn,
 * plus two tiny transfers. */
#include "busy.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const double work[3] = {0.1, 0.15, 0.2};
  int token = 42;
  if (rank > 0) MPI_Recv(&token, 1, MPI_INT, rank - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rank < 3) Busy(work[rank]);
  if (rank < 2) MPI_Send(&token, 1, MPI_INT, rank + 1, 1, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
