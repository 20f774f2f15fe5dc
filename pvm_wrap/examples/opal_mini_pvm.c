/* opal-mini-pvm: opal-mini (experiments/workloads/opal_mini.c) on PVM, as Opal ran in the paper.
 *
 * The same computation and message pattern as the MPI program, with the kernels taken from the
 * same file (opal_kernels.c), so that both print the same energies for the same input:
 *   the master (client) is started by hand and spawns p copies of itself as servers
 *   (--p P, default 2); every task generates the system from (n, g, seed);
 *   every 1/u steps, an update call:  client -> each server: coordinates (24 n bytes)
 *                                     server: rebuild the pair list (kernel a2)
 *                                     server -> client: empty completion message
 *   every step, an energy call:       client -> each server: coordinates (24 n bytes)
 *                                     server: LJ + Coulomb on its pairs (kernel a3)
 *                                     server -> client: energies, gradients (24 n + 40 bytes)
 *   client: sum the replies in server order, bonded terms (kernel a4), one Verlet step.
 * Each call is bracketed by pvm_barrier on the group "opal_mini" (p + 1 members) unless
 * --no-barriers. Messages are packed raw (PvmDataRaw): the tasks share one architecture and
 * doubles travel bit for bit. Options are those of opal-mini (--help) plus --p; --timers writes
 * the client's wall time and its own phase times in the same JSON keys, measured the same way.
 *
 * Usage: opal-mini-pvm --p 2 --n 1000 --s 10 [opal-mini options]   (a pvmd must be running) */
#include <math.h>
#include <pvm3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opal_kernels.h"
#include "opal_options.h"

enum { kTagUpdate = 1, kTagEnergy = 2, kTagDone = 3, kTagResult = 4 };
enum { kHdrLj, kHdrCoulomb, kHdrUpdateTime, kHdrEnergyTime, kHdrPairs, kHdrSize };
#define GROUP "opal_mini"
#define MAX_SERVERS 64

static const double kTimeStepFs = 1.0;
static int g_servers;

static double wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void barrier_if(const opal_options* o) {
  if (o->barriers && pvm_barrier(GROUP, g_servers + 1) < 0) {
    fprintf(stderr, "opal-mini-pvm: pvm_barrier failed\n");
    pvm_exit();
    exit(3);
  }
}

static void die(const char* what) {
  fprintf(stderr, "opal-mini-pvm: %s\n", what);
  pvm_exit();
  exit(3);
}

static void send_doubles(int tid, int tag, const double* d, int count) {
  pvm_initsend(PvmDataRaw);
  if (count > 0) pvm_pkdouble((double*)d, count, 1);
  if (pvm_send(tid, tag) < 0) die("pvm_send failed");
}

static void recv_doubles(int tid, int tag, double* d, int count) {
  if (pvm_recv(tid, tag) < 0) die("pvm_recv failed");
  if (count > 0) pvm_upkdouble(d, count, 1);
}

static void run_server(const opal_options* o, const opal_system* sys, int server) {
  const int n = sys->n, parent = pvm_parent();
  opal_candidates cand;
  opal_pair_list list;
  if (opal_candidates_build(&cand, n, o->seed, server - 1, g_servers) != 0 ||
      opal_pair_list_init(&list, n) != 0)
    die("out of memory (server pair lists)");
  double* x = malloc(sizeof(double) * 3 * (size_t)n);
  double* reply = malloc(sizeof(double) * (kHdrSize + 3 * (size_t)n));
  if (!x || !reply) die("out of memory (server buffers)");
  double* grad = reply + kHdrSize;
  for (int step = 0; step < o->steps; ++step) {
    double t_update = 0.0;
    if (step % o->update_interval == 0) {
      barrier_if(o);
      recv_doubles(parent, kTagUpdate, x, 3 * n);
      double t0 = wtime();
      if (opal_pairlist_update(&cand, x, o->rc, &list) < 0) die("out of memory (pair list)");
      t_update = wtime() - t0;
      barrier_if(o);
      send_doubles(parent, kTagDone, NULL, 0);
    }
    barrier_if(o);
    recv_doubles(parent, kTagEnergy, x, 3 * n);
    double t0 = wtime();
    memset(grad, 0, sizeof(double) * 3 * (size_t)n);
    opal_pair_energy(sys, &list, x, &reply[kHdrLj], &reply[kHdrCoulomb], grad);
    reply[kHdrEnergyTime] = wtime() - t0;
    reply[kHdrUpdateTime] = t_update;
    reply[kHdrPairs] = (double)list.pairs;
    barrier_if(o);
    send_doubles(parent, kTagResult, reply, kHdrSize + 3 * n);
  }
  free(x);
  free(reply);
  opal_pair_list_free(&list);
  opal_candidates_free(&cand);
}

