// Response variables of one traced run, extracted with the inverse mapping (analysis/).
//
// Why here: the runner records, per run, the numbers the design asks for, and those come from
// the trace, not from the application's own timers. The Opal names of contract B (t_wall,
// t_par_comp, t_seq_comp, t_comm, t_sync, t_idle) come from analysis::OpalResponses; any other
// name is a key of the analysis document (`invmw analyze --json`), a dotted path for nested
// values (e.g. "classification.communication" or "imbalance.max_over_mean").
//
// Contract: Extract reads <run_dir>/traces.otf2, writes <run_dir>/analysis.json (the same
// document `invmw analyze` writes, plus the Opal breakdown under "opal" when it applies) and
// returns every requested response as a finite number, or throws std::runtime_error naming the
// response and what the analysis offers instead.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace invmw::experiment {

std::map<std::string, double> ExtractResponses(const std::string& run_dir,
                                               const std::vector<std::string>& names);

// Empty when `name` can be a response: an Opal name, or a path whose first part is a key of the
// analysis document. Else why not, listing what can be: a design's misspelt response is found
// when the design is read, not after every run has been made.
std::string CheckResponseName(const std::string& name);

}  // namespace invmw::experiment
