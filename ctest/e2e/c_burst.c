/* A burst of small blocking calls between 2 ranks, for the bounded-memory trace modes: argv[1]
 * ping-pongs of 8 bytes (rank 0 sends first), an Allreduce every 1000 of them, a final Barrier.
 * Only blocking calls, so every call is exactly one trace record (no completions, no coalesced
 * tests): with a tiny INVMW_TRACE_BUFFER the records the trace holds plus those it dropped must
 * equal the calls made. Writes its expected profile with expect.h. */
#include <mpi.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, size;
  long i, n = argc > 1 ? atol(argv[1]) : 20000;
  double x = 0, sum = 0;

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2 && n > 0);
  const int peer = 1 - rank;

  for (i = 0; i < n; ++i) {
    if (rank == 0) {
      x = (double)i;
      MPI_Send(&x, 1, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(&x, 1, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EX_CHECK(x == (double)i + 1);
    } else {
      MPI_Recv(&x, 1, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      x += 1;
      MPI_Send(&x, 1, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD);
    }
    if (i % 1000 == 999) {
      MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      ex_call("MPI_Allreduce", 8, 8);
    }
  }
  ex_add("MPI_Send", n, 8 * n, 0);
  ex_add("MPI_Recv", n, 0, 8 * n);
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  if (rank == 0) printf("c_burst: %ld ping-pongs, last sum %.0f\n", n, sum);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  MPI_Finalize();
  return 0;
}
