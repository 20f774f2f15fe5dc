/* A fixed amount of traced work per rank at any world size, for the parallel trace writing:
 * argv[1] rounds (default 100) of a ring MPI_Sendrecv, an MPI_Allreduce every 10 rounds; then
 * the even and odd ranks split off (a communicator other ranks do not know), exchange around
 * their own ring with MPI_Isend/MPI_Irecv/MPI_Waitall and broadcast on it; a duplicate of the
 * world communicator gets a barrier; and everything is freed. Each rank's events are the same
 * whatever the number of ranks, so what finalize costs per rank can be compared across sizes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank, size, i, half_rank, half_size;
  long rounds = argc > 1 ? atol(argv[1]) : 100;
  double x, y, sum;
  MPI_Comm half, dup;
  MPI_Request req[2];

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (i = 0; i < rounds; ++i) {
    x = rank + i;
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, right, 7, &y, 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (y != left + i) {
      fprintf(stderr, "rank %d: got %g from %d, expected %d\n", rank, y, left, left + i);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (i % 10 == 0) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Comm_rank(half, &half_rank);
  MPI_Comm_size(half, &half_size);
  x = rank;
  MPI_Irecv(&y, 1, MPI_DOUBLE, (half_rank + half_size - 1) % half_size, 3, half, &req[0]);
  MPI_Isend(&x, 1, MPI_DOUBLE, (half_rank + 1) % half_size, 3, half, &req[1]);
  MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  MPI_Bcast(&x, 1, MPI_DOUBLE, 0, half);
  MPI_Comm_free(&half);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Barrier(dup);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  if (rank == 0) printf("c_trace_ranks: ok %d ranks, %ld rounds\n", size, rounds);
  return 0;
}
