/* workload_args: command-line parsing shared by the workloads and the probes.
 *
 * The workloads are C programs (like the applications they stand for) and take GNU-style long
 * options, `--name VALUE` or `--name=VALUE`. These helpers turn a malformed value into one
 * message that names the option, what was expected and what was given, so every program
 * reports bad input the same way. */
#ifndef INVMW_EXPERIMENTS_WORKLOADS_WORKLOAD_ARGS_H_
#define INVMW_EXPERIMENTS_WORKLOADS_WORKLOAD_ARGS_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* If argv[*i] is option `name` ("--n"), stores its value (the next argument, or the text after
 * '=') in *value, advances *i past it and returns 1. Returns 0 when argv[*i] is another option,
 * -1 (message in err) when the option has no value. */
int wl_option(int argc, char** argv, int* i, const char* name, const char** value, char* err,
              size_t err_len);

/* If argv[*i] is the flag `name` exactly, returns 1 (and the caller moves on), else 0. */
int wl_flag(char** argv, int i, const char* name);

/* A number in [lo, hi]. Returns 0, or -1 with a message naming the option. */
int wl_double(const char* name, const char* text, double lo, double hi, double* out, char* err,
              size_t err_len);
/* A whole number in [lo, hi]. */
int wl_long(const char* name, const char* text, long lo, long hi, long* out, char* err,
            size_t err_len);
/* A comma-separated list of whole numbers >= 0, at most `max` of them; returns the count, or -1
 * with a message. */
int wl_long_list(const char* name, const char* text, long* out, int max, char* err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif /* INVMW_EXPERIMENTS_WORKLOADS_WORKLOAD_ARGS_H_ */
