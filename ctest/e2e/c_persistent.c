/* Persistent requests between 2 ranks: MPI_Send_init / MPI_Recv_init carry no bytes; the
 * transfers are charged to the call that started them, MPI_Startall (5 rounds, completed with
 * MPI_Waitall) and MPI_Start (3 rounds, completed with MPI_Wait and MPI_Test): sends when
 * started, receives (actual size, smaller than the posted count) when completed. Then
 * MPI_Request_free. */
#include <mpi.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, size, i, flag;
  double out[100], in[128];
  long long calls;
  MPI_Request req[2];

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);
  const int peer = 1 - rank;
  const int n = 60 + 40 * rank; /* rank 0 sends 60 doubles, rank 1 sends 100 */
  const int m = 60 + 40 * peer; /* what this rank receives */
  for (i = 0; i < 100; ++i) out[i] = rank + i;

  MPI_Recv_init(in, 128, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &req[0]);
  ex_call("MPI_Recv_init", 0, 0);
  MPI_Send_init(out, n, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &req[1]);
  ex_call("MPI_Send_init", 0, 0);

  for (i = 0; i < 5; ++i) {
    MPI_Startall(2, req);
    ex_call("MPI_Startall", n * 8, 0);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    ex_call("MPI_Waitall", 0, 0);
    ex_add("MPI_Startall", 0, 0, m * 8); /* the receive completed: charged to Startall */
    EX_CHECK(in[m - 1] == peer + m - 1);
  }
  calls = 0;
  for (i = 0; i < 3; ++i) {
    MPI_Start(&req[0]);
    ex_call("MPI_Start", 0, 0);
    MPI_Start(&req[1]);
    ex_call("MPI_Start", n * 8, 0);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    ex_call("MPI_Wait", 0, 0);
    ex_add("MPI_Start", 0, 0, m * 8);
    do {
      MPI_Test(&req[1], &flag, MPI_STATUS_IGNORE);
      calls++;
    } while (!flag);
  }
  ex_add("MPI_Test", calls, 0, 0);
  MPI_Request_free(&req[0]);
  MPI_Request_free(&req[1]);
  ex_add("MPI_Request_free", 2, 0, 0);

  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0) printf("c_persistent: ok %g\n", in[m - 1]);
  MPI_Finalize();
  return 0;
}
