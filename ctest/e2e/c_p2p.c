/* Blocking point-to-point between 2 ranks: MPI_Send/Recv (receive buffer larger than the
 * message, so the received bytes must come from the status), MPI_Ssend with an ANY_SOURCE /
 * ANY_TAG receive, MPI_PROC_NULL peers (0 bytes), MPI_Sendrecv with different sizes in each
 * direction, MPI_Sendrecv_replace, MPI_Probe / MPI_Iprobe, MPI_Mprobe / MPI_Mrecv, and derived
 * datatypes (MPI_Type_vector sent, MPI_Type_contiguous received: bytes are the data size, not the
 * extent). Writes its expected profile with expect.h. */
#include <mpi.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, size, i, flag, n;
  double buf[400], big[2000];
  int ibuf[200];
  long long checksum = 0;
  MPI_Status st;
  MPI_Datatype vec, contig;

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);
  const int peer = 1 - rank;
  for (i = 0; i < 400; ++i) buf[i] = i + rank;

  /* 10 x 100 doubles 0 -> 1; the receiver offers room for 200. */
  for (i = 0; i < 10; ++i) {
    if (rank == 0) {
      MPI_Send(buf, 100, MPI_DOUBLE, 1, i, MPI_COMM_WORLD);
      ex_call("MPI_Send", 100 * 8, 0);
    } else {
      MPI_Recv(buf, 200, MPI_DOUBLE, 0, i, MPI_COMM_WORLD, &st);
      ex_call("MPI_Recv", 0, 100 * 8);
      MPI_Get_count(&st, MPI_DOUBLE, &n);
      EX_CHECK(n == 100);
    }
  }

  /* Synchronous send of 5 ints 1 -> 0, received with ANY_SOURCE / ANY_TAG. */
  if (rank == 1) {
    for (i = 0; i < 5; ++i) ibuf[i] = 7 * i;
    MPI_Ssend(ibuf, 5, MPI_INT, 0, 42, MPI_COMM_WORLD);
    ex_call("MPI_Ssend", 5 * 4, 0);
  } else {
    MPI_Recv(ibuf, 200, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    ex_call("MPI_Recv", 0, 5 * 4);
    EX_CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 42 && ibuf[4] == 28);
    checksum += ibuf[4];
  }

  /* MPI_PROC_NULL: the calls count, the bytes do not. */
  MPI_Send(buf, 50, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
  ex_call("MPI_Send", 0, 0);
  MPI_Recv(buf, 50, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  ex_call("MPI_Recv", 0, 0);

  /* Sendrecv: rank r sends 10 + 5r ints and receives what the peer sends. */
  {
    int out[100], in[100];
    for (i = 0; i < 100; ++i) out[i] = rank * 1000 + i;
    MPI_Sendrecv(out, 10 + 5 * rank, MPI_INT, peer, 3, in, 100, MPI_INT, peer, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    ex_call("MPI_Sendrecv", (10 + 5 * rank) * 4, (10 + 5 * peer) * 4);
    EX_CHECK(in[9] == peer * 1000 + 9);
    checksum += in[9];
  }

  /* Sendrecv_replace: 16 doubles each way. */
  MPI_Sendrecv_replace(buf, 16, MPI_DOUBLE, peer, 4, peer, 4, MPI_COMM_WORLD, &st);
  ex_call("MPI_Sendrecv_replace", 16 * 8, 16 * 8);

  /* Probe and Iprobe before receiving 7 chars (0 -> 1) and 9 chars (1 -> 0). */
  {
    char msg[32] = "abcdefghijklmnop";
    if (rank == 0) {
      MPI_Send(msg, 7, MPI_CHAR, 1, 5, MPI_COMM_WORLD);
      ex_call("MPI_Send", 7, 0);
      int calls = 0;
      do {
        MPI_Iprobe(1, 6, MPI_COMM_WORLD, &flag, &st);
        calls++;
      } while (!flag);
      ex_add("MPI_Iprobe", calls, 0, 0);
      MPI_Recv(msg, 32, MPI_CHAR, 1, 6, MPI_COMM_WORLD, &st);
      ex_call("MPI_Recv", 0, 9);
    } else {
      MPI_Probe(0, 5, MPI_COMM_WORLD, &st);
      ex_call("MPI_Probe", 0, 0);
      MPI_Get_count(&st, MPI_CHAR, &n);
      EX_CHECK(n == 7);
      MPI_Recv(msg, n, MPI_CHAR, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, 7);
      MPI_Send(msg, 9, MPI_CHAR, 0, 6, MPI_COMM_WORLD);
      ex_call("MPI_Send", 9, 0);
    }
  }

  /* Derived datatypes: 3 vectors of 4 blocks of 2 doubles (stride 5; 64 bytes of data each,
   * extent 136) sent 0 -> 1 and received as 3 x contiguous(8 doubles). */
  MPI_Type_vector(4, 2, 5, MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  MPI_Type_contiguous(8, MPI_DOUBLE, &contig);
  MPI_Type_commit(&contig);
  for (i = 0; i < 2000; ++i) big[i] = i;
  if (rank == 0) {
    MPI_Send(big, 3, vec, 1, 8, MPI_COMM_WORLD);
    ex_call("MPI_Send", 3 * 64, 0);
  } else {
    MPI_Recv(big, 3, contig, 0, 8, MPI_COMM_WORLD, &st);
    ex_call("MPI_Recv", 0, 3 * 64);
    /* Element 2 of the received data is element 5 of the first vector. */
    EX_CHECK(big[2] == 5.0);
    checksum += (long long)big[2];
  }
  /* A contiguous type sent with count 2 and received as doubles: 2 x 64 bytes 1 -> 0. */
  if (rank == 1) {
    MPI_Send(big, 2, contig, 0, 9, MPI_COMM_WORLD);
    ex_call("MPI_Send", 2 * 64, 0);
  } else {
    MPI_Recv(big, 100, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, &st);
    ex_call("MPI_Recv", 0, 2 * 64);
  }
  /* Matched probe: 11 ints 1 -> 0 received with MPI_Mprobe + MPI_Mrecv. */
  if (rank == 1) {
    MPI_Send(ibuf, 11, MPI_INT, 0, 10, MPI_COMM_WORLD);
    ex_call("MPI_Send", 11 * 4, 0);
  } else {
    MPI_Message msg;
    MPI_Mprobe(1, 10, MPI_COMM_WORLD, &msg, &st);
    ex_call("MPI_Mprobe", 0, 0);
    MPI_Mrecv(ibuf, 200, MPI_INT, &msg, MPI_STATUS_IGNORE);
    ex_call("MPI_Mrecv", 0, 11 * 4);
  }
  MPI_Type_free(&vec);
  MPI_Type_free(&contig);
  ex_add("MPI_Type_free", 2, 0, 0);

  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0) printf("c_p2p: ok checksum %lld\n", checksum);
  MPI_Finalize();
  return 0;
}
