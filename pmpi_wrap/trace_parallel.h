// The OTF2 archive written by all ranks at MPI_Finalize (otf2_writer/parallel_convert.h), over
// invmw's own communicator.
#pragma once

#include <mpi.h>

#include "otf2_writer/parallel_convert.h"

namespace invmw::wrap {

// Collective over `comm` (invmw's communicator, errors returned): every rank writes its own
// locations. Every MPI call's return code is checked; a failed one makes the result not ok.
otf2::ParallelResult WriteTraceInParallel(MPI_Comm comm, const std::string& run_dir,
                                          int test_fail_rank = -1);

}  // namespace invmw::wrap
