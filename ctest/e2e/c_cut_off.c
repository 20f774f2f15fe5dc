/* A call cut off by a crash (issue 17): run with 3 ranks. After a barrier, rank 0 waits in
 * MPI_Recv from rank 2 (tag 7) and rank 1 in MPI_Wait on an MPI_Irecv from rank 2 (tag 9);
 * rank 2 sleeps WAIT_S seconds, then kills itself with SIGKILL. The launcher then ends the
 * survivors (Open MPI: SIGTERM), each still inside its call. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#define WAIT_S 1

int main(int argc, char** argv) {
  int rank, size, buf = 0;
  MPI_Request req;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 3) {
    fprintf(stderr, "c_cut_off: run with 3 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Recv(&buf, 1, MPI_INT, 2, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    MPI_Irecv(&buf, 1, MPI_INT, 2, 9, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    printf("c_cut_off: rank 2 dies in %d s\n", WAIT_S);
    fflush(stdout);
    sleep(WAIT_S);
    raise(SIGKILL);
  }
  fprintf(stderr, "c_cut_off: rank %d was never stopped\n", rank);
  MPI_Finalize();
  return 5;
}
