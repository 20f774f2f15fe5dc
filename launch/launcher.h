// Launcher injection for `invmw run`: which launcher starts the job, which preload library its
// ranks need, and the launcher's command line that passes the preload and the INVMW_* variables
// to every rank but not to the launcher itself (Open MPI `-x`, MPICH/Hydra `-genv`, Slurm
// `--export`; a program started without a launcher gets them in its environment).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace invmw::launch {

enum class Launcher { kNone, kOpenMpi, kHydra, kSlurm };

// Variables for the ranks, in the order they are passed.
using RankVars = std::vector<std::pair<std::string, std::string>>;

std::string Basename(const std::string& path);
// An absolute form of a path relative to the working directory.
std::string Absolute(const std::string& path);

// The launcher `argv0` names, recognised by its name (and, for mpirun/mpiexec, by the file the
// alternatives link resolves to).
Launcher DetectLauncher(const std::string& argv0);
// The MPI of the job when --mpi is not given: from the launcher, or for a launcher-less run
// from the program's ELF dependencies ("openmpi", "mpich", "pvm"; "" for srun: the default).
std::string DefaultFlavor(Launcher launcher, const std::string& program);
// The preload library for an MPI flavour ("openmpi", "mpich", "pvm", or "" for the default
// one), next to the running `invmw`. Returns "" and sets *error when it is not there.
std::string FindPreloadLibrary(const std::string& flavor, std::string* error);

// LD_PRELOAD for the ranks: lib, then what the environment (`old`) already preloads.
std::string RanksPreload(const std::string& lib, const char* old);
// The variables every rank gets before the ones of --collect and --trace: the preload, the
// experiment directory, the sanitizers' options of a sanitizer build, the --env items (but
// INVMW_OUTPUT_DIR, which `out` already is) and INVMW_RUNTIME_QUIET for --quiet.
RankVars BaseRankVars(const std::string& lib, const std::string& out,
                      const std::vector<std::string>& env, bool quiet);
// Appends the INVMW_* variables of this environment that `vars` does not set yet.
void AddInheritedConfig(RankVars* vars);
// Whether the ranks were told to be quiet (INVMW_RUNTIME_QUIET set and not false).
bool RanksQuiet(const RankVars& vars);

// Why srun cannot pass `vars` to the ranks (a comma in LD_PRELOAD), or "".
std::string SlurmExportProblem(const RankVars& vars);
// srun's command (launcher.cc says why it looks like this): LD_PRELOAD in --export, merged into
// a --export the user gave; the other variables go into srun's environment (ExecJob).
std::vector<std::string> SlurmArgv(const std::vector<std::string>& command, const RankVars& vars);

// The command to execute: the launcher with `vars` in its own syntax, then the rest of
// `command`; for a launcher-less run `command` as given.
std::vector<std::string> LauncherArgv(Launcher launcher, const std::vector<std::string>& command,
                                      const RankVars& vars);

}  // namespace invmw::launch
