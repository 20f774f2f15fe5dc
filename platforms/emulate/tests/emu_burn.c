/* A fixed amount of computation split evenly over the ranks: the emulated platforms' CPU
 * quotas must make 1 rank at 25% take about 4x its unlimited time, and 4 such ranks about 4x
 * less than one.
 *
 *   emu_burn --units U     total work units (one unit is a fixed chain of dependent
 *                          floating-point operations, about a millisecond here)
 * Prints on rank 0: "seconds <wall time from the first to the last barrier> ranks <p> cpu <rank
 * 0's CPU time for its share>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile double sink;

static double Unit(double x) {
  /* A dependent chain the compiler cannot vectorise or shorten. */
  for (int i = 0; i < 400000; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

int main(int argc, char** argv) {
  long units = 500;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--units") && i + 1 < argc) {
      units = atol(argv[++i]);
    } else {
      fprintf(stderr, "usage: emu_burn [--units U]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long mine = units / size + (rank < units % size ? 1 : 0);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  struct timespec c0, c1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  double x = rank;
  for (long u = 0; u < mine; ++u) x = Unit(x);
  sink = x;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
  MPI_Barrier(MPI_COMM_WORLD);
  double t = MPI_Wtime() - t0;
  if (rank == 0) printf("seconds %.6f ranks %d cpu %.6f\n", t, size, cpu);
  MPI_Finalize();
  return 0;
}
