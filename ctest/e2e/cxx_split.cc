// C++ program (4 ranks) using communicator splits: MPI_Comm_split by parity, MPI_Comm_dup,
// MPI_Comm_free, and collectives on the split communicator, whose size (2) differs from the
// world's, so byte counts must use the sub-communicator's size and ranks: Bcast, Allgather,
// Gatherv, Reduce_scatter, Alltoallv, Allreduce with MPI_IN_PLACE, Ialltoall + Iallgather +
// Ibarrier with MPI_Waitall, and point-to-point addressed by sub-communicator rank.
#include <mpi.h>

#include <cstdio>
#include <numeric>
#include <vector>

#include "expect.h"

namespace {

constexpr long long kD = sizeof(double), kI = sizeof(int);

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  int wrank = 0, wsize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  EX_CHECK(wsize == 4);

  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &sub);
  ex_call("MPI_Comm_split", 0, 0);
  int rank = 0, n = 0;
  MPI_Comm_rank(sub, &rank);
  MPI_Comm_size(sub, &n);
  EX_CHECK(n == 2);

  std::vector<double> a(1000, wrank + 1.0), b(1000, 0.0);
  std::vector<int> ia(1000, wrank + 1), ib(1000, 0);

  MPI_Bcast(a.data(), 64, MPI_DOUBLE, 1, sub);
  ex_call("MPI_Bcast", rank == 1 ? 64 * kD : 0, rank == 1 ? 0 : 64 * kD);

  MPI_Allgather(ia.data(), 10, MPI_INT, ib.data(), 10, MPI_INT, sub);
  ex_call("MPI_Allgather", 10 * kI, n * 10 * kI);

  // Gatherv to sub rank 0: sub rank i contributes 4 * (i + 1) doubles.
  std::vector<int> counts(n), displs(n);
  for (int i = 0; i < n; ++i) counts[i] = 4 * (i + 1), displs[i] = 100 * i;
  MPI_Gatherv(a.data(), counts[rank], MPI_DOUBLE, b.data(), counts.data(), displs.data(),
              MPI_DOUBLE, 0, sub);
  const long long total = std::accumulate(counts.begin(), counts.end(), 0LL);
  ex_call("MPI_Gatherv", counts[rank] * kD, rank == 0 ? total * kD : 0);

  MPI_Reduce_scatter(ia.data(), ib.data(), counts.data(), MPI_INT, MPI_SUM, sub);
  ex_call("MPI_Reduce_scatter", total * kI, counts[rank] * kI);

  // Alltoallv: 3 ints to and from every member of the sub-communicator.
  std::vector<int> sc(n, 3), sd(n), rc(n, 3), rd(n);
  for (int i = 0; i < n; ++i) sd[i] = rd[i] = 50 * i;
  MPI_Alltoallv(ia.data(), sc.data(), sd.data(), MPI_INT, ib.data(), rc.data(), rd.data(), MPI_INT,
                sub);
  ex_call("MPI_Alltoallv", n * 3 * kI, n * 3 * kI);

  for (int i = 0; i < 16; ++i) b[i] = wrank;
  MPI_Allreduce(MPI_IN_PLACE, b.data(), 16, MPI_DOUBLE, MPI_SUM, sub);
  ex_call("MPI_Allreduce", 0, 16 * kD);
  const double expect = wrank % 2 == 0 ? 0 + 2 : 1 + 3;
  EX_CHECK(b[15] == expect);

  // Duplicate, use, and free.
  MPI_Comm dup;
  MPI_Comm_dup(sub, &dup);
  ex_call("MPI_Comm_dup", 0, 0);
  {
    MPI_Request r[3];
    MPI_Ialltoall(ia.data(), 2, MPI_INT, ib.data(), 2, MPI_INT, dup, &r[0]);
    ex_call("MPI_Ialltoall", n * 2 * kI, n * 2 * kI);
    MPI_Iallgather(a.data(), 3, MPI_DOUBLE, b.data() + 200, 3, MPI_DOUBLE, dup, &r[1]);
    ex_call("MPI_Iallgather", 3 * kD, n * 3 * kD);
    MPI_Ibarrier(dup, &r[2]);
    ex_call("MPI_Ibarrier", 0, 0);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    ex_call("MPI_Waitall", 0, 0);
  }
  // Point-to-point by sub-communicator rank: 25 doubles from sub rank 0 to sub rank 1.
  if (rank == 0) {
    MPI_Send(a.data(), 25, MPI_DOUBLE, 1, 7, dup);
    ex_call("MPI_Send", 25 * kD, 0);
  } else {
    MPI_Status st;
    MPI_Recv(b.data(), 100, MPI_DOUBLE, 0, 7, dup, &st);
    ex_call("MPI_Recv", 0, 25 * kD);
    EX_CHECK(st.MPI_SOURCE == 0);
  }
  MPI_Comm_free(&dup);
  MPI_Comm_free(&sub);
  ex_add("MPI_Comm_free", 2, 0, 0);

  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(wrank);
  if (wrank == 0) std::printf("cxx_split: ok %g\n", b[15]);
  MPI_Finalize();
  return 0;
}
