/* The shared library of c_callsites.c: a call site in a position-independent object other than
   the program. The statement after the call keeps it from being a tail call (whose return
   address would be the library's caller). */
#include <mpi.h>

int lib_calls;

int lib_send(const void* buf, int n, int dest) {
  int rc = MPI_Send(buf, n, MPI_CHAR, dest, 0, MPI_COMM_WORLD); /* SITE MPI_Send calls=1 sent=32 */
  ++lib_calls;
  return rc;
}
