/* workload_args: see workload_args.h. */
#include "workload_args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wl_option(int argc, char** argv, int* i, const char* name, const char** value, char* err,
              size_t err_len) {
  const char* arg = argv[*i];
  size_t len = strlen(name);
  if (strncmp(arg, name, len) != 0) return 0;
  if (arg[len] == '=') {
    *value = arg + len + 1;
    return 1;
  }
  if (arg[len] != '\0') return 0;
  if (*i + 1 >= argc) {
    snprintf(err, err_len, "%s: expected a value after it", name);
    return -1;
  }
  *value = argv[++*i];
  return 1;
}

int wl_flag(char** argv, int i, const char* name) {
  return strcmp(argv[i], name) == 0;
}

int wl_double(const char* name, const char* text, double lo, double hi, double* out, char* err,
              size_t err_len) {
  char* end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !isfinite(v)) {
    snprintf(err, err_len, "%s: expected a number, got '%s'", name, text);
    return -1;
  }
  if (v < lo || v > hi) {
    snprintf(err, err_len, "%s: expected a number in [%g, %g], got '%s'", name, lo, hi, text);
    return -1;
  }
  *out = v;
  return 0;
}

int wl_long(const char* name, const char* text, long lo, long hi, long* out, char* err,
            size_t err_len) {
  char* end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0) {
    snprintf(err, err_len, "%s: expected a whole number, got '%s'", name, text);
    return -1;
  }
  if (v < lo || v > hi) {
    snprintf(err, err_len, "%s: expected a whole number in [%ld, %ld], got '%s'", name, lo, hi,
             text);
    return -1;
  }
  *out = v;
  return 0;
}

int wl_long_list(const char* name, const char* text, long* out, int max, char* err,
                 size_t err_len) {
  int count = 0;
  const char* p = text;
  while (*p) {
    char* end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || errno != 0 || v < 0) {
      snprintf(err, err_len,
               "%s: expected comma-separated whole numbers >= 0, got '%s' (at item %d)", name, text,
               count + 1);
      return -1;
    }
    if (count == max) {
      snprintf(err, err_len, "%s: at most %d values, got more in '%s'", name, max, text);
      return -1;
    }
    out[count++] = v;
    p = *end == ',' ? end + 1 : end;
  }
  if (count == 0) {
    snprintf(err, err_len, "%s: expected at least one value", name);
    return -1;
  }
  return count;
}
