/* Byte totals above 2^31 (2 ranks): 40 sends of 64 MiB from rank 0 to rank 1, so each rank's
 * total (2.5 GiB) overflows a 32-bit counter; plus one call whose count x type size alone
 * exceeds 2^31. Byte counters must be 64-bit end to end. */
#include <mpi.h>

#include "expect.h"

#define MSG (64LL << 20)

int main(int argc, char** argv) {
  int rank, size, i;
  char* buf;
  MPI_Datatype mib;

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);
  buf = malloc(MSG);
  EX_CHECK(buf != NULL);
  memset(buf, rank, MSG);

  for (i = 0; i < 40; ++i) {
    if (rank == 0) {
      buf[i] = (char)i;
      MPI_Send(buf, (int)MSG, MPI_BYTE, 1, i, MPI_COMM_WORLD);
      ex_call("MPI_Send", MSG, 0);
    } else {
      MPI_Recv(buf, (int)MSG, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, MSG);
      EX_CHECK(buf[i] == (char)i);
    }
  }
  free(buf);

  /* One call of more than 2^31 bytes: MPI_Bcast of 2100 x (1 MiB contiguous type) = 2.05 GiB
   * on MPI_COMM_SELF, where the root sends count x size by the rule but no data moves (the
   * buffer is allocated, never touched). */
  MPI_Type_contiguous(1 << 20, MPI_BYTE, &mib);
  MPI_Type_commit(&mib);
  buf = malloc(2100LL << 20);
  EX_CHECK(buf != NULL);
  MPI_Bcast(buf, 2100, mib, 0, MPI_COMM_SELF);
  ex_call("MPI_Bcast", 2100LL << 20, 0);
  free(buf);
  MPI_Type_free(&mib);
  ex_call("MPI_Type_free", 0, 0);

  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0) printf("c_large: ok\n");
  MPI_Finalize();
  return 0;
}
