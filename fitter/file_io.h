// The fitter's output files (platform tables, fit and validation results, plot data) are written
// with the project's one atomic writer (common/file_io.h); these names keep the fitter's callers.
#pragma once

#include "common/file_io.h"

namespace invmw::fit {

using ::invmw::FileError;
using ::invmw::WriteFileAtomic;

}  // namespace invmw::fit
