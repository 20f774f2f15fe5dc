/* Many live requests behind one shared handle (2 ranks): N nonblocking operations that complete
 * inside their start call (to MPI_PROC_NULL: Open MPI returns &ompi_request_empty for each,
 * MPICH a builtin request), plus N small eager sends to the peer, all outstanding at once and
 * completed by one MPI_Waitall, then the same with MPI_Testall and with one MPI_Wait each.
 * Every request must be tracked to its completion: nothing may be reported as dropped (with a
 * request table smaller than N, the loss must be reported instead). Argument: N (default 300). */
#include <mpi.h>
#include <stdlib.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, size, n = 300, i, flag = 0, one = 1, shared = 1;
  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  if (argc > 1) n = atoi(argv[1]);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);
  const int peer = 1 - rank;
  MPI_Request* r = malloc(sizeof(MPI_Request) * 2 * n);
  int* in = malloc(sizeof(int) * n);
  EX_CHECK(r && in);

  /* Round 1: N sends and N receives to MPI_PROC_NULL, then N messages between the ranks;
   * all outstanding until one Waitall. */
  for (i = 0; i < n; ++i) {
    MPI_Isend(&one, 1, MPI_INT, MPI_PROC_NULL, i, MPI_COMM_WORLD, &r[i]);
    ex_call("MPI_Isend", 0, 0);
  }
  for (i = 1; i < n; ++i) shared &= r[i] == r[0];
  if (rank == 0) {
    for (i = 0; i < n; ++i) {
      MPI_Isend(&one, 1, MPI_INT, peer, i, MPI_COMM_WORLD, &r[n + i]);
      ex_call("MPI_Isend", 4, 0);
    }
  } else {
    for (i = 0; i < n; ++i) {
      MPI_Irecv(&in[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD, &r[n + i]);
      ex_call("MPI_Irecv", 0, 4);
    }
  }
  MPI_Waitall(2 * n, r, MPI_STATUSES_IGNORE);
  ex_call("MPI_Waitall", 0, 0);

  /* Round 2: receives from MPI_PROC_NULL, completed by Testall. */
  for (i = 0; i < n; ++i) {
    MPI_Irecv(&in[i], 1, MPI_INT, MPI_PROC_NULL, i, MPI_COMM_WORLD, &r[i]);
    ex_call("MPI_Irecv", 0, 0);
  }
  while (!flag) {
    MPI_Testall(n, r, &flag, MPI_STATUSES_IGNORE);
    ex_call("MPI_Testall", 0, 0);
  }

  /* Round 3: sends to MPI_PROC_NULL, each completed by its own Wait, oldest last. */
  for (i = 0; i < n; ++i) {
    MPI_Isend(&one, 1, MPI_INT, MPI_PROC_NULL, i, MPI_COMM_WORLD, &r[i]);
    ex_call("MPI_Isend", 0, 0);
  }
  for (i = n - 1; i >= 0; --i) {
    MPI_Wait(&r[i], MPI_STATUS_IGNORE);
    ex_call("MPI_Wait", 0, 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0)
    printf("c_shared_requests: ok %d requests%s\n", n, shared ? " (one shared handle)" : "");
  free(r);
  free(in);
  MPI_Finalize();
  return 0;
}
