/* A PVM program whose traffic is known exactly, for the PVM end-to-end test.
 *
 * The master (started by hand) spawns NWORK = 3 copies of itself ("worker" argument), so 4
 * tasks run (the master joins the group "invmw_known" before spawning, so the group server
 * is started once). All join the group "invmw_known" and meet in a barrier. Then:
 *   master -> each worker: pvm_send, tag 10, 100 ints (pvm_pkint)            3 sends
 *   master -> all workers: pvm_mcast, tag 11, 50 doubles (pvm_pkdouble)      1 multicast
 *   master -> group:       pvm_bcast, tag 13, 8 ints                         1 broadcast
 *   each worker: pvm_recv tag 10, pvm_recv tag 11, pvm_recv tag 13           9 receives
 *   each worker -> master: pvm_psend, tag 12, 25 doubles                     3 psends
 *   master: pvm_precv tag 12 three times (any source)                        3 precvs
 *           (libpvm3 3.4.6 returns the received length in bytes, not items)
 * Then the receives that may find nothing, and a reduction. Worker w (w = 1..3, its place in
 * the spawn list and so its rank; the master sends it w in the first int of tag 10) sends
 *   worker w -> master: pvm_send, tag 16, 16*w bytes (pvm_pkbyte)            3 sends
 *   worker w -> master: pvm_send, tag 15, 5*w floats (pvm_pkfloat)           3 sends
 *   master: pvm_nrecv, pvm_probe and pvm_trecv (10 ms) of tags never sent   3 misses
 *   master, for w = 1..3: pvm_trecv(w, 15), then pvm_probe(w, 16) and pvm_nrecv(w, 16),
 *           which find their message: PVM keeps the order of two tasks' messages, and
 *           tag 16 was sent before tag 15                                    9 hits
 *   all: pvm_reduce(PvmSum, 4 ints, tag 14, root instance 0 = the master)    4 reduces
 *   all: a final barrier, then pvm_exit.
 * Every task prints what it checked; a wrong value exits with status 1.
 */
#include <pvm3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NWORK 3
#define GROUP "invmw_known"

static int check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "pvm_known: %s failed\n", what);
    pvm_exit();
    exit(1);
  }
  return ok;
}

static int worker(void) {
  int parent = pvm_parent(), i, w;
  int ints[100], small[8], sum[4];
  double d[50], reply[25];
  char bytes[16 * NWORK];
  float floats[5 * NWORK];
  check(pvm_joingroup(GROUP) >= 0, "joingroup");
  check(pvm_barrier(GROUP, NWORK + 1) >= 0, "barrier 1");
  check(pvm_recv(parent, 10) > 0, "recv 10");
  check(pvm_upkint(ints, 100, 1) >= 0 && ints[99] == 99, "upkint");
  check(pvm_recv(parent, 11) > 0, "recv 11");
  check(pvm_upkdouble(d, 50, 1) >= 0 && d[49] == 49.5, "upkdouble");
  check(pvm_recv(-1, 13) > 0, "recv 13");
  check(pvm_upkint(small, 8, 1) >= 0 && small[7] == 7, "upkint bcast");
  for (i = 0; i < 25; ++i) reply[i] = d[i] * 2;
  check(pvm_psend(parent, 12, reply, 25, PVM_DOUBLE) >= 0, "psend");
  check(ints[0] >= 1 && ints[0] <= NWORK, "worker number");
  w = ints[0];
  for (i = 0; i < 16 * w; ++i) bytes[i] = (char)(w + i);
  for (i = 0; i < 5 * w; ++i) floats[i] = (float)(w * 100 + i);
  pvm_initsend(PvmDataDefault);
  pvm_pkbyte(bytes, 16 * w, 1);
  check(pvm_send(parent, 16) >= 0, "send 16");
  pvm_initsend(PvmDataDefault);
  pvm_pkfloat(floats, 5 * w, 1);
  check(pvm_send(parent, 15) >= 0, "send 15");
  for (i = 0; i < 4; ++i) sum[i] = w * (i + 1);
  check(pvm_reduce(PvmSum, sum, 4, PVM_INT, 14, GROUP, 0) >= 0, "reduce");
  check(pvm_barrier(GROUP, NWORK + 1) >= 0, "barrier 2");
  pvm_lvgroup(GROUP);
  pvm_exit();
  return 0;
}

