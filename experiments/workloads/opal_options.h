/* opal_options: the command line of opal-mini (contract A in the project brief).
 *
 * Every rank parses the same arguments and so knows the whole schedule (which steps update
 * the pair lists, how many steps): no set-up messages are needed, and the servers need nothing
 * from the client but coordinates, as in Opal. */
#ifndef INVMW_EXPERIMENTS_WORKLOADS_OPAL_OPTIONS_H_
#define INVMW_EXPERIMENTS_WORKLOADS_OPAL_OPTIONS_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int n;               /* mass centers */
  double g;            /* water fraction */
  double rc;           /* cut-off in Angstrom, 0 = none */
  double u;            /* update fraction */
  int update_interval; /* 1/u: pair lists are rebuilt on steps 0, 1/u, 2/u, ... */
  int steps;
  uint64_t seed;
  int barriers; /* 1 unless --no-barriers */
  int verbose;
  const char* timers_path; /* NULL without --timers */
} opal_options;

enum { OPAL_OPTIONS_OK = 0, OPAL_OPTIONS_HELP = 1, OPAL_OPTIONS_ERROR = 2 };

/* Fills *o from argv. Returns OPAL_OPTIONS_OK, OPAL_OPTIONS_HELP (--help given) or
 * OPAL_OPTIONS_ERROR with a message naming the option in err. */
int opal_options_parse(int argc, char** argv, opal_options* o, char* err, size_t err_len);
void opal_options_usage(FILE* out);

#ifdef __cplusplus
}
#endif

#endif /* INVMW_EXPERIMENTS_WORKLOADS_OPAL_OPTIONS_H_ */
