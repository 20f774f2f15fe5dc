/* The application's own signal handlers (2 ranks), installed before MPI_Init: a SIGTERM
 * handler that only counts, and a SIGSEGV handler that unprotects the faulting page and lets
 * the write go on (a garbage collector's write barrier). The run carries on after each signal,
 * so the profile must too: every counted call after the signals, a complete profile. */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "expect.h"

static volatile sig_atomic_t terms = 0, faults = 0;
static long page_size;

static void on_term(int sig) {
  (void)sig;
  ++terms;
}

static void on_segv(int sig, siginfo_t* si, void* ctx) {
  (void)sig;
  (void)ctx;
  ++faults;
  char* page = (char*)((unsigned long)si->si_addr & ~(unsigned long)(page_size - 1));
  mprotect(page, (size_t)page_size, PROT_READ | PROT_WRITE);
}

int main(int argc, char** argv) {
  int rank, size, i, x = 1, y = 0;
  page_size = sysconf(_SC_PAGESIZE);
  struct sigaction st, ss;
  memset(&st, 0, sizeof st);
  st.sa_handler = on_term;
  sigaction(SIGTERM, &st, NULL);
  memset(&ss, 0, sizeof ss);
  ss.sa_sigaction = on_segv;
  ss.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &ss, NULL);
  char* mem = mmap(NULL, (size_t)page_size * 4, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EX_CHECK(mem != MAP_FAILED);

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EX_CHECK(size == 2);
  for (i = 0; i < 5; ++i) {
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ex_call("MPI_Allreduce", 4, 4);
  }
  raise(SIGTERM);
  for (i = 0; i < 4; ++i) {
    mem[i * page_size] = 1; /* faults once per page */
    mprotect(mem, (size_t)page_size * 4, PROT_READ);
  }
  EX_CHECK(terms == 1 && faults == 4);
  for (i = 0; i < 10; ++i) {
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ex_call("MPI_Allreduce", 4, 4);
  }
  if (rank == 0) printf("c_sighandler: terms %d faults %d sum %d\n", (int)terms, (int)faults, y);
  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  MPI_Finalize();
  return 0;
}
