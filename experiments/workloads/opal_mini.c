/* opal-mini: a client/server molecular-dynamics code with the structure of parallel Opal.
 *
 * Rank 0 is the client, ranks 1..p the servers. Every rank generates the same molecular system
 * from (n, g, seed) (opal_kernels.h), as Opal replicates its parameters on every server, so the
 * only data moving during the run are coordinates, energies and gradients, in the pattern of
 * Opal's Sciddle remote procedure calls (../shared/seeds/004_*.txt, section 2):
 *
 *   every 1/u steps, an update call:  client -> each server: coordinates (24 n bytes)
 *                                     server: rebuild the pair list (kernel a2)
 *                                     server -> client: empty completion message
 *   every step, an energy call:       client -> each server: coordinates (24 n bytes)
 *                                     server: LJ + Coulomb on its pairs (kernel a3)
 *                                     server -> client: energies, gradients (24 n + 40 bytes)
 *   client: sum the replies, bonded terms (kernel a4), one velocity-Verlet step.
 *
 * Each call is bracketed by MPI_Barrier, as in the instrumented Opal: one before the client's
 * coordinate messages and one after the servers' computation, before the replies, so that
 * communication, computation and synchronization occupy separate intervals (--no-barriers
 * removes both). Per step that is p (u + 1) coordinate messages, p u empty replies, p energy
 * replies and 2 (u + 1) barriers; nothing else is sent between MPI_Init and MPI_Finalize.
 *
 * The energy reply's 40-byte header carries, besides the two energies, the server's own
 * compute times for the step and its listed pairs, so the client can report the application's
 * view of the time components (--timers) without extra messages. */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal_kernels.h"
#include "opal_options.h"

enum { kTagUpdate = 1, kTagEnergy = 2, kTagDone = 3, kTagResult = 4 };

/* Header of the energy reply, before the 3n gradient components. */
enum { kHdrLj, kHdrCoulomb, kHdrUpdateTime, kHdrEnergyTime, kHdrPairs, kHdrSize };

static const double kTimeStepFs = 1.0;

static int is_update_step(const opal_options* o, int step) {
  return step % o->update_interval == 0;
}

static void barrier_if(const opal_options* o) {
  if (o->barriers) MPI_Barrier(MPI_COMM_WORLD);
}

