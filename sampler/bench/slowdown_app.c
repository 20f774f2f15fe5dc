/* The two programs of the sampler's slowdown benchmark, on 2 ranks.
 *   slowdown_app compute SECONDS_OF_WORK   a fixed amount of floating-point work per rank, one
 *                                          MPI_Allreduce per chunk (compute-bound)
 *   slowdown_app comm ITERATIONS BYTES     ping-pong of BYTES between ranks 0 and 1
 *                                          (communication-bound)
 * Prints the elapsed time between two barriers (rank 0), so start-up costs do not count. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double Work(long n) {
  double x = 1.0, y = 0.5;
  for (long i = 0; i < n; ++i) {
    x = x * 1.0000001 + y;
    y = y * 0.9999999 - 1e-9 * x;
  }
  return x + y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: slowdown_app compute UNITS | comm ITERATIONS BYTES\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double sink = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (strcmp(argv[1], "compute") == 0) {
    const long chunks = atol(argv[2]); /* each chunk: 2e6 iterations, then an allreduce */
    for (long c = 0; c < chunks; ++c) {
      double v = Work(2000000), sum = 0;
      MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      sink += sum;
    }
  } else {
    const long iters = atol(argv[2]);
    const int bytes = argc > 3 ? atoi(argv[3]) : 8;
    char* buf = calloc((size_t)bytes + 1, 1);
    for (long i = 0; i < iters; ++i) {
      if (rank == 0) {
        MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    }
    free(buf);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double t = MPI_Wtime() - t0;
  if (rank == 0) printf("elapsed %.6f sink %g\n", t, sink > 0 ? 1.0 : 0.0);
  MPI_Finalize();
  return 0;
}
