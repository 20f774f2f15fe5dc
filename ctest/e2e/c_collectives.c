/* Blocking and nonblocking collectives on MPI_COMM_WORLD (run with 4 ranks), each with the
 * "argument view" byte rule: send-side arguments at this rank count as sent, receive-side
 * arguments as received, root-only arguments only at the root, MPI_IN_PLACE sides count 0.
 * Covers Barrier, Bcast, Reduce (also IN_PLACE at the root), Allreduce (also IN_PLACE), Scan,
 * Exscan, Gather(v) (also IN_PLACE at the root), Scatter(v) (also IN_PLACE at the root),
 * Allgather(v) (also IN_PLACE), Alltoall(v), Reduce_scatter(_block), and Ibcast / Iallreduce /
 * Igather / Ibarrier completed with MPI_Waitall. */
#include <mpi.h>

#include "expect.h"

#define MAXN 4096

int main(int argc, char** argv) {
  int rank, n, i;
  static double a[MAXN], b[MAXN];
  static int ia[MAXN], ib[MAXN];
  int counts[64], displs[64];
  const int D = 8, I = 4; /* sizes of double and int */
  long long sum;

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  EX_CHECK(n <= 64 && n * 40 <= MAXN);
  const int root = n - 1;
  const int is_root = rank == root;
  for (i = 0; i < MAXN; ++i) a[i] = rank + 1, ia[i] = rank + 1;

  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);

  MPI_Bcast(a, 100, MPI_DOUBLE, root, MPI_COMM_WORLD);
  ex_call("MPI_Bcast", is_root ? 100 * D : 0, is_root ? 0 : 100 * D);
  EX_CHECK(a[99] == root + 1);
  for (i = 0; i < MAXN; ++i) a[i] = rank + 1;

  MPI_Reduce(a, b, 50, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  ex_call("MPI_Reduce", 50 * D, rank == 0 ? 50 * D : 0);
  if (rank == 0) EX_CHECK(b[0] == n * (n + 1) / 2);
  /* IN_PLACE at the root: the root sends nothing. */
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : ia, ia, 30, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  ex_call("MPI_Reduce", rank == 0 ? 0 : 30 * I, rank == 0 ? 30 * I : 0);
  if (rank == 0) EX_CHECK(ia[0] == n);

  MPI_Allreduce(a, b, 20, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  ex_call("MPI_Allreduce", 20 * D, 20 * D);
  for (i = 0; i < 20; ++i) b[i] = rank;
  MPI_Allreduce(MPI_IN_PLACE, b, 20, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  ex_call("MPI_Allreduce", 0, 20 * D);
  EX_CHECK(b[19] == n * (n - 1) / 2);
  sum = (long long)b[19];

  MPI_Scan(ia, ib, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  ex_call("MPI_Scan", 10 * I, 10 * I);
  MPI_Exscan(ia, ib, 12, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  ex_call("MPI_Exscan", 12 * I, 12 * I);

  /* Gather 7 doubles per rank to the root; then IN_PLACE at the root. */
  MPI_Gather(a, 7, MPI_DOUBLE, b, 7, MPI_DOUBLE, root, MPI_COMM_WORLD);
  ex_call("MPI_Gather", 7 * D, is_root ? n * 7 * D : 0);
  MPI_Gather(is_root ? MPI_IN_PLACE : a, 5, MPI_DOUBLE, a, 5, MPI_DOUBLE, root, MPI_COMM_WORLD);
  ex_call("MPI_Gather", is_root ? 0 : 5 * D, is_root ? n * 5 * D : 0);

  /* Gatherv: rank i contributes i + 1 ints. */
  for (i = 0; i < n; ++i) counts[i] = i + 1, displs[i] = i * 40;
  MPI_Gatherv(ia, rank + 1, MPI_INT, ib, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
  ex_call("MPI_Gatherv", (rank + 1) * I, rank == 0 ? (long long)n * (n + 1) / 2 * I : 0);

  /* Scatter 9 doubles per rank; then IN_PLACE (as recvbuf) at the root. */
  MPI_Scatter(a, 9, MPI_DOUBLE, b, 9, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  ex_call("MPI_Scatter", rank == 0 ? n * 9 * D : 0, 9 * D);
  MPI_Scatter(a, 4, MPI_DOUBLE, rank == 0 ? MPI_IN_PLACE : b, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  ex_call("MPI_Scatter", rank == 0 ? n * 4 * D : 0, rank == 0 ? 0 : 4 * D);

  /* Scatterv: rank i gets 2 * (i + 1) ints. */
  for (i = 0; i < n; ++i) counts[i] = 2 * (i + 1), displs[i] = i * 40;
  MPI_Scatterv(ia, counts, displs, MPI_INT, ib, 2 * (rank + 1), MPI_INT, root, MPI_COMM_WORLD);
  ex_call("MPI_Scatterv", is_root ? (long long)n * (n + 1) * I : 0, 2 * (rank + 1) * I);

  MPI_Allgather(a, 3, MPI_DOUBLE, b, 3, MPI_DOUBLE, MPI_COMM_WORLD);
  ex_call("MPI_Allgather", 3 * D, n * 3 * D);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, 3, MPI_DOUBLE, MPI_COMM_WORLD);
  ex_call("MPI_Allgather", 0, n * 3 * D);

  /* Allgatherv: rank i contributes 3 * i + 1 ints. */
  for (i = 0; i < n; ++i) counts[i] = 3 * i + 1, displs[i] = i * 40;
  MPI_Allgatherv(ia, 3 * rank + 1, MPI_INT, ib, counts, displs, MPI_INT, MPI_COMM_WORLD);
  {
    long long tot = 0;
    for (i = 0; i < n; ++i) tot += counts[i];
    ex_call("MPI_Allgatherv", (3 * rank + 1) * I, tot * I);
  }

  MPI_Alltoall(a, 6, MPI_DOUBLE, b, 6, MPI_DOUBLE, MPI_COMM_WORLD);
  ex_call("MPI_Alltoall", n * 6 * D, n * 6 * D);

  /* Alltoallv: rank r sends r + j + 1 ints to rank j (so receives j + r + 1 from rank j). */
  {
    int sc[64], sd[64], rc[64], rd[64];
    long long st = 0, rt = 0;
    for (i = 0; i < n; ++i) {
      sc[i] = rank + i + 1, sd[i] = i * 40, rc[i] = i + rank + 1, rd[i] = i * 40;
      st += sc[i], rt += rc[i];
    }
    MPI_Alltoallv(ia, sc, sd, MPI_INT, ib, rc, rd, MPI_INT, MPI_COMM_WORLD);
    ex_call("MPI_Alltoallv", st * I, rt * I);
  }

  MPI_Reduce_scatter_block(a, b, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  ex_call("MPI_Reduce_scatter_block", n * 5 * D, 5 * D);
  {
    long long tot = 0;
    for (i = 0; i < n; ++i) counts[i] = i + 2, tot += counts[i];
    MPI_Reduce_scatter(ia, ib, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ex_call("MPI_Reduce_scatter", tot * I, counts[rank] * I);
  }

  /* Nonblocking collectives: same bytes, at the call. */
  {
    MPI_Request r[4];
    MPI_Ibcast(a, 11, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r[0]);
    ex_call("MPI_Ibcast", rank == 0 ? 11 * D : 0, rank == 0 ? 0 : 11 * D);
    MPI_Iallreduce(ia, ib, 13, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
    ex_call("MPI_Iallreduce", 13 * I, 13 * I);
    MPI_Igather(ia + 100, 2, MPI_INT, ib + 100, 2, MPI_INT, 1, MPI_COMM_WORLD, &r[2]);
    ex_call("MPI_Igather", 2 * I, rank == 1 ? n * 2 * I : 0);
    MPI_Ibarrier(MPI_COMM_WORLD, &r[3]);
    ex_call("MPI_Ibarrier", 0, 0);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
    ex_call("MPI_Waitall", 0, 0);
  }

  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0) printf("c_collectives: ok %d ranks, sum %lld\n", n, sum);
  MPI_Finalize();
  return 0;
}
