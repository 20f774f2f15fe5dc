/* Test-side bookkeeping for the end-to-end tests (C and C++).
 *
 * Each test program records what it called (function -> calls, bytes sent, bytes received,
 * following the byte rules of invmw's profile contract) and writes
 * $INVMW_TEST_EXPECT_DIR/expected-rank<N>.json; run_and_check.py compares that file with the
 * profile invmw wrote. The file is written atomically (temporary file + rename), so its
 * presence also tells the checker that the rank has finished its counted calls.
 * Thread-safe: the MPI_THREAD_MULTIPLE test records from several threads. */
#ifndef INVMW_E2E_EXPECT_H
#define INVMW_E2E_EXPECT_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EX_MAX_FUNCS 64

typedef struct {
  char name[48];
  long long calls, sent, recv;
} ex_entry;

static ex_entry ex_tab[EX_MAX_FUNCS];
static int ex_n;
static pthread_mutex_t ex_mu = PTHREAD_MUTEX_INITIALIZER;

/* Adds `calls` calls of `name` moving `sent` and `recv` bytes in total. */
static void ex_add(const char* name, long long calls, long long sent, long long recv) {
  int i;
  pthread_mutex_lock(&ex_mu);
  for (i = 0; i < ex_n; ++i)
    if (strcmp(ex_tab[i].name, name) == 0) break;
  if (i == ex_n) {
    if (ex_n == EX_MAX_FUNCS) {
      fprintf(stderr, "expect.h: too many functions\n");
      abort();
    }
    snprintf(ex_tab[i].name, sizeof ex_tab[i].name, "%s", name);
    ex_n++;
  }
  ex_tab[i].calls += calls;
  ex_tab[i].sent += sent;
  ex_tab[i].recv += recv;
  pthread_mutex_unlock(&ex_mu);
}

/* One call of `name`. */
static void ex_call(const char* name, long long sent, long long recv) {
  ex_add(name, 1, sent, recv);
}

static const char* ex_dir(void) {
  return getenv("INVMW_TEST_EXPECT_DIR");
}

/* Writes expected-rank<rank>.json; a no-op when INVMW_TEST_EXPECT_DIR is unset. */
static void ex_write(int rank) {
  const char* dir = ex_dir();
  char path[4096], tmp[4200];
  FILE* f;
  int i;
  if (!dir || !*dir) return;
  snprintf(path, sizeof path, "%s/expected-rank%d.json", dir, rank);
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  f = fopen(tmp, "w");
  if (!f) {
    perror(tmp);
    exit(90);
  }
  pthread_mutex_lock(&ex_mu);
  fprintf(f, "{\"rank\": %d, \"functions\": {", rank);
  for (i = 0; i < ex_n; ++i)
    fprintf(f, "%s\n  \"%s\": {\"calls\": %lld, \"bytes_sent\": %lld, \"bytes_recv\": %lld}",
            i ? "," : "", ex_tab[i].name, ex_tab[i].calls, ex_tab[i].sent, ex_tab[i].recv);
  fprintf(f, "\n}}\n");
  pthread_mutex_unlock(&ex_mu);
  fclose(f);
  if (rename(tmp, path) != 0) {
    perror(path);
    exit(90);
  }
}

/* Blocks (without MPI) until every rank of a job of `size` ranks has written its file: used
 * before an abnormal end so that the other ranks' counted calls are all complete. */
static inline void ex_wait_all_written(int size) {
  const char* dir = ex_dir();
  char path[4096];
  int r;
  if (!dir || !*dir) return;
  for (r = 0; r < size; ++r) {
    snprintf(path, sizeof path, "%s/expected-rank%d.json", dir, r);
    while (access(path, F_OK) != 0) usleep(10000);
  }
}

/* Fails the program (exit 2) with a message when a data check fails. */
#define EX_CHECK(cond)                                                         \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

#endif
