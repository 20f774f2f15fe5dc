/* Message sizes of a profile (2 ranks, issue 17): calls whose message sizes are known exactly,
 * so check_msg_sizes.py can assert every bin of the per-direction histograms.
 *   both ranks: 5 MPI_Sendrecv of 8 B each way, 3 MPI_Allreduce of one double (8 B);
 *   rank 0 sends 1 zero-byte, 3 x 1000 B (MPI_Send) and 2 x 400000 B (MPI_Send);
 *   rank 1 receives the first four with MPI_Recv and the two large ones with MPI_Irecv posted
 *   before the sends can arrive, completed by one MPI_Waitall;
 *   then rank 0 starts a persistent 2000 B send twice, rank 1 the matching persistent receive.
 * Prints "msg sizes ok" when every received size was what was sent. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum {
  kSendrecv = 5,
  kAllreduce = 3,
  kSmall = 1000,
  kSmalls = 3,
  kLarge = 400000,
  kLarges = 2,
  kPersistent = 2000
};

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "c_msg_sizes needs 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int bad = 0;
  const int peer = 1 - rank;
  for (int i = 0; i < kSendrecv; ++i) {
    double out = rank + i, in = -1;
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, peer, 1, &in, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    bad += in != peer + i;
  }
  for (int i = 0; i < kAllreduce; ++i) {
    double v = 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    bad += sum != 2;
  }
  char* large = calloc(kLarges, kLarge);
  char small[kSmall] = {0};
  if (!large) MPI_Abort(MPI_COMM_WORLD, 3);
  if (rank == 1) {
    MPI_Request req[kLarges];
    for (int i = 0; i < kLarges; ++i)
      MPI_Irecv(large + (size_t)i * kLarge, kLarge, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &req[i]);
    MPI_Barrier(MPI_COMM_WORLD); /* the receives are posted before anything is sent */
    MPI_Status st;
    int n = -1;
    MPI_Recv(small, kSmall, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &n);
    bad += n != 0;
    for (int i = 0; i < kSmalls; ++i) {
      MPI_Recv(small, kSmall, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_BYTE, &n);
      bad += n != kSmall;
    }
    MPI_Status sts[kLarges];
    MPI_Waitall(kLarges, req, sts);
    for (int i = 0; i < kLarges; ++i) {
      MPI_Get_count(&sts[i], MPI_BYTE, &n);
      bad += n != kLarge;
    }
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(small, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
    for (int i = 0; i < kSmalls; ++i) MPI_Send(small, kSmall, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
    for (int i = 0; i < kLarges; ++i)
      MPI_Send(large + (size_t)i * kLarge, kLarge, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
  }
  /* Persistent: 2 starts of a 2000 B send (rank 0) and of the matching receive (rank 1). */
  MPI_Request preq;
  if (rank == 0)
    MPI_Send_init(large, kPersistent, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &preq);
  else
    MPI_Recv_init(large, kPersistent, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &preq);
  for (int i = 0; i < 2; ++i) {
    MPI_Status st;
    int n = -1;
    MPI_Start(&preq);
    MPI_Wait(&preq, &st);
    if (rank == 1) {
      MPI_Get_count(&st, MPI_BYTE, &n);
      bad += n != kPersistent;
    }
  }
  MPI_Request_free(&preq);
  free(large);
  int all_bad = 0;
  MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(all_bad ? "msg sizes WRONG (%d)\n" : "msg sizes ok\n", all_bad);
  MPI_Finalize();
  return 0;
}
