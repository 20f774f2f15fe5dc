// Where the `invmw` command finds its own files (the preload libraries) in a build tree or an
// installation, relative to its own executable so both work without configuration.
#pragma once

#include <string>

namespace invmw::cli {

// Directory holding the running `invmw` executable.
std::string ExecutableDir();
// The preload library for an MPI flavour ("openmpi", "mpich", or "" for the default one).
// Returns "" and sets *error when it is not there.
std::string FindPreloadLibrary(const std::string& flavor, std::string* error);

}  // namespace invmw::cli
