/* MPI_THREAD_MULTIPLE (2 ranks, 4 threads each): every thread exchanges messages with the
 * same thread of the peer rank, using its thread id as tag, concurrently with the other
 * threads: MPI_Isend + MPI_Irecv + MPI_Waitall rounds, then blocking MPI_Send / MPI_Recv
 * rounds. Counts and bytes must be exact (the per-thread counters are summed). */
#include <mpi.h>
#include <pthread.h>

#include "expect.h"

#define NTHREADS 4
static int g_rank, g_peer, g_rounds = 50;

static void* worker(void* arg) {
  const int tid = (int)(long)arg;
  int out[256], in[256], i, k;
  MPI_Request r[2];
  for (k = 0; k < 256; ++k) out[k] = g_rank * 100 + tid;
  for (i = 0; i < g_rounds; ++i) {
    const int n = 100 + tid; /* thread t sends 100 + t ints */
    MPI_Irecv(in, 256, MPI_INT, g_peer, tid, MPI_COMM_WORLD, &r[0]);
    ex_call("MPI_Irecv", 0, n * 4);
    MPI_Isend(out, n, MPI_INT, g_peer, tid, MPI_COMM_WORLD, &r[1]);
    ex_call("MPI_Isend", n * 4, 0);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    ex_call("MPI_Waitall", 0, 0);
    EX_CHECK(in[n - 1] == g_peer * 100 + tid);
  }
  for (i = 0; i < g_rounds; ++i) {
    const int n = 10 * (tid + 1);
    if (g_rank == 0) {
      MPI_Send(out, n, MPI_INT, g_peer, 100 + tid, MPI_COMM_WORLD);
      ex_call("MPI_Send", n * 4, 0);
      MPI_Recv(in, 256, MPI_INT, g_peer, 100 + tid, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, n * 4);
    } else {
      MPI_Recv(in, 256, MPI_INT, g_peer, 100 + tid, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, n * 4);
      MPI_Send(out, n, MPI_INT, g_peer, 100 + tid, MPI_COMM_WORLD);
      ex_call("MPI_Send", n * 4, 0);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided, size, t;
  pthread_t th[NTHREADS];

  if (argc > 1) g_rounds = atoi(argv[1]); /* rounds per thread (fewer under helgrind) */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ex_call("MPI_Init_thread", 0, 0);
  if (provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "c_threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);
  g_peer = 1 - g_rank;
  for (t = 0; t < NTHREADS; ++t) pthread_create(&th[t], NULL, worker, (void*)(long)t);
  for (t = 0; t < NTHREADS; ++t) pthread_join(th[t], NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(g_rank);
  if (g_rank == 0) printf("c_threads: ok %d threads x %d rounds\n", NTHREADS, g_rounds);
  MPI_Finalize();
  return 0;
}
