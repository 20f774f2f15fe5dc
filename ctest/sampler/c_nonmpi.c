/* A program that never calls MPI: busy-loops until it has had BUSY seconds of CPU time and BUSY
 * seconds have passed (CPU time: on a loaded machine a wall-clock span gets less), and exits
 * with STATUS, to check INVMW_RUNTIME_NONMPI=1 (the sampler runs, a profile is written, the exit
 * status is kept). Usage: c_nonmpi BUSY STATUS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double Now(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: c_nonmpi BUSY_SECONDS STATUS\n");
    return 2;
  }
  const double busy = atof(argv[1]), t0 = Now(CLOCK_MONOTONIC);
  const double c0 = Now(CLOCK_THREAD_CPUTIME_ID);
  volatile double sink = 0;
  while (Now(CLOCK_MONOTONIC) - t0 < busy || Now(CLOCK_THREAD_CPUTIME_ID) - c0 < busy)
    for (int i = 0; i < 10000; ++i) sink += i * 1e-9;
  printf("c_nonmpi: done\n");
  return atoi(argv[2]);
}
