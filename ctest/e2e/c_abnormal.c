/* Abnormal ends (run with 2 ranks; the mode is argv[1]). Every rank first makes known calls
 * (an exchange of 100 doubles each way, an Allreduce of 8 ints, 3 Bcasts of 10 doubles from
 * rank 0, a Barrier) and writes its expected profile, then:
 *   abort    rank 1 waits until every rank has written its file, then MPI_Abort(7);
 *            the other ranks sleep until the launcher kills them.
 *   exit     every rank calls exit(3) without MPI_Finalize.
 *   segv     rank 1 waits for the other ranks' files, then dereferences a null pointer;
 *            the other ranks sleep.
 *   hang     every rank sleeps; the checker sends SIGTERM to the launcher once all files
 *            exist. */
#include <mpi.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, size, i, iv[8];
  double out[100], in[100];
  const char* mode = argc > 1 ? argv[1] : "";

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size >= 2);
  for (i = 0; i < 100; ++i) out[i] = i;
  for (i = 0; i < 8; ++i) iv[i] = rank;

  if (rank < 2) {
    MPI_Sendrecv(out, 100, MPI_DOUBLE, 1 - rank, 0, in, 100, MPI_DOUBLE, 1 - rank, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ex_call("MPI_Sendrecv", 800, 800);
  }
  MPI_Allreduce(MPI_IN_PLACE, iv, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  ex_call("MPI_Allreduce", 0, 8 * 4);
  for (i = 0; i < 3; ++i) {
    MPI_Bcast(in, 10, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    ex_call("MPI_Bcast", rank == 0 ? 80 : 0, rank == 0 ? 0 : 80);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  if (rank == 0) {
    printf("c_abnormal: %s: known calls done\n", mode);
    fflush(stdout);
  }

  if (strcmp(mode, "abort") == 0) {
    if (rank == 1) {
      ex_call("MPI_Abort", 0, 0);
      ex_write(rank);
      ex_wait_all_written(size);
      MPI_Abort(MPI_COMM_WORLD, 7);
    }
    ex_write(rank);
  } else if (strcmp(mode, "exit") == 0) {
    ex_write(rank);
    exit(3);
  } else if (strcmp(mode, "segv") == 0) {
    ex_write(rank);
    if (rank == 1) {
      ex_wait_all_written(size);
      *(volatile int*)(long)(argc - argc) = 1;
    }
  } else {
    ex_write(rank);
  }
  for (i = 0; i < 600; ++i) sleep(1); /* until killed; the checker's timeout is far shorter */
  fprintf(stderr, "c_abnormal: rank %d was never stopped\n", rank);
  MPI_Finalize();
  return 5;
}
