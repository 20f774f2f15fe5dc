// Writing an output file so that readers see the old file or the whole new one.
//
// Why one helper: a table, an analysis or a merged profile that a crash, a full disk or an
// interrupt leaves half written would be read later as valid with parts missing. The file goes
// to a hidden temporary name in the same directory, every write, the fsync and the close are
// checked, and it is then renamed over the target.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>

namespace invmw {

struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws FileError "PATH: cannot write: REASON"; the temporary file is removed on failure and
// the target left as it was. `mode` is the new file's (before the umask), e.g. 0700 for a script.
void WriteFileAtomic(const std::string& path, const std::string& text, mode_t mode = 0666);

}  // namespace invmw