int main(int argc, char** argv) {
  int tids[NWORK], ints[100], small[8], i, n;
  double d[50], reply[25];
  char self[4096];
  ssize_t len;
  if (argc > 1 && strcmp(argv[1], "worker") == 0) return worker();
  check(pvm_mytid() > 0, "pvm_mytid (is pvmd running?)");
  len = readlink("/proc/self/exe", self, sizeof self - 1);
  check(len > 0, "readlink");
  self[len] = 0;
  /* Joining first starts the group server once, before the workers race to start it. */
  /* Instance 0: the root of the reduction. */
  check(pvm_joingroup(GROUP) == 0, "joingroup");
  {
    char* wargv[] = {"worker", NULL};
    n = pvm_spawn(self, wargv, PvmTaskDefault, "", NWORK, tids);
  }
  check(n == NWORK, "spawn");
  check(pvm_barrier(GROUP, NWORK + 1) >= 0, "barrier 1");
  for (i = 0; i < 100; ++i) ints[i] = i;
  for (i = 0; i < 50; ++i) d[i] = i + 0.5;
  for (i = 0; i < 8; ++i) small[i] = i;
  for (i = 0; i < NWORK; ++i) {
    ints[0] = i + 1; /* the worker's number */
    pvm_initsend(PvmDataDefault);
    pvm_pkint(ints, 100, 1);
    check(pvm_send(tids[i], 10) >= 0, "send");
  }
  pvm_initsend(PvmDataDefault);
  pvm_pkdouble(d, 50, 1);
  check(pvm_mcast(tids, NWORK, 11) >= 0, "mcast");
  pvm_initsend(PvmDataDefault);
  pvm_pkint(small, 8, 1);
  check(pvm_bcast(GROUP, 13) >= 0, "bcast");
  for (i = 0; i < NWORK; ++i) {
    int rtid, rtag, rlen;
    check(pvm_precv(-1, 12, reply, 25, PVM_DOUBLE, &rtid, &rtag, &rlen) >= 0, "precv");
    if (rlen != 25 * (int)sizeof(double) || rtag != 12 || reply[24] != 49.0)
      fprintf(stderr, "pvm_known: precv got rlen %d rtag %d reply[24] %g\n", rlen, rtag, reply[24]);
    check(rlen == 25 * (int)sizeof(double) && rtag == 12 && reply[24] == 49.0, "precv data");
  }
  {
    struct timeval short_wait = {0, 10000}, long_wait = {30, 0};
    char bytes[16 * NWORK];
    float floats[5 * NWORK];
    int sum[4] = {0, 0, 0, 0}, w;
    check(pvm_nrecv(-1, 97) == 0, "nrecv of a tag never sent");
    check(pvm_probe(-1, 98) == 0, "probe of a tag never sent");
    check(pvm_trecv(-1, 99, &short_wait) == 0, "trecv of a tag never sent");
    for (w = 1; w <= NWORK; ++w) {
      check(pvm_trecv(tids[w - 1], 15, &long_wait) > 0, "trecv 15");
      check(pvm_upkfloat(floats, 5 * w, 1) >= 0 && floats[5 * w - 1] == w * 100 + 5 * w - 1,
            "upkfloat");
      check(pvm_probe(tids[w - 1], 16) > 0, "probe 16 (sent before 15)");
      check(pvm_nrecv(tids[w - 1], 16) > 0, "nrecv 16 (sent before 15)");
      check(pvm_upkbyte(bytes, 16 * w, 1) >= 0 && bytes[16 * w - 1] == (char)(w + 16 * w - 1),
            "upkbyte");
    }
    check(pvm_reduce(PvmSum, sum, 4, PVM_INT, 14, GROUP, 0) >= 0, "reduce");
    /* The master adds 0; worker w adds w * (i + 1). */
    check(sum[0] == 6 && sum[3] == 24, "reduce sum");
  }
  check(pvm_barrier(GROUP, NWORK + 1) >= 0, "barrier 2");
  pvm_lvgroup(GROUP);
  pvm_exit();
  printf("pvm_known: %d tasks done\n", NWORK + 1);
  return 0;
}
