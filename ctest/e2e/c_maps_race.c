/* Libraries mapped while invmw's sampler starts PAPI (2 ranks). Debian's LAMMPS aborted with
 * "malloc(): corrupted top size" in a few runs of a hundred under invmw: PAPI_library_init reads
 * /proc/self/maps twice (counting executable file mappings, then filling an array of that size
 * without a bound), and it ran on the sampler thread while LAMMPS called MPI_Cart_create, for
 * which Open MPI maps its topo components. PAPI then wrote past its array into the heap.
 *
 * The same, made deterministic: this program interposes rewind(3), which PAPI calls between its
 * two passes, and when a thread other than the application's reads /proc/self/maps there, maps
 * MPI's library a few more times, as a dlopen in the application's thread would. invmw must
 * start PAPI where the application cannot map anything at the same time (inside MPI_Init, on
 * the application's thread): then the maps are never read on another thread. Before that fix
 * the rank crashed, or (if the heap damage went unnoticed) the check below failed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"

enum { kExtraMappings = 16 };

static pid_t main_tid;
static atomic_int mapped_during_scan;

static int is_own_maps(FILE* f) {
  char link[64], target[64], want[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fileno(f));
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  snprintf(want, sizeof want, "/proc/%d/maps", (int)getpid());
  return strcmp(target, want) == 0 || strcmp(target, "/proc/self/maps") == 0;
}

/* kExtraMappings executable mappings of MPI's library, each a mapping of its own in the maps. */
static void map_library(void) {
  Dl_info info;
  if (!dladdr((void*)&MPI_Init, &info) || !info.dli_fname) return;
  const int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  for (int i = 0; i < kExtraMappings; ++i)
    mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  close(fd);
}

/* Exported from the executable (ENABLE_EXPORTS), so libpapi's rewind calls arrive here. */
void rewind(FILE* f) {
  static void (*real)(FILE*);
  if (!real) real = (void (*)(FILE*))dlsym(RTLD_NEXT, "rewind");
  if ((pid_t)syscall(SYS_gettid) != main_tid && is_own_maps(f) &&
      atomic_exchange(&mapped_during_scan, 1) == 0)
    map_library();
  real(f);
}

int main(int argc, char** argv) {
  int rank, size;
  main_tid = (pid_t)syscall(SYS_gettid);
  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  /* A damaged heap ends the rank at once (MPI's own abort handler would print a backtrace
   * through that heap and may hang). */
  signal(SIGABRT, SIG_DFL);
  signal(SIGSEGV, SIG_DFL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* Under invmw libpapi is loaded; its start-up is done by the time the sampler has opened its
   * counters (10 ms after MPI_Init at the latest, on an idle machine). Without invmw (the
   * comparison run) there is no PAPI and nothing to wait for. */
  int (*papi_is_initialized)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PAPI_is_initialized");
  const int papi_at_init = papi_is_initialized ? papi_is_initialized() : -1;
  for (int i = 0; papi_is_initialized && papi_is_initialized() == 0 && i < 60000; ++i) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }

  /* What LAMMPS does next: a Cartesian communicator (Open MPI maps its topo components now). */
  int dims[1] = {size}, periods[1] = {1}, one = 1, sum = 0;
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 1, &cart);
  ex_call("MPI_Cart_create", 0, 0);
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, cart);
  ex_call("MPI_Allreduce", 4, 4);
  MPI_Comm_free(&cart);
  ex_call("MPI_Comm_free", 0, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  ex_call("MPI_Barrier", 0, 0);

  if (rank == 0) /* stderr: stdout is compared with a run without invmw, which has no PAPI */
    fprintf(stderr,
            "rank 0: PAPI %s when MPI_Init returned; /proc/self/maps read on another thread: %s\n",
            papi_at_init < 0 ? "absent"
            : papi_at_init   ? "initialised"
                             : "not initialised",
            atomic_load(&mapped_during_scan) ? "yes" : "no");
  EX_CHECK(sum == size);
  EX_CHECK(!papi_is_initialized || papi_is_initialized() != 0);
  EX_CHECK(!atomic_load(&mapped_during_scan));
  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  MPI_Finalize();
  return 0;
}
