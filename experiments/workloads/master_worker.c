/* master-worker: the dynamic master/worker code of ../shared/seeds/001_*.txt, chapter 3.
 *
 * Rank 0 (the master) hands out --tasks work units; ranks 1..W are the workers. Each task
 * message carries --bytes-in bytes (the thesis' vi), each result --bytes-out bytes (vo), and a
 * task costs --grain of computation (Tc). The master first sends one task to every worker,
 * then, whenever a result arrives, the next task to the worker that returned it (self-
 * scheduling, so faster workers get more tasks); at the end a zero-byte stop message to each.
 *
 * Per task it records the quantities of the thesis' Table 1 (section 3.3): vi, vo, the grain,
 * the master's send start (tms1) and result-receive time (tmr), the worker's task-receive time
 * (twr), compute time (tc) and result send start (tws1), plus the worker and the waits that
 * precede each receive. The master and the workers each start their clocks when a common
 * MPI_Barrier returns, so the start times are comparable on one node (MPI_Wtime is not
 * synchronised across nodes). A receive is split into MPI_Probe (waiting for the message) and
 * MPI_Recv (taking it in), so tmr and twr measure the transfer, not the wait. Workers keep
 * their records and send them to the master after the stop message, outside the measured part.
 *
 * From these, equation (3) of the thesis gives the number of workers the master can feed:
 * N_opt = Tc / max(vi lambda, vo lambda), with vi lambda and vo lambda measured as the mean
 * twr and tmr; the program prints it. */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload_args.h"

enum { kTagTask = 1, kTagResult = 2, kTagStop = 3, kTagRecords = 4 };

/* What a worker measures per task, sent to the master at the end as doubles. */
enum { kWUnits, kWWait, kWRecv, kWCompute, kWSendStart, kWSend, kWFields };

typedef struct {
  long tasks;
  double grain;      /* work units per task, or seconds when grain_is_time */
  int grain_is_time; /* --grain given with s, ms or us */
  const char* grain_text;
  long bytes_in, bytes_out;
  const char* tasks_out;
} mw_options;

typedef struct {
  int worker;
  double send_start, send, result_wait, result_recv; /* master side: tms1, tms, -, tmr */
  double w[kWFields];                                /* worker side */
} mw_record;

static void usage(FILE* out) {
  fputs(
      "usage: mpirun -np W+1 master-worker [options]\n"
      "\n"
      "Dynamic master/worker (thesis 001, chapter 3): rank 0 sends tasks of --bytes-in bytes to\n"
      "workers 1..W, each computes --grain and returns --bytes-out bytes; the master sends the\n"
      "next task to whichever worker returned a result. Records per task the quantities of the\n"
      "thesis' Table 1 and prints a summary with N_opt = Tc / max(vi lambda, vo lambda).\n"
      "\n"
      "options:\n"
      "  --tasks T        number of tasks (default 100)\n"
      "  --grain G        computation per task: a number of work units (one unit is 1000\n"
      "                   dependent floating-point multiply-adds), or a time with a unit suffix,\n"
      "                   e.g. 2ms, 0.5s, 300us (the worker computes whole units until the time\n"
      "                   has passed); default 1000\n"
      "  --bytes-in B     bytes per task message, master to worker (default 1024)\n"
      "  --bytes-out B    bytes per result message, worker to master (default 1024)\n"
      "  --tasks-out FILE per-task records: CSV when FILE ends in .csv, JSON otherwise\n"
      "  --help           this text\n"
      "\n"
      "Per-task fields (seconds; times since the common start barrier): task, worker, units,\n"
      "bytes_in (vi), bytes_out (vo), tms1 (master starts sending the task), tms (send\n"
      "duration), tmr_wait (master waits for the result), tmr (result receive), twr_wait\n"
      "(worker waits for the task), twr (task receive), tc (compute), tws1 (worker starts\n"
      "sending the result), tws (its duration).\n",
      out);
}

