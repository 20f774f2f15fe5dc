/* Call sites in a library opened with dlopen and closed before MPI_Finalize (issue 22): the
   rank must record its mappings when the call comes from the new object, or the address could
   not be resolved after the run. argv[1]: the module (c_callsites_dlmod.c). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int rank;
  char buf[16] = {0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    int (*dl_send)(const void*, int, int) = h ? (int (*)(const void*, int, int))dlsym(h, "dl_send") : 0;
    if (!dl_send) {
      fprintf(stderr, "c_callsites_dl: %s\n", dlerror());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    dl_send(buf, 12, 1);
    dl_send(buf, 4, 1);
    dlclose(h);
  } else if (rank == 1) {
    MPI_Recv(buf, 16, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Recv(buf, 16, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* SITE MPI_Recv calls=2 recv=16 */
  }
  MPI_Finalize();
  if (rank == 0) printf("c_callsites_dl: ok\n");
  return 0;
}
