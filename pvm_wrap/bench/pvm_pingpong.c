/* A pvm_send/pvm_recv ping-pong through the daemons: a master and one spawned copy exchange a
 * message REPS times; the master prints the mean half round trip. Run with and without
 * libinvmw-pvm.so preloaded (pvm_wrap/bench/pvm_overhead.sh). The daemon's latency (100-400 us
 * here, varying run to run) hides the preload's cost; wrapper_cost.c measures that alone.
 * Usage: pvm_pingpong [REPS] [BYTES] */
#include <pvm3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  int echo = argc > 1 && strcmp(argv[1], "echo") == 0;
  int reps = argc > 1 && !echo ? atoi(argv[1]) : 10000;
  int bytes = argc > 2 ? atoi(argv[2]) : 8, i, child;
  char* buf = calloc(1, bytes > 0 ? bytes : 1);
  if (echo) {
    int parent = pvm_parent();
    for (;;) {
      pvm_recv(parent, -1);
      int tag, len, src;
      pvm_bufinfo(pvm_getrbuf(), &len, &tag, &src);
      if (tag == 2) break;
      pvm_upkbyte(buf, len, 1);
      pvm_initsend(PvmDataRaw);
      pvm_pkbyte(buf, len, 1);
      pvm_send(parent, 1);
    }
    pvm_exit();
    return 0;
  }
  if (pvm_mytid() < 0) return 1;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = 0;
  char* cargv[] = {"echo", NULL};
  if (pvm_spawn(self, cargv, PvmTaskDefault, "", 1, &child) != 1) {
    fprintf(stderr, "pvm_pingpong: spawn failed\n");
    pvm_exit();
    return 1;
  }
  double t0 = 0;
  for (i = -100; i < reps; ++i) { /* 100 warm-up rounds */
    if (i == 0) t0 = now();
    pvm_initsend(PvmDataRaw);
    pvm_pkbyte(buf, bytes, 1);
    pvm_send(child, 1);
    pvm_recv(child, 1);
    pvm_upkbyte(buf, bytes, 1);
  }
  double dt = now() - t0;
  pvm_initsend(PvmDataRaw);
  pvm_send(child, 2);
  printf("{\"bench\":\"pvm_pingpong\",\"bytes\":%d,\"reps\":%d,\"half_round_trip_us\":%.3f}\n",
         bytes, reps, dt / reps / 2 * 1e6);
  pvm_exit();
  return 0;
}
