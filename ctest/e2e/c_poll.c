/* A polling loop (2 ranks): rank 0 posts a receive and polls it with MPI_Test, computing about
 * 100 us between polls, until rank 1 sends after computing for about 0.3 s. Consecutive
 * unsuccessful tests are coalesced into one trace record; the computation between them must
 * stay computation. Prints the number of polls. */
#include <mpi.h>
#include <stdio.h>

static volatile double sink;

static void compute(double seconds) {
  const double end = MPI_Wtime() + seconds;
  double x = 1.0;
  while (MPI_Wtime() < end)
    for (int i = 0; i < 200; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int value = 0;
  if (rank == 0) {
    MPI_Request req;
    MPI_Irecv(&value, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &req);
    int flag = 0;
    long polls = 0;
    while (!flag) {
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      ++polls;
      if (!flag) compute(100e-6);
    }
    printf("rank 0: %ld polls, value %d\n", polls, value);
  } else if (rank == 1) {
    compute(0.3);
    value = 42;
    MPI_Send(&value, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
