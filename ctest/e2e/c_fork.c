/* Children of a rank (2 ranks): system(), popen() and fork() with exit() and _exit(), between
 * counted MPI calls, traced. A forked child is no rank: it must end as it would without invmw
 * (a child calling exit() once hung in the trace writer's condition variable), and it must not
 * write over its rank's profile or trace (its exit handlers once did). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"

static int child_status(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char** argv) {
  int rank, size, token = 0;
  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);

  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  int sys = system("exit 3");
  FILE* p = popen("echo popen-ok", "r");
  char line[32] = {0};
  EX_CHECK(p && fgets(line, sizeof line, p));
  int pc = pclose(p);
  fflush(stdout);
  pid_t a = fork();
  if (a == 0) _exit(2);
  pid_t b = fork();
  if (b == 0) exit(5); /* runs the library's exit handlers in the child */
  int sa = child_status(a), sb = child_status(b);

  if (rank == 0) {
    MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    ex_call("MPI_Send", 4, 0);
  } else {
    MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ex_call("MPI_Recv", 0, 4);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);
  EX_CHECK(WEXITSTATUS(sys) == 3 && WEXITSTATUS(pc) == 0 && sa == 2 && sb == 5);
  if (rank == 0)
    printf("rank 0: system %d popen %s pclose %d _exit %d exit %d\n", WEXITSTATUS(sys),
           line[0] ? "ok" : "-", WEXITSTATUS(pc), sa, sb);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  MPI_Finalize();
  return 0;
}
