/* opal_options: see opal_options.h. */
#include "opal_options.h"

#include <math.h>
#include <string.h>

#include "workload_args.h"

void opal_options_usage(FILE* out) {
  fputs(
      "usage: mpirun -np P+1 opal-mini [options]\n"
      "\n"
      "A client/server molecular-dynamics code with the structure of parallel Opal: rank 0 is\n"
      "the client, ranks 1..P the servers. Every 1/u steps the client sends the coordinates\n"
      "(24 bytes per center) to each server, which rebuilds its list of pairs within the\n"
      "cut-off and answers with an empty message (update call); every step it sends them again\n"
      "and each server returns Lennard-Jones + Coulomb energies and gradients of its pairs\n"
      "(energy call, 24 n + 40 bytes); the client sums them, adds the bonded terms and moves the\n"
      "atoms (velocity Verlet, 1 fs). Each call starts and ends with MPI_Barrier.\n"
      "\n"
      "options:\n"
      "  --n N          mass centers (default 1000; the paper's sizes are 4289 and 6289)\n"
      "  --g G          water fraction in [0, 1] (default 0)\n"
      "  --rc RC        cut-off radius in Angstrom, 0 = no cut-off (default 0); the box has\n"
      "                 water's density, so about (4/3) pi RC^3 0.0334 neighbours (140 at 10)\n"
      "  --u U          update fraction in (0, 1]: pair lists are rebuilt every 1/U steps, which\n"
      "                 must be a whole number (1 = every step, 0.1 = every 10th; default 1)\n"
      "  --s S          steps (default 10)\n"
      "  --seed K       seed of the generated system (default 1)\n"
      "  --no-barriers  leave out the barriers around each call\n"
      "  --verbose      print each step's energies and phase times, and a summary, on stderr\n"
      "  --timers FILE  write the client's phase timers as JSON: t_wall, t_par_comp,\n"
      "                 t_seq_comp, t_comm, t_sync, t_idle (seconds), steps, p, n, ...\n"
      "  --help         this text\n"
      "\n"
      "Output (rank 0, stdout): energy <total> <lj> <coulomb> <bonded> of the last step, in\n"
      "kcal/mol. The same seed gives the same system and, for any P, the same energies up to\n"
      "the order of floating-point additions.\n",
      out);
}

int opal_options_parse(int argc, char** argv, opal_options* o, char* err, size_t err_len) {
  o->n = 1000;
  o->g = 0.0;
  o->rc = 0.0;
  o->u = 1.0;
  o->update_interval = 1;
  o->steps = 10;
  o->seed = 1;
  o->barriers = 1;
  o->verbose = 0;
  o->timers_path = NULL;
  for (int i = 1; i < argc; ++i) {
    const char* v = NULL;
    long l;
    int r;
    if (wl_flag(argv, i, "--help") || wl_flag(argv, i, "-h")) return OPAL_OPTIONS_HELP;
    if (wl_flag(argv, i, "--no-barriers")) {
      o->barriers = 0;
      continue;
    }
    if (wl_flag(argv, i, "--verbose")) {
      o->verbose = 1;
      continue;
    }
#define OPAL_VALUE(NAME) ((r = wl_option(argc, argv, &i, NAME, &v, err, err_len)) != 0)
    if (OPAL_VALUE("--n")) {
      if (r < 0 || wl_long("--n", v, 2, 1000000, &l, err, err_len) != 0) return OPAL_OPTIONS_ERROR;
      o->n = (int)l;
    } else if (OPAL_VALUE("--g")) {
      if (r < 0 || wl_double("--g", v, 0.0, 1.0, &o->g, err, err_len) != 0)
        return OPAL_OPTIONS_ERROR;
    } else if (OPAL_VALUE("--rc")) {
      if (r < 0 || wl_double("--rc", v, 0.0, 1e6, &o->rc, err, err_len) != 0)
        return OPAL_OPTIONS_ERROR;
    } else if (OPAL_VALUE("--u")) {
      if (r < 0 || wl_double("--u", v, 1e-6, 1.0, &o->u, err, err_len) != 0)
        return OPAL_OPTIONS_ERROR;
      double inverse = 1.0 / o->u;
      if (fabs(inverse - round(inverse)) > 1e-6 * inverse) {
        snprintf(err, err_len,
                 "--u: 1/u must be a whole number of steps (pair lists are rebuilt every 1/u "
                 "steps); got '%s', 1/u = %g",
                 v, inverse);
        return OPAL_OPTIONS_ERROR;
      }
      o->update_interval = (int)round(inverse);
    } else if (OPAL_VALUE("--s")) {
      if (r < 0 || wl_long("--s", v, 1, 100000000, &l, err, err_len) != 0)
        return OPAL_OPTIONS_ERROR;
      o->steps = (int)l;
    } else if (OPAL_VALUE("--seed")) {
      if (r < 0 || wl_long("--seed", v, 0, 0x7fffffffL, &l, err, err_len) != 0)
        return OPAL_OPTIONS_ERROR;
      o->seed = (uint64_t)l;
    } else if (OPAL_VALUE("--timers")) {
      if (r < 0) return OPAL_OPTIONS_ERROR;
      o->timers_path = v;
    } else {
      snprintf(err, err_len, "unknown option '%s'", argv[i]);
      return OPAL_OPTIONS_ERROR;
    }
#undef OPAL_VALUE
  }
  return OPAL_OPTIONS_OK;
}
