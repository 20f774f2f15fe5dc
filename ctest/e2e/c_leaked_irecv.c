/* Receives posted and never completed (2 ranks): each step rank 1 posts a receive into a
 * request it then overwrites (leaked, never waited on), then a second receive it waits for.
 * Rank 0 sends a short and a long message per step on the same channel. MPI matches the short
 * message to the leaked receive (posted first), so every completed receive gets a long one;
 * a trace reader that left the leaked receives out would pair each long receive with a short
 * send. Also a receive that is cancelled, which matches nothing.
 * Prints "rank 1: N long receives" when every waited receive got the long message. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kSteps = 40, kShort = 84, kLong = 504, kTag = 7 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static char shortbuf[kSteps][kLong], longbuf[kLong], cancelbuf[8];
  int good = 0;
  if (rank == 1) {
    MPI_Request cancelled;
    MPI_Irecv(cancelbuf, 8, MPI_BYTE, 0, 99, MPI_COMM_WORLD, &cancelled);
    MPI_Cancel(&cancelled);
    MPI_Status st;
    MPI_Wait(&cancelled, &st);
    int flag = 0;
    MPI_Test_cancelled(&st, &flag);
    if (!flag) printf("rank 1: cancel did not take\n");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < kSteps; ++i) {
    if (rank == 0) {
      MPI_Send(longbuf, kShort, MPI_BYTE, 1, kTag, MPI_COMM_WORLD);
      MPI_Send(longbuf, kLong, MPI_BYTE, 1, kTag, MPI_COMM_WORLD);
    } else if (rank == 1) {
      MPI_Request leaked, req;
      MPI_Irecv(shortbuf[i], kLong, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, &leaked);
      MPI_Irecv(longbuf, kLong, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, &req);
      MPI_Status st;
      MPI_Wait(&req, &st);
      int n = 0;
      MPI_Get_count(&st, MPI_BYTE, &n);
      good += n == kLong;
      (void)leaked; /* never completed: the application leaks it */
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) printf("rank 1: %d long receives\n", good);
  MPI_Finalize();
  return 0;
}
