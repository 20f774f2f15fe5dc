/* MPI_Pcontrol (2 ranks): MPI_Pcontrol(0) stops recording and MPI_Pcontrol(1) resumes it;
 * the sends, receives and barrier in between run but must not appear in the profile. Both
 * MPI_Pcontrol calls themselves are counted (invmw's documented choice). */
#include <mpi.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, size, i;
  double buf[64] = {0};

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);

  /* Counted: 3 messages of 16 doubles 0 -> 1. */
  for (i = 0; i < 3; ++i) {
    if (rank == 0) {
      MPI_Send(buf, 16, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
      ex_call("MPI_Send", 16 * 8, 0);
    } else {
      MPI_Recv(buf, 64, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, 16 * 8);
    }
  }
  MPI_Pcontrol(0);
  ex_call("MPI_Pcontrol", 0, 0);
  /* Not counted: 5 messages of 64 doubles, an Allreduce and a Barrier. */
  for (i = 0; i < 5; ++i) {
    if (rank == 0)
      MPI_Send(buf, 64, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD);
    else
      MPI_Recv(buf, 64, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Allreduce(MPI_IN_PLACE, buf, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Pcontrol(1);
  ex_call("MPI_Pcontrol", 0, 0);
  /* Counted again: one message of 4 doubles 1 -> 0 and a barrier. */
  if (rank == 1) {
    MPI_Send(buf, 4, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
    ex_call("MPI_Send", 4 * 8, 0);
  } else {
    MPI_Recv(buf, 64, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ex_call("MPI_Recv", 0, 4 * 8);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);

  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0) printf("c_pcontrol: ok\n");
  MPI_Finalize();
  return 0;
}
