/* Nonblocking point-to-point between 2 ranks: MPI_Isend/MPI_Irecv completed by MPI_Waitall
 * (with MPI_STATUSES_IGNORE), MPI_Testany (with MPI_STATUS_IGNORE), MPI_Waitsome, MPI_Test and
 * MPI_Wait, an ANY_SOURCE MPI_Irecv, and an MPI_Isend to MPI_PROC_NULL. Receives offer more
 * room than the message, so received bytes must come from the status at completion and are
 * charged to MPI_Irecv; the completion calls carry no bytes. */
#include <mpi.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, size, i, idx, flag, outcount, indices[6];
  int sbuf[8][64], rbuf[8][64];
  long long checksum = 0, calls;
  MPI_Request rr[8], sr[8], all[16];
  MPI_Status sts[8];

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);
  const int peer = 1 - rank;
  for (i = 0; i < 8 * 64; ++i) (&sbuf[0][0])[i] = rank * 10000 + i;

  /* Waitall: 8 receives of up to 64 ints, 8 sends of 20 + i ints, all in one Waitall. */
  for (i = 0; i < 8; ++i) {
    MPI_Irecv(rbuf[i], 64, MPI_INT, peer, i, MPI_COMM_WORLD, &all[i]);
    ex_call("MPI_Irecv", 0, (20 + i) * 4);
  }
  for (i = 0; i < 8; ++i) {
    MPI_Isend(sbuf[i], 20 + i, MPI_INT, peer, i, MPI_COMM_WORLD, &all[8 + i]);
    ex_call("MPI_Isend", (20 + i) * 4, 0);
  }
  MPI_Waitall(16, all, MPI_STATUSES_IGNORE);
  ex_call("MPI_Waitall", 0, 0);
  EX_CHECK(rbuf[7][0] == peer * 10000 + 7 * 64);
  checksum += rbuf[7][0];

  /* Testany: 4 receives of 10 * (i + 1) doubles; sends completed with MPI_Wait. */
  {
    double dout[4][40], din[4][40];
    for (i = 0; i < 4; ++i) {
      MPI_Irecv(din[i], 40, MPI_DOUBLE, peer, 100 + i, MPI_COMM_WORLD, &rr[i]);
      ex_call("MPI_Irecv", 0, 10 * (i + 1) * 8);
    }
    for (i = 0; i < 4; ++i) {
      MPI_Isend(dout[i], 10 * (i + 1), MPI_DOUBLE, peer, 100 + i, MPI_COMM_WORLD, &sr[i]);
      ex_call("MPI_Isend", 10 * (i + 1) * 8, 0);
    }
    calls = 0;
    for (;;) {
      MPI_Testany(4, rr, &idx, &flag, MPI_STATUS_IGNORE);
      calls++;
      if (flag && idx == MPI_UNDEFINED) break; /* all requests are MPI_REQUEST_NULL */
    }
    ex_add("MPI_Testany", calls, 0, 0);
    for (i = 0; i < 4; ++i) {
      MPI_Wait(&sr[i], MPI_STATUS_IGNORE);
      ex_call("MPI_Wait", 0, 0);
    }
  }

  /* Waitsome on 6 receives of i + 1 chars; sends completed with an MPI_Test loop. */
  {
    char cout[6][8] = {{0}}, cin[6][8];
    int left = 6;
    for (i = 0; i < 6; ++i) {
      MPI_Irecv(cin[i], 8, MPI_CHAR, peer, 200 + i, MPI_COMM_WORLD, &rr[i]);
      ex_call("MPI_Irecv", 0, i + 1);
    }
    for (i = 0; i < 6; ++i) {
      MPI_Isend(cout[i], i + 1, MPI_CHAR, peer, 200 + i, MPI_COMM_WORLD, &sr[i]);
      ex_call("MPI_Isend", i + 1, 0);
    }
    calls = 0;
    while (left > 0) {
      MPI_Waitsome(6, rr, &outcount, indices, sts);
      calls++;
      EX_CHECK(outcount != MPI_UNDEFINED);
      left -= outcount;
    }
    ex_add("MPI_Waitsome", calls, 0, 0);
    calls = 0;
    for (i = 0; i < 6; ++i) {
      do {
        MPI_Test(&sr[i], &flag, MPI_STATUS_IGNORE);
        calls++;
      } while (!flag);
    }
    ex_add("MPI_Test", calls, 0, 0);
  }

  /* ANY_SOURCE receive of 33 shorts (1 -> 0) completed with MPI_Wait and a status. */
  {
    short s[64] = {0};
    MPI_Request r;
    MPI_Status st;
    if (rank == 0) {
      MPI_Irecv(s, 64, MPI_SHORT, MPI_ANY_SOURCE, 300, MPI_COMM_WORLD, &r);
      ex_call("MPI_Irecv", 0, 33 * 2);
      MPI_Wait(&r, &st);
      ex_call("MPI_Wait", 0, 0);
      EX_CHECK(st.MPI_SOURCE == 1);
    } else {
      MPI_Isend(s, 33, MPI_SHORT, 0, 300, MPI_COMM_WORLD, &r);
      ex_call("MPI_Isend", 33 * 2, 0);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      ex_call("MPI_Wait", 0, 0);
    }
  }

  /* Isend to MPI_PROC_NULL: counted, 0 bytes. */
  {
    MPI_Request r;
    MPI_Isend(sbuf[0], 64, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
    ex_call("MPI_Isend", 0, 0);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    ex_call("MPI_Wait", 0, 0);
  }

  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0) printf("c_nonblocking: ok checksum %lld\n", checksum);
  MPI_Finalize();
  return 0;
}
