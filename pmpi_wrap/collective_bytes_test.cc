// Bytes per collective (collective_bytes.h) against hand-computed values, at the root and at the
// other rank. Runs as two MPI ranks with the runtime linked in, as libinvmw.so is (the
// communicator table and the datatype cache are the runtime's own).
#include "pmpi_wrap/collective_bytes.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include "pmpi_wrap/thread_state.h"

namespace invmw::wrap {
namespace {

int Rank() {
  int r = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

class CollectiveBytes : public ::testing::Test {
 protected:
  void SetUp() override {
    int size = 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    ASSERT_EQ(size, 2) << "run with two ranks";
    ASSERT_NE(CurrentThread(), nullptr);
    rank_ = Rank();
  }
  int rank_ = 0;
  int sbuf_[64] = {};
};

TEST_F(CollectiveBytes, BarrierMovesNothing) {
  const CollBytes b = Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(b.sent, 0u);
  EXPECT_EQ(b.recv, 0u);
}

TEST_F(CollectiveBytes, BcastSendsAtTheRootOnly) {
  const CollBytes b = Bcast(100, MPI_INT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(b.root, 0);
  EXPECT_EQ(b.sent, rank_ == 0 ? 400u : 0u);
  EXPECT_EQ(b.recv, rank_ == 0 ? 0u : 400u);
  // Counts below one move nothing.
  EXPECT_EQ(Bcast(-3, MPI_INT, 0, MPI_COMM_WORLD).sent, 0u);
}

TEST_F(CollectiveBytes, ReduceReceivesAtTheRootAndInPlaceSendsNothing) {
  const CollBytes b = Reduce(sbuf_, 10, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  EXPECT_EQ(b.root, 1);
  EXPECT_EQ(b.sent, 80u);
  EXPECT_EQ(b.recv, rank_ == 1 ? 80u : 0u);
  const CollBytes in_place = Reduce(MPI_IN_PLACE, 10, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  EXPECT_EQ(in_place.sent, 0u);
}

TEST_F(CollectiveBytes, Allreduce) {
  const CollBytes b = Allreduce(sbuf_, 3, MPI_INT, MPI_COMM_WORLD);
  EXPECT_EQ(b.sent, 12u);
  EXPECT_EQ(b.recv, 12u);
  EXPECT_EQ(Allreduce(MPI_IN_PLACE, 3, MPI_INT, MPI_COMM_WORLD).sent, 0u);
}

TEST_F(CollectiveBytes, GatherAndGatherv) {
  const CollBytes g = Gather(sbuf_, 5, MPI_INT, 5, MPI_INT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(g.sent, 20u);
  EXPECT_EQ(g.recv, rank_ == 0 ? 40u : 0u);  // 5 ints from each of two ranks
  const int rcounts[2] = {1, 3};
  const CollBytes v = Gatherv(sbuf_, 1, MPI_DOUBLE, rcounts, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  EXPECT_EQ(v.sent, 8u);
  EXPECT_EQ(v.recv, rank_ == 0 ? 32u : 0u);
}

TEST_F(CollectiveBytes, ScatterAndScatterv) {
  const CollBytes s = Scatter(2, MPI_INT, sbuf_, 2, MPI_INT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(s.sent, rank_ == 0 ? 16u : 0u);
  EXPECT_EQ(s.recv, 8u);
  const int scounts[2] = {2, 5};
  const CollBytes v = Scatterv(scounts, MPI_SHORT, sbuf_, 4, MPI_SHORT, 1, MPI_COMM_WORLD);
  EXPECT_EQ(v.sent, rank_ == 1 ? 14u : 0u);
  EXPECT_EQ(v.recv, 8u);
}

TEST_F(CollectiveBytes, AllgatherAndAlltoall) {
  const CollBytes a = Allgather(sbuf_, 4, MPI_SHORT, 4, MPI_SHORT, MPI_COMM_WORLD);
  EXPECT_EQ(a.sent, 8u);
  EXPECT_EQ(a.recv, 16u);
  const CollBytes t = Alltoall(sbuf_, 3, MPI_INT, 3, MPI_INT, MPI_COMM_WORLD);
  EXPECT_EQ(t.sent, 24u);
  EXPECT_EQ(t.recv, 24u);
  const int sc[2] = {1, 2}, rc[2] = {3, 4};
  const CollBytes v = Alltoallv(sbuf_, sc, MPI_INT, rc, MPI_INT, MPI_COMM_WORLD);
  EXPECT_EQ(v.sent, 12u);
  EXPECT_EQ(v.recv, 28u);
  const MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
  const CollBytes w = Alltoallw(sbuf_, sc, types, rc, types, MPI_COMM_WORLD);
  EXPECT_EQ(w.sent, 4u + 16u);
  EXPECT_EQ(w.recv, 12u + 32u);
}

TEST_F(CollectiveBytes, ReduceScatter) {
  const CollBytes b = ReduceScatterBlock(sbuf_, 5, MPI_INT, MPI_COMM_WORLD);
  EXPECT_EQ(b.recv, 20u);
  EXPECT_EQ(b.sent, 40u);
  const int rcounts[2] = {1, 2};
  const CollBytes v = ReduceScatter(sbuf_, rcounts, MPI_INT, MPI_COMM_WORLD);
  EXPECT_EQ(v.recv, rank_ == 0 ? 4u : 8u);
  EXPECT_EQ(v.sent, 12u);
}

TEST_F(CollectiveBytes, DerivedTypesCountTheirSize) {
  MPI_Datatype three;
  ASSERT_EQ(PMPI_Type_contiguous(3, MPI_DOUBLE, &three), MPI_SUCCESS);
  ASSERT_EQ(PMPI_Type_commit(&three), MPI_SUCCESS);
  EXPECT_EQ(Bcast(2, three, 0, MPI_COMM_WORLD).recv + Bcast(2, three, 0, MPI_COMM_WORLD).sent, 48u);
  PMPI_Type_free(&three);
}

// A periodic ring of two: each rank has two in- and two out-neighbours (the other rank twice).
TEST_F(CollectiveBytes, NeighborCollectivesUseTheTopologyDegrees) {
  int dims[1] = {2}, periods[1] = {1};
  MPI_Comm cart;
  ASSERT_EQ(PMPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart), MPI_SUCCESS);
  const CollBytes a = NeighborAlltoall(3, MPI_INT, 5, MPI_INT, cart);
  EXPECT_EQ(a.sent, 24u);
  EXPECT_EQ(a.recv, 40u);
  const CollBytes g = NeighborAllgather(3, MPI_INT, 5, MPI_INT, cart);
  EXPECT_EQ(g.sent, 12u);
  EXPECT_EQ(g.recv, 40u);
  PMPI_Comm_free(&cart);
}

}  // namespace
}  // namespace invmw::wrap

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  MPI_Init(&argc, &argv);          // through the runtime's wrapper, as in a profiled program
  if (invmw::wrap::Rank() != 0) {  // one rank's report is enough; failures still count
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  int all = 0;
  PMPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return all;
}
