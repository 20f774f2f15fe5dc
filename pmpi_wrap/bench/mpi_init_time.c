/* mpi_init_time: how long MPI_Init takes, as the application sees it (clock_gettime around the
 * call), so that runs with and without the invmw preload can be compared. Rank 0 prints
 * "mpi_init_s <max over ranks> <rank 0's>" in seconds; the max is what a short run pays.
 *
 * usage: mpi_init_time (see init_time.py, which runs it with and without invmw) */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  double t0 = now();
  MPI_Init(&argc, &argv);
  double dt = now() - t0, max = 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Reduce(&dt, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_init_s %.6f %.6f\n", max, dt);
  MPI_Finalize();
  return 0;
}
