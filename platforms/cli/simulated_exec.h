// `invmw platform exec` on a simulated run platform (kind = "simgrid", platforms/simulated):
// the platform's table exported for SimGrid, the program run under `smpirun`, and SMPI's Paje
// trace turned into the run directory's raw trace and OTF2 archive (otf2_writer/smpi_import.h).
//
// Why in `platform exec`: the runner starts every platform the same way (`platform exec NAME
// --ranks N ...`); only this part knows how a simulated cluster is set up, so the experiment
// runner swaps the program for its SMPI build and nothing else.
#pragma once

#include <string>
#include <vector>

#include "platforms/emulate/platform.h"

namespace invmw::platforms::cli {

// Runs cmd (an SMPI program and its arguments, no launcher) with `ranks` ranks (0: the
// platform's nodes). With out_dir, the platform files, smpi.trace, raw/ and traces.otf2 go
// there (it must exist); without, the platform files go to a private temporary directory that
// is removed afterwards and nothing is traced. Returns the exit status for invmw (smpirun's;
// 125 when the platform cannot be set up: no smpirun, a table SimGrid cannot use).
int ExecSimulated(const emulate::Platform& p, int ranks, const std::string& out_dir,
                  const std::vector<std::string>& cmd);

}  // namespace invmw::platforms::cli
