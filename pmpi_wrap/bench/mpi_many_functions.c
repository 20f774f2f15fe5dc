/* Many distinct MPI functions per rank, the same set on every rank: the profile merge at
 * MPI_Finalize then handles ranks x functions entries (bench/profile_merge_time.py and the test
 * e2e.profile.tree_merge). argv[1] rounds (default 10) of 60 functions: point to point
 * (blocking, nonblocking, persistent, probes), the completion calls, blocking and nonblocking
 * collectives, communicator and group management, one-sided calls on a window. The messages
 * go to the rank itself or through collectives, so every rank makes the same calls at any
 * world size. Prints "finalize RANK SIZE CPU_S WALL_S": the process CPU time and the wall time
 * spent inside MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "finalize_timing.h"

#define MAXR 64

int main(int argc, char** argv) {
  int rank, size, i, flag, idx, outcount, indices[2], cmp;
  long r, rounds = argc > 1 ? atol(argv[1]) : 10;
  double x[MAXR], y[MAXR], z[MAXR];
  int counts[MAXR], displs[MAXR];
  MPI_Request req[2];
  MPI_Status st[2];
  MPI_Comm dup, split;
  MPI_Group world_group, g1, g2;
  MPI_Win win;
  MPI_Message msg;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > MAXR) {
    if (rank == 0) fprintf(stderr, "at most %d ranks\n", MAXR);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (i = 0; i < MAXR; ++i) x[i] = rank + i, counts[i] = 1, displs[i] = i;
  MPI_Win_create(z, sizeof z, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  for (r = 0; r < rounds; ++r) {
    /* point to point, with the rank itself */
    MPI_Isend(x, 4, MPI_DOUBLE, rank, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Recv(y, 4, MPI_DOUBLE, rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Irecv(y, 4, MPI_DOUBLE, rank, 2, MPI_COMM_WORLD, &req[0]);
    MPI_Send(x, 4, MPI_DOUBLE, rank, 2, MPI_COMM_WORLD);
    MPI_Waitall(1, req, st);
    MPI_Sendrecv(x, 2, MPI_DOUBLE, rank, 3, y, 2, MPI_DOUBLE, rank, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv_replace(y, 2, MPI_DOUBLE, rank, 4, rank, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Issend(x, 1, MPI_DOUBLE, rank, 5, MPI_COMM_WORLD, &req[0]);
    MPI_Probe(rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Iprobe(rank, 5, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Irecv(y, 1, MPI_DOUBLE, rank, 5, MPI_COMM_WORLD, &req[1]);
    MPI_Waitany(2, req, &idx, MPI_STATUS_IGNORE);
    MPI_Waitsome(2, req, &outcount, indices, st);
    if (req[0] != MPI_REQUEST_NULL || req[1] != MPI_REQUEST_NULL) MPI_Waitall(2, req, st);
    MPI_Isend(x, 1, MPI_DOUBLE, rank, 6, MPI_COMM_WORLD, &req[0]);
    MPI_Mprobe(rank, 6, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
    MPI_Mrecv(y, 1, MPI_DOUBLE, &msg, MPI_STATUS_IGNORE);
    do MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
    while (!flag);
    MPI_Isend(x, 1, MPI_DOUBLE, rank, 7, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(y, 1, MPI_DOUBLE, rank, 7, MPI_COMM_WORLD, &req[1]);
    do MPI_Testall(2, req, &flag, st);
    while (!flag);
    MPI_Send_init(x, 1, MPI_DOUBLE, rank, 8, MPI_COMM_WORLD, &req[0]);
    MPI_Recv_init(y, 1, MPI_DOUBLE, rank, 8, MPI_COMM_WORLD, &req[1]);
    MPI_Startall(2, req);
    MPI_Waitall(2, req, st);
    MPI_Start(&req[0]);
    MPI_Start(&req[1]);
    do MPI_Testany(2, req, &idx, &flag, MPI_STATUS_IGNORE);
    while (!flag);
    do MPI_Testsome(2, req, &outcount, indices, st);
    while (outcount != MPI_UNDEFINED && outcount == 0);
    MPI_Waitall(2, req, st);
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    /* blocking collectives */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(x, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Reduce(x, y, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(x, y, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter(x, y, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Gather(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gatherv(x, 1, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Scatter(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Scatterv(x, counts, displs, MPI_DOUBLE, y, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allgather(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Allgatherv(x, 1, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoall(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoallv(x, counts, displs, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    /* nonblocking collectives */
    MPI_Ibarrier(MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Ibcast(x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Ireduce(x, y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Iallreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Iscan(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Igather(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Iallgather(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Ialltoall(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    /* communicators and groups */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp);
    MPI_Comm_split(dup, rank % 2, rank, &split);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 1, &rank, &g1);
    MPI_Group_excl(world_group, 1, &rank, &g2);
    MPI_Group_compare(g1, g2, &cmp);
    MPI_Group_free(&g1);
    MPI_Group_free(&g2);
    MPI_Group_free(&world_group);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    /* one-sided */
    MPI_Win_fence(0, win);
    MPI_Put(x, 1, MPI_DOUBLE, rank, 0, 1, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    MPI_Get(y, 1, MPI_DOUBLE, rank, 1, 1, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    MPI_Accumulate(x, 1, MPI_DOUBLE, rank, 2, 1, MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_flush(rank, win);
    MPI_Win_unlock(rank, win);
  }
  MPI_Win_free(&win);
  timed_finalize(rank, size);
  return 0;
}
