/* MPI_Finalize timed as each rank sees it, for the benchmarks that finalize_bench.py runs
 * (mpi_finalize_time.c, mpi_many_functions.c): after a barrier, the process CPU time and the
 * wall time spent inside MPI_Finalize, printed as the one line finalize_bench.py parses:
 * "finalize RANK SIZE CPU_S WALL_S". One definition, so the line cannot drift between them. */
#ifndef INVMW_BENCH_FINALIZE_TIMING_H
#define INVMW_BENCH_FINALIZE_TIMING_H

#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double finalize_timing_seconds(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void timed_finalize(int rank, int size) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double cpu0 = finalize_timing_seconds(CLOCK_PROCESS_CPUTIME_ID);
  const double wall0 = finalize_timing_seconds(CLOCK_MONOTONIC);
  MPI_Finalize();
  const double cpu = finalize_timing_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  const double wall = finalize_timing_seconds(CLOCK_MONOTONIC) - wall0;
  printf("finalize %d %d %.6f %.6f\n", rank, size, cpu, wall);
}

#endif
