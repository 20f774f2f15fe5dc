/* An application whose collective fails on MPI_COMM_WORLD with MPI_ERRORS_RETURN, then finishes
 * cleanly: invmw's own communication must not be disturbed by it (issue 16, item 5).
 *
 * The root of an MPI_Gatherv passes a negative receive count, which Open MPI's parameter check
 * rejects at the root only (MPI_ERR_COUNT, nothing sent or received there); the other ranks'
 * arguments are valid, so they send their few bytes eagerly and return successfully. Those
 * messages are never received: they stay queued on MPI_COMM_WORLD with the Gatherv tag, where
 * a later MPI_Gatherv of anybody on MPI_COMM_WORLD would take them for its own data. The
 * program itself makes no further Gatherv on MPI_COMM_WORLD; it checks its other collectives'
 * results and ends with MPI_Finalize. Run with 2 or more ranks. */
#include <mpi.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, n, i, rc;
  int sbuf[4], rbuf[256], counts[64], displs[64];
  const int I = 4; /* size of int */

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  EX_CHECK(n >= 2 && n <= 64);
  rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  EX_CHECK(rc == MPI_SUCCESS);

  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);

  for (i = 0; i < 4; ++i) sbuf[i] = rank * 10 + i;
  for (i = 0; i < n; ++i) counts[i] = 4, displs[i] = 4 * i;
  counts[n - 1] = -1; /* invalid: only the root looks at the receive counts */
  rc = MPI_Gatherv(sbuf, 4, MPI_INT, rbuf, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    /* A failed call is counted, with no bytes. */
    EX_CHECK(rc != MPI_SUCCESS);
    ex_call("MPI_Gatherv", 0, 0);
    printf("rank 0: MPI_Gatherv failed as intended\n");
    fflush(stdout);
  } else {
    EX_CHECK(rc == MPI_SUCCESS);
    ex_call("MPI_Gatherv", 4 * I, 0);
  }

  /* The application goes on with collectives of other kinds, which still work. */
  int v = rank + 1, sum = 0;
  rc = MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EX_CHECK(rc == MPI_SUCCESS && sum == n * (n + 1) / 2);
  ex_call("MPI_Allreduce", I, I);
  rc = MPI_Bcast(sbuf, 4, MPI_INT, 0, MPI_COMM_WORLD);
  EX_CHECK(rc == MPI_SUCCESS && sbuf[3] == 3);
  ex_call("MPI_Bcast", rank == 0 ? 4 * I : 0, rank == 0 ? 0 : 4 * I);
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);

  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  MPI_Finalize();
  return 0;
}
