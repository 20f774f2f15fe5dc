/* A run of known shape for the sampler under the preload: rank 0 busy-loops until it has had
 * BUSY seconds of CPU time and BUSY seconds have passed (CPU time, not a wall-clock span: on a
 * loaded machine a loop of BUSY wall seconds gets much less CPU, and the check compares the
 * sampled CPU time with BUSY); rank 1 writes BYTES to FILE, then sleeps (not on the CPU) until
 * rank 0 has created FILE.done (polled every 5 ms: a blocking receive or barrier would spin on
 * the CPU in Open MPI, and polled MPI calls would add calls the checks count; one host only).
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
  char done_path[4096];
  snprintf(done_path, sizeof done_path, "%s.done", argv[2]);
  if (rank == 0) unlink(done_path); /* a killed earlier run's */
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  volatile double sink = 0;
  if (rank == 0) {
    struct timespec c0, c;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    for (;;) {
      for (int i = 0; i < 10000; ++i) sink += i * 1e-9;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
      const double cpu = (double)(c.tv_sec - c0.tv_sec) + (double)(c.tv_nsec - c0.tv_nsec) * 1e-9;
      if (cpu >= busy && MPI_Wtime() - t0 >= busy) break;
    }
    int fd = open(done_path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
      perror(done_path);
      MPI_Abort(MPI_COMM_WORLD, 5);
    }
    close(fd);
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
    while (access(done_path, F_OK) != 0) {
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) unlink(done_path);
  if (rank == 0) printf("c_sampler: busy %.3f s done\n", busy);
  MPI_Finalize();
  return 0;
}
