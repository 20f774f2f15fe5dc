/* A stand-in for libpvm3 with free functions, for wrapper_cost.c only: pvm_send and pvm_recv
 * return at once, so the time of a send/receive pair is the preload's own cost plus a call.
 * It defines just what the bench and the preload's start-up call. */
#include <pvm3.h>

int pvm_mytid(void) {
  return 0x40001;
}
int pvm_parent(void) {
  return PvmNoParent;
}
int pvm_getsbuf(void) {
  return 1;
}
int pvm_initsend(int enc) {
  (void)enc;
  return 1;
}
int pvm_pkint(int* p, int n, int s) {
  (void)p;
  (void)n;
  (void)s;
  return 0;
}
int pvm_upkint(int* p, int n, int s) {
  (void)p;
  (void)n;
  (void)s;
  return 0;
}
int pvm_send(int tid, int tag) {
  (void)tid;
  (void)tag;
  return 0;
}
int pvm_recv(int tid, int tag) {
  (void)tid;
  (void)tag;
  return 2;
}
int pvm_bufinfo(int buf, int* bytes, int* tag, int* tid) {
  *bytes = 8;
  *tag = 1;
  *tid = 0x40002;
  return buf > 0 ? 0 : PvmNoSuchBuf;
}
int pvm_exit(void) {
  return 0;
}
