/* 8-byte (or --bytes B) ping-pong between ranks 0 and 1: the mean half round trip, the figure
 * that shows how much busy-polling ranks lose to their CPU quota on an emulated platform.
 *
 *   emu_pingpong [--bytes B] [--reps R] [--warmup W] [--seconds S]
 * With --seconds, repeats until S seconds have passed (at least R repetitions): a quota-limited
 * rank is throttled only once its quota for the period is spent, so a run much shorter than
 * the CFS period would not see the throttling at all.
 * Prints on rank 0: "bytes <B> reps <R> mean_s <mean half round trip> max_s <slowest half>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  long bytes = 8, reps = 2000, warmup = 100;
  double seconds = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--bytes") && i + 1 < argc) {
      bytes = atol(argv[++i]);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atol(argv[++i]);
    } else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
      warmup = atol(argv[++i]);
    } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else {
      fprintf(stderr, "usage: emu_pingpong [--bytes B] [--reps R] [--warmup W] [--seconds S]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "emu_pingpong needs 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* The first byte of every ping carries "last one" from rank 0, so both ranks stop together
   * without extra messages. */
  long len = bytes > 0 ? bytes : 1;
  char* buf = calloc((size_t)len, 1);
  double total = 0, worst = 0, start = 0;
  long done = 0;
  for (long i = -warmup;; ++i) {
    if (i == 0) start = MPI_Wtime();
    double t0 = MPI_Wtime();
    int last = 0;
    if (rank == 0) {
      last = i + 1 >= reps && (seconds <= 0 || t0 - start >= seconds);
      buf[0] = (char)last;
      MPI_Send(buf, (int)len, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      last = buf[0];
      MPI_Send(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    } else {
      break; /* further ranks idle */
    }
    double half = (MPI_Wtime() - t0) / 2;
    if (i >= 0) {
      total += half;
      if (half > worst) worst = half;
      ++done;
    }
    if (last) break;
  }
  if (rank == 0)
    printf("bytes %ld reps %ld mean_s %.9g max_s %.9g\n", bytes, done, total / done, worst);
  free(buf);
  MPI_Finalize();
  return 0;
}
