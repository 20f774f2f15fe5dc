/* Call sites (issue 22): MPI_Send and MPI_Recv from several known lines of the program and of a
   shared library (c_callsites_lib.c). Each call line carries a SITE comment with the totals over
   ranks that check_callsites.py expects at exactly that file:line. With the argument "many", 64
   more call sites (MPI_Barrier, one line, distinct addresses) overflow a small call-site table
   (INVMW_WRAP_CALLSITE_SLOTS=16). With the argument "hang", every rank writes its pid to
   ready-rank<R> in the working directory after its calls and sleeps until it is killed
   (check_callsites.py --kill-rank SIGKILLs one rank then). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int lib_send(const void* buf, int n, int dest);

#define B4 MPI_Barrier(MPI_COMM_WORLD); MPI_Barrier(MPI_COMM_WORLD); MPI_Barrier(MPI_COMM_WORLD); MPI_Barrier(MPI_COMM_WORLD);
#define B16 B4 B4 B4 B4

int main(int argc, char** argv) {
  int rank, i;
  char buf[64];
  memset(buf, 0, sizeof buf);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    for (i = 0; i < 3; ++i) MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD); /* SITE MPI_Send calls=3 sent=24 */
    MPI_Send(buf, 16, MPI_CHAR, 1, 0, MPI_COMM_WORLD); /* SITE MPI_Send calls=1 sent=16 */
    lib_send(buf, 32, 1); /* CALLER of lib_send */
  } else if (rank == 1) {
    for (i = 0; i < 4; ++i) MPI_Recv(buf, 64, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* SITE MPI_Recv calls=4 recv=40 */
    MPI_Recv(buf, 64, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* SITE MPI_Recv calls=1 recv=32 */
  }
  if (argc > 1 && strcmp(argv[1], "many") == 0) {
    B16 B16 B16 B16
  }
  if (argc > 1 && strcmp(argv[1], "hang") == 0) {
    char name[64], tmp[64];
    FILE* f;
    snprintf(name, sizeof name, "ready-rank%d", rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 || rename(tmp, name) != 0)
      return 4;
    for (i = 0; i < 600; ++i) sleep(1); /* until killed; the checker's timeout is far shorter */
    fprintf(stderr, "c_callsites: rank %d was never killed\n", rank);
  }
  MPI_Finalize();
  if (rank == 0) printf("c_callsites: ok\n");
  return 0;
}
