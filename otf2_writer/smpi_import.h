// SimGrid SMPI's Paje trace (`smpirun -trace`) as a run directory's raw trace, so that the same
// converter, reader and analysis serve simulated runs (issue 19, platforms/simulated).
//
// Why a raw trace and not OTF2 directly: the preload library cannot observe an SMPI process
// (SMPI runs every rank as a thread inside libsimgrid), so a simulated run has no raw/ folder;
// written from SMPI's own trace, raw/ gives the archive (ConvertToOtf2) and the per-rank windows
// (analysis/run_windows.h) exactly as a real run does, with SMPI's simulated seconds as time.
//
// What SimGrid 3.32 writes (checked here): `-trace` gives a Paje file (`%EventDef` header, one
// event per line); `-trace-ti` gives time-independent action lists, which carry no time and so
// cannot give t_wall. In the Paje file each rank is a container "rank-N"; each MPI call is a
// PushState/PopState pair whose value names PMPI_<call> (through PajeDefineEntityValue); a
// point-to-point message is a StartLink inside the sender's call and an EndLink inside the
// call that completes the receive, joined by a key "SRC_DST_TAG_SEQ"; the size is the link's
// Size field with `--cfg=tracing/smpi/display-sizes:yes`. Collectives' internal messages are
// not traced (tracing/smpi/internals:no), so collectives carry no byte counts.
//
// Nonblocking calls: the Paje trace names no request, so an MPI_Irecv is posted for any source
// and completed, with the source, tag and size of the message, by the completion call in which
// that message's EndLink lies (oldest pending receive first); MPI_Wait completes the oldest
// pending send when no receive completes in it, MPI_Waitall all of them.
//
// Contract: ParsePaje throws SmpiTraceError naming the file and line for input it cannot read
// (unknown event id, too few fields, a number that is not one, a pop without push, a rank
// container named otherwise than rank-N); never crashes on any input (fuzz/smpi_paje_fuzz.cc).
// WriteSmpiRawRun writes <run_dir>/raw/defs-R.jsonl and events-R-000.bin for every rank and
// refuses a run directory that already has raw/.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace invmw::otf2 {

class SmpiTraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SmpiCall {
  std::string func;  // MPI_Send (PMPI_ prefix removed)
  double enter = 0, leave = 0;
  int32_t peer = -1;  // send: destination; recv: source (world ranks); -1 none
  int32_t tag = -1;
  uint64_t bytes_sent = 0, bytes_recv = 0;
  // Messages whose EndLink lies inside this call: (source, tag, bytes) in trace order.
  struct Arrival {
    int32_t src = -1;
    int32_t tag = -1;
    uint64_t bytes = 0;
    double time = 0;
  };
  std::vector<Arrival> arrivals;
  bool sent = false;  // a StartLink lies inside
};

struct SmpiRank {
  int32_t rank = -1;
  std::vector<SmpiCall> calls;  // top-level MPI calls in time order
  bool closed = false;          // the container was destroyed (the rank ended)
  double end = 0;               // time of the last event
};

struct SmpiTrace {
  std::vector<SmpiRank> ranks;  // index = rank
  double end_time = 0;          // the last timestamp in the file
  uint64_t events = 0;          // event lines read
  std::vector<std::string> problems;
};

// `source` names the input in messages (a file name).
SmpiTrace ParsePaje(std::string_view text, const std::string& source);

// Writes raw/ for the trace into run_dir (which must exist). `host_prefix` names the
// simulated hosts (host of rank r: host_prefix + r, as the exported hostfile lists them).
void WriteSmpiRawRun(const SmpiTrace& trace, const std::string& run_dir,
                     const std::string& host_prefix);

// The raw trace's tick rate: nanoseconds of simulated time.
constexpr double kSmpiTicksPerSecond = 1e9;

}  // namespace invmw::otf2
