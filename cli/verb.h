// The `invmw` command is a set of verbs (run, profile, config, fit, ...). Each part of the
// project contributes its verbs from its own source file, registered at static-initialisation
// time, so adding a verb never means editing a central table.
#pragma once

#include <string>
#include <vector>

namespace invmw::cli {

struct Verb {
  const char* name;                   // e.g. "run" or "trace export" (a space separates sub-verbs)
  const char* summary;                // one line for `invmw --help`
  int (*run)(int argc, char** argv);  // argv[0] is the verb name; returns the exit status
};

bool RegisterVerb(const Verb& verb);
const std::vector<Verb>& Verbs();

}  // namespace invmw::cli

#define INVMW_CLI_CONCAT2(a, b) a##b
#define INVMW_CLI_CONCAT(a, b) INVMW_CLI_CONCAT2(a, b)
// INVMW_VERB("name", "summary", function) registers a verb from any source file of `invmw`.
#define INVMW_VERB(NAME, SUMMARY, FN)                                    \
  static const bool INVMW_CLI_CONCAT(invmw_verb_registered_, __LINE__) = \
      ::invmw::cli::RegisterVerb({NAME, SUMMARY, FN})
