/* The module c_callsites_dl.c opens with dlopen and closes again before MPI_Finalize. */
#include <mpi.h>

int dl_calls;

int dl_send(const void* buf, int n, int dest) {
  int rc = MPI_Send(buf, n, MPI_CHAR, dest, 0, MPI_COMM_WORLD); /* SITE MPI_Send calls=2 sent=16 */
  ++dl_calls;
  return rc;
}
