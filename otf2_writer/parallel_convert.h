// The OTF2 archive of a run written by all its ranks at once, each rank its own locations.
//
// Why: the serial converter (converter.h) makes one process read and write every rank's
// events, so the end of a run grows with the number of ranks. Here every rank converts its
// own raw files (which it wrote, on whatever file system it sees) into its locations' event
// and local definition files of one archive, through OTF2's collective callbacks (as Score-P
// does). The definitions that must be global (regions, metric members and classes,
// communicators) are unified by a tree reduction over the ranks, in rank order, so their
// references are exactly those the serial converter gives; rank 0 then writes the global
// definitions from the reduced tables and the gathered locations. The archive is the serial
// converter's, up to the order of files on disk.
//
// No MPI here: the caller supplies the communication (ParallelTransport; the preload runtime
// implements it over its own communicator, pmpi_wrap/trace_parallel.cc), so this part stays
// free of an MPI dependency and testable with any transport.
//
// Contract: every rank calls ConvertToOtf2Parallel with the same run_dir and options, and every
// rank makes the same sequence of collective calls whatever fails locally, so a failure on one
// rank never leaves another waiting. Nothing throws. ok is true on every rank only when every
// rank succeeded; otherwise the archive (written under a temporary name, as converter.h) is
// removed by rank 0 and the previous archive of that name is unchanged: the raw files stay for
// the serial converter or `invmw trace recover`. Ranks whose defs file cannot be used, or a
// world of another size than the raw files, make the whole call fail (the serial converter
// then handles missing ranks).
#pragma once

#include <otf2/OTF2_Callbacks.h>

#include <cstdint>
#include <string>
#include <vector>

#include "otf2_writer/converter.h"

namespace invmw::otf2 {

class ParallelTransport {
 public:
  virtual ~ParallelTransport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Byte strings between two ranks; false when the communication failed.
  virtual bool Send(int peer, const std::string& data) = 0;
  virtual bool Recv(int peer, std::string* data) = 0;
  virtual bool Bcast(std::string* data, int root) = 0;
  // True on every rank when every rank passed true and the reduction itself worked.
  virtual bool AllOk(bool ok) = 0;
  // OTF2's collective callbacks over the same ranks (OTF2_Archive_SetCollectiveCallbacks).
  virtual const OTF2_CollectiveCallbacks* Otf2Callbacks() = 0;
  virtual void* Otf2Data() = 0;
};

struct ParallelResult {
  bool ok = false;
  // The first failure (this rank's, or on rank 0 the first rank's that failed), empty if ok.
  std::string error;
  // Rank 0: the whole archive's figures and problems, as ConvertToOtf2 returns them.
  ConvertResult result;
  // This rank: its locations' events written, and the CPU time of its part (s).
  uint64_t rank_events = 0;
  double cpu_s = 0;
};

// test_fail_rank (tests only, INVMW_TRACE_TEST_PARALLEL_FAIL): that rank fails its part after
// writing its events, to prove the collective steps and the fallback.
ParallelResult ConvertToOtf2Parallel(const std::string& run_dir, ParallelTransport* transport,
                                     const ConvertOptions& options = {}, int test_fail_rank = -1);

}  // namespace invmw::otf2
