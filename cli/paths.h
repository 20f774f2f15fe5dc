// Where the `invmw` command finds its own files (the preload libraries, the probes, the build
// tree) in a build tree or an installation, relative to its own executable so both work without
// configuration.
#pragma once

#include <string>

namespace invmw::cli {

// Directory holding the running `invmw` executable.
std::string ExecutableDir();

}  // namespace invmw::cli
