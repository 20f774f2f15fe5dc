/* MPI_Comm_spawn (2 parent ranks start 2 children of this program) and
 * MPI_Comm_spawn_multiple (one more child): parent rank 0 sends each spawned world's rank 0 a
 * message over the intercommunicator and gets a reply; both sides disconnect. The parents write
 * their expectations as usual; the children write theirs under
 * $INVMW_TEST_EXPECT_DIR/spawned-<world>/, so the checker can compare each spawned world's
 * own profile too. */
#include <mpi.h>
#include <string.h>
#include <sys/stat.h>

#include "expect.h"

int main(int argc, char** argv) {
  MPI_Comm parent, inter;
  int rank, size, x = 0, errs[2];
  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_get_parent(&parent);
  if (parent == MPI_COMM_NULL) {
    char* cmds[1] = {argv[0]};
    char* args_a[] = {"a", NULL};
    char** args[1] = {args_a};
    int np[1] = {1};
    MPI_Info infos[1] = {MPI_INFO_NULL};
    MPI_Comm_spawn(argv[0], args_a, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs);
    ex_call("MPI_Comm_spawn", 0, 0);
    if (rank == 0) {
      x = 41;
      MPI_Send(&x, 1, MPI_INT, 0, 7, inter);
      ex_call("MPI_Send", 4, 0);
      MPI_Recv(&x, 1, MPI_INT, 0, 8, inter, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, 4);
      EX_CHECK(x == 42);
    }
    MPI_Comm_disconnect(&inter);
    ex_call("MPI_Comm_disconnect", 0, 0);
    args_a[0] = "b";
    MPI_Comm_spawn_multiple(1, cmds, args, np, infos, 0, MPI_COMM_WORLD, &inter, errs);
    ex_call("MPI_Comm_spawn_multiple", 0, 0);
    if (rank == 0) {
      x = 41;
      MPI_Send(&x, 1, MPI_INT, 0, 7, inter);
      ex_call("MPI_Send", 4, 0);
      MPI_Recv(&x, 1, MPI_INT, 0, 8, inter, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, 4);
      EX_CHECK(x == 42);
    }
    MPI_Comm_disconnect(&inter);
    ex_call("MPI_Comm_disconnect", 0, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    ex_call("MPI_Barrier", 0, 0);
    ex_call("MPI_Finalize", 0, 0);
    ex_write(rank);
    if (rank == 0) printf("c_spawn: ok, parents\n");
  } else {
    char dir[4096];
    EX_CHECK(argc > 1);
    if (rank == 0) {
      MPI_Recv(&x, 1, MPI_INT, 0, 7, parent, MPI_STATUS_IGNORE);
      ex_call("MPI_Recv", 0, 4);
      x += 1;
      MPI_Send(&x, 1, MPI_INT, 0, 8, parent);
      ex_call("MPI_Send", 4, 0);
    }
    MPI_Comm_disconnect(&parent);
    ex_call("MPI_Comm_disconnect", 0, 0);
    ex_call("MPI_Finalize", 0, 0);
    if (ex_dir()) {
      snprintf(dir, sizeof dir, "%s/spawned-%s", ex_dir(), argv[1]);
      mkdir(dir, 0755);
      setenv("INVMW_TEST_EXPECT_DIR", dir, 1);
      ex_write(rank);
    }
  }
  MPI_Finalize();
  return 0;
}