static void run_client(const opal_options* o, opal_system* sys, const int* tids) {
  const int n = sys->n, servers = g_servers;
  const size_t reply_len = kHdrSize + 3 * (size_t)n;
  double* v = calloc(3 * (size_t)n, sizeof(double));
  double* acc = calloc(3 * (size_t)n, sizeof(double));
  double* grad = malloc(sizeof(double) * 3 * (size_t)n);
  double* replies = malloc(sizeof(double) * reply_len * (size_t)servers);
  if (!v || !acc || !grad || !replies) die("out of memory (client buffers)");
  double e_lj = 0, e_coulomb = 0, e_bonded = 0;
  double par_comp = 0, seq_comp = 0, send_t = 0, recv_t = 0, barrier_t = 0;
  const double t_start = wtime();
  for (int step = 0; step < o->steps; ++step) {
    double t0, t1, max_step = 0;
    if (step % o->update_interval == 0) {
      t0 = wtime();
      barrier_if(o);
      t1 = wtime();
      barrier_t += t1 - t0;
      for (int s = 0; s < servers; ++s) send_doubles(tids[s], kTagUpdate, sys->x, 3 * n);
      t0 = wtime();
      send_t += t0 - t1;
      barrier_if(o);
      t1 = wtime();
      barrier_t += t1 - t0;
      for (int s = 0; s < servers; ++s) recv_doubles(tids[s], kTagDone, NULL, 0);
      recv_t += wtime() - t1;
    }
    t0 = wtime();
    barrier_if(o);
    t1 = wtime();
    barrier_t += t1 - t0;
    for (int s = 0; s < servers; ++s) send_doubles(tids[s], kTagEnergy, sys->x, 3 * n);
    t0 = wtime();
    send_t += t0 - t1;
    barrier_if(o);
    t1 = wtime();
    barrier_t += t1 - t0;
    for (int s = 0; s < servers; ++s)
      recv_doubles(tids[s], kTagResult, replies + (size_t)s * reply_len, (int)reply_len);
    t0 = wtime();
    recv_t += t0 - t1;
    /* Sequential part, in the MPI program's order: servers in order, bonded, integrate. */
    e_lj = e_coulomb = 0.0;
    memset(grad, 0, sizeof(double) * 3 * (size_t)n);
    for (int s = 0; s < servers; ++s) {
      const double* r = replies + (size_t)s * reply_len;
      e_lj += r[kHdrLj];
      e_coulomb += r[kHdrCoulomb];
      for (size_t k = 0; k < 3 * (size_t)n; ++k) grad[k] += r[kHdrSize + k];
      if (r[kHdrUpdateTime] + r[kHdrEnergyTime] > max_step)
        max_step = r[kHdrUpdateTime] + r[kHdrEnergyTime];
    }
    e_bonded = opal_bonded(sys, sys->x, grad);
    opal_integrate(sys, sys->x, v, acc, grad, kTimeStepFs, step == 0);
    seq_comp += wtime() - t0;
    par_comp += max_step;
    if (o->verbose)
      fprintf(stderr, "opal-mini-pvm: step %d lj %.10g coulomb %.10g bonded %.10g\n", step, e_lj,
              e_coulomb, e_bonded);
  }
  const double wall = wtime() - t_start;
  if (o->timers_path) {
    /* The waits for the servers hold their computation; what is left is sync or transfer. */
    const double comm = send_t + (o->barriers ? recv_t : fmax(0, recv_t - par_comp));
    const double sync = o->barriers ? fmax(0, barrier_t - par_comp) : 0;
    const double idle = fmax(0, wall - par_comp - seq_comp - comm - sync);
    FILE* f = fopen(o->timers_path, "w");
    if (!f) {
      fprintf(stderr, "opal-mini-pvm: --timers %s: cannot open for writing\n", o->timers_path);
    } else {
      fprintf(f,
              "{\"t_wall\":%.9g,\"t_par_comp\":%.9g,\"t_seq_comp\":%.9g,\"t_comm\":%.9g,"
              "\"t_sync\":%.9g,\"t_idle\":%.9g,\"steps\":%d,\"p\":%d,\"n\":%d,"
              "\"middleware\":\"pvm\"}\n",
              wall, par_comp, seq_comp, comm, sync, idle, o->steps, servers, n);
      fclose(f);
    }
  }
  printf("energy %.17g %.17g %.17g %.17g\n", e_lj + e_coulomb + e_bonded, e_lj, e_coulomb,
         e_bonded);
  fflush(stdout);
  free(v);
  free(acc);
  free(grad);
  free(replies);
}

