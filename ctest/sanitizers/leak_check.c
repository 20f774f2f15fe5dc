/* An MPI program for the sanitizer build's own checks (ctest/sanitizers/check_sanitizer_run.py):
 * started under `invmw run`, it must run cleanly with the sanitizer runtimes preloaded ahead of
 * libinvmw.so and the MPI library's leaks suppressed; with the argument "leak" it leaks one
 * block of LEAK_BYTES from its own code, which LeakSanitizer must still report. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEAK_BYTES 4242

/* Not static and not inlined: the leak's allocation frame names this function. */
__attribute__((noinline)) void invmw_sanitize_test_leak(void) {
  char* volatile p = malloc(LEAK_BYTES);
  memset(p, 1, LEAK_BYTES);
  p = NULL; /* the only pointer is gone: a direct leak */
}

int main(int argc, char** argv) {
  int rank, sum = 0, one = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (argc > 1 && strcmp(argv[1], "leak") == 0) invmw_sanitize_test_leak();
  MPI_Finalize();
  if (rank == 0) printf("leak_check: %d rank(s)\n", sum);
  return 0;
}
