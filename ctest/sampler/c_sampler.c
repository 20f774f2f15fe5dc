/* A run of known shape for the sampler under the preload: rank 0 busy-loops for BUSY seconds;
 * rank 1 writes BYTES to FILE, then sleeps (not on the CPU) until BUSY seconds have passed.
 * Usage: c_sampler BUSY FILE BYTES */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 4) {
    fprintf(stderr, "usage: c_sampler BUSY_SECONDS FILE BYTES\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const double busy = atof(argv[1]);
  const long bytes = atol(argv[3]);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  volatile double sink = 0;
  if (rank == 0) {
    while (MPI_Wtime() - t0 < busy)
      for (int i = 0; i < 10000; ++i) sink += i * 1e-9;
  } else if (rank == 1) {
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      perror(argv[2]);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    static char block[65536];
    memset(block, 'x', sizeof block);
    for (long left = bytes; left > 0;) {
      ssize_t w = write(fd, block, left < (long)sizeof block ? (size_t)left : sizeof block);
      if (w <= 0) MPI_Abort(MPI_COMM_WORLD, 4);
      left -= w;
    }
    close(fd);
    unlink(argv[2]);
    while (MPI_Wtime() - t0 < busy) {
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("c_sampler: busy %.3f s done\n", busy);
  MPI_Finalize();
  return 0;
}
