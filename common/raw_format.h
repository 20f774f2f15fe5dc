// The per-rank raw profile: the one binary format shared by the preload runtime (which writes
// it) and the `invmw` command (which merges ranks into profile.json / profile.txt).
//
// Why a raw format at all: when a job dies (signal, MPI_Abort, exit without MPI_Finalize) the
// ranks cannot agree on anything, and a signal handler may only write(2). Each rank therefore
// keeps its counters in fixed, preallocated memory and dumps them as this fixed layout; the
// normal MPI_Finalize path gathers exactly the same bytes to rank 0. One parser serves both.
//
// Layout of a dump: RankHeader, then RankHeader::num_funcs FuncRecord entries (functions with
// at least one call), then, only when the rank ended abnormally inside an MPI call, one
// OpenCallRecord (dumps without it, those of older versions included, read as "in no call").
// All integers little-endian as in memory; the version field changes whenever the layout does.
#pragma once

#include <cstdint>

namespace invmw::raw {

constexpr uint32_t kMagic = 0x4d564e49;  // "INVM"
constexpr uint32_t kVersion = 2;         // 2: FuncRecord::hist_sent, hist_recv

// Message-size histogram: bin 0 holds zero-byte calls, bin b >= 1 holds calls moving
// [2^(b-1), 2^b) bytes; the last bin is open-ended. A call is binned by the size of the
// message it moves, never by bytes sent plus received (README.md, "Message-size histograms").
constexpr int kHistBins = 40;

inline int HistBin(uint64_t bytes) {
  if (bytes == 0) return 0;
  int b = 64 - __builtin_clzll(bytes);
  return b < kHistBins ? b : kHistBins - 1;
}

// Why the rank stopped recording.
enum EndReason : uint32_t {
  kEndFinalize = 0,  // MPI_Finalize: complete data
  kEndExit = 1,      // process exited without MPI_Finalize
  kEndAbort = 2,     // MPI_Abort called by this rank
  kEndSignal = 3,    // fatal or terminating signal (end_signal says which)
  kEndRunning = 4,   // snapshot of a live process
  kEndKilled = 5,    // saved nothing (SIGKILL): counts read from its live counter file
};

enum HeaderFlags : uint32_t {
  kFlagIncomplete = 1u << 0,  // the rank did not reach MPI_Finalize
  kFlagTraceOn = 1u << 1,
};

struct RankHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t header_size;  // sizeof(RankHeader), checked by readers
  uint32_t record_size;  // sizeof(FuncRecord)
  int32_t rank;
  int32_t world_size;
  int32_t pid;
  uint32_t flags;
  uint32_t end_reason;
  int32_t end_signal;
  uint32_t num_funcs;
  uint32_t num_threads;       // threads that recorded calls
  uint64_t dropped_threads;   // calls from threads beyond INVMW_WRAP_MAX_THREADS
  uint64_t dropped_requests;  // nonblocking requests the tracking table could not hold
  uint64_t errors;            // internal errors counted on hot paths
  double ticks_per_second;
  uint64_t init_ticks;  // tick stamp right after MPI_Init returned
  uint64_t end_ticks;   // tick stamp when recording stopped
  int64_t init_realtime_ns;
  double wall_s;      // init .. end in seconds
  double mpi_init_s;  // time spent inside MPI_Init itself
  char host[128];
  char mpi_library[256];
  char invmw_version[32];
  char mpi_flavor[16];
};

// A function's counters without its name: FuncRecord's body, and the per-thread counters the
// runtime updates (wrap::FuncStats), in memory and in the live counter file below.
struct FuncCounters {
  uint64_t calls;
  uint64_t ticks;
  uint64_t bytes_sent;
  uint64_t bytes_recv;
  uint64_t max_ticks;
  uint64_t hist[kHistBins];
  uint64_t hist_sent[kHistBins];
  uint64_t hist_recv[kHistBins];
};

struct FuncRecord {
  char name[48];  // MPI (or PVM) function name, as the application called it
  uint64_t calls;
  uint64_t ticks;  // total inclusive time in ticks
  uint64_t bytes_sent;
  uint64_t bytes_recv;
  uint64_t max_ticks;        // longest single call
  uint64_t hist[kHistBins];  // per call: the larger of its sent and received message
  // Per direction: calls (and completed nonblocking receives) with a send side, binned by the
  // bytes sent; with a receive side, by the bytes received.
  uint64_t hist_sent[kHistBins];
  uint64_t hist_recv[kHistBins];
};

// The call a rank was inside when its run ended abnormally (a survivor blocked in MPI_Recv
// from a rank that died): the longest-open call over the rank's threads.
constexpr uint32_t kOpenCallMagic = 0x434f4d49;  // "IMOC"
enum OpenCallFlags : uint32_t {
  kOpenPeerKnown = 1u << 0,  // peer and tag are what the call was given
  kOpenCommKnown = 1u << 1,  // comm is a communicator id
  kOpenToPeer = 1u << 2,     // peer is the destination (a send), not the source
};
struct OpenCallRecord {
  uint32_t magic;        // kOpenCallMagic
  uint32_t record_size;  // sizeof(OpenCallRecord)
  char name[48];         // function
  int32_t peer;          // world rank; -1 any source or none, -2 MPI_PROC_NULL
  int32_t tag;
  uint32_t comm;  // communicator id as in the trace defs (0 = MPI_COMM_WORLD)
  uint32_t flags;
  uint64_t enter_ticks;  // when the call was entered (RankHeader::end_ticks: when it was cut off)
  int32_t thread;        // thread slot
  uint32_t reserved;
};

static_assert(sizeof(FuncRecord) == 48 + sizeof(FuncCounters), "FuncRecord = name + counters");

// The live counter file raw/live-NNNNNN.bin: a rank's per-thread counters themselves, mapped
// MAP_SHARED from the file, so that a rank killed by SIGKILL (which runs no handler: Slurm's
// PMIx plugin kills a whole step when one task dies) still leaves every call it completed
// in the page cache. Readers use it only for a rank without a dump.
//
// Layout: LiveHeader, then num_funcs names (char[48]) at names_offset, then slot_count slots at
// slots_offset, each num_funcs FuncCounters (slot_size bytes). slots_used (written by the
// runtime whenever a thread takes a new slot) says how many slots may hold counts.
constexpr uint32_t kLiveMagic = 0x4c564e49;  // "INVL"
constexpr uint32_t kLiveVersion = 1;
struct LiveHeader {
  uint32_t magic;  // kLiveMagic
  uint32_t version;
  uint32_t header_size;    // sizeof(LiveHeader)
  uint32_t counters_size;  // sizeof(FuncCounters)
  uint32_t num_funcs;
  uint32_t slot_count;  // slots the file has room for
  uint32_t slots_used;  // slots taken so far (atomic store by the runtime)
  uint32_t reserved;
  uint64_t names_offset;
  uint64_t slots_offset;
  uint64_t slot_size;
  // The rank's header as a dump would have it, filled at MPI_Init: end_reason kEndKilled,
  // kFlagIncomplete; num_funcs, num_threads, end_ticks, wall_s and the dropped/error counts are
  // set by the reader (end from the file's modification time).
  RankHeader rank;
};

}  // namespace invmw::raw
