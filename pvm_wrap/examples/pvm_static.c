/* A small PVM program for the static-link test (pvm.static, tests/check_pvm_run.py).
 *
 * It is built twice: `pvm_static` with libpvm3.a linked in, and `pvm_static_shared` with the
 * shared libpvm3. The master (started by hand) spawns one worker, the program named by its
 * first argument or else itself:
 *   master -> worker: pvm_send, tag 20, 10 ints (1..10)
 *   worker -> master: pvm_send, tag 21, their sum
 * The master prints the sum, which is known (55), so the output shows that the program ran the
 * same with and without the preload.
 */
#include <pvm3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char* what) {
  fprintf(stderr, "pvm_static: %s failed\n", what);
  pvm_exit();
  return 1;
}

static int worker(void) {
  int parent = pvm_parent(), v[10], i, sum = 0;
  if (pvm_recv(parent, 20) <= 0 || pvm_upkint(v, 10, 1) < 0) return fail("recv 20");
  for (i = 0; i < 10; ++i) sum += v[i];
  pvm_initsend(PvmDataDefault);
  pvm_pkint(&sum, 1, 1);
  if (pvm_send(parent, 21) < 0) return fail("send 21");
  pvm_exit();
  return 0;
}

int main(int argc, char** argv) {
  char self[4096];
  const char* prog = self;
  char* wargv[] = {"worker", NULL};
  int tid, v[10], i, sum = 0;
  ssize_t len;
  if (argc > 1 && strcmp(argv[1], "worker") == 0) return worker();
  if (pvm_mytid() <= 0) return fail("pvm_mytid (is pvmd running?)");
  len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return fail("readlink");
  self[len] = 0;
  if (argc > 1) prog = argv[1];
  if (pvm_spawn((char*)prog, wargv, PvmTaskDefault, "", 1, &tid) != 1) return fail("spawn");
  for (i = 0; i < 10; ++i) v[i] = i + 1;
  pvm_initsend(PvmDataDefault);
  pvm_pkint(v, 10, 1);
  if (pvm_send(tid, 20) < 0) return fail("send 20");
  if (pvm_recv(tid, 21) <= 0 || pvm_upkint(&sum, 1, 1) < 0) return fail("recv 21");
  pvm_exit();
  printf("pvm_static: worker summed %d\n", sum);
  return sum == 55 ? 0 : 1;
}
