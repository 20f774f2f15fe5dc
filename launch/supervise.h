// Job supervision for `invmw run`: the job in a process group of its own with the terminal and
// the signals meant for it, and the live-stream collector of --collect beside it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "launch/launcher.h"

namespace invmw::launch {

// The live-stream collector of --collect: `invmw collect` on a free loopback port, started in
// this process's network namespace. Ranks see the loopback of the namespace they run in, and a
// launcher started here (also inside `invmw platform exec`) starts its ranks in this one, so
// they reach it. Returns the collector's pid and sets *port, or -1 with *error.
pid_t StartCollector(const std::string& out, std::string* port, std::string* error);
// Ends the collector once the job has ended and says where its results are (or that it failed).
void StopCollector(pid_t collector, const std::string& out, bool quiet);

// Runs `argv` as the job and waits for it; returns true with its wait status in *status, or
// false with *error when it could not be started. A launcher-less job gets `vars` in its
// environment; a launcher gets INVMW_OUTPUT_DIR only (its command line passes the rest).
bool RunJob(const std::vector<std::string>& argv, Launcher launcher, const RankVars& vars,
            const std::string& out, int* status, std::string* error);

}  // namespace invmw::launch
