/* Busy work of a known wall-clock duration for the analysis test programs.
 *
 * Why wall clock and not a fixed amount of arithmetic: the tests compare the analysis with the
 * durations the programs intended, on machines shared with other jobs. A loop that spins until
 * MPI_Wtime has advanced by the duration lasts that long whatever the CPU speed or load, and it
 * stays on the CPU (a sleep would be off-CPU time, which the analysis may rightly call
 * unallocated when sampler data are present). */
#pragma once

#include <mpi.h>

static volatile double busy_sink;

static void Busy(double seconds) {
  const double end = MPI_Wtime() + seconds;
  double x = 1.0;
  while (MPI_Wtime() < end)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  busy_sink = x;
}
