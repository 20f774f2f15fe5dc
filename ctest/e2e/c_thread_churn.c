/* Threads come and go (MPI_THREAD_MULTIPLE, 2 ranks): BATCHES times, THREADS threads are
 * created, exchange messages with the same thread of the peer rank (Isend/Irecv/Waitall, then
 * Send/Recv), and are joined. Far more threads call MPI over the run than
 * INVMW_WRAP_MAX_THREADS allows at once; each ended thread's slot must go to the next one, so
 * every call is counted. With more threads at once than slots (argument "crowd": 6 threads
 * that all wait for each other after their first call, so all of them are alive then), calls
 * are dropped and must be reported as such. */
#include <mpi.h>
#include <pthread.h>
#include <string.h>

#include "expect.h"

#define MAX_THREADS 16
static int g_rank, g_peer, g_rounds = 5, g_crowd;
static pthread_barrier_t g_all_started;

/* arg: thread index + 16 x batch. Every message has a tag of its own (thread, batch, round), so
 * that in a trace that lacks dropped calls the other messages still pair correctly. */
static void* worker(void* arg) {
  const int tid = (int)(long)arg % 16, base = (int)(long)arg * 100;
  int out[64], in[64], i, k;
  MPI_Request r[2];
  for (k = 0; k < 64; ++k) out[k] = g_rank * 100 + tid;
  for (i = 0; i < g_rounds; ++i) {
    const int n = 10 + tid;
    MPI_Irecv(in, 64, MPI_INT, g_peer, base + i, MPI_COMM_WORLD, &r[0]);
    ex_call("MPI_Irecv", 0, n * 4);
    if (g_crowd && i == 0) pthread_barrier_wait(&g_all_started);
    MPI_Isend(out, n, MPI_INT, g_peer, base + i, MPI_COMM_WORLD, &r[1]);
    ex_call("MPI_Isend", n * 4, 0);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    ex_call("MPI_Waitall", 0, 0);
    EX_CHECK(in[n - 1] == g_peer * 100 + tid);
    if (g_rank == 0) {
      MPI_Send(out, n, MPI_INT, g_peer, base + 50 + i, MPI_COMM_WORLD);
      ex_call("MPI_Send", n * 4, 0);
    } else {
      MPI_Recv(in, 64, MPI_INT, g_peer, base + 50 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, n * 4);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided, size, b, t, batches = 12, threads = 2;
  pthread_t th[MAX_THREADS];

  if (argc > 1 && strcmp(argv[1], "crowd") == 0) batches = 2, threads = 6, g_crowd = 1;
  pthread_barrier_init(&g_all_started, NULL, threads);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ex_call("MPI_Init_thread", 0, 0);
  if (provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "c_thread_churn: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);
  g_peer = 1 - g_rank;
  for (b = 0; b < batches; ++b) {
    for (t = 0; t < threads; ++t) pthread_create(&th[t], NULL, worker, (void*)(long)(t + 16 * b));
    for (t = 0; t < threads; ++t) pthread_join(th[t], NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(g_rank);
  if (g_rank == 0) printf("c_thread_churn: ok %d batches x %d threads\n", batches, threads);
  MPI_Finalize();
  return 0;
}
