/* heat1d: explicit 1-D heat diffusion, the bundled example that `scripts/main.sh` profiles.
 *
 * Each rank owns a slice of the rod; every step it swaps one halo cell with each neighbour
 * (MPI_Sendrecv, MPI_PROC_NULL at the ends), and every `check` steps the ranks agree on the
 * largest change (MPI_Allreduce) to decide convergence. At the end rank 0 gathers the
 * temperature profile (MPI_Gatherv) and prints a checksum, so the output can be compared with
 * and without invmw.
 *
 * usage: heat1d [cells] [steps] [check]   (defaults 200000 2000 50) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long cells = argc > 1 ? atol(argv[1]) : 200000;
  int steps = argc > 2 ? atoi(argv[2]) : 2000;
  int check = argc > 3 ? atoi(argv[3]) : 50;
  if (cells < size || steps < 1 || check < 1) {
    if (rank == 0) fprintf(stderr, "heat1d: need cells >= ranks, steps >= 1, check >= 1\n");
    MPI_Finalize();
    return 2;
  }
  long params[3] = {cells, steps, check};
  MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_WORLD);

  int n = (int)(cells / size + (rank < cells % size ? 1 : 0));
  double* u = calloc((size_t)n + 2, sizeof(double));
  double* v = calloc((size_t)n + 2, sizeof(double));
  if (rank == 0) u[1] = 1000.0; /* a hot left end */
  int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

  int step;
  double change = 0;
  for (step = 1; step <= steps; ++step) {
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[n + 1], 1, MPI_DOUBLE, right, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    double local = 0;
    for (int i = 1; i <= n; ++i) {
      v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);
      double d = v[i] > u[i] ? v[i] - u[i] : u[i] - v[i];
      if (d > local) local = d;
    }
    if (rank == 0) v[1] = 1000.0;
    double* t = u;
    u = v;
    v = t;
    if (step % check == 0) {
      MPI_Allreduce(&local, &change, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (change < 1e-9) break;
    }
  }

  int* counts = NULL;
  int* displs = NULL;
  double* all = NULL;
  if (rank == 0) {
    counts = malloc(sizeof(int) * (size_t)size);
    displs = malloc(sizeof(int) * (size_t)size);
  }
  MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    displs[0] = 0;
    for (int i = 1; i < size; ++i) displs[i] = displs[i - 1] + counts[i - 1];
    all = malloc(sizeof(double) * (size_t)cells);
  }
  MPI_Gatherv(&u[1], n, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double sum = 0;
    for (long i = 0; i < cells; ++i) sum += all[i] * (double)(i % 7 + 1);
    printf("heat1d: %ld cells, %d ranks, %d steps, last change %.3e, checksum %.10e\n", cells,
           size, step > steps ? steps : step, change, sum);
  }
  free(u);
  free(v);
  free(counts);
  free(displs);
  free(all);
  MPI_Finalize();
  return 0;
}