static void die_no_memory(const char* what) {
  fprintf(stderr, "opal-mini: out of memory (%s)\n", what);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

/* ---- server ------------------------------------------------------------------------------ */

static void run_server(const opal_options* o, const opal_system* sys, int server, int servers) {
  const int n = sys->n;
  opal_candidates cand;
  opal_pair_list list;
  if (opal_candidates_build(&cand, n, o->seed, server - 1, servers) != 0 ||
      opal_pair_list_init(&list, n) != 0)
    die_no_memory("server pair lists");
  double* x = malloc(sizeof(double) * 3 * (size_t)n);
  double* reply = malloc(sizeof(double) * (kHdrSize + 3 * (size_t)n));
  if (!x || !reply) die_no_memory("server buffers");
  double* grad = reply + kHdrSize;

  /* The server's own phase timers, printed with --verbose: time inside the barriers, the
   * coordinate receives (which include waiting for the client), the replies, and compute. */
  double t_barrier = 0, t_recv = 0, t_send = 0, t_update_sum = 0, t_energy_sum = 0;
  const double t_start = MPI_Wtime();
  for (int step = 0; step < o->steps; ++step) {
    double t_update = 0.0, t0, t1;
    if (is_update_step(o, step)) {
      t0 = MPI_Wtime();
      barrier_if(o);
      t1 = MPI_Wtime();
      MPI_Recv(x, 3 * n, MPI_DOUBLE, 0, kTagUpdate, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      t_barrier += t1 - t0;
      t0 = MPI_Wtime();
      t_recv += t0 - t1;
      if (opal_pairlist_update(&cand, x, o->rc, &list) < 0) die_no_memory("pair list");
      t1 = MPI_Wtime();
      t_update = t1 - t0;
      barrier_if(o);
      t0 = MPI_Wtime();
      t_barrier += t0 - t1;
      MPI_Send(NULL, 0, MPI_BYTE, 0, kTagDone, MPI_COMM_WORLD);
      t_send += MPI_Wtime() - t0;
    }
    t0 = MPI_Wtime();
    barrier_if(o);
    t1 = MPI_Wtime();
    t_barrier += t1 - t0;
    MPI_Recv(x, 3 * n, MPI_DOUBLE, 0, kTagEnergy, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    t0 = MPI_Wtime();
    t_recv += t0 - t1;
    memset(grad, 0, sizeof(double) * 3 * (size_t)n);
    opal_pair_energy(sys, &list, x, &reply[kHdrLj], &reply[kHdrCoulomb], grad);
    t1 = MPI_Wtime();
    reply[kHdrEnergyTime] = t1 - t0;
    reply[kHdrUpdateTime] = t_update;
    reply[kHdrPairs] = (double)list.pairs;
    t_update_sum += t_update;
    t_energy_sum += t1 - t0;
    barrier_if(o);
    t0 = MPI_Wtime();
    t_barrier += t0 - t1;
    MPI_Send(reply, kHdrSize + 3 * n, MPI_DOUBLE, 0, kTagResult, MPI_COMM_WORLD);
    t_send += MPI_Wtime() - t0;
  }
  if (o->verbose)
    fprintf(stderr,
            "opal-mini: server %d own timers: wall %.6f update %.6f energy %.6f recv %.6f "
            "send %.6f barrier %.6f s, %zu of %zu candidate pairs listed\n",
            server, MPI_Wtime() - t_start, t_update_sum, t_energy_sum, t_recv, t_send, t_barrier,
            list.pairs, cand.pairs);
  free(x);
  free(reply);
  opal_pair_list_free(&list);
  opal_candidates_free(&cand);
}

/* ---- client ------------------------------------------------------------------------------ */

/* The client's phase timers (seconds). Raw intervals first, then the derived components. */
typedef struct {
  double wall, send, recv, barrier, seq;
  double par_comp, sync, comm, idle;
  double* server_update; /* per server: summed update / energy compute times */
  double* server_energy;
  double* server_pairs; /* pairs listed at the last update */
} client_timers;

/* One call's wait: the interval in which the client waits for the servers' computation (the
 * end barrier, or without barriers its receives). The part covered by the slowest server's
 * compute time is parallel computation; the rest is synchronization (barrier) or transfer. */
static double unexplained_wait(double wait, double slowest_compute) {
  return wait > slowest_compute ? wait - slowest_compute : 0.0;
}

static double covered_wait(double wait, double slowest_compute) {
  return wait < slowest_compute ? wait : slowest_compute;
}

static void write_timers(const opal_options* o, const client_timers* t, int servers, int updates,
                         const char* path) {
  FILE* f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "opal-mini: --timers %s: cannot open for writing\n", path);
    return;
  }
  fprintf(f,
          "{\"t_wall\":%.9g,\"t_par_comp\":%.9g,\"t_seq_comp\":%.9g,\"t_comm\":%.9g,"
          "\"t_sync\":%.9g,\"t_idle\":%.9g,\"steps\":%d,\"p\":%d,\"n\":%d,\"g\":%.9g,"
          "\"rc\":%.9g,\"u\":%.9g,\"update_interval\":%d,\"updates\":%d,\"seed\":%llu,"
          "\"barriers\":%s,\"n_tilde\":%.9g,\"t_send\":%.9g,\"t_recv\":%.9g,"
          "\"t_barrier\":%.9g,\"servers\":[",
          t->wall, t->par_comp, t->seq, t->comm, t->sync, t->idle, o->steps, servers, o->n, o->g,
          o->rc, o->u, o->update_interval, updates, (unsigned long long)o->seed,
          o->barriers ? "true" : "false", o->rc > 0 ? opal_neighbours_within(o->rc) : 0.0, t->send,
          t->recv, t->barrier);
  for (int s = 0; s < servers; ++s)
    fprintf(f, "%s{\"rank\":%d,\"t_update\":%.9g,\"t_energy\":%.9g,\"pairs\":%.0f}", s ? "," : "",
            s + 1, t->server_update[s], t->server_energy[s], t->server_pairs[s]);
  fprintf(f, "]}\n");
  if (fclose(f) != 0) fprintf(stderr, "opal-mini: --timers %s: write failed\n", path);
}

static void run_client(const opal_options* o, opal_system* sys, int servers) {
  const int n = sys->n;
  const size_t reply_len = kHdrSize + 3 * (size_t)n;
  double* v = calloc(3 * (size_t)n, sizeof(double));
  double* acc = calloc(3 * (size_t)n, sizeof(double));
  double* grad = malloc(sizeof(double) * 3 * (size_t)n);
  double* replies = malloc(sizeof(double) * reply_len * (size_t)servers);
  client_timers t;
  memset(&t, 0, sizeof t);
  t.server_update = calloc((size_t)servers, sizeof(double));
  t.server_energy = calloc((size_t)servers, sizeof(double));
  t.server_pairs = calloc((size_t)servers, sizeof(double));
  if (!v || !acc || !grad || !replies || !t.server_update || !t.server_energy || !t.server_pairs)
    die_no_memory("client buffers");

  double e_lj = 0, e_coulomb = 0, e_bonded = 0;
  int updates = 0;
  const double t_start = MPI_Wtime();
  for (int step = 0; step < o->steps; ++step) {
    double bs = 0, wait_upd = 0, wait_en = 0, send = 0, recv = 0;
    const int update = is_update_step(o, step);
    double t0, t1;
    if (update) {
      ++updates;
      t0 = MPI_Wtime();
      barrier_if(o);
      t1 = MPI_Wtime();
      bs += t1 - t0;
      for (int s = 1; s <= servers; ++s)
        MPI_Send(sys->x, 3 * n, MPI_DOUBLE, s, kTagUpdate, MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      send += t0 - t1;
      barrier_if(o);
      t1 = MPI_Wtime();
      wait_upd = t1 - t0;
      for (int s = 1; s <= servers; ++s)
        MPI_Recv(NULL, 0, MPI_BYTE, s, kTagDone, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      t0 = MPI_Wtime();
      /* Without barriers the receives hold the wait for the servers. */
      if (o->barriers)
        recv += t0 - t1;
      else
        wait_upd = t0 - t1;
    }
    t0 = MPI_Wtime();
    barrier_if(o);
    t1 = MPI_Wtime();
    bs += t1 - t0;
    for (int s = 1; s <= servers; ++s)
      MPI_Send(sys->x, 3 * n, MPI_DOUBLE, s, kTagEnergy, MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    send += t0 - t1;
    barrier_if(o);
    t1 = MPI_Wtime();
    wait_en = t1 - t0;
    for (int s = 1; s <= servers; ++s)
      MPI_Recv(replies + (size_t)(s - 1) * reply_len, (int)reply_len, MPI_DOUBLE, s, kTagResult,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    t0 = MPI_Wtime();
    if (o->barriers)
      recv += t0 - t1;
    else
      wait_en = t0 - t1;

    /* Sequential part: sum the servers' contributions in server order, bonded terms, move. */
    e_lj = e_coulomb = 0.0;
    memset(grad, 0, sizeof(double) * 3 * (size_t)n);
    double max_upd = 0, max_en = 0;
    for (int s = 0; s < servers; ++s) {
      const double* r = replies + (size_t)s * reply_len;
      e_lj += r[kHdrLj];
      e_coulomb += r[kHdrCoulomb];
      for (size_t k = 0; k < 3 * (size_t)n; ++k) grad[k] += r[kHdrSize + k];
      if (r[kHdrUpdateTime] > max_upd) max_upd = r[kHdrUpdateTime];
      if (r[kHdrEnergyTime] > max_en) max_en = r[kHdrEnergyTime];
      t.server_update[s] += r[kHdrUpdateTime];
      t.server_energy[s] += r[kHdrEnergyTime];
      t.server_pairs[s] = r[kHdrPairs];
    }
    e_bonded = opal_bonded(sys, sys->x, grad);
    opal_integrate(sys, sys->x, v, acc, grad, kTimeStepFs, step == 0);
    t1 = MPI_Wtime();
    const double seq = t1 - t0;

    const double extra_upd = unexplained_wait(wait_upd, max_upd);
    const double extra_en = unexplained_wait(wait_en, max_en);
    /* A server can start computing while the client is still sending to the next one, so its
     * compute time may exceed the client's wait: only the part inside the wait is on the
     * client's critical path, which keeps the components a partition of t_wall. */
    const double par_step = covered_wait(wait_upd, max_upd) + covered_wait(wait_en, max_en);
    t.send += send;
    t.recv += recv + (o->barriers ? 0.0 : wait_upd + wait_en);
    t.barrier += o->barriers ? bs + wait_upd + wait_en : 0.0;
    t.seq += seq;
    t.par_comp += par_step;
    t.comm += send + recv + (o->barriers ? 0.0 : extra_upd + extra_en);
    t.sync += o->barriers ? bs + extra_upd + extra_en : 0.0;
    if (o->verbose)
      fprintf(stderr,
              "opal-mini: step %d%s lj %.10g coulomb %.10g bonded %.10g | par_comp %.6f "
              "seq_comp %.6f send %.6f recv %.6f barrier %.6f\n",
              step, update ? " (update)" : "", e_lj, e_coulomb, e_bonded, par_step, seq, send,
              o->barriers ? recv : recv + wait_upd + wait_en,
              o->barriers ? bs + wait_upd + wait_en : 0.0);
  }
  t.wall = MPI_Wtime() - t_start;
  const double explained = t.par_comp + t.seq + t.comm + t.sync;
  t.idle = t.wall > explained ? t.wall - explained : 0.0;

  if (o->verbose) {
    fprintf(stderr,
            "opal-mini: n %d p %d steps %d updates %d | t_wall %.6f t_par_comp %.6f t_seq_comp "
            "%.6f t_comm %.6f t_sync %.6f t_idle %.6f\n",
            n, servers, o->steps, updates, t.wall, t.par_comp, t.seq, t.comm, t.sync, t.idle);
    for (int s = 0; s < servers; ++s)
      fprintf(stderr, "opal-mini: server %d: update %.6f s, energy %.6f s, %.0f pairs listed\n",
              s + 1, t.server_update[s], t.server_energy[s], t.server_pairs[s]);
  }
  if (o->timers_path) write_timers(o, &t, servers, updates, o->timers_path);
  printf("energy %.17g %.17g %.17g %.17g\n", e_lj + e_coulomb + e_bonded, e_lj, e_coulomb,
         e_bonded);
  fflush(stdout);
  free(v);
  free(acc);
  free(grad);
  free(replies);
  free(t.server_update);
  free(t.server_energy);
  free(t.server_pairs);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  opal_options o;
  char error[512];
  int status = opal_options_parse(argc, argv, &o, error, sizeof error);
  if (status == OPAL_OPTIONS_OK && size < 2) {
    snprintf(error, sizeof error,
             "needs at least 2 ranks (rank 0 is the client, ranks 1..p the servers); got %d", size);
    status = OPAL_OPTIONS_ERROR;
  }
  if (status != OPAL_OPTIONS_OK) {
    if (rank == 0) {
      if (status == OPAL_OPTIONS_HELP)
        opal_options_usage(stdout);
      else
        fprintf(stderr, "opal-mini: %s\n(opal-mini --help explains the options)\n", error);
    }
    /* Output written after MPI_Finalize can be lost by the launcher's forwarding. */
    fflush(stdout);
    MPI_Finalize();
    return status == OPAL_OPTIONS_HELP ? 0 : 2;
  }

  opal_system sys;
  if (opal_system_generate(&sys, o.n, o.g, o.seed) != 0) die_no_memory("system");
  if (rank == 0)
    run_client(&o, &sys, size - 1);
  else
    run_server(&o, &sys, rank, size - 1);
  opal_system_free(&sys);
  MPI_Finalize();
  return 0;
}