int main(int argc, char** argv) {
  /* Our own options (--p, and --pvm-server K for spawned copies) are taken out before the
   * opal-mini parser sees the rest. */
  char* rest[256];
  int nrest = 0, server = 0;
  g_servers = 2;
  for (int i = 0; i < argc && nrest < 255; ++i) {
    if (i > 0 && strcmp(argv[i], "--p") == 0 && i + 1 < argc) {
      g_servers = atoi(argv[++i]);
      if (g_servers < 1 || g_servers > MAX_SERVERS) {
        fprintf(stderr, "opal-mini-pvm: --p %s: expected 1..%d servers\n", argv[i], MAX_SERVERS);
        return 2;
      }
    } else if (i > 0 && strcmp(argv[i], "--pvm-server") == 0 && i + 1 < argc) {
      server = atoi(argv[++i]);
    } else {
      rest[nrest++] = argv[i];
    }
  }
  rest[nrest] = NULL;
  opal_options o;
  char error[512];
  int status = opal_options_parse(nrest, rest, &o, error, sizeof error);
  if (status == OPAL_OPTIONS_HELP) {
    printf("opal-mini-pvm: opal-mini on PVM; --p P sets the number of servers (default 2).\n");
    opal_options_usage(stdout);
    return 0;
  }
  if (status != OPAL_OPTIONS_OK) {
    fprintf(stderr, "opal-mini-pvm: %s\n(opal-mini-pvm --help explains the options)\n", error);
    return 2;
  }
  if (pvm_mytid() < 0) {
    fprintf(stderr, "opal-mini-pvm: cannot enrol in PVM (is pvmd running?)\n");
    return 3;
  }
  int tids[MAX_SERVERS];
  if (server == 0) {
    if (o.barriers && pvm_joingroup(GROUP) < 0) die("pvm_joingroup failed");
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) die("cannot find my own executable");
    self[len] = 0;
    for (int s = 1; s <= g_servers; ++s) {
      /* Each server gets the options, its number and p. */
      char num[16], p[16];
      char* sargv[260];
      int k = 0;
      snprintf(num, sizeof num, "%d", s);
      snprintf(p, sizeof p, "%d", g_servers);
      for (int i = 1; i < nrest && k < 250; ++i) sargv[k++] = rest[i];
      sargv[k++] = "--pvm-server";
      sargv[k++] = num;
      sargv[k++] = "--p";
      sargv[k++] = p;
      sargv[k] = NULL;
      if (pvm_spawn(self, sargv, PvmTaskDefault, "", 1, &tids[s - 1]) != 1)
        die("pvm_spawn of a server failed");
    }
  } else if (o.barriers && pvm_joingroup(GROUP) < 0) {
    die("pvm_joingroup failed");
  }
  opal_system sys;
  if (opal_system_generate(&sys, o.n, o.g, o.seed) != 0) die("out of memory (system)");
  if (server == 0)
    run_client(&o, &sys, tids);
  else
    run_server(&o, &sys, server);
  opal_system_free(&sys);
  if (o.barriers) {
    /* Leave together: a member leaving while others still wait would break their barrier. */
    barrier_if(&o);
    pvm_lvgroup(GROUP);
  }
  pvm_exit();
  return 0;
}
