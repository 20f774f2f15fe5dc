/* Added cost of libinvmw-pvm.so per pvm_send/pvm_recv pair, without the daemon's latency.
 * Linked against fake_pvm.c (functions that return at once); run it with and without the
 * preload (pvm_wrap/bench/pvm_overhead.sh): the difference of the printed pair_ns is what the
 * preload adds to every pair (recording, pvm_bufinfo look-ups for bytes, tag and source).
 * Usage: pvm_wrapper_cost [REPS]   prints the best of 7 batches. */
#include <pvm3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 2000000, me = pvm_mytid(), b, i;
  double best = 1e30;
  for (b = 0; b < 7; ++b) {
    double t0 = now();
    for (i = 0; i < reps; ++i) {
      pvm_send(me + 1, 1);
      pvm_recv(me + 1, 1);
    }
    double dt = (now() - t0) / reps;
    if (dt < best) best = dt;
  }
  printf("{\"bench\":\"pvm_wrapper_cost\",\"reps\":%d,\"pair_ns\":%.1f}\n", reps, best * 1e9);
  pvm_exit();
  return 0;
}
