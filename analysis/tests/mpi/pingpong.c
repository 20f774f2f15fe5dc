/* Ping-pong of 1 MB messages between ranks 0 and 1, REPS round trips (default 300), no
 * computation. Known: communication-bound. */
#include <stdlib.h>
#include <string.h>

#include "busy.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int reps = argc > 1 ? atoi(argv[1]) : 300;
  const int n = 1 << 20;
  char* buf = malloc(n);
  memset(buf, 1, n);
  for (int i = 0; i < reps && rank < 2; ++i) {
    if (rank == 0) {
      MPI_Send(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
