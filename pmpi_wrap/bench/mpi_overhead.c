/* mpi_overhead: microbenchmarks whose difference with and without the invmw preload is the
 * cost invmw adds per MPI call. Run on exactly 2 ranks (one per core) over shared memory.
 *
 * Prints one line per benchmark: "<name> <nanoseconds per unit>", where the unit is a half
 * round trip for the ping-pongs (one send and one receive on each rank's critical path, i.e.
 * one wrapped call per rank), and one call for the others (test_null: MPI_Test on
 * MPI_REQUEST_NULL, the cheapest call, whose rate under tracing is the recording rate).
 *
 * The *_cpu lines time the same local calls in the calling thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), which a loaded machine's preemptions do not inflate.
 *
 * usage: mpi_overhead [iterations] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double pingpong(int rank, int bytes, int iters) {
  char buf[8] = {0};
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t0) * 1e9 / (2.0 * iters);
}

static double exchange(int rank, int iters) {
  double out = rank, in = 0;
  MPI_Request req[2];
  int peer = 1 - rank;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    MPI_Irecv(&in, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(&out, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  }
  return (MPI_Wtime() - t0) * 1e9 / (3.0 * iters); /* three calls per iteration */
}

/* The cheapest wrapped call: MPI_Test on MPI_REQUEST_NULL. With tracing, each call records one
 * event, so its rate bounds from below how fast a rank records events into its buffer. */
static double test_null(int iters) {
  MPI_Request r = MPI_REQUEST_NULL;
  int flag;
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  return (MPI_Wtime() - t0) * 1e9 / iters;
}

/* A purely local call: MPI_Iprobe with no message pending. */
static double iprobe(int iters) {
  int flag;
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i)
    MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  return (MPI_Wtime() - t0) * 1e9 / iters;
}

/* test_null and iprobe in CPU time. */
static double test_null_cpu(int iters) {
  MPI_Request r = MPI_REQUEST_NULL;
  int flag;
  double t0 = cpu_ns();
  for (int i = 0; i < iters; ++i) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  return (cpu_ns() - t0) / iters;
}

static double iprobe_cpu(int iters) {
  int flag;
  double t0 = cpu_ns();
  for (int i = 0; i < iters; ++i)
    MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  return (cpu_ns() - t0) / iters;
}

static double allreduce(int iters) {
  double x = 1, y = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return (MPI_Wtime() - t0) * 1e9 / iters;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "mpi_overhead: run on exactly 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int iters = argc > 1 ? atoi(argv[1]) : 200000;
  pingpong(rank, 0, iters / 10); /* warm-up */
  double r[8];
  r[0] = pingpong(rank, 0, iters);
  r[1] = pingpong(rank, 8, iters);
  r[2] = exchange(rank, iters);
  r[3] = allreduce(iters);
  r[4] = test_null(iters * 5);
  r[5] = iprobe(iters * 5);
  r[6] = test_null_cpu(iters * 5);
  r[7] = iprobe_cpu(iters * 5);
  if (rank == 0) {
    printf("pingpong_0B %.2f\npingpong_8B %.2f\nisend_irecv_waitall %.2f\nallreduce_8B %.2f\n"
           "test_null %.2f\niprobe %.2f\ntest_null_cpu %.2f\niprobe_cpu %.2f\n",
           r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
  }
  MPI_Finalize();
  return 0;
}
