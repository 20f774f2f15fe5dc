/* Preloaded after libinvmw-pvm.so by the test pvm.known_late_send: pvm_send and pvm_mcast return
 * 20 ms after the message left, as when a task is descheduled right after sending on a loaded
 * machine. invmw's wrappers reach these through dlsym(RTLD_NEXT), and the group library's own
 * sends (pvm_bcast, pvm_reduce) reach invmw's wrappers first, so a send record stamped when a
 * send returned comes after the receive it is paired with, which `invmw trace check` reports. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

static void late(void) {
  struct timespec ts = {0, 20 * 1000 * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int pvm_send(int tid, int tag) {
  static int (*real)(int, int);
  if (!real) real = (int (*)(int, int))dlsym(RTLD_NEXT, "pvm_send");
  int rc = real(tid, tag);
  late();
  return rc;
}

int pvm_mcast(int* tids, int n, int tag) {
  static int (*real)(int*, int, int);
  if (!real) real = (int (*)(int*, int, int))dlsym(RTLD_NEXT, "pvm_mcast");
  int rc = real(tids, n, tag);
  late();
  return rc;
}
