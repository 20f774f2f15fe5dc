/* Call sites in `invmw analyze` (issue 22): rank 1 receives at a known line from rank 0, which
   sends only after sleeping 300 ms, so that MPI_Recv waits most of its time for a late sender.
   check_callsites.py --analyze checks that analysis.json names that line and that its idle
   share is at least half. SITE comments as in c_callsites.c; "LATE" marks the waiting call. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char** argv) {
  int rank;
  char buf[64];
  struct timespec late = {0, 300000000};
  memset(buf, 0, sizeof buf);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    while (nanosleep(&late, &late) != 0) {
    }
    MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD); /* SITE MPI_Send calls=1 sent=8 */
  } else if (rank == 1) {
    MPI_Recv(buf, 64, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* SITE MPI_Recv calls=1 recv=8 LATE */
  }
  MPI_Finalize();
  if (rank == 0) printf("c_callsites_late: ok\n");
  return 0;
}