/* Parses "--grain": a plain number is work units; a suffix s, ms or us makes it a time. */
static int parse_grain(const char* text, mw_options* o, char* err, size_t err_len) {
  static const struct {
    const char* suffix;
    double scale;
  } units[] = {{"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
  size_t len = strlen(text);
  o->grain_text = text;
  for (size_t k = 0; k < sizeof units / sizeof units[0]; ++k) {
    size_t sl = strlen(units[k].suffix);
    if (len > sl && strcmp(text + len - sl, units[k].suffix) == 0 &&
        !(sl == 1 && (text[len - 2] == 'm' || text[len - 2] == 'u'))) {
      char number[64];
      if (len - sl >= sizeof number) break;
      memcpy(number, text, len - sl);
      number[len - sl] = '\0';
      double v;
      if (wl_double("--grain", number, 0.0, 3600.0, &v, err, err_len) != 0) {
        snprintf(err, err_len,
                 "--grain: expected work units (a number) or a time such as 2ms, 0.5s, 300us; "
                 "got '%s'",
                 text);
        return -1;
      }
      o->grain = v * units[k].scale;
      o->grain_is_time = 1;
      return 0;
    }
  }
  o->grain_is_time = 0;
  if (wl_double("--grain", text, 0.0, 1e12, &o->grain, err, err_len) != 0) {
    snprintf(err, err_len,
             "--grain: expected work units (a number) or a time such as 2ms, 0.5s, 300us; got "
             "'%s'",
             text);
    return -1;
  }
  return 0;
}

/* Returns 0 (run), 1 (--help) or 2 (error, message in err). */
static int parse(int argc, char** argv, mw_options* o, char* err, size_t err_len) {
  o->tasks = 100;
  o->grain = 1000;
  o->grain_is_time = 0;
  o->grain_text = "1000";
  o->bytes_in = 1024;
  o->bytes_out = 1024;
  o->tasks_out = NULL;
  for (int i = 1; i < argc; ++i) {
    const char* v = NULL;
    int r;
    if (wl_flag(argv, i, "--help") || wl_flag(argv, i, "-h")) return 1;
    if ((r = wl_option(argc, argv, &i, "--tasks", &v, err, err_len)) != 0) {
      if (r < 0 || wl_long("--tasks", v, 1, 100000000, &o->tasks, err, err_len) != 0) return 2;
    } else if ((r = wl_option(argc, argv, &i, "--grain", &v, err, err_len)) != 0) {
      if (r < 0 || parse_grain(v, o, err, err_len) != 0) return 2;
    } else if ((r = wl_option(argc, argv, &i, "--bytes-in", &v, err, err_len)) != 0) {
      if (r < 0 || wl_long("--bytes-in", v, 0, 1L << 30, &o->bytes_in, err, err_len) != 0) return 2;
    } else if ((r = wl_option(argc, argv, &i, "--bytes-out", &v, err, err_len)) != 0) {
      if (r < 0 || wl_long("--bytes-out", v, 0, 1L << 30, &o->bytes_out, err, err_len) != 0)
        return 2;
    } else if ((r = wl_option(argc, argv, &i, "--tasks-out", &v, err, err_len)) != 0) {
      if (r < 0) return 2;
      o->tasks_out = v;
    } else {
      snprintf(err, err_len, "unknown option '%s'", argv[i]);
      return 2;
    }
  }
  return 0;
}

/* One work unit: a dependent chain of multiply-adds that the compiler cannot fold away. */
static double work_unit(double x) {
  for (int k = 0; k < 1000; ++k) x = x * 0.999999 + 1e-7;
  return x;
}

/* ---- worker ------------------------------------------------------------------------------ */

static void run_worker(const mw_options* o, double t_base) {
  unsigned char* in = malloc((size_t)o->bytes_in + 1);
  unsigned char* out = malloc((size_t)o->bytes_out + 1);
  size_t cap = 64, count = 0;
  double* rec = malloc(sizeof(double) * kWFields * cap);
  if (!in || !out || !rec) {
    fprintf(stderr, "master-worker: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  for (;;) {
    MPI_Status st;
    double t0 = MPI_Wtime();
    MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    double t1 = MPI_Wtime();
    MPI_Recv(in, (int)o->bytes_in, MPI_BYTE, 0, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t2 = MPI_Wtime();
    if (st.MPI_TAG == kTagStop) break;
    /* The task's input seeds the computation, and the result bytes come from it. */
    double x = 1.0;
    for (long k = 0; k < o->bytes_in; ++k) x += in[k] * 1e-9;
    double units = 0;
#ifdef INVMW_SMPI
    /* Under SimGrid's SMPI (smpicc -DINVMW_SMPI, run with smpi/simulate-computation:no) the
     * work is declared, not timed: a unit is 2000 flops (1000 multiply-adds), a time grain
     * the simulated seconds themselves. MPI_Wtime does not advance while computing there, so
     * the timed loop below would never end. */
    if (o->grain_is_time) {
      x = work_unit(x);
      units = 1;
      smpi_execute(o->grain);
    } else {
      for (units = 0; units < o->grain; ++units) x = work_unit(x);
      smpi_execute_flops(2000.0 * units);
    }
#else
    if (o->grain_is_time) {
      while (MPI_Wtime() - t2 < o->grain) {
        x = work_unit(x);
        ++units;
      }
    } else {
      for (units = 0; units < o->grain; ++units) x = work_unit(x);
    }
#endif
    for (long k = 0; k < o->bytes_out; ++k) out[k] = (unsigned char)((long)(x * 1e6) + k);
    double t3 = MPI_Wtime();
    MPI_Send(out, (int)o->bytes_out, MPI_BYTE, 0, kTagResult, MPI_COMM_WORLD);
    double t4 = MPI_Wtime();
    if (count == cap) {
      cap *= 2;
      double* grown = realloc(rec, sizeof(double) * kWFields * cap);
      if (!grown) {
        fprintf(stderr, "master-worker: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      rec = grown;
    }
    double* r = rec + kWFields * count++;
    r[kWUnits] = units;
    r[kWWait] = t1 - t0;
    r[kWRecv] = t2 - t1;
    r[kWCompute] = t3 - t2;
    r[kWSendStart] = t3 - t_base;
    r[kWSend] = t4 - t3;
  }
  MPI_Send(rec, (int)(kWFields * count), MPI_DOUBLE, 0, kTagRecords, MPI_COMM_WORLD);
  free(in);
  free(out);
  free(rec);
}

/* ---- master ------------------------------------------------------------------------------ */

static int write_records(const mw_options* o, int workers, double wall, const mw_record* rec) {
  FILE* f = fopen(o->tasks_out, "w");
  if (!f) {
    fprintf(stderr, "master-worker: --tasks-out %s: cannot open for writing\n", o->tasks_out);
    return -1;
  }
  size_t len = strlen(o->tasks_out);
  int csv = len >= 4 && strcmp(o->tasks_out + len - 4, ".csv") == 0;
  if (csv)
    fputs("task,worker,units,bytes_in,bytes_out,tms1,tms,tmr_wait,tmr,twr_wait,twr,tc,tws1,tws\n",
          f);
  else
    fprintf(f,
            "{\"workers\":%d,\"tasks\":%ld,\"grain\":\"%s\",\"grain_unit\":\"%s\","
            "\"bytes_in\":%ld,\"bytes_out\":%ld,\"t_wall\":%.9g,\"records\":[\n",
            workers, o->tasks, o->grain_text, o->grain_is_time ? "seconds" : "work units",
            o->bytes_in, o->bytes_out, wall);
  for (long t = 0; t < o->tasks; ++t) {
    const mw_record* r = &rec[t];
    if (csv)
      fprintf(f, "%ld,%d,%.0f,%ld,%ld,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", t, r->worker,
              r->w[kWUnits], o->bytes_in, o->bytes_out, r->send_start, r->send, r->result_wait,
              r->result_recv, r->w[kWWait], r->w[kWRecv], r->w[kWCompute], r->w[kWSendStart],
              r->w[kWSend]);
    else
      fprintf(f,
              "%s{\"task\":%ld,\"worker\":%d,\"units\":%.0f,\"bytes_in\":%ld,\"bytes_out\":%ld,"
              "\"tms1\":%.9g,\"tms\":%.9g,\"tmr_wait\":%.9g,\"tmr\":%.9g,\"twr_wait\":%.9g,"
              "\"twr\":%.9g,\"tc\":%.9g,\"tws1\":%.9g,\"tws\":%.9g}",
              t ? ",\n" : "", t, r->worker, r->w[kWUnits], o->bytes_in, o->bytes_out, r->send_start,
              r->send, r->result_wait, r->result_recv, r->w[kWWait], r->w[kWRecv], r->w[kWCompute],
              r->w[kWSendStart], r->w[kWSend]);
  }
  if (!csv) fputs("\n]}\n", f);
  if (fclose(f) != 0) {
    fprintf(stderr, "master-worker: --tasks-out %s: write failed\n", o->tasks_out);
    return -1;
  }
  return 0;
}

static int run_master(const mw_options* o, int workers, double t_base) {
  unsigned char* in = malloc((size_t)o->bytes_in + 1);
  unsigned char* out = malloc((size_t)o->bytes_out + 1);
  mw_record* rec = calloc((size_t)o->tasks, sizeof(mw_record));
  /* Tasks of each worker in the order sent: a worker's k-th record is its k-th task. */
  long* order = malloc(sizeof(long) * (size_t)o->tasks);
  long* first = calloc((size_t)workers + 2, sizeof(long));
  long* current = calloc((size_t)workers + 1, sizeof(long));
  if (!in || !out || !rec || !order || !first || !current) {
    fprintf(stderr, "master-worker: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  long next = 0, done = 0;
  for (int w = 1; w <= workers && next < o->tasks; ++w, ++next) {
    for (long k = 0; k < o->bytes_in; ++k) in[k] = (unsigned char)(next + k);
    double t0 = MPI_Wtime();
    MPI_Send(in, (int)o->bytes_in, MPI_BYTE, w, kTagTask, MPI_COMM_WORLD);
    rec[next].worker = w;
    rec[next].send_start = t0 - t_base;
    rec[next].send = MPI_Wtime() - t0;
    current[w] = next;
  }
  while (done < o->tasks) {
    MPI_Status st;
    double t0 = MPI_Wtime();
    MPI_Probe(MPI_ANY_SOURCE, kTagResult, MPI_COMM_WORLD, &st);
    double t1 = MPI_Wtime();
    int w = st.MPI_SOURCE;
    MPI_Recv(out, (int)o->bytes_out, MPI_BYTE, w, kTagResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t2 = MPI_Wtime();
    rec[current[w]].result_wait = t1 - t0;
    rec[current[w]].result_recv = t2 - t1;
    ++done;
    if (next < o->tasks) {
      for (long k = 0; k < o->bytes_in; ++k) in[k] = (unsigned char)(next + k);
      double t3 = MPI_Wtime();
      MPI_Send(in, (int)o->bytes_in, MPI_BYTE, w, kTagTask, MPI_COMM_WORLD);
      rec[next].worker = w;
      rec[next].send_start = t3 - t_base;
      rec[next].send = MPI_Wtime() - t3;
      current[w] = next++;
    }
  }
  const double wall = MPI_Wtime() - t_base;
  for (int w = 1; w <= workers; ++w) MPI_Send(NULL, 0, MPI_BYTE, w, kTagStop, MPI_COMM_WORLD);

  /* Collect the workers' measurements and attach them to the tasks in sending order. */
  long tasks_of = 0;
  for (int w = 1; w <= workers; ++w) {
    first[w] = tasks_of;
    for (long t = 0; t < o->tasks; ++t)
      if (rec[t].worker == w) order[tasks_of++] = t;
  }
  first[workers + 1] = tasks_of;
  double* wrec = malloc(sizeof(double) * kWFields * ((size_t)o->tasks + 1));
  if (!wrec) {
    fprintf(stderr, "master-worker: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  int status = 0;
  for (int w = 1; w <= workers; ++w) {
    long count = first[w + 1] - first[w];
    MPI_Status st;
    int got;
    MPI_Recv(wrec, (int)(kWFields * (o->tasks + 1)), MPI_DOUBLE, w, kTagRecords, MPI_COMM_WORLD,
             &st);
    MPI_Get_count(&st, MPI_DOUBLE, &got);
    if (got != kWFields * count) {
      fprintf(stderr, "master-worker: worker %d reported %d tasks, the master sent it %ld\n", w,
              got / kWFields, count);
      status = 1;
      continue;
    }
    for (long k = 0; k < count; ++k)
      memcpy(rec[order[first[w] + k]].w, wrec + kWFields * k, sizeof(double) * kWFields);
  }

  double tc = 0, twr = 0, tmr = 0;
  for (long t = 0; t < o->tasks; ++t) {
    tc += rec[t].w[kWCompute];
    twr += rec[t].w[kWRecv];
    tmr += rec[t].result_recv;
  }
  tc /= o->tasks;
  twr /= o->tasks;
  tmr /= o->tasks;
  double transfer = twr > tmr ? twr : tmr;
  printf(
      "master-worker: tasks %ld workers %d wall %.6f s | mean tc %.6g s twr %.6g s tmr %.6g s"
      " | N_opt %.4g\n",
      o->tasks, workers, wall, tc, twr, tmr, transfer > 0 ? tc / transfer : INFINITY);
  fflush(stdout);
  if (o->tasks_out && write_records(o, workers, wall, rec) != 0) status = 1;
  free(in);
  free(out);
  free(rec);
  free(order);
  free(first);
  free(current);
  free(wrec);
  return status;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mw_options o;
  char err[512];
  int status = parse(argc, argv, &o, err, sizeof err);
  if (status == 0 && size < 2) {
    snprintf(err, sizeof err, "needs at least 2 ranks (a master and a worker); got %d", size);
    status = 2;
  }
  if (status != 0) {
    if (rank == 0) {
      if (status == 1)
        usage(stdout);
      else
        fprintf(stderr, "master-worker: %s\n(master-worker --help explains the options)\n", err);
    }
    /* Output written after MPI_Finalize can be lost by the launcher's forwarding. */
    fflush(stdout);
    MPI_Finalize();
    return status == 1 ? 0 : 2;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_base = MPI_Wtime();
  int rc = 0;
  if (rank == 0)
    rc = run_master(&o, size - 1, t_base);
  else
    run_worker(&o, t_base);
  MPI_Finalize();
  return rc;
}
