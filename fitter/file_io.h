// Writing the fitter's output files (platform tables, fit and validation results, plot data).
//
// Why one helper: a table that a crash, a full disk or an interrupt leaves half written would be
// read later as a valid table with parameters missing. Every file the fitter writes goes to a
// temporary name in the same directory, is checked on every write, fsync and close, and is then
// renamed over the target, so readers see the old file or the whole new one.
#pragma once

#include <stdexcept>
#include <string>

namespace invmw::fit {

struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws FileError "PATH: cannot write: REASON"; the temporary file is removed on failure and
// the target left as it was.
void WriteFileAtomic(const std::string& path, const std::string& text);

}  // namespace invmw::fit
