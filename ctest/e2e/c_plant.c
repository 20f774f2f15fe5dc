/* Plants a symbolic link where invmw is about to create one of its output files, as another
 * user with write access to the output directory could (issue 16, item 3).
 *
 * Usage: c_plant SENTINEL. After MPI_Init, the last rank links
 * $INVMW_OUTPUT_DIR/raw/events-<rank>-001.bin (the event file of the rank's second recording
 * thread, which invmw creates at that thread's first MPI call when tracing) to SENTINEL, then
 * starts a second thread that calls MPI_Barrier on MPI_COMM_SELF. invmw must neither follow
 * the link nor replace it; the program's results are those of a run without invmw. */
#include <mpi.h>
#include <pthread.h>
#include <unistd.h>

#include "expect.h"

static void* Second(void* arg) {
  (void)arg;
  MPI_Barrier(MPI_COMM_SELF);
  ex_call("MPI_Barrier", 0, 0);
  return NULL;
}

int main(int argc, char** argv) {
  int rank, n, provided;
  pthread_t t;
  if (argc != 2) {
    fprintf(stderr, "usage: c_plant SENTINEL\n");
    return 2;
  }
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ex_call("MPI_Init_thread", 0, 0);
  EX_CHECK(provided == MPI_THREAD_MULTIPLE);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (rank == n - 1) {
    const char* dir = getenv("INVMW_OUTPUT_DIR");
    if (dir && *dir) {
      char link[4096];
      snprintf(link, sizeof link, "%s/raw/events-%06d-001.bin", dir, rank);
      if (symlink(argv[1], link) != 0) {
        perror(link);
        return 3;
      }
    }
  }
  EX_CHECK(pthread_create(&t, NULL, Second, NULL) == 0);
  EX_CHECK(pthread_join(t, NULL) == 0);
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0) printf("c_plant: ok\n");
  MPI_Finalize();
  return 0;
}
